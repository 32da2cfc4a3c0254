//! Rician noise (Gudbjartsson & Patz 1995): on intensities x ∈ [0, 1],
//! `x̃ = sqrt((x + n_r)² + n_i²)` with `n_r, n_i ~ N(0, σ²)` independent per pixel and channel, drawn
//! in row-major pixel order, channel order, `n_r` before `n_i`; then `round(255 · clamp(x̃, 0, 1))`.

use crate::pixels::{ImageU8, to_u8};
use crate::rng::standard_normal;
use rand::Rng;

/// Adds Rician noise of scale `sigma` (on the [0, 1] scale) using `rng`.
pub fn rician_noise<R: Rng>(image: &ImageU8, sigma: f64, rng: &mut R) -> ImageU8 {
    let data = image
        .data
        .iter()
        .map(|&v| {
            let x = f64::from(v) / 255.0;
            let nr = sigma * standard_normal(rng);
            let ni = sigma * standard_normal(rng);
            let y = ((x + nr).powi(2) + ni * ni).sqrt();
            to_u8(y.clamp(0.0, 1.0) * 255.0)
        })
        .collect();
    ImageU8 { data, ..image.clone() }
}
