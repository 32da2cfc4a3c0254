//! Errors of fitting, applying, saving and loading calibrators.

use thiserror::Error;

/// Everything that can go wrong when fitting, applying, saving or loading a calibrator.
#[derive(Debug, Error)]
pub enum CalibrateError {
    /// The calibration or application data cannot be used (message says which row/class and why).
    #[error("{0}")]
    InvalidInput(String),
    /// A saved calibrator was fitted on other classes than the predictions it is applied to.
    #[error(
        "class mismatch: the calibrator was fitted on classes [{fitted}] (in this order), the predictions have [{found}]"
    )]
    ClassMismatch { fitted: String, found: String },
    /// The method does not accept this kind of task (e.g. Platt on multiclass, isotonic with K < 2).
    #[error("method `{method}` cannot be used here: {why}")]
    Unsupported { method: String, why: String },
    /// A saved calibrator file that cannot be read back.
    #[error("{file}: {message}")]
    BadFile { file: String, message: String },
    /// The optimiser could not evaluate the objective (non-finite values).
    #[error("fitting `{method}` failed: {why}")]
    FitFailed { method: String, why: String },
    #[error(transparent)]
    Predictions(#[from] calibra_predictions::PredictionsError),
}
