//! The one error type of calibra-data: every variant names the file (and row or key) at fault.

use std::path::PathBuf;

/// What went wrong while reading, splitting, decoding or perturbing a dataset.
///
/// Every variant carries the file (or spec) at fault and, where there is one, the 1-based row
/// (CSV line number, header = line 1) or key, so that a user can find and fix the input.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One row of a manifest is malformed (unknown label, bad number, missing image, duplicate id...).
    #[error("{}, line {line}: {message}", path.display())]
    Row { path: PathBuf, line: u64, message: String },
    /// A whole file is malformed (missing column, unexpected array, wrong dtype...).
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    /// An image exists but cannot be decoded.
    #[error("cannot decode image {source_name}: {message}")]
    Decode { source_name: String, message: String },
    /// A dataset spec string could not be understood.
    #[error("invalid dataset spec `{spec}`: {message}")]
    Spec { spec: String, message: String },
    /// A parameter is out of its documented range (a fraction outside (0, 1], a zero image size...).
    #[error("{0}")]
    Invalid(String),
}

impl DataError {
    /// An [`DataError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { path: path.into(), source }
    }

    /// A [`DataError::Row`] for `path` at 1-based `line`.
    pub fn row(path: impl Into<PathBuf>, line: u64, message: impl Into<String>) -> Self {
        Self::Row { path: path.into(), line, message: message.into() }
    }

    /// A [`DataError::File`] for `path`.
    pub fn file(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::File { path: path.into(), message: message.into() }
    }
}
