//! Histogram binning (Zadrozny & Elkan 2001) exactly as netcal 1.4 `HistogramBinning(bins=10)`
//! (`netcal/binning/HistogramBinning.py`) computes it:
//!
//! - binary model on a score `s` and 0/1 target: `s` clipped to `[ε, 1 − ε]` (ε = f64 machine epsilon),
//!   `B` equal-width bins `linspace(0, 1, B + 1)`; each bin's value is the mean target of its
//!   calibration scores, binned LEFT-closed `[lo, hi)` (`scipy.stats.binned_statistic_dd`), and an
//!   empty bin gets its midpoint;
//! - predict: the bin of the (unclipped) score is found RIGHT-closed `(lo, hi]`
//!   (`np.digitize(right=True) − 1`, 0 → bin 0) — netcal's fit and transform disagree on edge values
//!   and calibra keeps both rules — then the value is clipped to [0, 1];
//! - K = 2: one model on the class-1 probability, `q = [1 − q₁, q₁]`; K > 2: one model per class
//!   (one-vs-rest on its probability column), rows divided by their sum. A class absent from the
//!   calibration split has no model in netcal (its column is 0); calibra stores an all-zero map and
//!   warns (`class-missing`); a row whose calibrated values are all 0 becomes uniform (netcal: NaN).

use crate::CalibrateError;
use crate::calibrator::{Calibrator, FitReport, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, missing_class_warnings};
use crate::isotonic::{apply_one_vs_rest, clipped_nll, one_vs_rest_columns};
use calibra_metrics::{Binning, bin_index};
use calibra_predictions::Predictions;
use serde::{Deserialize, Serialize};

/// netcal's default number of bins.
pub const HISTOGRAM_DEFAULT_BINS: usize = 10;

/// Histogram binning with `bins` equal-width bins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramBinning {
    pub bins: usize,
}

impl Default for HistogramBinning {
    fn default() -> Self {
        HistogramBinning { bins: HISTOGRAM_DEFAULT_BINS }
    }
}

/// Fitted bin values, one map of `bins` values per one-vs-rest column (K = 2: class 1 only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramParams {
    pub bins: usize,
    pub per_class: Vec<Vec<f64>>,
}

/// The bin map of one binary model.
pub fn fit_bin_map(scores: &[f64], targets: &[bool], bins: usize) -> Vec<f64> {
    let eps = f64::EPSILON;
    let (mut sum, mut count) = (vec![0.0; bins], vec![0usize; bins]);
    for (&s, &t) in scores.iter().zip(targets) {
        let b = bin_index(s.clamp(eps, 1.0 - eps), bins, Binning::LeftClosed);
        sum[b] += f64::from(u8::from(t));
        count[b] += 1;
    }
    let edge = |b: usize| if b >= bins { 1.0 } else { b as f64 * (1.0 / bins as f64) };
    (0..bins)
        .map(|b| if count[b] == 0 { 0.5 * (edge(b) + edge(b + 1)) } else { sum[b] / count[b] as f64 })
        .collect()
}

fn predict_bin(map: &[f64], s: f64) -> f64 {
    map[bin_index(s, map.len(), Binning::RightClosed)].clamp(0.0, 1.0)
}

impl HistogramParams {
    /// Calibrated probabilities of `predictions` (row-major).
    pub fn apply(&self, predictions: &Predictions) -> Vec<f64> {
        apply_one_vs_rest(predictions, &self.per_class, |map, p| predict_bin(map, p))
    }

    pub(crate) fn validate(&self, k: usize) -> Result<(), String> {
        let expected = one_vs_rest_columns(k).len();
        if self.per_class.len() != expected {
            return Err(format!("{} bin maps for {k} classes, expected {expected}", self.per_class.len()));
        }
        if self.bins == 0 || self.per_class.iter().any(|m| m.len() != self.bins) {
            return Err(format!("every bin map must hold {} values", self.bins));
        }
        if self.per_class.iter().flatten().any(|v| !v.is_finite()) {
            return Err("a bin value is not finite".into());
        }
        Ok(())
    }
}

impl Calibrator for HistogramBinning {
    fn method(&self) -> Method {
        Method::Histogram
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Histogram)?;
        check_min_samples(calibration, Method::Histogram)?;
        if self.bins == 0 {
            return Err(CalibrateError::InvalidInput("histogram binning needs at least 1 bin".into()));
        }
        let k = calibration.num_classes();
        let probs = calibration.probabilities();
        let counts = crate::input::class_counts(labels, k);
        let per_class = one_vs_rest_columns(k)
            .into_iter()
            .map(|c| {
                if k > 2 && counts[c] == 0 {
                    return vec![0.0; self.bins];
                }
                let scores: Vec<f64> = probs.chunks_exact(k).map(|row| row[c]).collect();
                let targets: Vec<bool> = labels.iter().map(|&y| y == c).collect();
                fit_bin_map(&scores, &targets, self.bins)
            })
            .collect();
        let warnings = missing_class_warnings(
            labels,
            calibration.class_names(),
            "it has no bin map (all zeros, as netcal leaves its column at 0), so it never gets probability",
        );
        let params = HistogramParams { bins: self.bins, per_class };
        let calibrated = params.apply(calibration);
        let report = FitReport {
            samples: calibration.len(),
            nll_before: Some(clipped_nll(&probs, k, labels)),
            nll_after: Some(clipped_nll(&calibrated, k, labels)),
            iterations: None,
            converged: Some(true),
            warnings,
            notes: Vec::new(),
        };
        Ok(FittedCalibrator::new(Method::Histogram, calibration, FittedParams::Histogram(params), report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_left_closed_when_fitting_and_right_closed_when_predicting() {
        // B = 2: 0.5 falls in bin 1 when fitting (left-closed) but is read from bin 0 (right-closed).
        let map = fit_bin_map(&[0.5, 0.5, 0.2], &[true, true, false], 2);
        assert_eq!(map, vec![0.0, 1.0]);
        assert_eq!(predict_bin(&map, 0.5), 0.0);
        assert_eq!(predict_bin(&map, 0.51), 1.0);
        // An empty bin gets its midpoint.
        assert_eq!(fit_bin_map(&[0.9], &[true], 2), vec![0.25, 1.0]);
    }
}
