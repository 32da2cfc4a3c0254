//! The one error type of calibra-run.

use std::path::PathBuf;

/// Everything that can go wrong reading a recipe, planning a grid or keeping a run store.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A recipe that does not parse or does not validate. `line` is 1-based; `key` is the dotted path
    /// of the offending key (`regimes.lora.r`, `encoders[2].source`).
    #[error("{file}{}: {}{message}", line.map(|l| format!(":{l}")).unwrap_or_default(), if key.is_empty() { String::new() } else { format!("key `{key}`: ") })]
    Recipe { file: String, line: Option<usize>, key: String, message: String },
    /// Several recipe problems, reported together (one per line of the message).
    #[error("{} problem(s) in the recipe:\n{}", .0.len(), .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    RecipeProblems(Vec<RunError>),
    /// A filesystem operation failed.
    #[error("{}: {what}: {error}", path.display())]
    Io { path: PathBuf, what: String, error: std::io::Error },
    /// The run store is held by another process (or a stale lock file is left).
    #[error("{}: the run store is locked by {holder}; if that process is gone, pass --break-lock", path.display())]
    Locked { path: PathBuf, holder: String },
    /// `--break-lock` on a lock whose holder is alive on this host.
    #[error("{}: refusing to break the lock: it is held by pid {pid} on host `{host}` (this host), started at unix time {started_unix_s}, and that process is still running; wait for it to finish, or stop it (`kill {pid}`) and rerun with --break-lock", path.display())]
    LockHolderAlive { path: PathBuf, pid: u32, host: String, started_unix_s: u64 },
    /// The run store's files are inconsistent in a way crash recovery cannot explain.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Store { path: PathBuf, line: Option<usize>, message: String },
    /// Merging found the same run key with different metrics.
    #[error("conflicting duplicate run ({key}): {first} and {second} have different metrics")]
    Conflict { key: String, first: String, second: String },
    /// A fit failed and `--fail-fast` was given.
    #[error("fit {fit} failed: {message}")]
    FitFailed { fit: String, message: String },
    /// The executor cannot run some fits of the grid (checked before any work starts).
    #[error("the executor cannot run {} fit(s) of this grid:\n{}", .0.len(), .0.iter().take(10).map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Unsupported(Vec<String>),
    /// A `--shard I/N` that is not of that form with 0 <= I < N.
    #[error("shard `{0}`: expected I/N with 0 <= I < N (e.g. 0/4)")]
    Shard(String),
}

impl RunError {
    pub(crate) fn io(path: impl Into<PathBuf>, what: impl Into<String>, error: std::io::Error) -> Self {
        RunError::Io { path: path.into(), what: what.into(), error }
    }
}
