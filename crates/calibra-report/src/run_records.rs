//! The run records an evaluation reads: record files named directly or found in directories, and
//! run stores read as their journal commits them.
//!
//! A run store (a directory with `journal/fits.jsonl`) is read as its journal commits it: records an
//! interrupted run appended after its last commit (a torn tail after `kill -9`) are left out with a
//! note, as `calibra run --resume` would cut them. A store whose journal and records disagree is an
//! error pointing to `calibra merge --repair`. Other `*.jsonl` files are read whole.

use crate::EvalError;
use calibra_crs::RunRecordSet;
use calibra_run::StoreSnapshot;
use std::path::{Path, PathBuf};

/// The run-record files named by `inputs`: a file as is, a directory as its `*.jsonl` files (not
/// recursive, sorted by name).
pub fn record_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, EvalError> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .map_err(|source| EvalError::ListDir { dir: input.clone(), source })?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            if found.is_empty() {
                return Err(EvalError::EmptyDir(input.clone()));
            }
            found.sort();
            files.extend(found);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            return Err(EvalError::NoSuchInput(input.clone()));
        }
    }
    Ok(files)
}

/// The records of `files` (from [`record_files`]), read together: a run key repeated across files is
/// an error. `notes` receives what was left out.
pub fn read_records(files: &[PathBuf], notes: &mut Vec<String>) -> Result<RunRecordSet, EvalError> {
    let mut set = RunRecordSet::default();
    for file in files {
        let source = file.display().to_string();
        let io = |action, e| EvalError::Io { file: source.clone(), action, source: e };
        match store_of(file) {
            Some(store) => {
                let snapshot = StoreSnapshot::read(store)
                    .map_err(|source| EvalError::Snapshot { store: store.to_path_buf(), source })?;
                let bytes = std::fs::read(file).map_err(|e| io("read", e))?;
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
                let f = std::fs::File::open(file).map_err(|e| io("open", e))?;
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

/// A record's predictions file: `rel` as given in the record read from `record_source`, relative to
/// the record file's directory unless absolute.
pub(crate) fn predictions_file(record_source: &str, rel: &str) -> PathBuf {
    let base = Path::new(record_source).parent().unwrap_or(Path::new(""));
    if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { base.join(rel) }
}

/// The files, comma-separated, as error messages and progress lines name them.
pub(crate) fn describe(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}
