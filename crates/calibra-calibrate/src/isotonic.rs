//! Isotonic regression calibration (spec §B3), exactly as sklearn's
//! `IsotonicRegression(out_of_bounds="clip")` and `CalibratedClassifierCV(method="isotonic")`.
//!
//! Binary fit on scores s and 0/1 targets t (unit weights):
//! 1. sort by (s, t);
//! 2. merge tied scores into one point (mean target, summed weight) — sklearn's `_make_unique`, which
//!    starts a new point when `s − s_first_of_group ≥ 1e-15` (`finfo(float64).resolution`), so
//!    0.6 and 0.6 + 1e-12 stay distinct;
//! 3. weighted pool-adjacent-violators → non-decreasing fitted values;
//! 4. keep only the points where the fitted value changes (first and last always kept);
//! 5. predict: clip s to [min, max] of the kept points, then piecewise-LINEAR interpolation
//!    (`scipy.interpolate.interp1d(kind="linear")`, same index rule and arithmetic); a single kept
//!    point gives a constant.
//!
//! Multiclass one-vs-rest on the probability columns: `q̃_k = iso_k(p_k)`, `q = q̃ / Σ q̃`, uniform
//! `1/K` where `Σ q̃ = 0`; K = 2: only class 1 is calibrated and `q_0 = 1 − q_1`. Values in
//! (1, 1 + 1e-5] are set to 1 as sklearn does. A class absent from the calibration split gets an
//! all-zero function, hence probability 0 after renormalisation (warning `class-missing`).

use crate::CalibrateError;
use crate::calibrator::{Calibrator, FitReport, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, missing_class_warnings};
use calibra_predictions::Predictions;
use serde::{Deserialize, Serialize};

/// sklearn `_make_unique`'s tie threshold: `np.finfo(np.float64).resolution`.
const TIE_RESOLUTION: f64 = 1e-15;

/// A fitted non-decreasing piecewise-linear function (sklearn's `X_thresholds_`, `y_thresholds_`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsotonicFunction {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl IsotonicFunction {
    /// Fit on `scores` and `targets` with unit weights (steps 1–4 of the module doc).
    ///
    /// # Panics
    /// If the inputs are empty or of different lengths.
    pub fn fit(scores: &[f64], targets: &[f64]) -> Self {
        assert_eq!(scores.len(), targets.len(), "scores and targets differ in length");
        assert!(!scores.is_empty(), "isotonic regression needs at least one point");
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(targets[a].total_cmp(&targets[b])));
        // _make_unique: average targets of (near-)equal scores.
        let mut xs: Vec<f64> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        let mut ws: Vec<f64> = Vec::new();
        let mut current_x = scores[order[0]];
        let (mut current_y, mut current_w) = (0.0, 0.0);
        for &i in &order {
            let x = scores[i];
            if x - current_x >= TIE_RESOLUTION {
                xs.push(current_x);
                ws.push(current_w);
                ys.push(current_y / current_w);
                current_x = x;
                current_w = 1.0;
                current_y = targets[i];
            } else {
                current_w += 1.0;
                current_y += targets[i];
            }
        }
        xs.push(current_x);
        ws.push(current_w);
        ys.push(current_y / current_w);
        pool_adjacent_violators(&mut ys, &mut ws);
        // Trim points whose value equals both neighbours.
        let n = ys.len();
        let keep: Vec<bool> =
            (0..n).map(|i| i == 0 || i == n - 1 || ys[i] != ys[i - 1] || ys[i] != ys[i + 1]).collect();
        let x = xs.iter().zip(&keep).filter(|(_, k)| **k).map(|(v, _)| *v).collect();
        let y = ys.iter().zip(&keep).filter(|(_, k)| **k).map(|(v, _)| *v).collect();
        IsotonicFunction { x, y }
    }

    /// Clip to the fitted range, then linear interpolation (scipy `interp1d._call_linear`).
    pub fn predict(&self, s: f64) -> f64 {
        let n = self.x.len();
        if n == 1 {
            return self.y[0];
        }
        let s = s.clamp(self.x[0], self.x[n - 1]);
        // searchsorted(x, s, side="left"), clipped to [1, n − 1].
        let idx = self.x.partition_point(|&v| v < s).clamp(1, n - 1);
        let (lo, hi) = (idx - 1, idx);
        let slope = (self.y[hi] - self.y[lo]) / (self.x[hi] - self.x[lo]);
        slope * (s - self.x[lo]) + self.y[lo]
    }

    fn validate(&self) -> Result<(), String> {
        if self.x.is_empty() || self.x.len() != self.y.len() {
            return Err(format!("isotonic function with {} x and {} y values", self.x.len(), self.y.len()));
        }
        let increasing = |w: &[f64], strict: bool| match w[0].partial_cmp(&w[1]) {
            Some(std::cmp::Ordering::Less) => true,
            Some(std::cmp::Ordering::Equal) => !strict,
            _ => false,
        };
        if !self.x.windows(2).all(|w| increasing(w, true)) || !self.y.windows(2).all(|w| increasing(w, false))
        {
            return Err("isotonic function is not increasing".into());
        }
        Ok(())
    }
}

/// Weighted pool-adjacent-violators in place (sklearn `_inplace_contiguous_isotonic_regression`):
/// afterwards `y` is the non-decreasing least-squares fit; `w` is scratch.
pub fn pool_adjacent_violators(y: &mut [f64], w: &mut [f64]) {
    let n = y.len();
    if n == 0 {
        return;
    }
    // target[i] = j and target[j] = i for an active block [i..=j].
    let mut target: Vec<usize> = (0..n).collect();
    let mut i = 0usize;
    while i < n {
        let mut k = target[i] + 1;
        if k == n {
            break;
        }
        if y[i] < y[k] {
            i = k;
            continue;
        }
        let mut sum_wy = w[i] * y[i];
        let mut sum_w = w[i];
        loop {
            let prev_y = y[k];
            sum_wy += w[k] * y[k];
            sum_w += w[k];
            k = target[k] + 1;
            if k == n || prev_y < y[k] {
                y[i] = sum_wy / sum_w;
                w[i] = sum_w;
                target[i] = k - 1;
                target[k - 1] = i;
                if i > 0 {
                    i = target[i - 1];
                }
                break;
            }
        }
    }
    let mut i = 0usize;
    while i < n {
        let k = target[i] + 1;
        let v = y[i];
        y[i + 1..k].iter_mut().for_each(|t| *t = v);
        i = k;
    }
}

/// One-vs-rest isotonic calibration of single-label predictions (fitted on probabilities).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IsotonicCalibration;

/// The fitted functions: one per class, or only class 1's for K = 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsotonicParams {
    pub per_class: Vec<IsotonicFunction>,
}

/// Combine one-vs-rest calibrated scores row by row as sklearn's `_CalibratedClassifier`:
/// K = 2 → `[1 − q̃_1, q̃_1]` from a single column; else renormalise, uniform on zero rows; then
/// values in (1, 1 + 1e-5] become 1. One deliberate difference: sklearn sets a class-1 value that
/// rounding pushed just above 1 back to 1 only after computing `q_0 = 1 − q_1`, leaving `q_0 ≈ −2e-16`;
/// we clamp `q̃_1` to [0, 1] first so every output is a valid probability (a ≤ 2.3e-16 difference).
pub fn combine_one_vs_rest(calibrated: Vec<f64>, k: usize) -> Vec<f64> {
    let mut out = if k == 2 {
        calibrated
            .iter()
            .flat_map(|&q1| {
                let q1 = q1.clamp(0.0, 1.0);
                [1.0 - q1, q1]
            })
            .collect::<Vec<f64>>()
    } else {
        let mut out = calibrated;
        for row in out.chunks_exact_mut(k) {
            let sum: f64 = row.iter().sum();
            if sum != 0.0 {
                row.iter_mut().for_each(|v| *v /= sum);
            } else {
                row.iter_mut().for_each(|v| *v = 1.0 / k as f64);
            }
        }
        out
    };
    out.iter_mut().filter(|v| **v > 1.0 && **v <= 1.0 + 1e-5).for_each(|v| *v = 1.0);
    out
}

/// One-vs-rest calibration of `predictions`' probabilities: `map(&per_class[j], p)` calibrates the
/// probability `p` of the `j`-th column of [`one_vs_rest_columns`], and the columns are combined with
/// [`combine_one_vs_rest`]. Shared by the isotonic and histogram-binning calibrators.
pub(crate) fn apply_one_vs_rest<M>(
    predictions: &Predictions,
    per_class: &[M],
    map: impl Fn(&M, f64) -> f64,
) -> Vec<f64> {
    let k = predictions.num_classes();
    let probs = predictions.probabilities();
    let columns = one_vs_rest_columns(k);
    let mut calibrated = vec![0.0; predictions.len() * columns.len()];
    for (row, out) in probs.chunks_exact(k).zip(calibrated.chunks_exact_mut(columns.len())) {
        for ((o, &c), m) in out.iter_mut().zip(&columns).zip(per_class) {
            *o = map(m, row[c]);
        }
    }
    combine_one_vs_rest(calibrated, k)
}

/// The columns calibrated one-vs-rest: class 1 only for K = 2, every class otherwise.
pub fn one_vs_rest_columns(k: usize) -> Vec<usize> {
    if k == 2 { vec![1] } else { (0..k).collect() }
}

impl IsotonicParams {
    /// Calibrated probabilities of `predictions` (row-major).
    pub fn apply(&self, predictions: &Predictions) -> Vec<f64> {
        apply_one_vs_rest(predictions, &self.per_class, IsotonicFunction::predict)
    }

    pub(crate) fn validate(&self, k: usize) -> Result<(), String> {
        let expected = one_vs_rest_columns(k).len();
        if self.per_class.len() != expected {
            return Err(format!(
                "{} isotonic functions for {k} classes, expected {expected}",
                self.per_class.len()
            ));
        }
        self.per_class.iter().try_for_each(IsotonicFunction::validate)
    }
}

impl Calibrator for IsotonicCalibration {
    fn method(&self) -> Method {
        Method::Isotonic
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Isotonic)?;
        check_min_samples(calibration, Method::Isotonic)?;
        let k = calibration.num_classes();
        let probs = calibration.probabilities();
        let per_class = one_vs_rest_columns(k)
            .into_iter()
            .map(|c| {
                let scores: Vec<f64> = probs.chunks_exact(k).map(|row| row[c]).collect();
                let targets: Vec<f64> = labels.iter().map(|&y| if y == c { 1.0 } else { 0.0 }).collect();
                IsotonicFunction::fit(&scores, &targets)
            })
            .collect();
        let warnings = missing_class_warnings(
            labels,
            calibration.class_names(),
            "its isotonic function is identically 0, so calibrated predictions never give it probability \
             (rows where every class maps to 0 become uniform)",
        );
        let params = IsotonicParams { per_class };
        let calibrated = params.apply(calibration);
        let report = FitReport {
            samples: calibration.len(),
            nll_before: calibra_metrics::input::validate_probabilities(&probs, k)
                .ok()
                .map(|_| clipped_nll(&probs, k, labels)),
            nll_after: Some(clipped_nll(&calibrated, k, labels)),
            iterations: None,
            converged: Some(true),
            warnings,
            notes: Vec::new(),
        };
        Ok(FittedCalibrator::new(Method::Isotonic, calibration, FittedParams::Isotonic(params), report))
    }
}

/// Mean NLL with probabilities clipped to [eps, 1 − eps] (sklearn `log_loss`), for fit reports of
/// methods that can output exact 0.
pub(crate) fn clipped_nll(probs: &[f64], k: usize, labels: &[usize]) -> f64 {
    let eps = f64::EPSILON;
    let total: f64 =
        probs.chunks_exact(k).zip(labels).map(|(row, &y)| -row[y].clamp(eps, 1.0 - eps).ln()).sum();
    total / labels.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_interpolation_between_thresholds() {
        // Spec §B3 [run]: fit X=[.1,.2,.3,.4], y=[0,1,0,1] → predict(.15) = 0.25. PAV pools the middle
        // pair to 0.5, so thresholds are (.1,0), (.2,.5), (.3,.5), (.4,1) and .15 is halfway to .5.
        let f = IsotonicFunction::fit(&[0.1, 0.2, 0.3, 0.4], &[0.0, 1.0, 0.0, 1.0]);
        assert!((f.predict(0.15) - 0.25).abs() < 1e-15);
        assert_eq!(f.predict(-5.0), 0.0);
        assert_eq!(f.predict(5.0), 1.0);
    }

    #[test]
    fn ties_are_merged_but_near_ties_are_not() {
        let f = IsotonicFunction::fit(&[0.6, 0.6, 0.6 + 1e-12], &[0.0, 1.0, 1.0]);
        assert_eq!(f.x.len(), 2);
        assert_eq!(f.y, vec![0.5, 1.0]);
    }

    #[test]
    fn a_single_unique_score_gives_a_constant() {
        let f = IsotonicFunction::fit(&[0.3, 0.3, 0.3], &[1.0, 0.0, 1.0]);
        assert_eq!(f.predict(0.9), 2.0 / 3.0);
    }
}
