//! ZS-Norm ("ECCV_ZS", Murugesan et al. ECCV 2024; spec §A5; MVC-Bench `eccv_zs`, CLIPCalib
//! `adapters_zs_norm.py`) for CLIP-style heads.

use burn::tensor::Tensor;

use super::cross_entropy::cross_entropy;
use super::{Loss, LossBatch};
use crate::error::TrainError;

/// Normalise the adapted logits into the zero-shot logits' per-row range, then cross-entropy:
///
/// ```text
/// ẑ_ik = (z_ik − lo(z_i)) / (hi(z_i) − lo(z_i) + ε) · (hi(z^zs_i) − lo(z^zs_i)) + lo(z^zs_i)
/// L    = CE(ẑ, y)
/// ```
///
/// `lo`/`hi` are the row min/max; the gradient flows through them (min/max subgradients); `z^zs`
/// is a constant. ε (argument `eps`, default 1e-12, the spec's guard; the reference has none)
/// keeps a row of equal logits finite. Registry name `zs_norm`. Needs the batch's zero-shot logits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZsNorm {
    eps: f64,
}

impl ZsNorm {
    /// `eps` finite and `>= 0`.
    pub fn new(eps: f64) -> Result<Self, TrainError> {
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(TrainError::BadValue {
                loss: "zs_norm".into(),
                key: "eps".into(),
                value: eps.to_string(),
                expected: "a finite number >= 0".into(),
            });
        }
        Ok(Self { eps })
    }

    /// ε.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// The normalised logits ẑ `[N, K]` (also usable post hoc: SaLS).
    pub fn normalise(&self, logits: Tensor<2>, zero_shot: Tensor<2>) -> Tensor<2> {
        let lo = logits.clone().min_dim(1);
        let hi = logits.clone().max_dim(1);
        let zs_lo = zero_shot.clone().min_dim(1);
        let zs_hi = zero_shot.max_dim(1);
        let scaled = logits.sub(lo.clone()).div(hi.sub(lo).add_scalar(self.eps));
        scaled.mul(zs_hi.sub(zs_lo.clone())).add(zs_lo)
    }
}

impl Loss for ZsNorm {
    fn name(&self) -> String {
        "zs_norm".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let one_hot = batch.one_hot("zs_norm")?;
        let zero_shot = batch.zero_shot_for("zs_norm")?;
        Ok(cross_entropy(self.normalise(batch.logits().clone(), zero_shot), one_hot))
    }

    fn needs_zero_shot(&self) -> bool {
        true
    }
}
