//! Label smoothing in its two published forms (spec §A1).

use burn::tensor::Tensor;

use super::cross_entropy::cross_entropy;
use super::{Loss, LossBatch};
use crate::error::TrainError;

/// Which smoothed target distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LsKind {
    /// torch `CrossEntropyLoss(label_smoothing = ε)`: `q_k = (1−ε)·1[k=y] + ε/K` (mass ε spread
    /// over ALL K classes, the true one included). Registry name `ls`, argument `eps`.
    Torch,
    /// MDCA / MVC-Bench `LabelSmoothingLoss` / `label_smooth`: `q_y = 1−α`, `q_k = α/(K−1)` for
    /// `k ≠ y` (off-target only). Registry name `ls_offtarget`, argument `alpha`. Needs `K >= 2`.
    /// Equals the torch form with `ε = α·K/(K−1)`.
    OffTarget,
}

/// `L = (1/N) Σ_i Σ_k −q_ik log p_ik` with `q` from [`LsKind`]. Smoothing 0 gives cross-entropy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelSmoothing {
    kind: LsKind,
    smoothing: f64,
}

impl LabelSmoothing {
    /// `smoothing` is ε (torch form) or α (off-target form), in `[0, 1]`.
    pub fn new(kind: LsKind, smoothing: f64) -> Result<Self, TrainError> {
        let (loss, key) = match kind {
            LsKind::Torch => ("ls", "eps"),
            LsKind::OffTarget => ("ls_offtarget", "alpha"),
        };
        if !(0.0..=1.0).contains(&smoothing) {
            return Err(TrainError::BadValue {
                loss: loss.into(),
                key: key.into(),
                value: smoothing.to_string(),
                expected: "a number in [0, 1]".into(),
            });
        }
        Ok(Self { kind, smoothing })
    }

    /// The form.
    pub fn kind(&self) -> LsKind {
        self.kind
    }

    /// ε or α.
    pub fn smoothing(&self) -> f64 {
        self.smoothing
    }
}

impl Loss for LabelSmoothing {
    fn name(&self) -> String {
        match self.kind {
            LsKind::Torch => "ls".into(),
            LsKind::OffTarget => "ls_offtarget".into(),
        }
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let name = self.name();
        let one_hot = batch.one_hot(&name)?;
        let k = batch.k() as f64;
        let s = self.smoothing;
        let targets = match self.kind {
            // (1−ε)·onehot + ε/K
            LsKind::Torch => one_hot.mul_scalar(1.0 - s).add_scalar(s / k),
            // (1−α)·onehot + α/(K−1)·(1 − onehot) = onehot·(1 − α − α/(K−1)) + α/(K−1)
            LsKind::OffTarget => {
                batch.require_classes(&name, 2)?;
                let off = s / (k - 1.0);
                one_hot.mul_scalar(1.0 - s - off).add_scalar(off)
            }
        };
        Ok(cross_entropy(batch.logits().clone(), targets))
    }
}
