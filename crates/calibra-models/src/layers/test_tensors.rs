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
    let values = pseudo_random_values(shape.iter().product(), seed, half_width);
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// The `n` values of [`pseudo_random`], in order.
pub(crate) fn pseudo_random_values(n: usize, seed: u64, half_width: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * (2.0 * half_width) - half_width
        })
        .collect()
}

/// `max |a − b|`.
pub(crate) fn max_abs_diff<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    (a - b).abs().max().into_scalar()
}

/// `[n/4, 4]` values from -10.3 to 10.3 (both sigmoid branches and the saturated tails of the
/// activations), in a fixed scrambled order.
pub(crate) fn activation_input(n: usize, device: &Device) -> Tensor<2> {
    let values: Vec<f32> = (0..n).map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 97.0).collect();
    Tensor::from_data(TensorData::new(values, [n / 4, 4]), device)
}

/// An f32 tensor's values.
pub(crate) fn values(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// The bit patterns of an f32 tensor's values.
pub(crate) fn bits(t: Tensor<2>) -> Vec<u32> {
    values(t).into_iter().map(f32::to_bits).collect()
}

/// `y`, an activation's f32 value at `x`, is within `relative_bound` of the f64 `reference`, or
/// within one subnormal step where the result is subnormal.
pub(crate) fn assert_follows_f64(x: f32, y: f32, reference: f64, relative_bound: f64) {
    let slack = f32::from_bits(1) as f64;
    assert!(
        (y as f64 - reference).abs() <= relative_bound * reference.abs() + slack,
        "at {x}: {y}, f64 {reference}"
    );
}

/// An activation's forward values and the gradient of `sum(activation(x) · w)` through autodiff,
/// with `x` and `w`, on an input of three rayon chunks and a bit more (so that several tasks run),
/// from −10.3 to 10.3, and weights of both signs: `(x, w, y, gradient)`.
pub(crate) fn activation_forward_and_gradient(
    activation: impl Fn(Tensor<2>) -> Tensor<2>,
) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let n = 3 * (1 << 16) + 100;
    let device = Device::flex().autodiff();
    let x = activation_input(n, &device).require_grad();
    let weights = activation_input(n, &device).flip([0]);
    let y = activation(x.clone());
    let gradient = x.grad(&(y.clone() * weights.clone()).sum().backward()).unwrap();
    (values(x.inner()), values(weights.inner()), values(y.inner()), values(gradient))
}

/// `ours` agrees with `reference` up to the last bits, forward and gradient (of a weighted sum),
/// on the input of [`activation_forward_and_gradient`]: values within `bound · max(1, |x|)`,
/// gradients within that times `|w|`.
pub(crate) fn assert_activation_agrees_with(
    ours: impl Fn(Tensor<2>) -> Tensor<2>,
    reference: impl Fn(Tensor<2>) -> Tensor<2>,
    bound: f32,
) {
    let (xs, weights, ys, gradients) = activation_forward_and_gradient(ours);
    let (_, _, expected, expected_gradients) = activation_forward_and_gradient(reference);
    for i in 0..xs.len() {
        let scale = xs[i].abs().max(1.0);
        assert!(
            (ys[i] - expected[i]).abs() <= bound * scale,
            "at {}: {} against the reference's {}",
            xs[i],
            ys[i],
            expected[i]
        );
        assert!(
            (gradients[i] - expected_gradients[i]).abs() <= bound * scale * weights[i].abs(),
            "gradient at {}: {} against the reference's {}",
            xs[i],
            gradients[i],
            expected_gradients[i]
        );
    }
}
