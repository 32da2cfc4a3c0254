//! Focal loss and FLSD-53 (spec §A4; torrvision/focal_calibration `FocalLoss`,
//! `FocalLossAdaptive`), with mean reduction.

use burn::tensor::{Tensor, activation};

use super::batch::to_host;
use super::cross_entropy::cross_entropy;
use super::{Loss, LossBatch};
use crate::error::TrainError;

/// `L_FL(γ) = (1/N) Σ_i −(1 − p_t,i)^γ · log p_t,i` with `p_t = softmax(z)_y` (no α class
/// weights). `log p_t` comes from `log_softmax`, `p_t = exp(log p_t)`. γ = 0 is cross-entropy
/// (evaluated as such: `x^0` has an undefined derivative at `p_t = 1`). Registry name `focal`,
/// argument `gamma` (default 3, the FL-3 of calibration papers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Focal {
    gamma: f64,
}

impl Focal {
    /// γ must be finite and `>= 0`.
    pub fn new(gamma: f64) -> Result<Self, TrainError> {
        if !(gamma.is_finite() && gamma >= 0.0) {
            return Err(TrainError::BadValue {
                loss: "focal".into(),
                key: "gamma".into(),
                value: gamma.to_string(),
                expected: "a finite number >= 0".into(),
            });
        }
        Ok(Self { gamma })
    }

    /// γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
}

/// `(log p_t [N,1], p_t [N,1])`.
fn log_pt(batch: &LossBatch, loss: &str) -> Result<(Tensor<2>, Tensor<2>), TrainError> {
    let one_hot = batch.one_hot(loss)?;
    let log_pt = activation::log_softmax(batch.logits().clone(), 1).mul(one_hot).sum_dim(1);
    let pt = log_pt.clone().exp();
    Ok((log_pt, pt))
}

impl Loss for Focal {
    fn name(&self) -> String {
        "focal".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        if self.gamma == 0.0 {
            return Ok(cross_entropy(batch.logits().clone(), batch.one_hot("focal")?));
        }
        let (log_pt, pt) = log_pt(batch, "focal")?;
        let weight = pt.neg().add_scalar(1.0).powf_scalar(self.gamma);
        Ok(weight.mul(log_pt).mean().neg())
    }
}

/// FLSD-53 (Mukhoti et al. 2020): focal loss with a per-sample γ chosen without gradient from the
/// current `p_t`: γ_i = 5 if `p_t,i < 0.2`, else 3 (the reference's table {0.2: 5, 0.5: 3} with
/// γ = 3 for `p_t >= 0.5`). `p_t` is read back to the host (as the reference's `.item()`), in the
/// logits' dtype. Registry name `flsd53`, no arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Flsd53;

impl Flsd53 {
    /// γ for a sample with true-class probability `pt`.
    pub fn gamma_for(pt: f64) -> f64 {
        if pt < 0.2 { 5.0 } else { 3.0 }
    }
}

impl Loss for Flsd53 {
    fn name(&self) -> String {
        "flsd53".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let (log_pt, pt) = log_pt(batch, "flsd53")?;
        let is_five: Vec<f64> =
            to_host(&pt).into_iter().map(|p| if Self::gamma_for(p) == 5.0 { 1.0 } else { 0.0 }).collect();
        let mask5 = batch.host([batch.n(), 1], is_five);
        let one_minus = pt.neg().add_scalar(1.0);
        let w3 = one_minus.clone().powf_scalar(3.0);
        let w5 = one_minus.powf_scalar(5.0);
        // w = w3 + mask5 · (w5 − w3)
        let weight = w3.clone().add(mask5.mul(w5.sub(w3)));
        Ok(weight.mul(log_pt).mean().neg())
    }
}
