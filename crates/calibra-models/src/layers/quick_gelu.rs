//! OpenAI CLIP's activation, `x · σ(1.702 x)` (Hugging Face `quick_gelu`), as one fused op whose
//! CPU kernels use every rayon thread.
//!
//! Written with burn's tensor ops it is three element-wise passes forward (`mul_scalar`, `sigmoid`,
//! `mul`) and five more in the autodiff backward, each one sequential loop in burn-flex 0.22.1
//! (`ops::unary::unary_op`, `ops::binary::binary_op`) and each calling the scalar `expf` per
//! element. On the CoOp step with a ViT-B/16-shaped CLIP text tower that made the activation about
//! a tenth of the step (benches/RESULTS.md). Here the forward is one pass and the backward one
//! pass, split into chunks on the rayon pool. The arithmetic is flex's, operation for operation
//! (its `sigmoid_f32`, the product order of `mul` / `sigmoid_backward` / `mul_scalar`), so results
//! equal the composed ops to the bit (tested); element-wise work has no reduction, so they do not
//! depend on the thread count. Other backends, and tensors that are not contiguous f32, run the
//! composed ops.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, Flex, backend_extension};
use burn::tensor::Tensor;

use super::elementwise::{BinaryKernel, UnaryKernel, map_f32, zip_map_f32};
use super::saved_input_backward::element_wise_with_saved_input;

/// The slope inside the sigmoid (CLIP's constant).
const SLOPE: f32 = 1.702;

/// The QuickGELU extension.
#[backend_extension(
    Flex,
    Autodiff,
    NdArray: cfg(feature = "ndarray"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait QuickGeluBackend: Backend {
    /// `x · σ(1.702 x)`.
    fn quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        composed_forward::<Self>(x)
    }

    /// `grad · (σ(1.702 x) + 1.702 x σ(1.702 x)(1 − σ(1.702 x)))`.
    fn quick_gelu_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        composed_backward::<Self>(x, grad)
    }
}

/// The forward as burn's own ops: `mul_scalar`, `sigmoid`, `mul`.
fn composed_forward<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let s = B::sigmoid(B::float_mul_scalar(x.clone(), SLOPE.into()));
    B::float_mul(x, s)
}

/// What burn's autodiff computes for [`composed_forward`]: `mul` sends `grad · s` to `x` and
/// `grad · x` to the gate, then `sigmoid_backward` and `mul_scalar`'s backward.
fn composed_backward<B: Backend>(x: FloatTensor<B>, grad: FloatTensor<B>) -> FloatTensor<B> {
    let s = B::sigmoid(B::float_mul_scalar(x.clone(), SLOPE.into()));
    let through_gate = B::float_mul(grad.clone(), x);
    let through_gate = B::float_mul_scalar(B::sigmoid_backward(s.clone(), through_gate), SLOPE.into());
    B::float_add(B::float_mul(grad, s), through_gate)
}

#[cfg(feature = "ndarray")]
impl QuickGeluBackend for burn::backend::NdArray {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl QuickGeluBackend for burn::backend::Cube {}

/// flex's `sigmoid_f32` (`ops::activation`), the stable two-branch form.
#[inline(always)]
fn sigmoid(z: f32) -> f32 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

#[inline(always)]
fn quick_gelu_value(x: f32) -> f32 {
    x * sigmoid(x * SLOPE)
}

/// The composed backward's products in flex's order: `mul` gives `g·s` to `x` and `g·x` to the
/// gate; `sigmoid_backward` is `g' · s · (1 − s)`; `mul_scalar`'s backward scales by 1.702.
#[inline(always)]
fn quick_gelu_derivative_times(x: f32, g: f32) -> f32 {
    let s = sigmoid(x * SLOPE);
    g * s + (g * x) * s * (1.0 - s) * SLOPE
}

struct QuickGeluForward;

impl UnaryKernel for QuickGeluForward {
    #[inline(always)]
    fn apply(&self, x: f32) -> f32 {
        quick_gelu_value(x)
    }
}

struct QuickGeluBackward;

impl BinaryKernel for QuickGeluBackward {
    #[inline(always)]
    fn apply(&self, x: f32, g: f32) -> f32 {
        quick_gelu_derivative_times(x, g)
    }
}

impl QuickGeluBackend for Flex {
    fn quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        map_f32(&x, QuickGeluForward).unwrap_or_else(|| composed_forward::<Flex>(x))
    }

    fn quick_gelu_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        zip_map_f32(&x, &grad, QuickGeluBackward).unwrap_or_else(|| composed_backward::<Flex>(x, grad))
    }
}

impl<B: Backend + QuickGeluBackend, C: CheckpointStrategy> QuickGeluBackend for Autodiff<B, C> {
    fn quick_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        element_wise_with_saved_input::<B, C>(x, B::quick_gelu, B::quick_gelu_backward)
    }
}

/// `x · σ(1.702 x)` through [`QuickGeluBackend`].
pub fn quick_gelu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as QuickGeluBackend>::quick_gelu(x.into_dispatch()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::test_tensors::{activation_input, assert_activation_equals_bit_for_bit, bits};
    use burn::tensor::Device;
    use burn::tensor::activation::sigmoid as burn_sigmoid;

    fn composed<const D: usize>(x: Tensor<D>) -> Tensor<D> {
        x.clone() * burn_sigmoid(x * 1.702)
    }

    #[test]
    fn forward_and_gradient_equal_the_composed_ops_bit_for_bit() {
        assert_activation_equals_bit_for_bit(quick_gelu, composed);
    }

    #[test]
    fn a_strided_input_takes_the_composed_ops() {
        let x = activation_input(64, &Device::flex()).transpose();
        let expected = composed(x.clone()).into_data();
        assert_eq!(quick_gelu(x).into_data(), expected);
    }

    /// The trait's default backward (what wgpu, cuda and ndarray run) is what autodiff computes
    /// for the composed ops.
    #[test]
    fn the_default_backward_equals_autodiff_of_the_composed_ops() {
        let device = Device::flex().autodiff();
        let x = activation_input(256, &device).require_grad();
        let weights = activation_input(256, &device).flip([1]);
        let reference_grad = x.grad(&(composed(x.clone()) * weights.clone()).sum().backward()).unwrap();
        let default_grad = Tensor::<2>::from_dispatch(composed_backward::<Dispatch>(
            x.inner().into_dispatch(),
            weights.inner().into_dispatch(),
        ));
        assert_eq!(bits(default_grad), bits(reference_grad));
    }
}
