//! The calibrator interface: `Calibrator::fit(calibration predictions) -> FittedCalibrator`, and
//! `FittedCalibrator::apply(predictions) -> calibrated predictions` (probability columns).
//!
//! A fitted calibrator is plain data (serde) so it can be saved next to a model as JSON with the
//! method, the format version, the class names it was fitted on, its parameters and its fit report.
//! Floats are written in shortest round-trip form and read back exactly, so fit → save → load → apply
//! gives bit-identical outputs.

use crate::CalibrateError;
use crate::affine::AffineParams;
use crate::input::{check_class_names, with_probabilities};
use crate::isotonic::IsotonicParams;
use crate::per_label::PerLabelParams;
use crate::platt::PlattParams;
use crate::sals::SalsParams;
use crate::temperature::TemperatureParams;
use calibra_predictions::{Predictions, Task, write_atomically};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// Version of the saved-calibrator JSON layout; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// Registry name of each post-hoc method (the `--method` values of `calibra calibrate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    Temperature,
    Vector,
    Matrix,
    Isotonic,
    Dirichlet,
    Platt,
    Sals,
    Histogram,
}

impl Method {
    /// Every method, in registry order.
    pub const ALL: [Method; 8] = [
        Method::Temperature,
        Method::Vector,
        Method::Matrix,
        Method::Isotonic,
        Method::Dirichlet,
        Method::Platt,
        Method::Sals,
        Method::Histogram,
    ];

    /// The registry name (`temperature`, `vector`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Temperature => "temperature",
            Method::Vector => "vector",
            Method::Matrix => "matrix",
            Method::Isotonic => "isotonic",
            Method::Dirichlet => "dirichlet",
            Method::Platt => "platt",
            Method::Sals => "sals",
            Method::Histogram => "histogram",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Method::ALL.into_iter().find(|m| m.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
            format!("unknown calibration method `{s}` (expected one of: {})", names.join(", "))
        })
    }
}

/// A calibration method with its hyper-parameters, ready to be fitted.
pub trait Calibrator {
    /// The registry name of the method.
    fn method(&self) -> Method;
    /// Fit on held-out calibration predictions (never on test data).
    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError>;
}

/// What happened during fitting that a user should know: optimiser outcome, bounds hit, classes
/// missing from the calibration split, labels with one class, ... Each warning is a named, stable
/// code plus a human sentence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    /// Number of calibration rows used.
    pub samples: usize,
    /// Calibration-set mean NLL before and after fitting (where the method defines it).
    pub nll_before: Option<f64>,
    pub nll_after: Option<f64>,
    /// Optimiser iterations (summed over labels/classes for per-label and one-vs-rest fits).
    pub iterations: Option<usize>,
    pub converged: Option<bool>,
    pub warnings: Vec<FitWarning>,
    /// Informative notes (e.g. the hyper-parameters a cross-validation selected).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A named warning. Stable codes: `temperature-at-bound`, `class-missing`, `not-converged`,
/// `label-single-class`, `label-unobserved`, `probability-input`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitWarning {
    pub code: String,
    pub message: String,
}

impl FitWarning {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        FitWarning { code: code.into(), message: message.into() }
    }
}

/// The parameters of each fitted method (tagged by `kind` in JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FittedParams {
    Temperature(TemperatureParams),
    Vector(AffineParams),
    Matrix(AffineParams),
    Isotonic(IsotonicParams),
    Dirichlet(AffineParams),
    Platt(PlattParams),
    PerLabel(PerLabelParams),
    Sals(SalsParams),
    Histogram(crate::histogram::HistogramParams),
}

/// A fitted calibrator: plain data, saved and loaded as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedCalibrator {
    pub method: Method,
    pub format_version: u32,
    pub calibra_version: String,
    /// The class (or label, for multilabel) names it was fitted on, in column order.
    pub class_names: Vec<String>,
    /// `binary`, `multiclass` or `multilabel`: the task it was fitted on.
    pub task: String,
    pub params: FittedParams,
    pub report: FitReport,
}

impl FittedCalibrator {
    /// Assemble a fitted calibrator for `calibration`'s classes and task.
    pub fn new(method: Method, calibration: &Predictions, params: FittedParams, report: FitReport) -> Self {
        FittedCalibrator {
            method,
            format_version: FORMAT_VERSION,
            calibra_version: env!("CARGO_PKG_VERSION").to_string(),
            class_names: calibration.class_names().to_vec(),
            task: calibration.task().as_str().to_string(),
            params,
            report,
        }
    }

    /// Calibrated predictions: same ids, classes and targets, `prob_*` columns.
    ///
    /// Errors: the predictions have other classes (or another order) than the calibrator was fitted
    /// on; a multilabel calibrator on single-label predictions or vice versa; SaLS without zero-shot
    /// logits (use [`Self::apply_with_zero_shot`]).
    pub fn apply(&self, predictions: &Predictions) -> Result<Predictions, CalibrateError> {
        self.check_compatible(predictions)?;
        let probabilities = match &self.params {
            FittedParams::Temperature(t) => t.apply(predictions),
            FittedParams::Vector(a) | FittedParams::Matrix(a) => a.apply_logits(predictions),
            FittedParams::Dirichlet(a) => a.apply_log_probabilities(predictions),
            FittedParams::Isotonic(i) => i.apply(predictions),
            FittedParams::Histogram(h) => h.apply(predictions),
            FittedParams::Platt(p) => p.apply(predictions),
            FittedParams::PerLabel(p) => p.apply(predictions),
            FittedParams::Sals(_) => {
                return Err(CalibrateError::InvalidInput(
                    "SaLS needs the zero-shot logits of the same samples (apply_with_zero_shot)".into(),
                ));
            }
        };
        with_probabilities(predictions, probabilities)
    }

    /// Apply a SaLS calibrator (spec §A5): `zero_shot` holds the zero-shot logits of the same rows
    /// (matched by id). Any other method ignores `zero_shot` and behaves like [`Self::apply`].
    pub fn apply_with_zero_shot(
        &self,
        predictions: &Predictions,
        zero_shot: &Predictions,
    ) -> Result<Predictions, CalibrateError> {
        match &self.params {
            FittedParams::Sals(s) => {
                self.check_compatible(predictions)?;
                let probabilities = s.apply(predictions, zero_shot)?;
                with_probabilities(predictions, probabilities)
            }
            _ => self.apply(predictions),
        }
    }

    fn check_compatible(&self, predictions: &Predictions) -> Result<(), CalibrateError> {
        check_class_names(&self.class_names, predictions.class_names())?;
        let multilabel_fit = self.task == Task::Multilabel.as_str();
        let multilabel_data = predictions.task() == Task::Multilabel;
        if multilabel_fit != multilabel_data {
            return Err(CalibrateError::InvalidInput(format!(
                "the calibrator was fitted on a {} task, the predictions are {}",
                self.task,
                predictions.task().as_str()
            )));
        }
        Ok(())
    }

    /// Pretty JSON of the calibrator.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a fitted calibrator is always serialisable")
    }

    /// Parse a calibrator saved by [`Self::to_json`]; `source` names the file in errors. Rejects other
    /// format versions and parameters of another method than `method`.
    pub fn from_json(text: &str, source: &str) -> Result<Self, CalibrateError> {
        let bad = |message: String| CalibrateError::BadFile { file: source.to_string(), message };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        match value.get("format_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(FORMAT_VERSION) => {}
            Some(v) => {
                return Err(bad(format!(
                    "calibrator format version {v}, this calibra reads version {FORMAT_VERSION}"
                )));
            }
            None => return Err(bad("missing key `format_version` (is this a calibra calibrator?)".into())),
        }
        let fitted: FittedCalibrator =
            serde_json::from_value(value).map_err(|e| bad(format!("not a calibra calibrator: {e}")))?;
        let consistent = matches!(
            (fitted.method, &fitted.params),
            (Method::Temperature, FittedParams::Temperature(_))
                | (Method::Vector, FittedParams::Vector(_))
                | (Method::Matrix, FittedParams::Matrix(_))
                | (Method::Isotonic, FittedParams::Isotonic(_))
                | (Method::Histogram, FittedParams::Histogram(_))
                | (Method::Dirichlet, FittedParams::Dirichlet(_))
                | (Method::Platt, FittedParams::Platt(_))
                | (Method::Sals, FittedParams::Sals(_))
                | (Method::Temperature | Method::Isotonic | Method::Platt, FittedParams::PerLabel(_))
        );
        if !consistent {
            return Err(bad(format!("key `params`: parameters do not belong to method `{}`", fitted.method)));
        }
        fitted.params.validate(fitted.class_names.len()).map_err(|m| bad(format!("key `params`: {m}")))?;
        Ok(fitted)
    }

    /// Save as JSON atomically (temp file + rename).
    pub fn save(&self, path: &Path) -> Result<(), CalibrateError> {
        let json = self.to_json();
        write_atomically(path, |w| {
            w.write_all(json.as_bytes())?;
            w.write_all(b"\n")
        })?;
        Ok(())
    }

    /// Load a calibrator saved by [`Self::save`].
    pub fn load(path: &Path) -> Result<Self, CalibrateError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| CalibrateError::BadFile {
            file: source.clone(),
            message: format!("cannot read: {e}"),
        })?;
        Self::from_json(&text, &source)
    }
}

impl FittedParams {
    /// Shape checks of loaded parameters against the number of classes `k`.
    fn validate(&self, k: usize) -> Result<(), String> {
        match self {
            FittedParams::Temperature(t) => t.validate(),
            FittedParams::Vector(a) | FittedParams::Matrix(a) | FittedParams::Dirichlet(a) => a.validate(k),
            FittedParams::Isotonic(i) => i.validate(k),
            FittedParams::Histogram(h) => h.validate(k),
            FittedParams::Platt(p) => p.validate(k),
            FittedParams::PerLabel(p) => p.validate(k),
            FittedParams::Sals(_) => Ok(()),
        }
    }
}
