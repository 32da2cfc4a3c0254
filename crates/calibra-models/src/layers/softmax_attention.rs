//! Scaled dot-product attention as one differentiable op, with its backward pass in closed form.
//!
//! burn 0.22's autodiff backend has no attention (or softmax) of its own: it runs
//! `burn::tensor::module::attention` as the eleven-op fallback (transpose, matmul, scale, max, clamp,
//! subtract, exp, sum, clamp, divide, matmul), tracks every op, and differentiates each of them.
//! For a ViT-B/16 batch of 32 that is a dozen passes over a 60 MB score tensor per layer, each into a
//! freshly allocated buffer, forward and backward. Here the forward keeps only the probabilities
//! `P = softmax(q kᵀ · s)` and the output `O = P v`, and the backward is the textbook one
//! (FlashAttention's formulation):
//!
//! ```text
//! dV = Pᵀ dO      dP = dO vᵀ      D = rowsum(dO ⊙ O)      dS = P ⊙ (dP − D)
//! dQ = s · dS k   dK = s · dSᵀ q
//! ```
//!
//! It is a burn backend extension (`#[backend_extension]`, burn's supported route for custom
//! ops): the concrete backends run their own fused `attention` (flex's kernel on the CPU), which
//! is also what an autodiff tensor that needs no gradient gets; only a tracked call takes the path
//! above. The scale is applied once, inside the softmax going forward and inside `dS` going back
//! (so `dQ` and `dK` are plain products). The two steps between the products, `P` from the scores
//! and `s · dS` from `dP`, are extension methods too: burn ops on every backend, and on the CPU one
//! pass over the rows each, written in place (`attention_rows`). Checked against burn's
//! differentiated fallback in the tests below.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, TensorMetadata, backend_extension};
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Tensor, TensorData};

use super::attention_rows::{scaled_score_gradient_in_place, scaled_softmax_in_place};

/// The attention extension. `q`, `k`, `v`: `[batch, heads, tokens, head size]`; `scale` multiplies
/// the scores; `causal` masks position `j > i` (CLIP's text tower).
#[backend_extension(
    Flex,
    Autodiff,
    NdArray: cfg(feature = "ndarray"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait SoftmaxAttentionBackend: Backend {
    /// `softmax(q kᵀ · scale [+ causal mask]) v`: the backend's own fused attention.
    fn softmax_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        scale: f64,
        causal: bool,
    ) -> FloatTensor<Self> {
        let options = AttentionModuleOptions { scale: Some(scale), softcap: None, is_causal: causal };
        Self::attention(q, k, v, None, None, options)
    }

    /// `P = softmax(scores · scale [+ causal mask])` over the last dimension, for the tracked
    /// forward pass, which keeps `P` for the backward.
    fn attention_probabilities(scores: FloatTensor<Self>, scale: f64, causal: bool) -> FloatTensor<Self> {
        probabilities_by_ops::<Self>(scores, scale, causal)
    }

    /// The scores' gradient times the scale, `scale · P ⊙ (dP − rowsum(dO ⊙ O))`, from the
    /// probabilities `P`, their gradient `dP`, the output `O` and its gradient `dO`.
    fn attention_scaled_score_gradient(
        probabilities: FloatTensor<Self>,
        d_probabilities: FloatTensor<Self>,
        output: FloatTensor<Self>,
        d_out: FloatTensor<Self>,
        scale: f64,
    ) -> FloatTensor<Self> {
        scaled_score_gradient_by_ops::<Self>(probabilities, d_probabilities, output, d_out, scale)
    }
}

/// [`SoftmaxAttentionBackend::attention_probabilities`] as burn ops.
fn probabilities_by_ops<B: Backend>(scores: FloatTensor<B>, scale: f64, causal: bool) -> FloatTensor<B> {
    let mut scores = B::float_mul_scalar(scores, scale.into());
    if causal {
        let tokens = scores.shape()[3];
        let bias = causal_bias::<B>(tokens, &scores.device());
        scores = B::float_add(scores, bias);
    }
    B::softmax(scores, 3)
}

/// [`SoftmaxAttentionBackend::attention_scaled_score_gradient`] as burn ops.
fn scaled_score_gradient_by_ops<B: Backend>(
    probabilities: FloatTensor<B>,
    d_probabilities: FloatTensor<B>,
    output: FloatTensor<B>,
    d_out: FloatTensor<B>,
    scale: f64,
) -> FloatTensor<B> {
    // rowsum(dP ⊙ P) = rowsum(dO ⊙ O): the [.., tokens, head size] product instead of the
    // [.., tokens, tokens] one.
    let row_dot = B::float_sum_dim(B::float_mul(d_out, output), 3);
    let d_scores = B::float_mul(probabilities, B::float_sub(d_probabilities, row_dot));
    B::float_mul_scalar(d_scores, scale.into())
}

/// On the CPU, both run as one pass over the rows written in place (`attention_rows`).
impl SoftmaxAttentionBackend for burn::backend::Flex {
    fn attention_probabilities(scores: FloatTensor<Self>, scale: f64, causal: bool) -> FloatTensor<Self> {
        scaled_softmax_in_place(scores, scale as f32, causal)
            .unwrap_or_else(|scores| probabilities_by_ops::<Self>(scores, scale, causal))
    }

    fn attention_scaled_score_gradient(
        probabilities: FloatTensor<Self>,
        d_probabilities: FloatTensor<Self>,
        output: FloatTensor<Self>,
        d_out: FloatTensor<Self>,
        scale: f64,
    ) -> FloatTensor<Self> {
        scaled_score_gradient_in_place(&probabilities, d_probabilities, &output, &d_out, scale as f32)
            .unwrap_or_else(|d_p| {
                scaled_score_gradient_by_ops::<Self>(probabilities, d_p, output, d_out, scale)
            })
    }
}

#[cfg(feature = "ndarray")]
impl SoftmaxAttentionBackend for burn::backend::NdArray {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl SoftmaxAttentionBackend for burn::backend::Cube {}

/// What the backward pass needs: the inputs, the probabilities and the output.
#[derive(Debug, Clone)]
struct SavedAttention<B: Backend> {
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    probabilities: FloatTensor<B>,
    output: FloatTensor<B>,
    scale: f64,
}

#[derive(Debug)]
struct SoftmaxAttentionBackward;

impl<B: Backend + SoftmaxAttentionBackend> Backward<B, 3> for SoftmaxAttentionBackward {
    type State = SavedAttention<B>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [node_q, node_k, node_v] = ops.parents;
        let d_out = grads.consume::<B>(&ops.node);
        let SavedAttention { q, k, v, probabilities, output, scale } = ops.state;

        if let Some(node) = node_v {
            let d_v = B::float_matmul(B::float_swap_dims(probabilities.clone(), 2, 3), d_out.clone());
            grads.register::<B>(node.id, d_v);
        }
        if node_q.is_none() && node_k.is_none() {
            return;
        }
        let d_probabilities = B::float_matmul(d_out.clone(), B::float_swap_dims(v, 2, 3));
        let d_scores =
            B::attention_scaled_score_gradient(probabilities, d_probabilities, output, d_out, scale);
        if let Some(node) = node_q {
            grads.register::<B>(node.id, B::float_matmul(d_scores.clone(), k));
        }
        if let Some(node) = node_k {
            grads.register::<B>(node.id, B::float_matmul(B::float_swap_dims(d_scores, 2, 3), q));
        }
    }
}

/// `[1, 1, n, n]`: 0 where `j ≤ i`, −∞ above the diagonal.
fn causal_bias<B: Backend>(tokens: usize, device: &B::Device) -> FloatTensor<B> {
    let values: Vec<f32> = (0..tokens * tokens)
        .map(|index| if index % tokens > index / tokens { f32::NEG_INFINITY } else { 0.0 })
        .collect();
    B::float_from_data(TensorData::new(values, [1, 1, tokens, tokens]), device)
}

impl<B: Backend + SoftmaxAttentionBackend, C: CheckpointStrategy> SoftmaxAttentionBackend for Autodiff<B, C> {
    fn softmax_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        scale: f64,
        causal: bool,
    ) -> FloatTensor<Self> {
        match SoftmaxAttentionBackward.prepare::<C>([q.node(), k.node(), v.node()]).compute_bound().stateful()
        {
            OpsKind::Tracked(prep) => {
                let (q, k, v) = (q.into_primitive(), k.into_primitive(), v.into_primitive());
                let scores = B::float_matmul(q.clone(), B::float_swap_dims(k.clone(), 2, 3));
                let probabilities = B::attention_probabilities(scores, scale, causal);
                let output = B::float_matmul(probabilities.clone(), v.clone());
                let saved = SavedAttention { q, k, v, probabilities, output: output.clone(), scale };
                prep.finish(saved, output)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::softmax_attention(
                q.into_primitive(),
                k.into_primitive(),
                v.into_primitive(),
                scale,
                causal,
            )),
        }
    }
}

/// `softmax(q kᵀ / √dh [+ causal mask]) v` for `q, k, v: [batch, heads, tokens, dh]`, differentiable
/// through [`SoftmaxAttentionBackend`].
pub fn softmax_attention(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    let head_size = q.dims()[3];
    let scale = 1.0 / (head_size as f64).sqrt();
    let output = <Dispatch as SoftmaxAttentionBackend>::softmax_attention(
        q.into_dispatch(),
        k.into_dispatch(),
        v.into_dispatch(),
        scale,
        causal,
    );
    Tensor::from_dispatch(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;
    use burn::tensor::module::attention;

    use crate::layers::test_tensors::{max_abs_diff, pseudo_random};

    /// Forward and all three gradients against burn's own attention, differentiated op by op, for
    /// `[batch, tokens, heads, head size]` inputs seen as heads (`swap_dims(1, 2)`), as a model's
    /// projections are, so that the output's gradient arrives as a head view too.
    fn check(causal: bool, track: [bool; 3], [batch, tokens, heads, head_size]: [usize; 4]) {
        let device = Device::flex().autodiff();
        let shape = [batch, tokens, heads, head_size];
        let inputs: Vec<Tensor<4>> =
            (0..3).map(|i| pseudo_random(shape, 11 + i as u64, 1.0, &device)).collect();
        let weights = pseudo_random(shape, 99, 1.0, &device);
        let leaf = |i: usize| if track[i] { inputs[i].clone().require_grad() } else { inputs[i].clone() };
        let heads_of = |t: &Tensor<4>| t.clone().swap_dims(1, 2);

        let (q, k, v) = (leaf(0), leaf(1), leaf(2));
        let ours = softmax_attention(heads_of(&q), heads_of(&k), heads_of(&v), causal);
        let grads = (heads_of(&ours) * weights.clone()).sum().backward();
        let ours_grads: Vec<Option<Tensor<4>>> = [&q, &k, &v].iter().map(|t| t.grad(&grads)).collect();

        let (q2, k2, v2) = (leaf(0), leaf(1), leaf(2));
        let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: causal };
        let reference = attention(heads_of(&q2), heads_of(&k2), heads_of(&v2), None, None, options);
        let grads = (heads_of(&reference) * weights).sum().backward();
        let reference_grads: Vec<Option<Tensor<4>>> =
            [&q2, &k2, &v2].iter().map(|t| t.grad(&grads)).collect();

        let forward = max_abs_diff(ours.inner(), reference.inner());
        assert!(forward < 1e-6, "forward differs by {forward}");
        for (i, (a, b)) in ours_grads.into_iter().zip(reference_grads).enumerate() {
            match (a, b) {
                (Some(a), Some(b)) => {
                    let d = max_abs_diff(a, b);
                    assert!(d < 1e-5, "gradient of input {i} differs by {d} (causal {causal})");
                }
                (None, None) => assert!(!track[i]),
                (a, b) => panic!("input {i}: gradient present here {}, in burn {}", a.is_some(), b.is_some()),
            }
        }
    }

    /// Rows shorter than the kernels' lanes, and rows of two blocks of lanes and a remainder over
    /// several rayon tasks (`attention_rows`).
    const SHAPES: [[usize; 4]; 2] = [[2, 7, 3, 4], [2, 37, 3, 20]];

    #[test]
    fn matches_burns_differentiated_attention() {
        for shape in SHAPES {
            check(false, [true, true, true], shape);
            check(true, [true, true, true], shape);
        }
    }

    #[test]
    fn only_tracked_inputs_get_gradients() {
        for shape in SHAPES {
            check(false, [true, false, true], shape);
            check(true, [false, true, false], shape);
        }
    }

    #[test]
    fn untracked_call_is_the_backends_fused_attention() {
        let device = Device::flex();
        let (q, k, v) = (
            pseudo_random([1, 2, 5, 8], 1, 1.0, &device),
            pseudo_random([1, 2, 5, 8], 2, 1.0, &device),
            pseudo_random([1, 2, 5, 8], 3, 1.0, &device),
        );
        let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: false };
        let fused = attention(q.clone(), k.clone(), v.clone(), None, None, options);
        assert_eq!(softmax_attention(q, k, v, false).into_data(), fused.into_data());
    }
}
