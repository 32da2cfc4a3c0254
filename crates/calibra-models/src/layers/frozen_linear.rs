//! `x · W (+ b)` for a weight that takes no gradient, whose backward reuses a row-major `Wᵀ` kept
//! between steps instead of copying `Wᵀ` on every call.
//!
//! The input gradient of a linear layer is `dX = dY · Wᵀ`. burn forms `Wᵀ` as a transposed view,
//! and burn-flex's matmul copies such a column-major right operand row-major before gemm packs it
//! (vendor/README.md, "matmul"): a pass over the whole weight on every backward call, 150 MB a step
//! for the 72 projections of a ViT-B/16-shaped CLIP text tower, where a CoOp step multiplies only
//! 385 rows by each weight. A frozen weight does not change between steps, so [`TransposeCache`]
//! keeps the copy. The products are computed from the same values in the same layout, so the
//! gradients are bit for bit those of burn's own `linear` (tested below).
//!
//! The cache is sound without any invalidation call: it holds a clone of the weight it was made
//! from, so that weight's storage is shared and flex never writes into it in place (its writes are
//! copy-on-write); a weight that changed is a different storage, and the next call replaces the copy.
//! Only the CPU backend uses it; the others run burn's `linear_x_backward`.

// burn's deprecated `NdArray` backend is one of the extension's targets when the `ndarray` feature is on.
#![cfg_attr(feature = "ndarray", allow(deprecated))]

use std::sync::{Arc, Mutex};

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::{FloatTensorOps, ModuleOps};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, Flex, backend_extension};
use burn::tensor::Tensor;

/// A frozen weight's transpose, row-major, made on the first backward call and reused while the
/// weight is the same tensor. Cloning shares the cache.
#[derive(Clone, Default)]
pub struct TransposeCache(Arc<Mutex<Option<CachedTranspose>>>);

struct CachedTranspose {
    /// The weight the copy was made from (holding it keeps its storage from being written in place).
    source: FlexTensor,
    transposed: FlexTensor,
}

impl std::fmt::Debug for TransposeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransposeCache").field("held", &self.is_held()).finish()
    }
}

/// Whether `a` and `b` view the same storage in the same layout.
fn same_tensor(a: &FlexTensor, b: &FlexTensor) -> bool {
    let (x, y) = (a.bytes(), b.bytes());
    x.as_ptr() == y.as_ptr() && x.len() == y.len() && a.layout() == b.layout() && a.dtype() == b.dtype()
}

impl TransposeCache {
    /// `weightᵀ` (`[out, in]` for a `[in, out]` weight), row-major.
    fn transposed(&self, weight: &FlexTensor) -> FlexTensor {
        let mut held = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(c) = held.as_ref().filter(|c| same_tensor(&c.source, weight)) {
            return c.transposed.clone();
        }
        let transposed = weight.transpose(0, 1).to_contiguous();
        *held = Some(CachedTranspose { source: weight.clone(), transposed: transposed.clone() });
        transposed
    }

    /// Whether a copy is held (for tests and memory accounting).
    pub fn is_held(&self) -> bool {
        self.0.lock().map(|c| c.is_some()).unwrap_or(false)
    }
}

/// The frozen-linear extension: `x: [rows, in]`, `weight: [in, out]` (the bias is added outside: its
/// gradient to `x` is the identity).
#[backend_extension(
    Flex,
    Autodiff,
    NdArray: cfg(feature = "ndarray"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait FrozenLinearBackend: Backend {
    /// `x · weight`: burn's own `linear`.
    fn frozen_linear(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        cache: TransposeCache,
    ) -> FloatTensor<Self> {
        let _ = cache;
        Self::linear(x, weight, None)
    }

    /// `grad · weightᵀ`: burn's `linear_x_backward`, or on the CPU the product with the cached copy.
    fn frozen_linear_x_backward(
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        cache: TransposeCache,
    ) -> FloatTensor<Self> {
        let _ = cache;
        Self::linear_x_backward(weight, grad)
    }
}

/// The most rows of an input gradient for which the copy is kept. The copy is one pass over the
/// weight; the product is `rows` multiply-adds per weight element, so the copy's share of the backward
/// product falls as `1/rows`. On 2 AVX-512 cores it was a third of the products' time at 385 rows (a
/// CoOp step) and out of sight at 6,304 (a ViT-B/16 LoRA step, batch 32, whose time did not move while
/// its peak memory grew by 300 MiB of copies): below this many rows the copy pays for its memory.
pub const MAX_ROWS_FOR_CACHED_TRANSPOSE: usize = 2048;

impl FrozenLinearBackend for Flex {
    fn frozen_linear_x_backward(weight: FlexTensor, grad: FlexTensor, cache: TransposeCache) -> FlexTensor {
        let (w_shape, g_shape) = (weight.layout().shape(), grad.layout().shape());
        if w_shape.num_dims() != 2 || g_shape.num_dims() != 2 || g_shape[0] > MAX_ROWS_FOR_CACHED_TRANSPOSE {
            return Self::linear_x_backward(weight, grad);
        }
        Self::float_matmul(grad, cache.transposed(&weight))
    }
}

#[cfg(feature = "ndarray")]
impl FrozenLinearBackend for burn::backend::NdArray {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl FrozenLinearBackend for burn::backend::Cube {}

#[derive(Debug)]
struct FrozenLinearBackward;

impl<B: Backend + FrozenLinearBackend> Backward<B, 1> for FrozenLinearBackward {
    type State = (FloatTensor<B>, TransposeCache);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (weight, cache) = ops.state;
            grads.register::<B>(node.id, B::frozen_linear_x_backward(weight, grad, cache));
        }
    }
}

impl<B: Backend + FrozenLinearBackend, C: CheckpointStrategy> FrozenLinearBackend for Autodiff<B, C> {
    fn frozen_linear(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        cache: TransposeCache,
    ) -> FloatTensor<Self> {
        let weight = weight.into_primitive();
        match FrozenLinearBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let y = B::frozen_linear(x.into_primitive(), weight.clone(), cache.clone());
                prep.finish((weight, cache), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::frozen_linear(x.into_primitive(), weight, cache)),
        }
    }
}

/// `x · weight (+ bias)` for `x: [rows, in]` and a `weight: [in, out]` (and bias) that take no
/// gradient: differentiable in `x` only, through [`FrozenLinearBackend`]. The caller makes sure the
/// weight and bias are frozen; their gradients are not computed here.
pub fn frozen_linear(
    x: Tensor<2>,
    weight: Tensor<2>,
    bias: Option<Tensor<1>>,
    cache: &TransposeCache,
) -> Tensor<2> {
    let y = <Dispatch as FrozenLinearBackend>::frozen_linear(
        x.into_dispatch(),
        weight.into_dispatch(),
        cache.clone(),
    );
    let y: Tensor<2> = Tensor::from_dispatch(y);
    match bias {
        // burn's `linear` adds the bias as a `[1, out]` row, as here.
        Some(bias) => y + bias.unsqueeze_dim(0),
        None => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::module::linear;
    use burn::tensor::{Device, TensorData};

    use crate::layers::test_tensors::pseudo_random;

    fn bits(t: Tensor<2>) -> Vec<u32> {
        t.into_data().try_to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect()
    }

    /// Output and input gradient bit for bit those of burn's `linear`, over two steps (the second
    /// from the cache), and a weight that changes is picked up.
    #[test]
    fn gradients_equal_burns_linear_and_the_cache_follows_the_weight() {
        let device = Device::flex().autodiff();
        let (rows, d_in, d_out) = (7, 33, 19);
        let cache = TransposeCache::default();
        let x_data = pseudo_random([rows, d_in], 1, 1.0, &device).into_data();
        let mut w: Tensor<2> = pseudo_random([d_in, d_out], 2, 0.3, &device);
        let b: Tensor<1> = pseudo_random([d_out], 3, 0.1, &device);
        let upstream: Tensor<2> = pseudo_random([rows, d_out], 4, 1.0, &device);
        for step in 0..3 {
            if step == 2 {
                // A changed weight (as a LoRA merge makes it): a new storage, so a new copy.
                w = w.clone() * 1.5;
            }
            let x: Tensor<2> = Tensor::from_data(x_data.clone(), &device).require_grad();
            let y = frozen_linear(x.clone(), w.clone(), Some(b.clone()), &cache);
            let grads = (y.clone() * upstream.clone()).sum().backward();
            let dx = x.grad(&grads).unwrap();

            let x_ref: Tensor<2> = Tensor::from_data(x_data.clone(), &device).require_grad();
            let y_ref = linear(x_ref.clone(), w.clone(), Some(b.clone()));
            let grads_ref = (y_ref.clone() * upstream.clone()).sum().backward();
            let dx_ref = x_ref.grad(&grads_ref).unwrap();
            assert_eq!(bits(y.inner()), bits(y_ref.inner()), "step {step}: output");
            assert_eq!(bits(dx), bits(dx_ref), "step {step}: input gradient");
            assert!(cache.is_held());
        }
    }

    #[test]
    fn an_untracked_call_makes_no_copy() {
        let device = Device::flex();
        let cache = TransposeCache::default();
        let x: Tensor<2> = Tensor::from_data(TensorData::new(vec![1.0f32, 2.0], [1, 2]), &device);
        let w: Tensor<2> = Tensor::from_data(TensorData::new(vec![1.0f32, 0.0, 0.0, 1.0], [2, 2]), &device);
        let y = frozen_linear(x, w, None, &cache);
        assert_eq!(y.into_data().try_to_vec::<f32>().unwrap(), [1.0, 2.0]);
        assert!(!cache.is_held());
    }

    /// CoOp's case: the weights are constants on the plain device, the input is tracked.
    #[test]
    fn a_plain_weight_with_a_tracked_input_matches_burns_linear() {
        let plain = Device::flex();
        let device = plain.clone().autodiff();
        let cache = TransposeCache::default();
        let w: Tensor<2> = pseudo_random([12, 9], 5, 0.3, &plain);
        let b: Tensor<1> = pseudo_random([9], 6, 0.1, &plain);
        let x_data = pseudo_random([4, 12], 7, 1.0, &plain).into_data();
        let run = |frozen: bool| {
            let x: Tensor<2> = Tensor::from_data(x_data.clone(), &device).require_grad();
            let y = if frozen {
                frozen_linear(x.clone(), w.clone(), Some(b.clone()), &cache)
            } else {
                linear(x.clone(), w.clone(), Some(b.clone()))
            };
            let grads = (y.clone() * y.clone()).sum().backward();
            (bits(y.inner()), bits(x.grad(&grads).unwrap()))
        };
        assert_eq!(run(true), run(false));
        assert!(cache.is_held());
    }

    /// A gradient with more rows than the threshold takes burn's path and keeps no copy.
    #[test]
    fn many_rows_take_burns_path_without_a_copy() {
        let device = Device::flex().autodiff();
        let cache = TransposeCache::default();
        let rows = MAX_ROWS_FOR_CACHED_TRANSPOSE + 1;
        let w: Tensor<2> = pseudo_random([6, 5], 8, 0.3, &device);
        let x_data = pseudo_random([rows, 6], 9, 1.0, &device).into_data();
        let x: Tensor<2> = Tensor::from_data(x_data.clone(), &device).require_grad();
        let grads = frozen_linear(x.clone(), w.clone(), None, &cache).sum().backward();
        let x_ref: Tensor<2> = Tensor::from_data(x_data, &device).require_grad();
        let grads_ref = linear(x_ref.clone(), w, None).sum().backward();
        assert_eq!(bits(x.grad(&grads).unwrap()), bits(x_ref.grad(&grads_ref).unwrap()));
        assert!(!cache.is_held());
    }
}
