//! The run store: an append-only, crash-safe directory of run records (layout in [`crate::snapshot`]).
//!
//! # Committing a fit
//!
//! 1. each predictions file is written atomically (temporary file, fsync, rename, fsync of the
//!    directory) at a path determined by (fit key, calibrator, condition);
//! 2. the fit's new records are appended to `runs.jsonl` with **one** `write`, then fsync;
//! 3. one journal line `{"fit", "start", "end", "records"}` is appended to `journal/fits.jsonl`, then
//!    fsync. This write is the commit point.
//!
//! # Crash safety (`kill -9` or power loss between any two system calls)
//!
//! On open (under the lock) the store keeps only what the journal commits: a journal whose last line
//! is torn (no final newline) is truncated to its last complete line, and `runs.jsonl` is truncated to
//! the last entry's `end`. Then:
//! - killed before step 3 completes: the fit's bytes in `runs.jsonl` (whole, partial or none) lie past
//!   the committed length and are cut; the fit is not in the journal, so it runs again — nothing is
//!   duplicated; its predictions files are overwritten atomically by the rerun (same paths);
//! - killed after step 3: the fit is committed with all its records — nothing is lost;
//! - fsync ordering (records synced before the journal line is written) means a committed journal entry
//!   never points at bytes that did not reach the disk, even on power loss.
//!
//! The store never appends a record whose run key it already holds, so `runs.jsonl` cannot contain a
//! duplicate even when a recipe grows (a fit gains slots: only the missing ones are appended, as a
//! second journal entry of the same fit). A write error in step 2 or 3 (disk full, permissions) is
//! undone by truncating both files back to their committed lengths before the error is returned.

use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use calibra_crs::{Condition, RunRecord};
use serde::Serialize;

use crate::error::RunError;
use crate::grid::{FitSpec, Slot};
use crate::lock::StoreLock;
use crate::run_key::FitKey;
use crate::snapshot::{
    FAILURES_FILE, FEATURES_DIR, FITS_DIR, FITS_JOURNAL, JOURNAL_DIR, JournalEntry, PREDICTIONS_DIR,
    RECIPE_COPY, RUNS_FILE, StoreSnapshot, record_key, slot_of,
};

/// The predictions behind one record, as the executor hands them over.
#[derive(Debug, Clone, PartialEq)]
pub enum PredictionsData {
    /// The file's bytes (a calibra predictions CSV).
    Bytes(Vec<u8>),
    /// An existing file, copied into the store.
    File(PathBuf),
    /// No predictions file (the record carries metrics only).
    None,
}

/// One record of a fit and its predictions.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    pub record: RunRecord,
    pub predictions: PredictionsData,
}

/// What opening a store repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Bytes of `runs.jsonl` past the committed length, cut (an interrupted append).
    pub runs_bytes_cut: u64,
    /// Bytes of a torn last journal line, cut.
    pub journal_bytes_cut: u64,
    /// Temporary files and directories a killed writer left in the store's journal, predictions,
    /// features and fits directories, removed (the store lock makes every other process's temporary a dead one's).
    pub temporaries_removed: usize,
}

/// Faults a test injects into a store's writes ([`RunStore::inject_faults`]): what a full disk or a
/// failing rename does, at a chosen point of the commit protocol. Not used outside tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultInjection {
    /// Bytes the store may still write (predictions files, runs.jsonl, the journal, in commit order)
    /// before every further write fails with "no space left" (`None`: no limit).
    pub fail_after_bytes: Option<u64>,
    /// How many of the next predictions-file renames fail.
    pub fail_renames: usize,
}

impl FaultInjection {
    /// Takes up to `len` bytes of the budget: how many may be written, and whether the write must fail.
    fn take(&mut self, len: usize) -> (usize, bool) {
        match &mut self.fail_after_bytes {
            None => (len, false),
            Some(left) => {
                let n = (*left).min(len as u64) as usize;
                *left -= n as u64;
                (n, n < len)
            }
        }
    }
}

fn disk_full() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device (injected fault)")
}

/// A writer that spends a fault budget and fails, having written what the budget allowed.
struct Budgeted<'a, W: Write + ?Sized> {
    inner: &'a mut W,
    faults: &'a mut FaultInjection,
}

impl<W: Write + ?Sized> Write for Budgeted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let (n, fail) = self.faults.take(buf.len());
        if n == 0 && fail {
            return Err(disk_full());
        }
        self.inner.write(&buf[..n])
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Appends `bytes` to `file` within the fault budget.
fn append(file: &mut File, bytes: &[u8], faults: &mut FaultInjection) -> std::io::Result<()> {
    let (n, fail) = faults.take(bytes.len());
    file.write_all(&bytes[..n])?;
    if fail { Err(disk_full()) } else { Ok(()) }
}

/// A failed fit, as written to `journal/failures.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct FailureEntry {
    pub fit: FitKey,
    pub description: String,
    pub error: String,
    pub unix_s: u64,
}

/// An open, locked run store.
#[derive(Debug)]
pub struct RunStore {
    dir: PathBuf,
    _lock: StoreLock,
    runs: File,
    journal: File,
    runs_len: u64,
    journal_len: u64,
    /// Run key → (line in runs.jsonl, metrics) of every committed record.
    records: HashMap<String, (usize, std::collections::BTreeMap<String, f64>)>,
    /// Fit key → the slots it has filled.
    filled: HashMap<FitKey, BTreeSet<Slot>>,
    lines: usize,
    entries: usize,
    recovery: Recovery,
    faults: FaultInjection,
}

/// How to open a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// Remove an existing lock file first (see [`crate::lock`]).
    pub break_lock: bool,
}

impl RunStore {
    /// Opens (creating if needed) the store at `dir`: takes the lock, repairs an interrupted append
    /// (see the module docs) and indexes the committed records.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<RunStore, RunError> {
        for sub in ["", JOURNAL_DIR, PREDICTIONS_DIR] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d)
                .map_err(|e| RunError::io(&d, "cannot create the run store directory", e))?;
        }
        let lock = StoreLock::acquire(dir, options.break_lock)?;
        let snapshot = StoreSnapshot::read(dir)?;
        let runs_path = dir.join(RUNS_FILE);
        let journal_path = dir.join(FITS_JOURNAL);
        let open = |path: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .read(true)
                .open(path)
                .map_err(|e| RunError::io(path, "cannot open for appending", e))
        };
        let runs = open(&runs_path)?;
        let journal = open(&journal_path)?;
        sync_dir(dir);
        sync_dir(&dir.join(JOURNAL_DIR));
        let mut recovery = Recovery::default();
        for sub in [JOURNAL_DIR, PREDICTIONS_DIR, FEATURES_DIR, FITS_DIR] {
            recovery.temporaries_removed += calibra_core::remove_foreign_temporaries(&dir.join(sub)).len();
        }
        if snapshot.journal_len > snapshot.journal_complete_len {
            truncate(&journal, &journal_path, snapshot.journal_complete_len)?;
            recovery.journal_bytes_cut = snapshot.journal_len - snapshot.journal_complete_len;
        }
        if snapshot.runs_len > snapshot.committed_len {
            truncate(&runs, &runs_path, snapshot.committed_len)?;
            recovery.runs_bytes_cut = snapshot.runs_len - snapshot.committed_len;
        }
        let mut records = HashMap::with_capacity(snapshot.records.len());
        let mut filled: HashMap<FitKey, BTreeSet<Slot>> = HashMap::new();
        let mut lines = 0;
        for r in &snapshot.records {
            records.insert(record_key(&r.record), (r.line, r.record.metrics.clone()));
            filled.entry(r.fit.clone()).or_default().insert(slot_of(&r.record));
            lines = lines.max(r.line);
        }
        Ok(RunStore {
            dir: dir.to_path_buf(),
            _lock: lock,
            runs,
            journal,
            runs_len: snapshot.committed_len,
            journal_len: snapshot.journal_complete_len,
            records,
            filled,
            lines,
            entries: snapshot.entries.len(),
            recovery,
            faults: FaultInjection::default(),
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the store's later writes fail as `faults` says (fault-injection tests).
    pub fn inject_faults(&mut self, faults: FaultInjection) {
        self.faults = faults;
    }

    /// What opening repaired.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Number of committed records.
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// Number of journal entries (committed appends).
    pub fn commit_count(&self) -> usize {
        self.entries
    }

    /// The slots of `fit` not yet in the store (empty = the fit is finished).
    pub fn missing_slots(&self, fit: &FitSpec) -> Vec<Slot> {
        let filled = self.filled.get(&fit.key);
        fit.slots.iter().filter(|s| filled.is_none_or(|f| !f.contains(s))).cloned().collect()
    }

    /// Whether the store holds a record with this run key; returns its line and metrics.
    pub fn find(&self, record: &RunRecord) -> Option<(usize, &std::collections::BTreeMap<String, f64>)> {
        self.records.get(&record_key(record)).map(|(l, m)| (*l, m))
    }

    /// The directory executors may use to cache frozen features (`features/`).
    pub fn features_dir(&self) -> PathBuf {
        self.dir.join(FEATURES_DIR)
    }

    /// The store-relative path of the predictions file of (fit, slot).
    pub fn predictions_path(fit: &FitKey, calibrator: &str, condition: &Condition) -> String {
        format!("{PREDICTIONS_DIR}/{fit}/{}/{}.csv", sanitize(calibrator), condition_file_stem(condition))
    }

    /// Commits the outputs of one fit (see the module docs for the protocol). Outputs whose run key
    /// the store already holds are skipped; returns the number of records appended.
    pub fn commit(&mut self, fit: &FitKey, outputs: Vec<RunOutput>) -> Result<usize, RunError> {
        let mut lines = String::new();
        let mut new = Vec::new();
        let mut keys = BTreeSet::new();
        for mut out in outputs {
            let key = record_key(&out.record);
            if self.records.contains_key(&key) || !keys.insert(key.clone()) {
                continue;
            }
            let rel = Self::predictions_path(fit, &out.record.calibrator, &out.record.condition);
            let path = self.dir.join(&rel);
            let write = |w: &mut dyn Write| -> std::io::Result<()> {
                match &out.predictions {
                    PredictionsData::Bytes(b) => w.write_all(b),
                    PredictionsData::File(src) => std::io::copy(&mut File::open(src)?, w).map(|_| ()),
                    PredictionsData::None => Ok(()),
                }
            };
            if !matches!(out.predictions, PredictionsData::None) {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| RunError::io(parent, "cannot create the predictions directory", e))?;
                }
                let faults = &mut self.faults;
                let fail_rename = faults.fail_renames > 0;
                faults.fail_renames = faults.fail_renames.saturating_sub(1);
                calibra_predictions::write_atomically_with(
                    &path,
                    |w| write(&mut Budgeted { inner: w, faults }),
                    |from, to| {
                        if fail_rename {
                            Err(std::io::Error::other("rename failed (injected fault)"))
                        } else {
                            std::fs::rename(from, to)
                        }
                    },
                )
                .map_err(|e| RunError::Store {
                    path: path.clone(),
                    line: None,
                    message: e.to_string(),
                })?;
                out.record.paths.insert("predictions".to_string(), rel);
            }
            let line = serde_json::to_string(&out.record).expect("a run record serialises");
            lines.push_str(&line);
            lines.push('\n');
            new.push((key, out.record));
        }
        if new.is_empty() {
            return Ok(0);
        }
        let start = self.runs_len;
        let end = start + lines.len() as u64;
        let entry = JournalEntry { fit: fit.clone(), start, end, records: new.len() };
        let entry_line = serde_json::to_string(&entry).expect("a journal entry serialises") + "\n";
        let runs_path = self.dir.join(RUNS_FILE);
        let journal_path = self.dir.join(FITS_JOURNAL);
        let result = append(&mut self.runs, lines.as_bytes(), &mut self.faults)
            .and_then(|()| self.runs.sync_data())
            .map_err(|e| RunError::io(&runs_path, "cannot append the run records", e))
            .and_then(|()| {
                append(&mut self.journal, entry_line.as_bytes(), &mut self.faults)
                    .and_then(|()| self.journal.sync_data())
                    .map_err(|e| RunError::io(&journal_path, "cannot append the commit journal", e))
            });
        if let Err(e) = result {
            // Undo the partial append so that the next commit starts from committed lengths.
            let _ = self.runs.set_len(self.runs_len).and_then(|()| self.runs.sync_data());
            let _ = self.journal.set_len(self.journal_len).and_then(|()| self.journal.sync_data());
            return Err(e);
        }
        self.runs_len = end;
        self.journal_len += entry_line.len() as u64;
        self.entries += 1;
        let appended = new.len();
        for (key, record) in new {
            self.lines += 1;
            self.filled.entry(fit.clone()).or_default().insert(slot_of(&record));
            self.records.insert(key, (self.lines, record.metrics));
        }
        Ok(appended)
    }

    /// Appends a failure to `journal/failures.jsonl` (fsynced). The fit stays unfinished and runs
    /// again on the next `--resume`.
    pub fn record_failure(&mut self, fit: &FitSpec, error: &str) -> Result<(), RunError> {
        let entry = FailureEntry {
            fit: fit.key.clone(),
            description: fit.describe(),
            error: error.to_string(),
            unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        };
        self.append_failure(&entry)
    }

    /// Appends one failure entry to `journal/failures.jsonl` (fsynced).
    pub fn append_failure(&mut self, entry: &FailureEntry) -> Result<(), RunError> {
        let path = self.dir.join(FAILURES_FILE);
        let line = serde_json::to_string(entry).expect("a failure serialises") + "\n";
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()))
            .map_err(|e| RunError::io(&path, "cannot record the failed fit", e))
    }

    /// Saves the recipe text as `journal/recipe.toml` (atomically).
    pub fn save_recipe(&self, text: &str) -> Result<(), RunError> {
        let path = self.dir.join(RECIPE_COPY);
        calibra_predictions::write_atomically(&path, |w| w.write_all(text.as_bytes()))
            .map_err(|e| RunError::Store { path, line: None, message: e.to_string() })
    }
}

fn truncate(file: &File, path: &Path, len: u64) -> Result<(), RunError> {
    file.set_len(len).and_then(|()| file.sync_all()).map_err(|e| RunError::io(path, "cannot truncate", e))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Keeps `[A-Za-z0-9._-]`; anything else becomes `_`, and then a short hash of the original is
/// appended so that distinct names never share a file.
fn sanitize(name: &str) -> String {
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    if clean == name && !name.is_empty() && !name.starts_with('.') {
        clean
    } else {
        format!("{clean}-{}", &crate::run_key::sha256_hex(name.as_bytes())[..8])
    }
}

/// `clean`, `<perturbation>-s<severity>`, `shift-<target>`.
fn condition_file_stem(condition: &Condition) -> String {
    match condition {
        Condition::Clean => "clean".to_string(),
        Condition::Perturbation { perturbation, severity } => {
            format!("{}-s{severity}", sanitize(perturbation))
        }
        Condition::Shift { target } => format!("shift-{}", sanitize(target)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_and_distinct() {
        assert_eq!(sanitize("temperature"), "temperature");
        assert_ne!(sanitize("a/b"), sanitize("a_b"));
        assert!(!sanitize("../x").contains('/'));
        let p = RunStore::predictions_path(
            &FitKey("0".repeat(64)),
            "none",
            &Condition::Perturbation { perturbation: "jpeg".into(), severity: 2 },
        );
        assert_eq!(p, format!("predictions/{}/none/jpeg-s2.csv", "0".repeat(64)));
    }
}
