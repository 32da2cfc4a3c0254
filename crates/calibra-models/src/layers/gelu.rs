//! The exact GELU, `x · Φ(x)`, as a backend extension whose CPU kernels use every rayon thread.
//!
//! burn-flex 0.22.1 runs element-wise ops as one sequential loop (`ops::unary::unary_op`,
//! `ops::binary::binary_op`), and its GELU evaluates the scalar `libm::erff` per element, in the
//! forward pass and again in the backward. On a ViT-B/16 MLP (`[8·197, 3072]`) that loop took
//! 0.043 s against 0.056 s for the `768 → 3072` product before it, which gemm spreads over both
//! cores (benches/RESULTS.md). The kernels here are flex's own formulas, element for element (same
//! `libm::erff`, same operation order, so bit-identical results, tested), split into chunks on the
//! rayon pool; element-wise work has no reduction, so the result does not depend on the thread
//! count. Other backends, and tensors that are not contiguous f32, take the backend's own `gelu`
//! and `gelu_backward`. Parallel element-wise loops inside the vendored burn-flex were tried as the
//! general fix and moved no benchmark (vendor/README.md), so the fused kernels stay here.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::ops::ActivationOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, Flex, backend_extension};
use burn::tensor::Tensor;

use super::elementwise::{map_f32, zip_map_f32};
use super::saved_input_backward::element_wise_with_saved_input;

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

/// flex's forward formula (`ops::activation::gelu`).
#[inline]
fn gelu_value(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x / core::f32::consts::SQRT_2))
}

/// flex's backward formula (`ops::activation::gelu_backward`).
#[inline]
fn gelu_derivative_times(x: f32, g: f32) -> f32 {
    let inv_sqrt_2pi: f32 = 1.0 / (2.0 * core::f32::consts::PI).sqrt();
    let cdf = 0.5 * (1.0 + libm::erff(x / core::f32::consts::SQRT_2));
    let pdf = inv_sqrt_2pi * (-0.5 * x * x).exp();
    g * (cdf + x * pdf)
}

impl GeluBackend for Flex {
    fn gelu_exact(x: FloatTensor<Self>) -> FloatTensor<Self> {
        map_f32(&x, gelu_value).unwrap_or_else(|| Flex::gelu(x))
    }

    fn gelu_exact_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        zip_map_f32(&x, &grad, gelu_derivative_times).unwrap_or_else(|| Flex::gelu_backward(x, grad))
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
    use crate::layers::test_tensors::{activation_input, assert_activation_equals_bit_for_bit};
    use burn::tensor::Device;
    use burn::tensor::activation::gelu;

    #[test]
    fn forward_and_gradient_equal_flex_bit_for_bit() {
        assert_activation_equals_bit_for_bit(gelu_exact, gelu);
    }

    #[test]
    fn a_strided_input_takes_flexs_own_kernel() {
        let x = activation_input(64, &Device::flex()).transpose();
        let expected = gelu(x.clone()).into_data();
        assert_eq!(gelu_exact(x).into_data(), expected);
    }
}
