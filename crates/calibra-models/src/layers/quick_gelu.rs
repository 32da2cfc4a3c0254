//! OpenAI CLIP's activation, `x · σ(1.702 x)` (Hugging Face `quick_gelu`), as one fused op whose
//! CPU kernels are SIMD loops on every rayon thread.
//!
//! Written with burn's tensor ops it is three element-wise passes forward (`mul_scalar`, `sigmoid`,
//! `mul`) and five more in the autodiff backward, each one sequential loop in burn-flex 0.22.1
//! (`ops::unary::unary_op`, `ops::binary::binary_op`) and each calling the scalar `expf` per
//! element. On the CoOp step with a ViT-B/16-shaped CLIP text tower that made the activation about
//! a tenth of the step (benches/RESULTS.md). Here the forward is one pass and the backward one
//! pass, split into chunks on the rayon pool, and the sigmoid is `1 / (1 + e⁻ᶻ)` with the
//! branch-free [`vector_math::exp`](super::vector_math), so the loops vectorise. Element-wise work
//! has no reduction, so results do not depend on the thread count.
//!
//! **Accuracy.** Against the f64 QuickGELU, the forward pass is within `1e-6` relative and the
//! gradient within `1e-6 · max(1, |x|)` per unit of incoming gradient (tested). flex's sigmoid
//! calls the correctly rounded `expf` in a two-branch form, so results differ from the composed
//! ops in the last bits, by at most `1e-6 · max(1, |x|)` (tested). Other backends, and tensors
//! that are not f32, run the composed ops; strided f32 tensors are read in row-major order
//! (`elementwise`), so a value's result does not depend on its layout.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, Flex, backend_extension};
use burn::tensor::Tensor;

use super::elementwise::{BinaryKernel, UnaryKernel, map_f32, zip_map_f32};
use super::saved_input_backward::element_wise_with_saved_input;
use super::vector_math::exp;

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

/// `σ(z) = 1 / (1 + e⁻ᶻ)`, branch-free. For very negative `z`, `e⁻ᶻ` is large or +∞ and the
/// quotient goes to 0 without cancellation; for positive `z` nothing cancels either.
#[inline(always)]
fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + exp(-z))
}

#[inline(always)]
fn quick_gelu_value(x: f32) -> f32 {
    x * sigmoid(x * SLOPE)
}

/// `g · (s + 1.702 · x · s · (1 − s))`, `s = σ(1.702 x)`, in the composed backward's product order
/// (`mul` gives `g·s` to `x` and `g·x` to the gate; `sigmoid_backward` is `g' · s · (1 − s)`;
/// `mul_scalar`'s backward scales by 1.702).
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
        map_f32(x, QuickGeluForward).unwrap_or_else(composed_forward::<Flex>)
    }

    fn quick_gelu_backward(x: FloatTensor<Self>, grad: FloatTensor<Self>) -> FloatTensor<Self> {
        zip_map_f32(&x, grad, QuickGeluBackward).unwrap_or_else(|grad| composed_backward::<Flex>(x, grad))
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
    use crate::layers::test_tensors::{
        activation_forward_and_gradient, activation_input, assert_activation_agrees_with, assert_follows_f64,
        bits, values,
    };
    use burn::tensor::activation::sigmoid as burn_sigmoid;
    use burn::tensor::{Device, TensorData};

    fn composed<const D: usize>(x: Tensor<D>) -> Tensor<D> {
        x.clone() * burn_sigmoid(x * 1.702)
    }

    /// The f64 QuickGELU and its derivative at `x`, from `z = 1.702·x` rounded to f32 as every f32
    /// implementation (flex's, PyTorch's, this one) forms it: near `x = −10` the sigmoid's relative
    /// error is `|z|` times `z`'s, so that rounding belongs to the definition, not to the error.
    fn reference(x: f32) -> (f64, f64) {
        let s = 1.0 / (1.0 + (-((x * SLOPE) as f64)).exp());
        let x = x as f64;
        (x * s, s + SLOPE as f64 * x * s * (1.0 - s))
    }

    #[test]
    fn forward_and_gradient_follow_the_f64_quick_gelu() {
        let (xs, weights, ys, gradients) = activation_forward_and_gradient(quick_gelu);
        for (((&x, &w), &y), &g) in xs.iter().zip(&weights).zip(&ys).zip(&gradients) {
            let (value, derivative) = reference(x);
            assert_follows_f64(x, y, value, 1e-6);
            let expected = w as f64 * derivative;
            let bound = 1e-6 * (x.abs().max(1.0) * w.abs()) as f64;
            assert!((g as f64 - expected).abs() <= bound, "gradient at {x}: {g}, f64 {expected}");
        }
    }

    #[test]
    fn saturates_and_keeps_the_special_values() {
        let special = [f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY, f32::NAN, -200.0, 200.0, -30.0];
        let x = Tensor::<2>::from_data(TensorData::new(special.to_vec(), [2, 4]), &Device::flex());
        let y = values(quick_gelu(x));
        // −∞ · σ(−∞) = −∞ · 0 is NaN, as in the composed ops and PyTorch.
        assert!(y[0].is_nan() && y[4].is_nan(), "{y:?}");
        assert!(y[1] == 0.0 && y[2] == 0.0 && y[5] == 0.0, "{y:?}");
        assert_eq!((y[3], y[6]), (f32::INFINITY, 200.0));
        assert!(y[7] < 0.0 && y[7] > -1e-20, "{y:?}");
    }

    #[test]
    fn agrees_with_the_composed_ops_up_to_the_last_bits() {
        assert_activation_agrees_with(quick_gelu, composed, 1e-6);
    }

    #[test]
    fn a_strided_input_gives_what_its_contiguous_copy_gives() {
        let x = activation_input(64, &Device::flex()).transpose();
        let contiguous = Tensor::<2>::from_data(x.to_data(), &Device::flex());
        assert_eq!(values(quick_gelu(x)), values(quick_gelu(contiguous)));
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
