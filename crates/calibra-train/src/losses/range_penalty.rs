//! Zero-shot range penalty ("ECCV_Penalty", Murugesan et al. ECCV 2024; spec §A5; MVC-Bench
//! `eccv_penalty`, CLIPCalib `adapters_zs_pen.py`) for CLIP-style heads.

use burn::tensor::{Tensor, activation};

use super::cross_entropy::cross_entropy;
use super::{Loss, LossBatch};
use crate::error::TrainError;

/// Cross-entropy on the raw logits plus a penalty for leaving the zero-shot logits' row range:
///
/// ```text
/// L = CE(z, y) + λ · [ mean_{i,k} relu(z_ik − hi(z^zs_i)) + mean_{i,k} relu(lo(z^zs_i) − z_ik) ]
/// ```
///
/// λ (argument `lambda`) defaults to 10, hard-coded in both reference repos. `z^zs` is a
/// constant. Registry name `range_penalty`. Needs the batch's zero-shot logits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangePenalty {
    lambda: f64,
}

impl RangePenalty {
    /// `lambda` finite and `>= 0`.
    pub fn new(lambda: f64) -> Result<Self, TrainError> {
        if !(lambda.is_finite() && lambda >= 0.0) {
            return Err(TrainError::BadValue {
                loss: "range_penalty".into(),
                key: "lambda".into(),
                value: lambda.to_string(),
                expected: "a finite number >= 0".into(),
            });
        }
        Ok(Self { lambda })
    }

    /// λ.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
}

impl Loss for RangePenalty {
    fn name(&self) -> String {
        "range_penalty".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let one_hot = batch.one_hot("range_penalty")?;
        let zero_shot = batch.zero_shot_for("range_penalty")?;
        let logits = batch.logits().clone();
        let zs_lo = zero_shot.clone().min_dim(1);
        let zs_hi = zero_shot.max_dim(1);
        let above = activation::relu(logits.clone().sub(zs_hi)).mean();
        let below = activation::relu(zs_lo.sub(logits.clone())).mean();
        let ce = cross_entropy(logits, one_hot);
        Ok(ce.add(above.add(below).mul_scalar(self.lambda)))
    }

    fn needs_zero_shot(&self) -> bool {
        true
    }
}
