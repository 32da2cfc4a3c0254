//! Multilabel binary cross-entropy with uncertain / blank labels masked out.

use burn::tensor::{Tensor, activation};

use super::{Loss, LossBatch, TargetKind, Targets};
use crate::error::TrainError;

/// `L = Σ_{ik} w_ik · ℓ(z_ik, y_ik) / Σ_{ik} w_ik`, `w` = 1 for observed labels (1 / 0) and 0 for
/// uncertain (-1) or blank ones, with the stable
/// `ℓ(z, y) = max(z, 0) − z·y + log(1 + exp(−|z|))` (= torch `binary_cross_entropy_with_logits`).
/// The mean runs over observed entries only; a batch with no observed entry gives 0 (and zero
/// gradient) rather than torch's 0/0. Registry name `bce_masked`, no arguments; needs a batch
/// built with `LossBatch::multilabel`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MaskedBce;

impl Loss for MaskedBce {
    fn name(&self) -> String {
        "bce_masked".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let Targets::Multilabel(targets) = batch.targets() else {
            return Err(TrainError::WrongTargets {
                loss: "bce_masked".into(),
                expected: "multilabel".into(),
            });
        };
        let z = batch.logits().clone();
        let softplus_neg_abs = z.clone().abs().neg().exp().log1p();
        let per_entry = activation::relu(z.clone()).sub(z.mul(targets.labels.clone())).add(softplus_neg_abs);
        let total = per_entry.mul(targets.mask.clone()).sum();
        Ok(total.mul_scalar(1.0 / targets.observed.max(1) as f64))
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Multilabel
    }
}
