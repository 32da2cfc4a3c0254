//! The errors of the FOCUS additions (subgroup and quality gaps, adaptation deltas): unreadable or
//! malformed group tables and predictions files, and test sets that do not match.

use thiserror::Error;

/// Everything that can go wrong while reading the inputs of the FOCUS analyses.
///
/// `file` names the file; `line` is 1-based (a CSV header is line 1).
#[derive(Debug, Error)]
pub enum FocusError {
    /// A file that cannot be opened or read.
    #[error("{file}: {message}")]
    Io { file: String, message: String },
    /// A group table (or a predictions file read for its group columns) with a bad header.
    #[error("{file}: header: {message}")]
    Header { file: String, message: String },
    /// A group-table row that is malformed (ragged, empty or repeated id).
    #[error("{file}: line {line}: {message}")]
    Row { file: String, line: u64, message: String },
    /// A group-table cell that is not what its column needs (e.g. a non-numeric age).
    #[error("{file}: line {line}, column `{column}`: {message}")]
    Cell { file: String, line: u64, column: String, message: String },
    /// A run record's predictions file that cannot be read (the record is named).
    #[error("{record}: predictions file `{path}`: {message}")]
    Predictions { record: String, path: String, message: String },
    /// A test sample of a predictions file that the group table does not list.
    #[error("{file}: sample id `{id}` has no row in the group table {groups}")]
    UnknownSample { file: String, id: String, groups: String },
    /// A base and an adapted run whose predictions are not over the same test set.
    #[error("adaptation pair {pair}: {message}")]
    TestSetMismatch { pair: String, message: String },
    /// An analysis parameter out of its domain (zero replicates, a level outside (0, 1)...).
    #[error("invalid parameter {name}: {message}")]
    InvalidParameter { name: &'static str, message: String },
}

impl From<crate::predictions_cache::UnreadablePredictions> for FocusError {
    fn from(e: crate::predictions_cache::UnreadablePredictions) -> Self {
        Self::Predictions { record: e.record, path: e.path, message: e.message }
    }
}
