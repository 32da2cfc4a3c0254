//! Shared input handling of the calibrators: the class labels of a single-label table, the minimum
//! sample count, the "class missing from the calibration split" warning, and the logit/log-probability
//! views each method is fitted on.

use crate::CalibrateError;
use crate::calibrator::{FitWarning, Method};
use calibra_predictions::{Predictions, ScoreKind, Targets};

/// Fewest calibration rows any method accepts.
pub const MIN_SAMPLES: usize = 2;

/// The offset sklearn adds before taking the log of probabilities it treats as logits
/// (`sklearn.calibration._convert_to_logits`, `eps=1e-12`).
pub const SKLEARN_LOG_EPS: f64 = 1e-12;

/// The class index of every row of a single-label table; an error for a multilabel table.
pub fn class_labels(p: &Predictions, method: Method) -> Result<&[usize], CalibrateError> {
    match p.targets() {
        Targets::Classes(labels) => Ok(labels),
        Targets::Labels(_) => Err(CalibrateError::Unsupported {
            method: method.to_string(),
            why: "the predictions are multilabel (label_<name> columns); use a per-label method \
                  (platt, isotonic or temperature), which calibrates each label separately"
                .into(),
        }),
    }
}

/// Refuse calibration sets with fewer than [`MIN_SAMPLES`] rows.
pub fn check_min_samples(p: &Predictions, method: Method) -> Result<(), CalibrateError> {
    if p.len() < MIN_SAMPLES {
        return Err(CalibrateError::InvalidInput(format!(
            "`{method}` needs at least {MIN_SAMPLES} calibration samples, the calibration file has {}",
            p.len()
        )));
    }
    Ok(())
}

/// Number of calibration rows of each class.
pub fn class_counts(labels: &[usize], k: usize) -> Vec<usize> {
    let mut counts = vec![0usize; k];
    labels.iter().for_each(|&y| counts[y] += 1);
    counts
}

/// A `class-missing` warning for each class with no calibration row; `consequence` says what the
/// method does with such a class.
pub fn missing_class_warnings(
    labels: &[usize],
    class_names: &[String],
    consequence: &str,
) -> Vec<FitWarning> {
    class_counts(labels, class_names.len())
        .iter()
        .zip(class_names)
        .filter(|(c, _)| **c == 0)
        .map(|(_, name)| FitWarning {
            code: "class-missing".into(),
            message: format!("class `{name}` has no sample in the calibration split: {consequence}"),
        })
        .collect()
}

/// The logits of a single-label table: stored logits as they are, or `ln(p + 1e-12)` for stored
/// probabilities (sklearn's `_convert_to_logits`). Softmax of either gives back the model's
/// probabilities (up to the 1e-12 offset).
pub fn logits_view(p: &Predictions) -> Vec<f64> {
    match p.score_kind() {
        ScoreKind::Logit => p.scores().to_vec(),
        ScoreKind::Probability => p.scores().iter().map(|&q| (q + SKLEARN_LOG_EPS).ln()).collect(),
    }
}

/// `ln(clip(p, tiny, 1 − tiny))` of the probabilities (dirichletcal's `clip_for_log`, tiny =
/// `f64::MIN_POSITIVE`); probabilities come from a row softmax when the table stores logits.
pub fn log_probabilities_view(p: &Predictions) -> Vec<f64> {
    let tiny = f64::MIN_POSITIVE;
    p.probabilities().iter().map(|&q| q.clamp(tiny, 1.0 - tiny).ln()).collect()
}

/// Check that a fitted calibrator is applied to the classes it was fitted on, in the same order.
pub fn check_class_names(fitted: &[String], found: &[String]) -> Result<(), CalibrateError> {
    if fitted != found {
        return Err(CalibrateError::ClassMismatch { fitted: fitted.join(", "), found: found.join(", ") });
    }
    Ok(())
}

/// Row-major probabilities as a table of the same rows: `preds` with `prob_*` columns.
pub fn with_probabilities(p: &Predictions, probabilities: Vec<f64>) -> Result<Predictions, CalibrateError> {
    Ok(p.with_scores(ScoreKind::Probability, probabilities)?)
}
