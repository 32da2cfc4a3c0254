//! Per-label calibration of multilabel predictions (CheXpert-style; spec §B5): one binary calibrator
//! per label column — Platt, isotonic, or a per-label temperature `σ(z_l / T_l)` — fitted on that
//! label's observed calibration pairs. Blank targets (`None`: unobserved, or uncertain under the
//! "U-ignore" policy) are masked per column. Labels are not mutually exclusive: NO renormalisation
//! across labels.
//!
//! Per-label scores: Platt reads the label logit `z_l` (default; `logit(clip(p, 1e-12, 1 − 1e-12))`
//! for stored probabilities) or the probability in parity mode; isotonic reads the probability
//! `σ(z_l)`; temperature reads the logit and fits β_l = 1/T_l by the bounded search of
//! [`crate::temperature`] on the two-column logits `(0, z_l)` (softmax of which is `σ(β z_l)`).
//!
//! Degenerate labels are flagged in the fit report: a label with one class among its observed rows
//! (`label-single-class`: Platt is driven by its prior target, isotonic returns a constant,
//! temperature ends at a bound), and a label with no observed row (`label-unobserved`: its
//! probabilities pass through unchanged).

use crate::CalibrateError;
use crate::calibrator::{Calibrator, FitReport, FitWarning, FittedCalibrator, FittedParams, Method};
use crate::isotonic::IsotonicFunction;
use crate::platt::{PlattScore, Sigmoid, fit_sigmoid};
use crate::temperature::{LOG_BETA_BOUNDS, at_bound_warning, fit_temperature};
use calibra_predictions::{Predictions, ScoreKind, Targets};
use serde::{Deserialize, Serialize};

/// Probability clip used to turn stored probabilities into label logits.
const LOGIT_CLIP: f64 = 1e-12;

/// The binary method used for every label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabelMethod {
    Platt,
    Isotonic,
    Temperature,
}

impl LabelMethod {
    fn method(self) -> Method {
        match self {
            LabelMethod::Platt => Method::Platt,
            LabelMethod::Isotonic => Method::Isotonic,
            LabelMethod::Temperature => Method::Temperature,
        }
    }
}

/// The calibrator of one label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LabelCalibrator {
    Platt(Sigmoid),
    Isotonic(IsotonicFunction),
    /// `σ(β z)`.
    Temperature {
        inverse_temperature: f64,
        temperature: f64,
    },
    /// No observed target: probabilities pass through.
    Identity,
}

/// Per-label calibration settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerLabelCalibration {
    pub label_method: LabelMethod,
    /// Platt only: the score the sigmoid reads.
    pub platt_score: PlattScore,
}

/// Fitted per-label calibrators, one per label column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerLabelParams {
    pub label_method: LabelMethod,
    pub platt_score: PlattScore,
    pub per_label: Vec<LabelCalibrator>,
}

fn logistic(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Label logits: stored logits, or `ln(p / (1 − p))` of probabilities clipped to [1e-12, 1 − 1e-12].
fn label_logits(p: &Predictions) -> Vec<f64> {
    match p.score_kind() {
        ScoreKind::Logit => p.scores().to_vec(),
        ScoreKind::Probability => p
            .scores()
            .iter()
            .map(|&q| {
                let q = q.clamp(LOGIT_CLIP, 1.0 - LOGIT_CLIP);
                (q / (1.0 - q)).ln()
            })
            .collect(),
    }
}

impl PerLabelParams {
    /// Calibrated per-label probabilities (row-major, each in [0, 1]).
    pub fn apply(&self, predictions: &Predictions) -> Vec<f64> {
        let l = predictions.num_classes();
        let logits = label_logits(predictions);
        let probs = predictions.probabilities();
        let mut out = vec![0.0; probs.len()];
        for (i, o) in out.iter_mut().enumerate() {
            *o = match &self.per_label[i % l] {
                LabelCalibrator::Platt(s) => s.predict(match self.platt_score {
                    PlattScore::Logit => logits[i],
                    PlattScore::Probability => probs[i],
                }),
                // Interpolation can round 1 ulp past [0, 1] (as scipy's does); keep a probability.
                LabelCalibrator::Isotonic(f) => f.predict(probs[i]).clamp(0.0, 1.0),
                LabelCalibrator::Temperature { inverse_temperature, .. } => {
                    logistic(inverse_temperature * logits[i])
                }
                LabelCalibrator::Identity => probs[i],
            }
        }
        out
    }

    pub(crate) fn validate(&self, l: usize) -> Result<(), String> {
        if self.per_label.len() != l {
            return Err(format!("{} label calibrators for {l} labels", self.per_label.len()));
        }
        Ok(())
    }
}

impl Calibrator for PerLabelCalibration {
    fn method(&self) -> Method {
        self.label_method.method()
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let method = self.method();
        let Targets::Labels(targets) = calibration.targets() else {
            return Err(CalibrateError::Unsupported {
                method: method.to_string(),
                why: "per-label calibration needs multilabel predictions (label_<name> columns)".into(),
            });
        };
        crate::input::check_min_samples(calibration, method)?;
        let l = calibration.num_classes();
        let logits = label_logits(calibration);
        let probs = calibration.probabilities();
        let mut per_label = Vec::with_capacity(l);
        let mut warnings = Vec::new();
        let (mut iterations, mut converged) = (0usize, true);
        for (c, name) in calibration.class_names().iter().enumerate() {
            let observed: Vec<(usize, bool)> =
                (0..calibration.len()).filter_map(|i| targets[i * l + c].map(|t| (i * l + c, t))).collect();
            if observed.is_empty() {
                warnings.push(FitWarning::new(
                    "label-unobserved",
                    format!(
                        "label `{name}` has no observed target in the calibration split: left uncalibrated"
                    ),
                ));
                per_label.push(LabelCalibrator::Identity);
                continue;
            }
            let positives = observed.iter().filter(|(_, t)| *t).count();
            if positives == 0 || positives == observed.len() {
                let what = match self.label_method {
                    LabelMethod::Platt => "its sigmoid is driven by Platt's prior target only",
                    LabelMethod::Isotonic => "its isotonic function is a constant",
                    LabelMethod::Temperature => "its temperature goes to a bound",
                };
                warnings.push(FitWarning::new(
                    "label-single-class",
                    format!(
                        "label `{name}` has only {} among its {} observed calibration targets: {what}",
                        if positives == 0 { "negatives" } else { "positives" },
                        observed.len()
                    ),
                ));
            }
            let y: Vec<bool> = observed.iter().map(|(_, t)| *t).collect();
            let fitted = match self.label_method {
                LabelMethod::Platt => {
                    let f: Vec<f64> = observed
                        .iter()
                        .map(|(i, _)| match self.platt_score {
                            PlattScore::Logit => logits[*i],
                            PlattScore::Probability => probs[*i],
                        })
                        .collect();
                    let fit = fit_sigmoid(&f, &y);
                    iterations += fit.iterations;
                    converged &= fit.converged;
                    LabelCalibrator::Platt(fit.sigmoid)
                }
                LabelMethod::Isotonic => {
                    let s: Vec<f64> = observed.iter().map(|(i, _)| probs[*i]).collect();
                    let t: Vec<f64> = y.iter().map(|&v| if v { 1.0 } else { 0.0 }).collect();
                    LabelCalibrator::Isotonic(IsotonicFunction::fit(&s, &t))
                }
                LabelMethod::Temperature => {
                    let two: Vec<f64> = observed.iter().flat_map(|(i, _)| [0.0, logits[*i]]).collect();
                    let classes: Vec<usize> = y.iter().map(|&v| usize::from(v)).collect();
                    let fit = fit_temperature(&two, 2, &classes, LOG_BETA_BOUNDS);
                    iterations += fit.evaluations;
                    converged &= fit.converged;
                    if fit.params.at_bound {
                        warnings.push(at_bound_warning(&fit.params, &format!("label `{name}`: ")));
                    }
                    LabelCalibrator::Temperature {
                        inverse_temperature: fit.params.inverse_temperature,
                        temperature: fit.params.temperature,
                    }
                }
            };
            per_label.push(fitted);
        }
        let params =
            PerLabelParams { label_method: self.label_method, platt_score: self.platt_score, per_label };
        let calibrated = params.apply(calibration);
        let report = FitReport {
            samples: calibration.len(),
            nll_before: Some(masked_binary_nll(&probs, targets)),
            nll_after: Some(masked_binary_nll(&calibrated, targets)),
            iterations: Some(iterations),
            converged: Some(converged),
            warnings,
            notes: Vec::new(),
        };
        Ok(FittedCalibrator::new(method, calibration, FittedParams::PerLabel(params), report))
    }
}

/// Mean binary NLL over observed cells, probabilities clipped to [eps, 1 − eps].
fn masked_binary_nll(probs: &[f64], targets: &[Option<bool>]) -> f64 {
    let eps = f64::EPSILON;
    let (mut total, mut count) = (0.0, 0usize);
    for (&p, t) in probs.iter().zip(targets) {
        if let Some(t) = t {
            let p = p.clamp(eps, 1.0 - eps);
            total -= if *t { p.ln() } else { (1.0 - p).ln() };
            count += 1;
        }
    }
    if count == 0 { f64::NAN } else { total / count as f64 }
}
