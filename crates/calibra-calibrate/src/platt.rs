//! Platt / sigmoid scaling (spec §B5), exactly sklearn's `_sigmoid_calibration` objective:
//!
//! ```text
//! P(y = 1 | f) = 1 / (1 + exp(A·f + B))              (A < 0 normally)
//! t_i = (N₊ + 1)/(N₊ + 2) if y_i = 1 else 1/(N₋ + 2)  (Platt's prior-corrected targets)
//! minimise Σ_i −[t_i log P_i + (1 − t_i) log(1 − P_i)],  start A = 0, B = log((N₋+1)/(N₊+1))
//! if max|f| ≥ 30: fit on f / max|f| and divide A by max|f| afterwards
//! ```
//!
//! sklearn stops L-BFGS-B at `gtol = 1e-6` on the summed loss; we minimise the same convex objective
//! (divided by N for conditioning) to a gradient of 1e-12, i.e. the exact minimiser, which sklearn's
//! iterate approaches within its tolerance.
//!
//! Scores f ([`PlattScore`]): `logit` (default) uses the log-odds `z₁ − z₀` for binary tasks and the
//! class logit `z_k` for one-vs-rest multiclass (log(p + 1e-12) when the file stores probabilities);
//! `probability` uses the probability column itself — sklearn's behaviour for estimators without a
//! `decision_function`, offered for parity. Multiclass: one sigmoid per class, then the isotonic
//! one-vs-rest combination (renormalise, uniform on zero rows; K = 2: `q₀ = 1 − q₁`).
//! A class with no calibration sample still gets a finite fit driven by the prior targets
//! (warning `class-missing`).

use crate::CalibrateError;
use crate::calibrator::{Calibrator, FitReport, FitWarning, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, logits_view, missing_class_warnings};
use crate::isotonic::{clipped_nll, combine_one_vs_rest, one_vs_rest_columns};
use crate::optim::{LbfgsOptions, minimize_lbfgs};
use calibra_predictions::Predictions;
use serde::{Deserialize, Serialize};

/// sklearn's `max_abs_prediction_threshold`.
pub const RESCALE_THRESHOLD: f64 = 30.0;

/// Which score a sigmoid is fitted on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlattScore {
    /// Log-odds `z₁ − z₀` (binary) or class logit `z_k` (one-vs-rest).
    #[default]
    Logit,
    /// The probability column (sklearn parity for `predict_proba`-only estimators).
    Probability,
}

/// A fitted sigmoid `P = 1 / (1 + exp(a·f + b))`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sigmoid {
    pub a: f64,
    pub b: f64,
}

impl Sigmoid {
    /// `expit(−(a f + b))`, computed without overflow.
    pub fn predict(&self, f: f64) -> f64 {
        let t = -(self.a * f + self.b);
        if t >= 0.0 {
            1.0 / (1.0 + (-t).exp())
        } else {
            let e = t.exp();
            e / (1.0 + e)
        }
    }
}

/// Result of [`fit_sigmoid`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SigmoidFit {
    pub sigmoid: Sigmoid,
    pub iterations: usize,
    pub converged: bool,
}

/// `log(1 + e^r)` without overflow.
fn softplus(r: f64) -> f64 {
    r.max(0.0) + (-r.abs()).exp().ln_1p()
}

fn logistic(r: f64) -> f64 {
    if r >= 0.0 {
        1.0 / (1.0 + (-r).exp())
    } else {
        let e = r.exp();
        e / (1.0 + e)
    }
}

/// Fit a Platt sigmoid on scores `f` and binary outcomes `y` (sklearn `_sigmoid_calibration`).
///
/// # Panics
/// If `f` and `y` differ in length or are empty.
pub fn fit_sigmoid(f: &[f64], y: &[bool]) -> SigmoidFit {
    assert_eq!(f.len(), y.len(), "scores and outcomes differ in length");
    assert!(!f.is_empty(), "Platt scaling needs at least one sample");
    let max_abs = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let scale = if max_abs >= RESCALE_THRESHOLD { max_abs } else { 1.0 };
    let scores: Vec<f64> = f.iter().map(|v| v / scale).collect();
    let prior1 = y.iter().filter(|&&v| v).count() as f64;
    let prior0 = y.len() as f64 - prior1;
    let t_pos = (prior1 + 1.0) / (prior1 + 2.0);
    let t_neg = 1.0 / (prior0 + 2.0);
    let targets: Vec<f64> = y.iter().map(|&v| if v { t_pos } else { t_neg }).collect();
    let n = f.len() as f64;
    // Mean of HalfBinomialLoss(t, raw), raw = −(A f + B): softplus(raw) − t·raw.
    let objective = |ab: &[f64], grad: &mut [f64]| -> f64 {
        let (mut loss, mut ga, mut gb) = (0.0, 0.0, 0.0);
        for (&s, &t) in scores.iter().zip(&targets) {
            let raw = -(ab[0] * s + ab[1]);
            loss += softplus(raw) - t * raw;
            let g = logistic(raw) - t; // d loss / d raw
            ga -= g * s;
            gb -= g;
        }
        grad[0] = ga / n;
        grad[1] = gb / n;
        loss / n
    };
    let start = [0.0, ((prior0 + 1.0) / (prior1 + 1.0)).ln()];
    let options =
        LbfgsOptions { gradient_tolerance: 1e-12, function_tolerance: 0.0, ..LbfgsOptions::default() };
    let result = minimize_lbfgs(objective, &start, &options);
    SigmoidFit {
        sigmoid: Sigmoid { a: result.x[0] / scale, b: result.x[1] },
        iterations: result.iterations,
        converged: result.converged || result.gradient_norm <= 1e-9,
    }
}

/// Platt scaling of single-label predictions (binary, or one-vs-rest multiclass).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PlattScaling {
    pub score: PlattScore,
}

/// Fitted sigmoids: one for class 1 when K = 2, one per class otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlattParams {
    pub score: PlattScore,
    pub per_class: Vec<Sigmoid>,
}

/// The score matrix the sigmoids see: one column per calibrated class (see [`one_vs_rest_columns`]).
fn platt_scores(predictions: &Predictions, score: PlattScore) -> Vec<f64> {
    let k = predictions.num_classes();
    let source = match score {
        PlattScore::Logit => logits_view(predictions),
        PlattScore::Probability => predictions.probabilities(),
    };
    if k == 2 {
        source
            .chunks_exact(2)
            .map(|row| match score {
                PlattScore::Logit => row[1] - row[0],
                PlattScore::Probability => row[1],
            })
            .collect()
    } else {
        source
    }
}

impl PlattParams {
    /// Calibrated probabilities of `predictions` (row-major).
    pub fn apply(&self, predictions: &Predictions) -> Vec<f64> {
        let k = predictions.num_classes();
        let columns = one_vs_rest_columns(k).len();
        let scores = platt_scores(predictions, self.score);
        let calibrated: Vec<f64> = scores
            .chunks_exact(columns)
            .flat_map(|row| row.iter().zip(&self.per_class).map(|(&f, s)| s.predict(f)))
            .collect();
        combine_one_vs_rest(calibrated, k)
    }

    pub(crate) fn validate(&self, k: usize) -> Result<(), String> {
        let expected = one_vs_rest_columns(k).len();
        if self.per_class.len() != expected {
            return Err(format!("{} sigmoids for {k} classes, expected {expected}", self.per_class.len()));
        }
        if self.per_class.iter().any(|s| !(s.a.is_finite() && s.b.is_finite())) {
            return Err("non-finite sigmoid parameter".into());
        }
        Ok(())
    }
}

impl Calibrator for PlattScaling {
    fn method(&self) -> Method {
        Method::Platt
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Platt)?;
        check_min_samples(calibration, Method::Platt)?;
        let k = calibration.num_classes();
        let columns = one_vs_rest_columns(k);
        let scores = platt_scores(calibration, self.score);
        let mut per_class = Vec::with_capacity(columns.len());
        let (mut iterations, mut converged) = (0, true);
        for (j, &c) in columns.iter().enumerate() {
            let f: Vec<f64> = scores.chunks_exact(columns.len()).map(|row| row[j]).collect();
            let y: Vec<bool> = labels.iter().map(|&l| l == c).collect();
            let fit = fit_sigmoid(&f, &y);
            iterations += fit.iterations;
            converged &= fit.converged;
            per_class.push(fit.sigmoid);
        }
        let mut warnings = missing_class_warnings(
            labels,
            calibration.class_names(),
            "its sigmoid is fitted on negatives only, driven by Platt's prior target 1/(N+2), so it gets \
             small but non-zero probabilities",
        );
        if !converged {
            warnings.push(FitWarning::new(
                "not-converged",
                "a Platt fit stopped before its gradient reached 1e-9",
            ));
        }
        let params = PlattParams { score: self.score, per_class };
        let calibrated = params.apply(calibration);
        let report = FitReport {
            samples: calibration.len(),
            nll_before: Some(clipped_nll(&calibration.probabilities(), k, labels)),
            nll_after: Some(clipped_nll(&calibrated, k, labels)),
            iterations: Some(iterations),
            converged: Some(converged),
            warnings,
            notes: Vec::new(),
        };
        Ok(FittedCalibrator::new(Method::Platt, calibration, FittedParams::Platt(params), report))
    }
}
