//! `calibra merge --repair STORE`: rebuild a run store whose journal and records disagree (two
//! writers on one store, a file edited by hand) so that it holds every committed record exactly once.
//!
//! Crash recovery ([`crate::store`]) handles what a single writer can leave behind (a torn tail); it
//! refuses anything else, e.g. journal entries that overlap because two processes appended at once
//! (`entry covers bytes 0..2353 ..., expected it to start at 2353`). Repair reads the store leniently:
//! - the **committed fits** are the fit keys of every complete, well-formed journal line;
//! - the **records** are every complete line of `runs.jsonl` that is a valid run record; each belongs
//!   to the fit named in its predictions path (`predictions/<fit key>/…`), or else to the journal entry
//!   whose byte range holds it;
//! - a record is kept when its fit is committed, once per run key (the first occurrence): a later
//!   record with the same run key and the same metrics is a duplicate and dropped; one with different
//!   metrics is a conflict, and repair stops **without changing anything** (`calibra merge` into a
//!   fresh store shows both lines);
//! - records of uncommitted fits (an append whose journal line never landed), unreadable lines and a
//!   torn last line are dropped, and counted.
//!
//! The store is rewritten with one journal entry per fit (fits in the order of their first record,
//! records in file order), which is byte for byte what one writer would have produced. The old
//! `runs.jsonl` and `journal/fits.jsonl` are kept in `journal/before-repair-<unix time>/`. Both new files
//! are written atomically, `runs.jsonl` first: a crash between the two renames leaves a store that
//! repair fixes again with the same result. Repair holds the store's lock (`--break-lock` as for `run`).
//! On a consistent store it changes nothing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use calibra_crs::{RunRecord, RunRecordSet};

use crate::error::RunError;
use crate::lock::StoreLock;
use crate::run_key::FitKey;
use crate::snapshot::{
    FITS_JOURNAL, JOURNAL_DIR, JournalEntry, PREDICTIONS_DIR, RUNS_FILE, StoreSnapshot, record_key,
};

/// What a repair found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairSummary {
    /// Whether the store was rewritten (false: it was consistent).
    pub changed: bool,
    /// Records in the repaired store.
    pub records_kept: usize,
    /// Records dropped as identical duplicates of a kept record.
    pub duplicates_dropped: usize,
    /// Records dropped because no journal line commits their fit.
    pub uncommitted_dropped: usize,
    /// Lines of runs.jsonl or the journal that were not valid (including a torn last line), dropped.
    pub unreadable_lines: usize,
    /// Committed fits whose journal announces more records than the store holds for them.
    pub incomplete_fits: Vec<FitKey>,
    /// Where the old files were saved.
    pub backup: Option<PathBuf>,
}

/// Repairs the store at `dir` (see the module docs).
pub fn repair_store(dir: &Path, break_lock: bool) -> Result<RepairSummary, RunError> {
    let runs_path = dir.join(RUNS_FILE);
    if !runs_path.is_file() {
        return Err(RunError::Store {
            path: dir.to_path_buf(),
            line: None,
            message: format!("not a run store (no {RUNS_FILE})"),
        });
    }
    let _lock = StoreLock::acquire(dir, break_lock)?;
    if let Ok(snapshot) = StoreSnapshot::read(dir)
        && snapshot.runs_len == snapshot.committed_len
        && snapshot.journal_len == snapshot.journal_complete_len
    {
        return Ok(RepairSummary { records_kept: snapshot.records.len(), ..Default::default() });
    }
    let journal_path = dir.join(FITS_JOURNAL);
    let journal = read_or_empty(&journal_path)?;
    let runs = read_or_empty(&runs_path)?;
    let mut summary = RepairSummary::default();

    let mut entries: Vec<JournalEntry> = Vec::new();
    let (journal_lines, torn) = complete_lines(&journal);
    summary.unreadable_lines += torn;
    for (_, line) in journal_lines {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<JournalEntry>(line) {
            Ok(e) if FitKey::is_valid(e.fit.as_str()) => entries.push(e),
            _ => summary.unreadable_lines += 1,
        }
    }
    let committed: HashSet<&FitKey> = entries.iter().map(|e| &e.fit).collect();
    // The most records any one entry announces for a fit (two writers commit the same fit twice).
    let mut announced: HashMap<&FitKey, usize> = HashMap::new();
    for e in &entries {
        let n = announced.entry(&e.fit).or_default();
        *n = (*n).max(e.records);
    }

    let (run_lines, torn) = complete_lines(&runs);
    summary.unreadable_lines += torn;
    // Fit → its kept record lines, fits in the order of their first kept record.
    let mut order: Vec<FitKey> = Vec::new();
    let mut by_fit: HashMap<FitKey, Vec<&[u8]>> = HashMap::new();
    let mut seen: HashMap<String, (usize, BTreeMap<String, f64>)> = HashMap::new();
    for (i, (offset, line)) in run_lines.into_iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some(record) = parse_record(line) else {
            summary.unreadable_lines += 1;
            continue;
        };
        let fit = fit_of(&record)
            .or_else(|| entries.iter().find(|e| e.start <= offset && offset < e.end).map(|e| e.fit.clone()));
        let Some(fit) = fit.filter(|f| committed.contains(f)) else {
            summary.uncommitted_dropped += 1;
            continue;
        };
        let key = record_key(&record);
        if let Some((first, metrics)) = seen.get(&key) {
            if *metrics == record.metrics {
                summary.duplicates_dropped += 1;
                continue;
            }
            let file = runs_path.display();
            return Err(RunError::Conflict {
                key,
                first: format!("{file}:{first}"),
                second: format!("{file}:{}", i + 1),
            });
        }
        seen.insert(key, (i + 1, record.metrics.clone()));
        if !by_fit.contains_key(&fit) {
            order.push(fit.clone());
        }
        by_fit.entry(fit).or_default().push(line);
    }

    let mut new_runs = Vec::new();
    let mut new_journal = String::new();
    for fit in &order {
        let lines = &by_fit[fit];
        let start = new_runs.len() as u64;
        for line in lines {
            new_runs.extend_from_slice(line);
            new_runs.push(b'\n');
        }
        let entry =
            JournalEntry { fit: fit.clone(), start, end: new_runs.len() as u64, records: lines.len() };
        new_journal.push_str(&serde_json::to_string(&entry).expect("a journal entry serialises"));
        new_journal.push('\n');
        if announced.get(fit).is_some_and(|&n| n > lines.len()) {
            summary.incomplete_fits.push(fit.clone());
        }
        summary.records_kept += lines.len();
    }
    // The kept records must form a valid record set (no duplicate run key) before anything changes.
    RunRecordSet::from_reader(new_runs.as_slice(), &runs_path.display().to_string()).map_err(|e| {
        RunError::Store { path: runs_path.clone(), line: None, message: format!("repair would write: {e}") }
    })?;

    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let backup = dir.join(JOURNAL_DIR).join(format!("before-repair-{now}"));
    std::fs::create_dir_all(&backup)
        .map_err(|e| RunError::io(&backup, "cannot create the backup directory", e))?;
    for (from, name) in [(&runs_path, "runs.jsonl"), (&journal_path, "fits.jsonl")] {
        if from.exists() {
            let to = backup.join(name);
            std::fs::copy(from, &to).map_err(|e| RunError::io(&to, "cannot back up", e))?;
        }
    }
    let write = |path: &Path, bytes: &[u8]| {
        calibra_predictions::write_atomically(path, |w| w.write_all(bytes)).map_err(|e| RunError::Store {
            path: path.to_path_buf(),
            line: None,
            message: e.to_string(),
        })
    };
    write(&runs_path, &new_runs)?;
    write(&journal_path, new_journal.as_bytes())?;
    StoreSnapshot::read(dir)?;
    summary.changed = true;
    summary.backup = Some(backup);
    Ok(summary)
}

/// The complete lines of `bytes` with their byte offsets, and 1 if a torn (unterminated) last line
/// was left out.
fn complete_lines(bytes: &[u8]) -> (Vec<(u64, &[u8])>, usize) {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut lines = Vec::new();
    let mut offset = 0u64;
    for line in bytes[..complete].split_inclusive(|&b| b == b'\n') {
        lines.push((offset, &line[..line.len() - 1]));
        offset += line.len() as u64;
    }
    (lines, usize::from(complete < bytes.len()))
}

fn parse_record(line: &[u8]) -> Option<RunRecord> {
    let record: RunRecord = serde_json::from_slice(line).ok()?;
    record.validate().ok()?;
    Some(record)
}

/// The fit named by a record's predictions path `predictions/<fit key>/…`.
fn fit_of(record: &RunRecord) -> Option<FitKey> {
    let rel = record.paths.get("predictions")?;
    let mut parts = rel.split('/');
    (parts.next()? == PREDICTIONS_DIR).then_some(())?;
    let key = parts.next()?;
    FitKey::is_valid(key).then(|| FitKey(key.to_string()))
}

fn read_or_empty(path: &Path) -> Result<Vec<u8>, RunError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(RunError::io(path, "cannot read", e)),
    }
}
