//! The one error type of the crate: every variant names the row, key or estimator at fault.

/// What went wrong while validating inputs or computing an estimator.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// A feature value is NaN or infinite.
    #[error("features row {row}, column {col}: {value} is not a finite number")]
    NonFiniteFeature { row: usize, col: usize, value: f64 },
    /// A target value is NaN or infinite (continuous targets).
    #[error("labels row {row}: {value} is not a finite number")]
    NonFiniteTarget { row: usize, value: f64 },
    /// Labels and feature rows disagree in number.
    #[error("{labels} label rows for {rows} feature rows: expected one label row per feature row")]
    LengthMismatch { labels: usize, rows: usize },
    /// The feature matrix has an impossible shape.
    #[error("features: {0}")]
    Shape(String),
    /// A label value cannot be used.
    #[error("labels row {row}: {why}")]
    BadLabel { row: usize, why: String },
    /// Posterior matrix (LEEP) is malformed.
    #[error("posteriors row {row}: {why}")]
    BadPosterior { row: usize, why: String },
    /// `--estimators` named something this crate does not compute.
    #[error("unknown estimator `{0}`: expected one of {names}", names = crate::Estimator::NAMES.join(", "))]
    UnknownEstimator(String),
    /// A linear-algebra step failed (should not happen on finite input).
    #[error("{what}: {why}")]
    Numerical { what: &'static str, why: String },
    /// A ranker input is inconsistent.
    #[error("ranker: {0}")]
    Ranker(String),
}
