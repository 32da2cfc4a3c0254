//! The errors of the selective-prediction, conformal and shift-detection analyses of `calibra eval
//! --selective`: unreadable predictions files, parameters out of their domain, and conformal requests
//! the data cannot honour (a calibration half too small for α, a method with no multilabel form).

use thiserror::Error;

/// Everything that can go wrong in [`crate::selective_analyses()`].
#[derive(Debug, Error)]
pub enum SelectiveError {
    /// A run record's predictions file that cannot be read (the record is named as `file:line`).
    #[error("{record}: predictions file `{path}`: {message}")]
    Predictions { record: String, path: String, message: String },
    /// An analysis parameter out of its domain (α outside (0, 1)).
    #[error("invalid parameter {name}: {message}")]
    InvalidParameter { name: &'static str, message: String },
    /// Conformal sets that cannot be made for this fit (the clean record is named).
    #[error("{record}: conformal sets: {message}")]
    Conformal { record: String, message: String },
    /// Predictions of one fit that do not fit together (other classes, another task).
    #[error("{record}: {message}")]
    Mismatch { record: String, message: String },
    /// A metric that refused its input (non-finite confidences cannot come from a valid file).
    #[error("{record}: {message}")]
    Metric { record: String, message: String },
}

impl From<crate::predictions_cache::UnreadablePredictions> for SelectiveError {
    fn from(e: crate::predictions_cache::UnreadablePredictions) -> Self {
        Self::Predictions { record: e.record, path: e.path, message: e.message }
    }
}
