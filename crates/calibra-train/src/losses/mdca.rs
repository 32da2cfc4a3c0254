//! MDCA — Multi-class Difference in Confidence and Accuracy (spec §A2; MDCA-Calibration
//! `solvers/loss.py::MDCA`).

use burn::tensor::{Tensor, activation};

use super::{Loss, LossBatch};
use crate::error::TrainError;

/// The MDCA regulariser, weighted: `β · (1/K) Σ_k | (1/B) Σ_i p_ik − (1/B) Σ_i 1[y_i = k] |`
/// over the mini-batch (not binned, not conditioned on correctness; classes absent from the batch
/// contribute with frequency 0). Registry name `mdca`, argument `beta` (default 1). It is a term to
/// add to a classification loss: `ce+mdca`, `focal+mdca`, `ls_offtarget+mdca`.
/// The gradient of `|x|` at 0 is 0 (as torch's `abs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mdca {
    beta: f64,
}

impl Mdca {
    /// β must be finite and `>= 0`.
    pub fn new(beta: f64) -> Result<Self, TrainError> {
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(TrainError::BadValue {
                loss: "mdca".into(),
                key: "beta".into(),
                value: beta.to_string(),
                expected: "a finite number >= 0".into(),
            });
        }
        Ok(Self { beta })
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }
}

impl Loss for Mdca {
    fn name(&self) -> String {
        "mdca".into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let labels = batch.class_labels("mdca")?;
        let (n, k) = (batch.n(), batch.k());
        let mut freq = vec![0.0; k];
        for &label in labels {
            freq[label] += 1.0;
        }
        let freq: Vec<f64> = freq.into_iter().map(|c| c / n as f64).collect();
        let freq = batch.host([1, k], freq);
        let mean_conf = activation::softmax(batch.logits().clone(), 1).mean_dim(0);
        Ok(mean_conf.sub(freq).abs().sum().mul_scalar(self.beta / k as f64))
    }
}
