//! The one error type of the metrics crate: malformed input, always naming the offending row.

use thiserror::Error;

/// Malformed input to a metric. Rows and columns are 0-based indices into the inputs as given.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MetricsError {
    #[error("no samples: the metric needs at least one row")]
    Empty,
    #[error("shape mismatch: {what}")]
    Shape { what: String },
    #[error("row {row}, column {col}: value {value} is not finite")]
    NonFinite { row: usize, col: usize, value: f64 },
    #[error("row {row}, column {col}: probability {value} is outside [0, 1]")]
    ProbabilityOutOfRange { row: usize, col: usize, value: f64 },
    #[error("row {row}: probabilities sum to {sum}, expected 1 within {tolerance:e}")]
    RowSum { row: usize, sum: f64, tolerance: f64 },
    #[error("row {row}: label {label} is out of range for {num_classes} classes")]
    LabelOutOfRange { row: usize, label: usize, num_classes: usize },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}
