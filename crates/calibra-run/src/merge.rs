//! `calibra merge`: combine run stores (e.g. the shards of one grid) into one.
//!
//! Sources are read as snapshots: only what their journals commit (an interrupted append in a
//! source is ignored, and the source is not modified). They are taken in the order given, journal entry
//! by journal entry; each entry becomes one commit of the output store, holding the entry's records
//! that the output does not hold yet:
//! - a record whose run key is already in the output **with the same metrics** is an identical
//!   duplicate (the same fit run twice, e.g. two overlapping shards) and is dropped;
//! - the same run key with **different metrics** is a conflict: the merge stops with an error naming
//!   both records as `file:line`.
//!
//! Merges are all-or-nothing: every source is read and checked for conflicts before anything is
//! written, and a new output store is built in a temporary directory beside it (`.<name>.tmp-<pid>`,
//! `calibra_core::write_dir_atomically`) that is synced and renamed to the output only once complete. A refused merge (a
//! conflict, a source that is not a store) leaves no output and no temporary directory; a failure while
//! writing (disk full) removes the temporary directory. Extending an existing output store appends
//! through its crash-safe commits, so a write failure there leaves it consistent, holding the entries
//! committed before the failure.
//!
//! Predictions files travel with their records (copied, atomically, to the output's path for them).
//! Failures of a source are copied when the output does not hold that fit's slots at the end.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::error::RunError;
use crate::snapshot::{FAILURES_FILE, RUNS_FILE, StoreSnapshot, record_key};
use crate::store::{FailureEntry, PredictionsData, RunOutput, RunStore, StoreOptions};

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSummary {
    pub sources: usize,
    pub records_read: usize,
    pub records_written: usize,
    pub identical_duplicates: usize,
    pub failures_copied: usize,
}

/// Merges the stores `sources` into the store at `out` (created, or opened and extended).
pub fn merge_stores(
    sources: &[PathBuf],
    out: &Path,
    options: StoreOptions,
) -> Result<MergeSummary, RunError> {
    let out_canon = std::fs::canonicalize(out).ok();
    for s in sources {
        if !s.join(RUNS_FILE).is_file() {
            return Err(RunError::Store {
                path: s.clone(),
                line: None,
                message: format!("not a run store (no {RUNS_FILE})"),
            });
        }
        if out_canon.is_some() && std::fs::canonicalize(s).ok() == out_canon {
            return Err(RunError::Store {
                path: s.clone(),
                line: None,
                message: "a source is the output store".into(),
            });
        }
    }
    if out.exists() && !out.is_dir() {
        return Err(RunError::Store {
            path: out.to_path_buf(),
            line: None,
            message:
                "the output exists and is not a directory (expected a run store directory or a new path)"
                    .into(),
        });
    }
    check_conflicts(sources, out)?;
    if out.join(RUNS_FILE).exists() {
        return merge_into(sources, out, out, options);
    }
    calibra_core::write_dir_atomically(out, |temp| merge_into(sources, temp, out, options)).map_err(|e| {
        e.into_error(|path, source| {
            RunError::io(
                path,
                "cannot write the merged store (its temporary directory, sync or rename)",
                source,
            )
        })
    })
}

/// Every conflict the merge would meet, found before anything is written: the first one is the error.
fn check_conflicts(sources: &[PathBuf], out: &Path) -> Result<(), RunError> {
    let mut seen: HashMap<String, (String, std::collections::BTreeMap<String, f64>)> = HashMap::new();
    if out.join(RUNS_FILE).exists() {
        let snapshot = StoreSnapshot::read(out)?;
        let file = out.join(RUNS_FILE).display().to_string();
        for r in snapshot.records {
            seen.insert(record_key(&r.record), (format!("{file}:{}", r.line), r.record.metrics));
        }
    }
    for source in sources {
        let snapshot = StoreSnapshot::read(source)?;
        let file = source.join(RUNS_FILE).display().to_string();
        for r in snapshot.records {
            let here = format!("{file}:{}", r.line);
            match seen.get(&record_key(&r.record)) {
                Some((first, metrics)) if *metrics != r.record.metrics => {
                    return Err(RunError::Conflict {
                        key: describe(&r.record),
                        first: first.clone(),
                        second: here,
                    });
                }
                Some(_) => {}
                None => {
                    seen.insert(record_key(&r.record), (here, r.record.metrics));
                }
            }
        }
    }
    Ok(())
}

/// Merges into the store at `dir` (`out` when extending, a temporary directory otherwise); `out` is
/// the name used in messages.
fn merge_into(
    sources: &[PathBuf],
    dir: &Path,
    out: &Path,
    options: StoreOptions,
) -> Result<MergeSummary, RunError> {
    let mut store = RunStore::open(dir, options)?;
    let mut summary = MergeSummary { sources: sources.len(), ..Default::default() };
    // Where each run key written by this merge (or found in the output) came from.
    let mut origin: HashMap<String, String> = HashMap::new();
    let mut failures: Vec<FailureEntry> = Vec::new();
    for source in sources {
        let snapshot = StoreSnapshot::read(source)?;
        let runs_file = source.join(RUNS_FILE).display().to_string();
        let mut by_entry: BTreeMap<usize, Vec<&crate::snapshot::StoredRecord>> = BTreeMap::new();
        for r in &snapshot.records {
            by_entry.entry(r.entry).or_default().push(r);
        }
        for (i, entry) in snapshot.entries.iter().enumerate() {
            let mut outputs = Vec::new();
            for r in by_entry.get(&i).map(Vec::as_slice).unwrap_or_default() {
                summary.records_read += 1;
                let here = format!("{runs_file}:{}", r.line);
                let key = record_key(&r.record);
                if let Some((line, metrics)) = store.find(&r.record) {
                    if *metrics == r.record.metrics {
                        summary.identical_duplicates += 1;
                        continue;
                    }
                    let first = origin
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| format!("{}:{line}", out.join(RUNS_FILE).display()));
                    return Err(RunError::Conflict { key: describe(&r.record), first, second: here });
                }
                let mut record = r.record.clone();
                let predictions = match record.paths.remove("predictions") {
                    Some(rel) => {
                        let p = Path::new(&rel);
                        PredictionsData::File(if p.is_absolute() { p.to_path_buf() } else { source.join(p) })
                    }
                    None => PredictionsData::None,
                };
                origin.insert(key, here);
                outputs.push(RunOutput { record, predictions });
            }
            if !outputs.is_empty() {
                summary.records_written += store.commit(&entry.fit, outputs)?;
            }
        }
        if let Ok(text) = std::fs::read_to_string(source.join(FAILURES_FILE)) {
            failures.extend(text.lines().filter_map(|l| serde_json::from_str::<FailureEntry>(l).ok()));
        }
    }
    let finished: std::collections::HashSet<_> =
        StoreSnapshot::read(dir)?.entries.into_iter().map(|e| e.fit).collect();
    for f in failures.into_iter().filter(|f| !finished.contains(&f.fit)) {
        store.append_failure(&f)?;
        summary.failures_copied += 1;
    }
    Ok(summary)
}

fn describe(r: &calibra_crs::RunRecord) -> String {
    format!(
        "encoder={} dataset={} regime={} probe={} calibrator={} condition={} label_fraction={} seed={}",
        r.encoder, r.dataset, r.regime, r.probe, r.calibrator, r.condition, r.label_fraction, r.seed
    )
}
