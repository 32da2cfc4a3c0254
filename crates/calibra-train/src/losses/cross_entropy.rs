//! Cross-entropy on softmax logits (torch `F.cross_entropy`, mean reduction).

use burn::tensor::{Tensor, activation};

use super::{Loss, LossBatch};
use crate::error::TrainError;

/// `L_CE = (1/N) Σ_i −log softmax(z_i)_{y_i}`, computed from `log_softmax` (max-subtracted), so it
/// is finite for any finite logits. Registry name `ce`, no arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CrossEntropy;

impl Loss for CrossEntropy {
    fn name(&self) -> String {
        "ce".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let one_hot = batch.one_hot("ce")?;
        Ok(cross_entropy(batch.logits().clone(), one_hot))
    }
}

/// `−(1/N) Σ_i Σ_k t_ik log softmax(z_i)_k` for soft or one-hot targets `t` `[N, K]`.
pub(crate) fn cross_entropy(logits: Tensor<2>, targets: Tensor<2>) -> Tensor<1> {
    activation::log_softmax(logits, 1).mul(targets).sum_dim(1).mean().neg()
}
