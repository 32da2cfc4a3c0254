//! Errors of fitting and applying probes.

use thiserror::Error;

/// Everything that can go wrong when fitting or applying a probe.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProbeError {
    /// The feature matrix cannot be used (message names the row/column and what was expected).
    #[error("features: {0}")]
    InvalidFeatures(String),
    /// The labels cannot be used (message names the row/label and what was expected).
    #[error("labels: {0}")]
    InvalidLabels(String),
    /// A setting is out of its domain (message names the setting).
    #[error("options: {0}")]
    InvalidOptions(String),
    /// Features given to a fitted probe have another width than the training features.
    #[error("features have {found} columns, the probe was fitted on {expected}")]
    DimensionMismatch { expected: usize, found: usize },
    /// Initial parameters given to a fit do not have the expected shape.
    #[error("initial parameters: {0}")]
    InvalidInit(String),
    /// A saved probe that cannot be read back.
    #[error("{file}: {message}")]
    BadFile { file: String, message: String },
    /// The optimiser met non-finite values.
    #[error("fitting `{probe}` failed: {why}")]
    FitFailed { probe: String, why: String },
}
