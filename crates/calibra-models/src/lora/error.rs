//! Errors of LoRA configuration, injection and PEFT adapter IO.

use std::path::PathBuf;

/// What went wrong, with the file / field / key named.
#[derive(Debug, thiserror::Error)]
pub enum LoraError {
    /// A configuration field has a value this implementation does not accept.
    #[error("LoRA config: `{field}`: {why}")]
    Config { field: String, why: String },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file exists but its contents are not what was expected.
    #[error("{}: {why}", path.display())]
    Format { path: PathBuf, why: String },
    /// The adapter and the model disagree (missing / unused / mis-shaped tensors), every problem listed.
    #[error("{}: the adapter does not fit the model:\n{}", path.display(), problems.join("\n"))]
    Mismatch { path: PathBuf, problems: Vec<String> },
}
