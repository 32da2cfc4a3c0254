//! The autodiff half of a fused element-wise activation (`gelu.rs`, `quick_gelu.rs`): the forward
//! saves its input, and the backward hands that input and the incoming gradient to the backend's
//! own backward kernel.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend};

/// A backward kernel: `(input, incoming gradient) → gradient of the input`.
type BackwardKernel<B> = fn(FloatTensor<B>, FloatTensor<B>) -> FloatTensor<B>;

struct SavedInputBackward<B: Backend> {
    kernel: BackwardKernel<B>,
}

impl<B: Backend> core::fmt::Debug for SavedInputBackward<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SavedInputBackward")
    }
}

impl<B: Backend> Backward<B, 1> for SavedInputBackward<B> {
    type State = FloatTensor<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            grads.register::<B>(node.id, (self.kernel)(ops.state, grad));
        }
    }
}

/// `forward(x)` on the inner backend, recorded so that the gradient of `x` is `backward(x, grad)`.
pub(crate) fn element_wise_with_saved_input<B: Backend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    forward: fn(FloatTensor<B>) -> FloatTensor<B>,
    backward: BackwardKernel<B>,
) -> FloatTensor<Autodiff<B, C>> {
    match (SavedInputBackward { kernel: backward }).prepare::<C>([x.node()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let x = x.into_primitive();
            let y = forward(x.clone());
            prep.finish(x, y)
        }
        OpsKind::UnTracked(prep) => prep.finish(forward(x.into_primitive())),
    }
}
