//! Reading a run store's committed state without changing it (used when opening a store for writing,
//! and by `calibra merge` on its sources).
//!
//! # Layout of a run store directory
//!
//! ```text
//! runs.jsonl                    run records, one JSON line each (what `calibra eval DIR` reads)
//! journal/fits.jsonl            the commit journal: one line per committed append to runs.jsonl
//! journal/failures.jsonl        failed fits (fit key, description, error text); never read by eval
//! journal/recipe.toml           the last recipe run in this store (what `calibra report` reads)
//! predictions/<fit key>/<calibrator>/<condition>.csv   one predictions file per record
//! features/                     executors' cache of frozen features (safe to delete)
//! fits/<fit key>/               an executor's training checkpoint and fitted model (LoRA: the PEFT
//!                               adapter directory); deleting it makes that fit retrain if rerun
//! .lock                         held while a process writes the store
//! ```
//!
//! The journal and the failures live in `journal/` because `calibra eval DIR` reads every `*.jsonl`
//! file directly inside DIR as run records.
//!
//! A journal line is `{"fit": KEY, "start": S, "end": E, "records": N}`: bytes `[S, E)` of
//! `runs.jsonl` hold the N records of fit KEY appended together. Entries are contiguous
//! (`start` of each = `end` of the previous, the first starts at 0), so the last entry's `end` is the
//! **committed length** of `runs.jsonl`: bytes beyond it were written by an append whose journal line
//! never landed, and do not count.

use std::path::{Path, PathBuf};

use calibra_crs::{RunRecord, RunRecordSet};
use serde::{Deserialize, Serialize};

use crate::error::RunError;
use crate::grid::Slot;
use crate::run_key::FitKey;

/// File names inside a store.
pub const RUNS_FILE: &str = "runs.jsonl";
pub const JOURNAL_DIR: &str = "journal";
pub const FITS_JOURNAL: &str = "journal/fits.jsonl";
pub const FAILURES_FILE: &str = "journal/failures.jsonl";
pub const RECIPE_COPY: &str = "journal/recipe.toml";
pub const PREDICTIONS_DIR: &str = "predictions";
pub const FEATURES_DIR: &str = "features";
/// Per-fit working files of adapted regimes (checkpoints, adapters, prompts): `fits/<fit key>/`.
pub const FITS_DIR: &str = "fits";

/// One committed append.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalEntry {
    pub fit: FitKey,
    pub start: u64,
    pub end: u64,
    pub records: usize,
}

/// A committed record with the fit it belongs to and its 1-based line in `runs.jsonl`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    pub fit: FitKey,
    /// Index of its journal entry.
    pub entry: usize,
    pub line: usize,
    pub record: RunRecord,
}

/// The identity of a run record (what the evaluator treats as a duplicate): canonical JSON of
/// encoder, dataset, regime, probe, calibrator, label fraction, seed and condition.
pub fn record_key(r: &RunRecord) -> String {
    let value = serde_json::json!({
        "encoder": r.encoder, "dataset": r.dataset, "regime": r.regime, "probe": r.probe,
        "calibrator": r.calibrator, "label_fraction": r.label_fraction, "seed": r.seed,
        "condition": r.condition,
    });
    crate::run_key::canonical_json(&value)
}

/// The slot a record fills.
pub fn slot_of(r: &RunRecord) -> Slot {
    Slot { condition: r.condition.clone(), calibrator: r.calibrator.clone() }
}

/// What a store holds, read without modification.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSnapshot {
    pub dir: PathBuf,
    pub entries: Vec<JournalEntry>,
    pub records: Vec<StoredRecord>,
    /// Length of `runs.jsonl` covered by the journal.
    pub committed_len: u64,
    /// Actual length of `runs.jsonl` (> committed_len after an interrupted append).
    pub runs_len: u64,
    /// Length of the journal up to its last complete line (< its file length after a torn write).
    pub journal_complete_len: u64,
    pub journal_len: u64,
}

impl StoreSnapshot {
    /// Reads the store at `dir` (a missing `runs.jsonl` or journal reads as empty).
    pub fn read(dir: &Path) -> Result<StoreSnapshot, RunError> {
        let journal_path = dir.join(FITS_JOURNAL);
        let journal = read_or_empty(&journal_path)?;
        let journal_len = journal.len() as u64;
        let complete = journal.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut entries = Vec::new();
        let mut expected_start = 0u64;
        for (i, line) in journal[..complete].split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let at =
                |message: String| RunError::Store { path: journal_path.clone(), line: Some(i + 1), message };
            let entry: JournalEntry =
                serde_json::from_slice(line).map_err(|e| at(format!("not a journal entry: {e}")))?;
            if !FitKey::is_valid(entry.fit.as_str()) {
                return Err(at(format!("`{}` is not a fit key", entry.fit)));
            }
            if entry.start != expected_start || entry.end < entry.start {
                return Err(at(format!(
                    "entry covers bytes {}..{} of {RUNS_FILE}, expected it to start at {expected_start} \
                     (the journal and the records disagree, e.g. two processes wrote this store; \
                     `calibra merge --repair {}` keeps every committed record once)",
                    entry.start,
                    entry.end,
                    dir.display()
                )));
            }
            expected_start = entry.end;
            entries.push(entry);
        }
        let committed_len = expected_start;
        let runs_path = dir.join(RUNS_FILE);
        let runs = read_or_empty(&runs_path)?;
        let runs_len = runs.len() as u64;
        if runs_len < committed_len {
            return Err(RunError::Store {
                path: runs_path,
                line: None,
                message: format!(
                    "the file has {runs_len} bytes but the journal commits {committed_len}: records were lost \
                     (the file was truncated or replaced outside calibra)"
                ),
            });
        }
        let committed = &runs[..committed_len as usize];
        let source = runs_path.display().to_string();
        let set = RunRecordSet::from_reader(committed, &source).map_err(|e| RunError::Store {
            path: runs_path.clone(),
            line: None,
            message: e.to_string(),
        })?;
        // Byte offset of the start of every line, to place each record in its journal entry.
        let mut line_starts = vec![0u64];
        line_starts
            .extend(committed.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i as u64 + 1));
        let mut records = Vec::with_capacity(set.len());
        let mut counts = vec![0usize; entries.len()];
        for located in set.records() {
            let offset = line_starts[located.location.line - 1];
            let e = entries.partition_point(|e| e.end <= offset);
            let entry = entries.get(e).ok_or_else(|| RunError::Store {
                path: runs_path.clone(),
                line: Some(located.location.line),
                message: "the record lies outside every journal entry".into(),
            })?;
            counts[e] += 1;
            records.push(StoredRecord {
                fit: entry.fit.clone(),
                entry: e,
                line: located.location.line,
                record: located.record.clone(),
            });
        }
        for (i, (entry, n)) in entries.iter().zip(counts).enumerate() {
            if entry.records != n {
                return Err(RunError::Store {
                    path: journal_path.clone(),
                    line: None,
                    message: format!(
                        "journal entry {} (fit {}) announces {} records but bytes {}..{} of {RUNS_FILE} hold {n} \
                         (`calibra merge --repair {}` keeps every committed record once)",
                        i + 1,
                        entry.fit,
                        entry.records,
                        entry.start,
                        entry.end,
                        dir.display()
                    ),
                });
            }
        }
        Ok(StoreSnapshot {
            dir: dir.to_path_buf(),
            entries,
            records,
            committed_len,
            runs_len,
            journal_complete_len: complete as u64,
            journal_len,
        })
    }
}

fn read_or_empty(path: &Path) -> Result<Vec<u8>, RunError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(RunError::io(path, "cannot read", e)),
    }
}
