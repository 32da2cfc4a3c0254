//! Errors of reading, validating and writing predictions files.

use std::path::PathBuf;
use thiserror::Error;

/// Everything that can be wrong with a predictions file. `source` is the file path (or a name given by
/// the caller for in-memory input); `line` is the 1-based line in that file (the header is line 1).
#[derive(Debug, Error)]
pub enum PredictionsError {
    #[error("{file}: cannot read: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{file}: the file is empty (expected a header line starting with `id`)")]
    Empty { file: String },
    #[error("{file}: header: {message}")]
    Header { file: String, message: String },
    #[error("{file}: line {line}: expected {expected} fields as in the header, found {found}")]
    Ragged { file: String, line: u64, expected: usize, found: usize },
    #[error("{file}: line {line}, column `{column}`: {message}")]
    Cell { file: String, line: u64, column: String, message: String },
    #[error("{file}: line {line}: {message}")]
    Row { file: String, line: u64, message: String },
    #[error("{file}: no data rows after the header")]
    NoRows { file: String },
    #[error("{file}: CSV syntax error: {message}")]
    Csv { file: String, message: String },
    #[error("invalid predictions table: {0}")]
    Invalid(String),
    #[error("cannot write {path}: {error}")]
    Write { path: PathBuf, error: std::io::Error },
}
