//! Contrast reduction (as ImageNet-C): `x' = m + c (x − m)` with `m` the mean of the channel over the
//! image and `c ∈ (0, 1]` the factor, rounded to the nearest 8-bit level.

use crate::pixels::{ImageU8, to_u8};

/// Pulls every channel towards its own mean by the factor `factor` (1 = unchanged, 0 = flat).
pub fn reduce_contrast(image: &ImageU8, factor: f64) -> ImageU8 {
    let c = image.channels as usize;
    let n = (image.data.len() / c) as f64;
    let means: Vec<f64> = (0..c)
        .map(|ch| image.data.iter().skip(ch).step_by(c).map(|&v| f64::from(v)).sum::<f64>() / n)
        .collect();
    let data = image
        .data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let m = means[i % c];
            to_u8(m + factor * (f64::from(v) - m))
        })
        .collect();
    ImageU8 { data, ..image.clone() }
}
