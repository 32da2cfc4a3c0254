//! Layer normalisation over the last axis as one differentiable op, with its backward pass in closed
//! form.
//!
//! burn 0.22's autodiff backend has no layer norm of its own: `burn::nn::LayerNorm` runs as the
//! trait's default decomposition (mean, subtract, square, mean, add, sqrt, divide, scale, shift), and
//! autodiff tracks and differentiates each of the nine ops. Here the forward is the backend's fused
//! `layer_norm` (flex's single pass on the CPU); the backward recomputes `x̂ = (x − μ)·r` with
//! `r = 1/√(σ² + ε)` from the saved input and applies
//!
//! ```text
//! g = dy ⊙ γ      dx = r ⊙ (g − mean(g) − x̂ ⊙ mean(g ⊙ x̂))      dγ = Σ dy ⊙ x̂      dβ = Σ dy
//! ```
//!
//! (means over the normalised axis, sums over every other). A burn backend extension like
//! [`super::softmax_attention`]; checked against burn's differentiated decomposition in the tests.
//!
//! [`LayerNorm`] is `burn::nn::LayerNorm` with this forward: the same parameters under the same
//! names (`gamma`, `beta`), so checkpoints and key maps are unchanged, and a public `epsilon`.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, TensorMetadata, backend_extension};
use burn::module::Param;
use burn::nn::Initializer;
use burn::prelude::*;
use burn::tensor::{DType, FloatDType, Shape};

/// The layer-norm extension: `x: [..., d]`, `gamma` and `beta`: `[d]`.
#[backend_extension(
    Flex,
    Autodiff,
    NdArray: cfg(feature = "ndarray"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait LayerNormBackend: Backend {
    /// `(x − mean) / √(var + epsilon) · gamma + beta` over the last axis: the backend's own op.
    fn layer_norm_last_axis(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        Self::layer_norm(x, gamma, Some(beta), epsilon)
    }
}

impl LayerNormBackend for burn::backend::Flex {}

#[cfg(feature = "ndarray")]
impl LayerNormBackend for burn::backend::NdArray {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl LayerNormBackend for burn::backend::Cube {}

#[derive(Debug, Clone)]
struct SavedLayerNorm<B: Backend> {
    x: FloatTensor<B>,
    gamma: FloatTensor<B>,
    epsilon: f64,
}

#[derive(Debug)]
struct LayerNormBackward;

/// `[d]` → `[1, …, 1, d]` of rank `rank`.
fn broadcast_row<B: Backend>(row: FloatTensor<B>, rank: usize) -> FloatTensor<B> {
    let d = row.shape()[0];
    let dims: Vec<usize> = (0..rank).map(|i| if i + 1 == rank { d } else { 1 }).collect();
    B::float_reshape(row, Shape::from(dims))
}

/// Sum of `[..., d]` over every axis but the last: `[d]`.
fn sum_rows<B: Backend>(t: FloatTensor<B>) -> FloatTensor<B> {
    let shape = t.shape();
    let d = shape[shape.num_dims() - 1];
    let rows = shape.num_elements() / d;
    let summed = B::float_sum_dim(B::float_reshape(t, Shape::new([rows, d])), 0);
    B::float_reshape(summed, Shape::new([d]))
}

impl<B: Backend> Backward<B, 3> for LayerNormBackward {
    type State = SavedLayerNorm<B>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let d_y = grads.consume::<B>(&ops.node);
        let SavedLayerNorm { x, gamma, epsilon } = ops.state;
        let rank = x.shape().num_dims();
        let last = rank - 1;

        let mean = B::float_mean_dim(x.clone(), last);
        let centered = B::float_sub(x, mean);
        let variance = B::float_mean_dim(B::float_mul(centered.clone(), centered.clone()), last);
        let inv_std = B::float_recip(B::float_sqrt(B::float_add_scalar(variance, epsilon.into())));
        let x_hat = B::float_mul(centered, inv_std.clone());

        if let Some(node) = node_beta {
            grads.register::<B>(node.id, sum_rows::<B>(d_y.clone()));
        }
        if let Some(node) = node_gamma {
            grads.register::<B>(node.id, sum_rows::<B>(B::float_mul(d_y.clone(), x_hat.clone())));
        }
        if let Some(node) = node_x {
            let g = B::float_mul(d_y, broadcast_row::<B>(gamma, rank));
            let mean_g = B::float_mean_dim(g.clone(), last);
            let mean_g_x_hat = B::float_mean_dim(B::float_mul(g.clone(), x_hat.clone()), last);
            let inner = B::float_sub(B::float_sub(g, mean_g), B::float_mul(x_hat, mean_g_x_hat));
            grads.register::<B>(node.id, B::float_mul(inner, inv_std));
        }
    }
}

impl<B: Backend + LayerNormBackend, C: CheckpointStrategy> LayerNormBackend for Autodiff<B, C> {
    fn layer_norm_last_axis(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        match LayerNormBackward.prepare::<C>([x.node(), gamma.node(), beta.node()]).compute_bound().stateful()
        {
            OpsKind::Tracked(prep) => {
                let (x, gamma, beta) = (x.into_primitive(), gamma.into_primitive(), beta.into_primitive());
                let y = B::layer_norm_last_axis(x.clone(), gamma.clone(), beta, epsilon);
                prep.finish(SavedLayerNorm { x, gamma, epsilon }, y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::layer_norm_last_axis(
                x.into_primitive(),
                gamma.into_primitive(),
                beta.into_primitive(),
                epsilon,
            )),
        }
    }
}

/// Configuration of [`LayerNorm`] (as `burn::nn::LayerNormConfig`).
#[derive(Config, Debug)]
pub struct LayerNormConfig {
    /// Size of the normalised (last) axis.
    pub d_model: usize,
    /// Added to the variance before the square root.
    #[config(default = 1e-5)]
    pub epsilon: f64,
    /// Whether there is a learned shift β.
    #[config(default = true)]
    pub bias: bool,
}

impl LayerNormConfig {
    /// γ = 1, β = 0.
    pub fn init(&self, device: &Device) -> LayerNorm {
        LayerNorm {
            gamma: Initializer::Ones.init([self.d_model], device),
            beta: self.bias.then(|| Initializer::Zeros.init([self.d_model], device)),
            epsilon: self.epsilon,
        }
    }
}

/// Layer normalisation over the last axis: `(x − mean) / √(var + ε) · γ + β`.
#[derive(Module, Debug)]
pub struct LayerNorm {
    /// Scale γ `[d]` (PyTorch `weight`).
    pub gamma: Param<Tensor<1>>,
    /// Shift β `[d]` (PyTorch `bias`), if any.
    pub beta: Option<Param<Tensor<1>>>,
    /// ε.
    pub epsilon: f64,
}

impl LayerNorm {
    /// `x: [..., d]` → `[..., d]`, through [`LayerNormBackend`]. Half-precision inputs are
    /// normalised in f32 and cast back, as burn's `LayerNorm` does for f16.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let gamma = self.gamma.val();
        let beta = match &self.beta {
            Some(beta) => beta.val(),
            None => gamma.zeros_like(),
        };
        let dtype = x.dtype();
        if matches!(dtype, DType::F16 | DType::BF16) {
            let widen = FloatDType::F32;
            let y = self.normalize(x.cast(widen), gamma.cast(widen), beta.cast(widen));
            return y.cast(FloatDType::from(dtype));
        }
        self.normalize(x, gamma, beta)
    }

    fn normalize<const D: usize>(&self, x: Tensor<D>, gamma: Tensor<1>, beta: Tensor<1>) -> Tensor<D> {
        let output = <Dispatch as LayerNormBackend>::layer_norm_last_axis(
            x.into_dispatch(),
            gamma.into_dispatch(),
            beta.into_dispatch(),
            self.epsilon,
        );
        Tensor::from_dispatch(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::test_tensors::{max_abs_diff, pseudo_random};

    /// Forward and the gradients of x, γ and β against burn's `LayerNorm`, differentiated op by op.
    fn check(track_x: bool, track_params: bool) {
        let device = Device::flex().autodiff();
        let d = 6;
        let param = |seed| {
            let t = pseudo_random([d], seed, 2.0, &device);
            Param::from_tensor(if track_params { t.require_grad() } else { t })
        };
        let norm = LayerNorm { gamma: param(3), beta: Some(param(4)), epsilon: 1e-6 };
        let mut burns = burn::nn::LayerNormConfig::new(d).with_epsilon(1e-6).init(&device);
        burns.gamma = norm.gamma.clone();
        burns.beta = norm.beta.clone();
        let x = pseudo_random([2, 5, d], 1, 2.0, &device);
        let x = if track_x { x.require_grad() } else { x };
        let weights = pseudo_random([2, 5, d], 2, 2.0, &device);

        let ours = norm.forward(x.clone());
        let ours_grads = (ours.clone() * weights.clone()).sum().backward();
        let reference = burns.forward(x.clone());
        let reference_grads = (reference.clone() * weights).sum().backward();

        assert!(max_abs_diff(ours.inner(), reference.inner()) < 1e-6);
        let pairs = [
            (
                x.grad(&ours_grads).map(|g| g.flatten::<1>(0, 2)),
                x.grad(&reference_grads).map(|g| g.flatten::<1>(0, 2)),
            ),
            (norm.gamma.val().grad(&ours_grads), norm.gamma.val().grad(&reference_grads)),
            (
                norm.beta.as_ref().and_then(|b| b.val().grad(&ours_grads)),
                norm.beta.as_ref().and_then(|b| b.val().grad(&reference_grads)),
            ),
        ];
        for (i, (a, b)) in pairs.into_iter().enumerate() {
            match (a, b) {
                (Some(a), Some(b)) => {
                    let diff = max_abs_diff(a, b);
                    assert!(diff < 1e-5, "gradient {i} differs by {diff}");
                }
                (None, None) => {}
                (a, b) => panic!("gradient {i}: present here {}, in burn {}", a.is_some(), b.is_some()),
            }
        }
    }

    #[test]
    fn matches_burns_differentiated_layer_norm() {
        check(true, true);
        check(true, false);
        check(false, true);
    }

    #[test]
    fn untracked_call_is_the_backends_layer_norm() {
        let device = Device::flex();
        let norm = LayerNormConfig::new(4).init(&device);
        let burns = burn::nn::LayerNormConfig::new(4).init(&device);
        let x = pseudo_random([3, 4], 9, 2.0, &device);
        assert_eq!(norm.forward(x.clone()).into_data(), burns.forward(x).into_data());
    }
}
