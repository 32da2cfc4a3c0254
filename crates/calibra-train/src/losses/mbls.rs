//! MbLS — margin-based label smoothing (spec §A3; by-liu/MbLS `LogitMarginL1`).

use burn::tensor::{Tensor, activation};

use super::cross_entropy::cross_entropy;
use super::{Loss, LossBatch};
use crate::error::TrainError;

/// `L = CE(z, y) + λ · (1/(N·K)) Σ_i Σ_k max(0, d_ik − m)`, `d_ik = max_j z_ij − z_ik`.
///
/// The mean runs over ALL N·K entries (the max entry contributes 0); the distance is to the
/// **max** logit, not the true-class one; the max's gradient goes to the arg-max logit.
/// Registry name `mbls`, arguments `margin` (m, default 10) and `lambda` (λ, the code's `alpha`,
/// default 0.1). λ scheduling of the reference is off in all paper results and not offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarginLabelSmoothing {
    margin: f64,
    lambda: f64,
}

impl MarginLabelSmoothing {
    /// `margin >= 0`, `lambda >= 0`, both finite.
    pub fn new(margin: f64, lambda: f64) -> Result<Self, TrainError> {
        for (key, value) in [("margin", margin), ("lambda", lambda)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(TrainError::BadValue {
                    loss: "mbls".into(),
                    key: key.into(),
                    value: value.to_string(),
                    expected: "a finite number >= 0".into(),
                });
            }
        }
        Ok(Self { margin, lambda })
    }

    /// m.
    pub fn margin(&self) -> f64 {
        self.margin
    }

    /// λ.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
}

impl Loss for MarginLabelSmoothing {
    fn name(&self) -> String {
        "mbls".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let logits = batch.logits().clone();
        let ce = cross_entropy(logits.clone(), batch.one_hot("mbls")?);
        let max = logits.clone().max_dim(1);
        let diff = max.sub(logits);
        let penalty = activation::relu(diff.sub_scalar(self.margin)).mean();
        Ok(ce.add(penalty.mul_scalar(self.lambda)))
    }
}
