//! `calibra calibrate` with a calibrator: fit one on a calibration file (or load a saved one) and
//! apply it to a predictions file. Nothing is written here: the caller saves the calibrator and
//! writes the calibrated predictions once everything has succeeded, so a failure never leaves a
//! partial file.
//!
//! Settings come as the command takes them ([`FitSettings`]: `--reg-lambda`, `--reg-mu`,
//! `--regulariser`, `--platt-score`, `--folds`), and errors about them name those flags.
//! Diagnostics (warnings of the fit, the fitted parameters) go to the caller's `log`, in order.

use std::path::{Path, PathBuf};

use calibra_predictions::{Predictions, PredictionsError, read_predictions};
use thiserror::Error;

use crate::{
    CalibrateError, CalibratorOptions, FittedCalibrator, FittedParams, Method, PlattScore, Regulariser,
    calibrator_for,
};

/// Why `calibra calibrate` could not fit or apply a calibrator; names the file or flag.
#[derive(Debug, Error)]
pub enum CalibrationJobError {
    #[error("--reg-lambda and --reg-mu must be finite and ≥ 0")]
    BadRegulariser,
    #[error("--reg-lambda applies to matrix and dirichlet only, not to {0}")]
    RegulariserNotApplicable(Method),
    /// Two files without the same classes in the same order (the message names both and their classes).
    #[error("{0}")]
    ClassesDiffer(String),
    #[error("sals needs --zero-shot ZERO_SHOT_PREDICTIONS for {0}")]
    ZeroShotMissing(String),
    #[error("fitting {method} on {file}")]
    Fit { method: Method, file: String, source: CalibrateError },
    #[error("applying the {method} calibrator to {file}")]
    Apply { method: Method, file: String, source: CalibrateError },
    #[error(transparent)]
    Calibrate(#[from] CalibrateError),
    #[error(transparent)]
    Predictions(#[from] PredictionsError),
}

/// The regulariser family `--reg-lambda` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegulariserFamily {
    /// Off-diagonal and intercept regularisation (Kull et al. 2019).
    Odir,
    L2,
}

/// How to fit a calibrator, as `calibra calibrate --method M --fit FILE` takes it.
#[derive(Debug, Clone)]
pub struct FitSettings {
    pub method: Method,
    /// The calibration predictions (a held-out split).
    pub calibration: PathBuf,
    /// Regulariser strength λ (matrix and Dirichlet only).
    pub reg_lambda: Option<f64>,
    /// ODIR intercept strength μ (default λ).
    pub reg_mu: Option<f64>,
    pub regulariser: RegulariserFamily,
    pub platt_score: PlattScore,
    /// Dirichlet cross-validation folds.
    pub folds: Option<usize>,
}

impl FitSettings {
    /// The calibrator options these settings make (ODIR's μ defaults to λ).
    pub fn options(&self) -> CalibratorOptions {
        let regulariser = self.reg_lambda.map(|lambda| match self.regulariser {
            RegulariserFamily::Odir => {
                Regulariser::Odir { lambda, mu: self.reg_mu.unwrap_or(lambda), normalised: true }
            }
            RegulariserFamily::L2 => Regulariser::L2 { lambda, normalised: true },
        });
        CalibratorOptions { regulariser, platt_score: self.platt_score, folds: self.folds }
    }

    fn check(&self) -> Result<(), CalibrationJobError> {
        if let Some(lambda) = self.reg_lambda {
            let bad = |x: f64| !(x.is_finite() && x >= 0.0);
            if bad(lambda) || self.reg_mu.is_some_and(bad) {
                return Err(CalibrationJobError::BadRegulariser);
            }
            if !matches!(self.method, Method::Matrix | Method::Dirichlet) {
                return Err(CalibrationJobError::RegulariserNotApplicable(self.method));
            }
        }
        Ok(())
    }
}

/// Where the calibrator comes from.
#[derive(Debug, Clone)]
pub enum CalibratorSource {
    Fit(FitSettings),
    /// A calibrator saved with [`FittedCalibrator::save`].
    Load(PathBuf),
}

/// One `calibra calibrate` with a calibrator.
#[derive(Debug, Clone)]
pub struct CalibrationJob {
    pub source: CalibratorSource,
    /// The predictions to calibrate, if any.
    pub apply: Option<PathBuf>,
    /// SaLS: the zero-shot predictions of the rows of `apply`.
    pub zero_shot: Option<PathBuf>,
}

/// What a [`CalibrationJob`] computed, not yet written anywhere.
#[derive(Debug, Clone)]
pub struct CalibrationOutcome {
    pub fitted: FittedCalibrator,
    /// The predictions of `apply`, before and after calibration.
    pub applied: Option<(Predictions, Predictions)>,
}

impl CalibrationJob {
    /// Read the predictions to calibrate, fit (or load) the calibrator and apply it. Diagnostics go
    /// to `log`, one line each.
    pub fn run(&self, log: &mut dyn FnMut(&str)) -> Result<CalibrationOutcome, CalibrationJobError> {
        let target = match &self.apply {
            Some(path) => Some((path.as_path(), read_predictions(path)?)),
            None => None,
        };
        let fitted = match &self.source {
            CalibratorSource::Load(path) => FittedCalibrator::load(path)?,
            CalibratorSource::Fit(settings) => fit(settings, target.as_ref(), log)?,
        };
        let applied = match target {
            Some((path, predictions)) => {
                let calibrated = self.apply_to(&fitted, path, &predictions)?;
                Some((predictions, calibrated))
            }
            None => None,
        };
        Ok(CalibrationOutcome { fitted, applied })
    }

    fn apply_to(
        &self,
        fitted: &FittedCalibrator,
        path: &Path,
        predictions: &Predictions,
    ) -> Result<Predictions, CalibrationJobError> {
        let calibrated = match (&fitted.params, &self.zero_shot) {
            (FittedParams::Sals(_), Some(zs_path)) => {
                let zero_shot = read_predictions(zs_path)?;
                fitted.apply_with_zero_shot(predictions, &zero_shot)
            }
            (FittedParams::Sals(_), None) => {
                return Err(CalibrationJobError::ZeroShotMissing(path.display().to_string()));
            }
            _ => fitted.apply(predictions),
        };
        calibrated.map_err(|source| CalibrationJobError::Apply {
            method: fitted.method,
            file: path.display().to_string(),
            source,
        })
    }
}

fn fit(
    settings: &FitSettings,
    target: Option<&(&Path, Predictions)>,
    log: &mut dyn FnMut(&str),
) -> Result<FittedCalibrator, CalibrationJobError> {
    settings.check()?;
    let method = settings.method;
    let cal_path = settings.calibration.as_path();
    let calibration = read_predictions(cal_path)?;
    if let Some((path, predictions)) = target {
        // Compare headers before fitting: a mismatch is the user's mistake, not worth a long fit.
        check_same_classes(cal_path, &calibration, path, predictions)?;
        if calibration.score_kind() != predictions.score_kind() {
            log(&format!(
                "warning[score-kind-mismatch]: {} stores {}* columns but {} stores {}* columns; logits are \
                 taken as ln(p + 1e-12) where only probabilities exist",
                cal_path.display(),
                calibration.score_kind().prefix(),
                path.display(),
                predictions.score_kind().prefix()
            ));
        }
    }
    let calibrator = calibrator_for(method, calibration.task(), &settings.options())?;
    let fitted = calibrator.fit(&calibration).map_err(|source| CalibrationJobError::Fit {
        method,
        file: cal_path.display().to_string(),
        source,
    })?;
    for w in &fitted.report.warnings {
        log(&format!("warning[{}]: {}: {}", w.code, cal_path.display(), w.message));
    }
    for note in &fitted.report.notes {
        log(&format!("note: {note}"));
    }
    log(&format!("fitted {method} on {} calibration samples: {}", fitted.report.samples, describe(&fitted)));
    Ok(fitted)
}

/// The same classes in the same order and the same task, or an error saying which file has what.
pub fn check_same_classes(
    cal_path: &Path,
    cal: &Predictions,
    path: &Path,
    p: &Predictions,
) -> Result<(), CalibrationJobError> {
    if cal.class_names() == p.class_names() && cal.task() == p.task() {
        return Ok(());
    }
    let mut a = cal.class_names().to_vec();
    let mut b = p.class_names().to_vec();
    a.sort();
    b.sort();
    let what = if cal.task() != p.task() {
        format!("tasks differ ({} vs {})", cal.task().as_str(), p.task().as_str())
    } else if a == b {
        "the same classes in a different column order".to_string()
    } else {
        "different class sets".to_string()
    };
    Err(CalibrationJobError::ClassesDiffer(format!(
        "{} has classes [{}] but {} has [{}]: {what}; calibration and predictions must have the same classes in \
         the same order",
        cal_path.display(),
        cal.class_names().join(", "),
        path.display(),
        p.class_names().join(", ")
    )))
}

/// A one-line summary of the fitted parameters.
fn describe(f: &FittedCalibrator) -> String {
    let number = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |v| format!("{v:.6}"));
    match &f.params {
        FittedParams::Temperature(t) => {
            format!("T = {:.6}{}", t.temperature, if t.at_bound { " (at a bound of the search)" } else { "" })
        }
        FittedParams::Dirichlet(a) | FittedParams::Matrix(a) => format!("regulariser {:?}", a.regulariser),
        _ => format!("mean NLL {} → {}", number(f.report.nll_before), number(f.report.nll_after)),
    }
}
