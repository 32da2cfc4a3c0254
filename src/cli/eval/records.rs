//! Reading the run records `calibra eval` evaluates, and checking them against their predictions.
//!
//! A run store (a directory with `journal/fits.jsonl`) is read as its journal commits it: records an
//! interrupted run appended after its last commit (a torn tail after `kill -9`) are left out with a
//! note, as `calibra run --resume` would cut them. A store whose journal and records disagree is an
//! error pointing to `calibra merge --repair`. Other `*.jsonl` files are read whole.
//!
//! Every record with a predictions file is checked against it: the metrics calibra computes from a
//! predictions file (`calibra_run::slot_outputs::record_metrics`) must agree with the record's values of
//! the same names. A disagreement is a warning, or an error under `--strict`.

use anyhow::{Context, Result, bail};
use calibra_crs::RunRecordSet;
use calibra_predictions::read_predictions;
use calibra_run::StoreSnapshot;
use std::path::{Path, PathBuf};

/// Largest |record − recomputed| accepted, relative to max(1, |recomputed|): metrics are recomputed
/// from the exact numbers of the file, so anything beyond rounding means the record is not what its
/// predictions give.
const TOLERANCE: f64 = 1e-6;

/// The records of `files` (from [`super::record_files`]); `notes` receives what was left out.
pub fn read_records(files: &[PathBuf], notes: &mut Vec<String>) -> Result<RunRecordSet> {
    let mut set = RunRecordSet::default();
    for file in files {
        let source = file.display().to_string();
        match store_of(file) {
            Some(store) => {
                let snapshot = StoreSnapshot::read(store).with_context(|| {
                    format!("{}: the run store cannot be read as committed", store.display())
                })?;
                let bytes = std::fs::read(file).with_context(|| format!("{source}: cannot read"))?;
                let committed = &bytes[..(snapshot.committed_len as usize).min(bytes.len())];
                if snapshot.runs_len > snapshot.committed_len {
                    notes.push(format!(
                        "{source}: {} bytes past the last committed fit (an interrupted run) are not evaluated; \
                         `calibra run RECIPE --out {} --resume` completes the store",
                        snapshot.runs_len - snapshot.committed_len,
                        store.display()
                    ));
                }
                set.extend_from_reader(committed, &source)?;
            }
            None => {
                let f = std::fs::File::open(file).with_context(|| format!("{source}: cannot open"))?;
                set.extend_from_reader(std::io::BufReader::new(f), &source)?;
            }
        }
    }
    Ok(set)
}

/// The store directory of a store's `runs.jsonl` (one with `journal/fits.jsonl` beside it).
fn store_of(file: &Path) -> Option<&Path> {
    let dir = file.parent()?;
    (file.file_name()? == "runs.jsonl" && dir.join("journal/fits.jsonl").is_file()).then_some(dir)
}

/// Every disagreement between a record and its predictions file, as `file:line: ...` messages.
pub fn check_against_predictions(set: &RunRecordSet) -> Vec<String> {
    let mut problems = Vec::new();
    for located in set.records() {
        let Some(rel) = located.record.paths.get("predictions") else { continue };
        let at = format!("{}:{}", located.location.source, located.location.line);
        let base = Path::new(&located.location.source).parent().unwrap_or(Path::new(""));
        let path = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { base.join(rel) };
        let recomputed = match read_predictions(&path)
            .map_err(|e| e.to_string())
            .and_then(|p| calibra_run::slot_outputs::record_metrics(&p).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("{at}: its predictions file `{rel}` cannot be checked: {e}"));
                continue;
            }
        };
        for (name, value) in &located.record.metrics {
            let Some(expected) = recomputed.get(name) else { continue };
            if (value - expected).abs() > TOLERANCE * expected.abs().max(1.0) {
                problems.push(format!(
                    "{at}: metric `{name}` is {value} but its predictions file `{rel}` gives {expected}"
                ));
            }
        }
    }
    problems
}

/// Reports `problems`: warnings on stderr, or the error under `strict`.
pub fn report_disagreements(problems: &[String], strict: bool) -> Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 10;
    let list: Vec<String> = problems.iter().take(SHOWN).map(|p| format!("  {p}")).collect();
    let more = if problems.len() > SHOWN {
        format!("\n  … and {} more", problems.len() - SHOWN)
    } else {
        String::new()
    };
    if strict {
        bail!(
            "{} run record(s) disagree with their predictions files (--strict):\n{}{more}",
            problems.len(),
            list.join("\n")
        );
    }
    eprintln!(
        "warning: {} run record(s) disagree with their predictions files (--strict makes this an error):\n{}{more}",
        problems.len(),
        list.join("\n")
    );
    Ok(())
}
