//! SaLS — post-hoc zero-shot logit-range normalisation (Murugesan et al., ECCV 2024; spec §A5):
//! map each test logit row into the range of the same sample's zero-shot logits,
//!
//! ```text
//! ẑ_ik = (z_ik − lo(z_i)) / (hi(z_i) − lo(z_i) + ε) · (hi(z^zs_i) − lo(z^zs_i)) + lo(z^zs_i),  ε = 1e-12
//! q_i = softmax(ẑ_i)
//! ```
//!
//! (lo/hi = row min/max; ε is our guard for rows with all-equal logits, the reference has none.)
//! There is nothing to fit: "fitting" records the class names, and applying needs the zero-shot
//! logits of the same samples, matched by id. Both files must store logits. Order is preserved
//! within a row, so the argmax never changes.

use crate::CalibrateError;
use crate::calibrator::{Calibrator, FitReport, FittedCalibrator, FittedParams, Method};
use crate::input::{check_class_names, class_labels};
use calibra_predictions::{Predictions, ScoreKind};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Guard added to the logit range of a row.
pub const SALS_EPSILON: f64 = 1e-12;

/// SaLS (parameter-free).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sals;

/// SaLS has no fitted parameters; the struct records the guard used.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SalsParams {
    pub epsilon: f64,
}

/// The SaLS mapping of one row `z` into the range of `zero_shot` (written into `out`).
pub fn sals_row(z: &[f64], zero_shot: &[f64], out: &mut [f64]) {
    let (lo, hi) = min_max(z);
    let (zlo, zhi) = min_max(zero_shot);
    for (o, &v) in out.iter_mut().zip(z) {
        *o = (v - lo) / (hi - lo + SALS_EPSILON) * (zhi - zlo) + zlo;
    }
}

fn min_max(row: &[f64]) -> (f64, f64) {
    row.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

impl SalsParams {
    /// Calibrated probabilities of `predictions` given the zero-shot logits of the same ids.
    pub fn apply(
        &self,
        predictions: &Predictions,
        zero_shot: &Predictions,
    ) -> Result<Vec<f64>, CalibrateError> {
        let logits = predictions.logits().ok_or_else(|| {
            CalibrateError::InvalidInput("SaLS needs logit_* columns in the predictions to calibrate".into())
        })?;
        let zs = zero_shot.logits().ok_or_else(|| {
            CalibrateError::InvalidInput("SaLS needs logit_* columns in the zero-shot predictions".into())
        })?;
        check_class_names(predictions.class_names(), zero_shot.class_names())?;
        let k = predictions.num_classes();
        let index: HashMap<&str, usize> =
            zero_shot.ids().iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
        let mut scaled = vec![0.0; logits.len()];
        for (i, id) in predictions.ids().iter().enumerate() {
            let j = *index.get(id.as_str()).ok_or_else(|| {
                CalibrateError::InvalidInput(format!("id `{id}` has no row in the zero-shot predictions"))
            })?;
            sals_row(&logits[i * k..(i + 1) * k], &zs[j * k..(j + 1) * k], &mut scaled[i * k..(i + 1) * k]);
        }
        Ok(calibra_metrics::input::softmax_rows(&scaled, k))
    }
}

impl Calibrator for Sals {
    fn method(&self) -> Method {
        Method::Sals
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        class_labels(calibration, Method::Sals)?;
        if calibration.score_kind() != ScoreKind::Logit {
            return Err(CalibrateError::InvalidInput("SaLS needs logit_* columns".into()));
        }
        let report = FitReport { samples: calibration.len(), ..FitReport::default() };
        Ok(FittedCalibrator::new(
            Method::Sals,
            calibration,
            FittedParams::Sals(SalsParams { epsilon: SALS_EPSILON }),
            report,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_land_in_the_zero_shot_range_and_keep_their_order() {
        let mut out = [0.0; 3];
        sals_row(&[2.0, -1.0, 5.0], &[10.0, 12.0, 11.0], &mut out);
        // Exact by construction up to the 1e-12 guard: min → 10, max → 12, 2 → 10 + 3/6·2 = 11.
        assert!((out[1] - 10.0).abs() < 1e-11);
        assert!((out[2] - 12.0).abs() < 1e-11);
        assert!((out[0] - 11.0).abs() < 1e-11);
    }
}
