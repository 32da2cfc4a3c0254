//! The exact GELU, `x · Φ(x)`, as a backend extension whose CPU kernels are SIMD loops on every
//! rayon thread.
//!
//! burn-flex 0.22.1 runs element-wise ops as one sequential loop (`ops::unary::unary_op`), and its
//! GELU evaluates the scalar `libm::erff` per element, in the forward pass and again in the
//! backward: on a ViT-B/16 MLP (`[8·197, 3072]`) that loop took 0.043 s against 0.056 s for the
//! `768 → 3072` product before it. Spread over the rayon pool it still took 0.024 s on N(0, 1)
//! activations, as branchy scalar code (benches/RESULTS.md, "The exact GELU, vectorised"). The
//! kernels here compute `Φ(x)` and `φ(x)` with the branch-free
//! [`vector_math`](super::vector_math) functions, which vectorise, and split the tensor into chunks
//! on the rayon pool; element-wise work has no reduction, so the result does not depend on the
//! thread count.
//!
//! **Accuracy.** Against the f64 GELU, the forward pass is within `6e-7` relative (about 5 ulps;
//! Φ's error, see `vector_math`) and the gradient within `1e-6` absolute per unit of incoming
//! gradient; both are tested. flex's (and PyTorch's) `x/2 · (1 + erf(x/√2))` loses its relative
//! accuracy for negative `x`, where `1 + erf` cancels; this form does not. So results differ from
//! flex's `gelu` in the last bits, by at most `1e-6 · max(1, |x|)` (tested). Other backends, and
//! tensors that are not f32, take the backend's own `gelu` and `gelu_backward`; strided f32
//! tensors are read in row-major order (`elementwise`), so a value's GELU does not depend on its
//! layout.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::ops::ActivationOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, Flex, backend_extension};
use burn::tensor::Tensor;

use super::elementwise::{BinaryKernel, UnaryKernel, map_f32, zip_map_f32};
use super::saved_input_backward::element_wise_with_saved_input;
use super::vector_math::{exp, normal_cdf};

/// The GELU extension.
#[backend_extension(
    Flex,
    Autodiff,
    NdArray: cfg(feature = "ndarray"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait GeluBackend: Backend {
    /// `x/2 · (1 + erf(x/√2))`.
    fn gelu_exact(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::gelu(x)
    }

    /// `grad · (Φ(x) + x·φ(x))`.
    fn gelu_exact_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::gelu_backward(x, grad)
    }
}

#[cfg(feature = "ndarray")]
impl GeluBackend for burn::backend::NdArray {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl GeluBackend for burn::backend::Cube {}

/// `x · Φ(x)`.
#[inline(always)]
fn gelu_value(x: f32) -> f32 {
    x * normal_cdf(x)
}

/// `g · (Φ(x) + x·φ(x))`, `φ(x) = e^(−x²/2) / √(2π)`.
#[inline(always)]
fn gelu_derivative_times(x: f32, g: f32) -> f32 {
    const INV_SQRT_2PI: f32 = 0.398_942_3;
    let pdf = INV_SQRT_2PI * exp(-0.5 * x * x);
    g * (normal_cdf(x) + x * pdf)
}

struct GeluForward;

impl UnaryKernel for GeluForward {
    #[inline(always)]
    fn apply(&self, x: f32) -> f32 {
        gelu_value(x)
    }
}

struct GeluBackward;

impl BinaryKernel for GeluBackward {
    #[inline(always)]
    fn apply(&self, x: f32, g: f32) -> f32 {
        gelu_derivative_times(x, g)
    }
}

impl GeluBackend for Flex {
    fn gelu_exact(x: FloatTensor<Self>) -> FloatTensor<Self> {
        map_f32(x, GeluForward).unwrap_or_else(Flex::gelu)
    }

    fn gelu_exact_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        zip_map_f32(&x, grad, GeluBackward).unwrap_or_else(|grad| Flex::gelu_backward(x, grad))
    }
}

impl<B: Backend + GeluBackend, C: CheckpointStrategy> GeluBackend for Autodiff<B, C> {
    fn gelu_exact(x: FloatTensor<Self>) -> FloatTensor<Self> {
        element_wise_with_saved_input::<B, C>(x, B::gelu_exact, B::gelu_exact_backward)
    }
}

/// The exact GELU of `x` through [`GeluBackend`].
pub fn gelu_exact<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as GeluBackend>::gelu_exact(x.into_dispatch()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::test_tensors::{
        activation_forward_and_gradient, activation_input, assert_activation_agrees_with, assert_follows_f64,
        values,
    };
    use burn::tensor::activation::gelu;
    use burn::tensor::{Device, TensorData};

    /// The f64 GELU and its derivative.
    fn reference(x: f32) -> (f64, f64) {
        let x = x as f64;
        let cdf = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        (x * cdf, cdf + x * pdf)
    }

    /// The forward pass's documented bound, relative to the f64 GELU (Φ's error, `vector_math`).
    const RELATIVE_BOUND: f64 = 6e-7;

    #[test]
    fn forward_and_gradient_follow_the_f64_gelu() {
        let (xs, weights, ys, gradients) = activation_forward_and_gradient(gelu_exact);
        for (((&x, &w), &y), &g) in xs.iter().zip(&weights).zip(&ys).zip(&gradients) {
            let (value, derivative) = reference(x);
            assert_follows_f64(x, y, value, RELATIVE_BOUND);
            let expected = w as f64 * derivative;
            assert!(
                (g as f64 - expected).abs() <= 1e-6 * (w as f64).abs(),
                "gradient at {x}: {g}, f64 {expected}"
            );
        }
    }

    #[test]
    fn dense_sweep_follows_the_f64_gelu_and_keeps_the_special_values() {
        // Every 1,000th f32 bit pattern between −12 and 12, subnormals included (at −12 the GELU is
        // about −1e-32; beyond, it underflows).
        let lo = (-12.0f32).to_bits();
        let negatives = (0x8000_0000..=lo).step_by(1000).map(f32::from_bits);
        let positives = (0..=12.0f32.to_bits()).step_by(1000).map(f32::from_bits);
        let xs: Vec<f32> = negatives.chain(positives).collect();
        let n = xs.len() / 4 * 4;
        let x = Tensor::<2>::from_data(TensorData::new(xs[..n].to_vec(), [n / 4, 4]), &Device::flex());
        for (&x, y) in xs.iter().zip(values(gelu_exact(x))) {
            assert_follows_f64(x, y, reference(x).0, RELATIVE_BOUND);
        }
        // −∞ · Φ(−∞) = −∞ · 0 is NaN, as in flex's and PyTorch's formula.
        let special = [f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY, f32::NAN, -200.0, 200.0, -30.0];
        let x = Tensor::<2>::from_data(TensorData::new(special.to_vec(), [2, 4]), &Device::flex());
        let y = values(gelu_exact(x));
        assert!(y[0].is_nan() && y[4].is_nan(), "{y:?}");
        assert!(y[1] == 0.0 && y[2] == 0.0 && y[5] == 0.0 && y[7] == 0.0, "{y:?}");
        assert_eq!((y[3], y[6]), (f32::INFINITY, 200.0));
    }

    #[test]
    fn agrees_with_flexs_gelu_up_to_the_last_bits() {
        assert_activation_agrees_with(gelu_exact, gelu, 1e-6);
    }

    #[test]
    fn a_strided_input_gives_what_its_contiguous_copy_gives() {
        let x = activation_input(64, &Device::flex()).transpose();
        let contiguous = Tensor::<2>::from_data(x.to_data(), &Device::flex());
        assert_eq!(values(gelu_exact(x)), values(gelu_exact(contiguous)));
    }
}
