//! Running a recipe into a run store, as `calibra run` and `calibra train` do: refuse up front what
//! the executor cannot run, open (and recover) the store, refuse to continue a store without
//! `resume`, save the recipe text beside the records, run the grid, and fail when any fit failed.

use std::path::{Path, PathBuf};

use crate::error::RunError;
use crate::executor::{Executor, Progress};
use crate::grid::FitSpec;
use crate::recipe::Recipe;
use crate::runner::{RunSummary, run_grid, shard_fits};
use crate::shard::Shard;
use crate::store::{RunStore, StoreOptions};

/// How a recipe runs into its store.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecuteOptions {
    /// Continue a store that already holds records (finished fits are skipped).
    pub resume: bool,
    /// Run only this shard of the grid.
    pub shard: Option<Shard>,
    /// Stop at the first failed fit.
    pub fail_fast: bool,
    /// Remove a stale lock first.
    pub break_lock: bool,
}

/// Why a recipe did not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error(transparent)]
    Run(#[from] RunError),
    /// `--out` names a file.
    #[error(
        "{}: --out names a run store directory, and this is a file; choose a new path or an existing store",
        .0.display()
    )]
    NotADirectory(PathBuf),
    /// The store holds records and `resume` was not given.
    #[error(
        "{}: the run store already holds {records} records; pass --resume to continue it (finished fits are \
         skipped), or choose another --out",
        path.display()
    )]
    NotResumed { path: PathBuf, records: usize },
    /// Some fits failed (recorded in the store's journal).
    #[error("{count} fit(s) failed (errors in {}); fix the cause and rerun with --resume", failures.display())]
    FitsFailed { count: usize, failures: PathBuf },
}

/// Every fit of `fits` that `executor` supports, else the list of those it does not (with why).
pub fn check_supported(executor: &dyn Executor, fits: &[FitSpec]) -> Result<(), RunError> {
    let unsupported: Vec<String> = fits
        .iter()
        .filter_map(|f| executor.supports(f).err().map(|why| format!("{}: {why}", f.describe())))
        .collect();
    if unsupported.is_empty() { Ok(()) } else { Err(RunError::Unsupported(unsupported)) }
}

/// Runs `recipe` (whose TOML is `text`) into the run store `out` with `executor`; `note` receives
/// what a person should know (crash recovery, the final counts). Returns the grid's summary.
pub fn execute_recipe(
    recipe: &Recipe,
    text: &str,
    out: &Path,
    executor: &dyn Executor,
    options: ExecuteOptions,
    progress: &mut dyn Progress,
    note: &mut dyn FnMut(&str),
) -> Result<RunSummary, ExecuteError> {
    if out.exists() && !out.is_dir() {
        return Err(ExecuteError::NotADirectory(out.to_path_buf()));
    }
    if !out.join("runs.jsonl").exists() {
        // A fresh store: refuse a grid the executor cannot run before creating anything. (On an
        // existing store run_grid checks only the unfinished fits.)
        check_supported(executor, &shard_fits(recipe, options.shard))?;
    }
    let mut store = RunStore::open(out, StoreOptions { break_lock: options.break_lock })?;
    let recovery = store.recovery().clone();
    if recovery.runs_bytes_cut > 0 || recovery.journal_bytes_cut > 0 {
        note(&format!(
            "{}: recovered from an interrupted commit (cut {} bytes of runs.jsonl and {} of the journal; \
             that fit runs again)",
            out.display(),
            recovery.runs_bytes_cut,
            recovery.journal_bytes_cut
        ));
    }
    if recovery.temporaries_removed > 0 {
        note(&format!(
            "{}: removed {} temporary file(s) an interrupted run left half-written",
            out.display(),
            recovery.temporaries_removed
        ));
    }
    if store.commit_count() > 0 && !options.resume {
        return Err(ExecuteError::NotResumed { path: out.to_path_buf(), records: store.record_count() });
    }
    store.save_recipe(text)?;
    let summary = run_grid(recipe, &mut store, executor, options.shard, options.fail_fast, progress)?;
    note(&format!(
        "{}: {} fits ({} already finished, {} run now, {} failed); {} records written; {} records in the store",
        out.display(),
        summary.fits,
        summary.already_done,
        summary.completed,
        summary.failed.len(),
        summary.records_written,
        store.record_count()
    ));
    if !summary.failed.is_empty() {
        return Err(ExecuteError::FitsFailed {
            count: summary.failed.len(),
            failures: out.join("journal/failures.jsonl"),
        });
    }
    Ok(summary)
}
