//! What can stop an evaluation ([`crate::evaluate`]): every message names the file, the record
//! (`file:line`) or the option at fault.

use crate::frozen_weights::FrozenWeightsError;
use crate::{CsvTableError, PngError};
use calibra_crs::{CrsError, FocusError, SelectiveError};
use calibra_metrics::MetricsError;
use calibra_predictions::PredictionsError;
use calibra_run::RunError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{}: no such run-record file or directory", .0.display())]
    NoSuchInput(PathBuf),
    #[error("{}: cannot list the run directory", dir.display())]
    ListDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the run directory holds no *.jsonl run-record file", .0.display())]
    EmptyDir(PathBuf),
    #[error("{}: the run store cannot be read as committed", store.display())]
    Snapshot {
        store: PathBuf,
        #[source]
        source: RunError,
    },
    /// A run-record file that cannot be opened (`action` "open") or read ("read").
    #[error("{file}: cannot {action}")]
    Io {
        file: String,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Records that do not parse, a reference that does not load or save, a selective axis that cannot
    /// be attached.
    #[error(transparent)]
    Crs(#[from] CrsError),
    /// `--strict`: records whose metrics disagree with their predictions files (`list`: the first few).
    #[error("{count} run record(s) disagree with their predictions files (--strict):\n{list}")]
    Disagreements { count: usize, list: String },
    #[error(transparent)]
    FrozenWeights(#[from] FrozenWeightsError),
    /// Five axis weights, or a reference with a selective axis, without `--selective`.
    #[error(
        "{why}: the selective axis needs the selective analyses (per-run AUGRC from the predictions files): \
         add --selective"
    )]
    SelectiveAxisAlone { why: &'static str },
    #[error("selective prediction, conformal sets and shift detection of {what}")]
    Selective {
        what: String,
        #[source]
        source: SelectiveError,
    },
    #[error("evaluating {what}")]
    Build {
        what: String,
        #[source]
        source: CrsError,
    },
    #[error("subgroup/quality gaps and adaptation deltas of {what}")]
    Focus {
        what: String,
        #[source]
        source: FocusError,
    },
    #[error("--no-focus skips the gap analyses: drop it, or drop --group-column/--quality-column/--groups")]
    FocusOff,
    /// A predictions file of a reliability diagram; `at` is the record and its file.
    #[error("{at}")]
    Predictions {
        at: String,
        #[source]
        source: PredictionsError,
    },
    #[error("{at}")]
    Bins {
        at: String,
        #[source]
        source: MetricsError,
    },
    #[error("--save-reference {}: there is no reference to save: {why}", path.display())]
    NothingToSave { path: PathBuf, why: String },
    #[error(transparent)]
    Csv(#[from] CsvTableError),
    #[error("rasterising {path}")]
    Png {
        path: String,
        #[source]
        source: PngError,
    },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{}: the output directory already exists (pass --force to replace it)", .0.display())]
    OutExists(PathBuf),
    /// A step of writing the output directory (`action`: "cannot create", "cannot write", "cannot
    /// write the output directory").
    #[error("{}: {action}", path.display())]
    Write {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
}
