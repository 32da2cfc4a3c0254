//! calibra-predictions: the predictions file, the one format every calibra stage reads and writes.
//!
//! Owns: the in-memory [`Predictions`] table (ids, targets, logit or probability columns), the CSV
//! reader with errors that name the file, line and column, the writer, and [`write_atomically`]
//! (temp file + fsync + rename) that every calibra output goes through so a crash never leaves a
//! half-written file; and the one dispatch from a table to calibra-metrics' summaries
//! ([`summarize_predictions`], [`summarize_selective_predictions`]).
//!
//! File format (CSV, header required):
//! - `id`: a unique sample identifier;
//! - targets: either `label` (class index `0..K`) for multiclass/binary tasks, or one `label_<name>`
//!   column per label (multilabel: `1`, `0`, or blank = unobserved/masked);
//! - scores: either `logit_<class>` or `prob_<class>` columns (never both). For multilabel files the
//!   score columns are per label and must name the same labels as the `label_<name>` columns.
//!
//! Must not depend on: burn, or any calibra crate other than calibra-metrics (for softmax and
//! validation).
#![forbid(unsafe_code)]

mod atomic_write;
mod error;
mod read;
mod summary;
mod table;
mod write;

pub use atomic_write::{write_atomically, write_atomically_with};
pub use error::PredictionsError;
pub use read::{read_predictions, read_predictions_from};
pub use summary::{summarize_predictions, summarize_selective_predictions};
pub use table::{Predictions, ScoreKind, Targets, Task};
pub use write::{write_predictions, write_predictions_to};
