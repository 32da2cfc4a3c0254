//! Gaussian blur: separable Gaussian of standard deviation σ pixels, scipy `reflect` borders,
//! kernel truncated at 4σ (parity with `scipy.ndimage.gaussian_filter(mode="reflect", truncate=4)`,
//! see `scripts/golden/perturb.py`), then rounded to the nearest 8-bit level.

use crate::filters;
use crate::pixels::{ImageU8, to_u8};

/// Blurs every channel with a Gaussian of standard deviation `sigma` pixels (`sigma <= 0`: a copy).
pub fn gaussian_blur(image: &ImageU8, sigma: f64) -> ImageU8 {
    let mut data: Vec<f64> = image.data.iter().map(|&v| f64::from(v)).collect();
    filters::gaussian_blur(
        &mut data,
        image.width as usize,
        image.height as usize,
        image.channels as usize,
        sigma,
    );
    ImageU8 { data: data.into_iter().map(to_u8).collect(), ..image.clone() }
}
