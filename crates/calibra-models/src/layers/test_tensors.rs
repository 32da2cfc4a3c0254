//! Deterministic inputs and a comparison shared by the tests of the layers' backend extensions.

use burn::tensor::{Device, Tensor, TensorData};

/// A tensor of `shape` filled from a 64-bit linear congruential stream seeded by `seed`, uniform in
/// `[-half_width, half_width)`: the same values on every platform, without burn's global RNG.
pub(crate) fn pseudo_random<const D: usize>(
    shape: [usize; D],
    seed: u64,
    half_width: f32,
    device: &Device,
) -> Tensor<D> {
    let n: usize = shape.iter().product();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * (2.0 * half_width) - half_width
        })
        .collect();
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// `max |a − b|`.
pub(crate) fn max_abs_diff<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    (a - b).abs().max().into_scalar()
}
