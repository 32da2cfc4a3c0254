//! The grid loop: every fit of a recipe (or of one shard) that the store has not finished, through an
//! executor, into the store.
//!
//! For each fit in grid order: skip it when the store already holds all its slots; otherwise let the
//! executor fit it, turn the fitted model into one output per missing slot ([`crate::slot_outputs`]:
//! calibration split, shift targets, conditions, calibrators, metrics, records — the same for every
//! regime), and commit them. Outputs an executor built itself ([`FitOutcome::Records`]) are checked
//! against the fit first (right identity fields, only the fit's slots, every missing slot present,
//! each record valid). An executor error, invalid outputs, or a
//! write error while committing make the fit **failed**: its error text goes to
//! `journal/failures.jsonl` (never read by the evaluator), nothing of it enters `runs.jsonl`, and the
//! grid continues — unless `fail_fast`, which stops with the error. Failed fits run again on resume.
//!
//! A **panic** inside the executor (a bug, or a library assertion such as a backend's dtype check) is
//! caught and handled as that fit's error (`executor panicked: <message>`, plus what to change when
//! the message says a GPU ran out of memory), so one bad fit cannot abort a grid of hundreds. After
//! any failed fit, the temporary files this process's atomic writers leave when unwound mid-write (`.NAME.tmp-<pid>`, `NAME.tmp-<pid>`, `NAME.tmp`) are removed from the
//! store's feature cache and the fit's directory, so no half-written output remains.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Instant;

use crate::datasets::DatasetCache;
use crate::error::RunError;
use crate::executor::{ExecError, Executor, Progress, RunContext};
use crate::fitted::FitOutcome;
use crate::grid::{FitSpec, expand};
use crate::recipe::Recipe;
use crate::shard::Shard;
use crate::slot_outputs::{model_outputs, score_outputs};
use crate::snapshot::slot_of;
use crate::store::{RunOutput, RunStore};

/// What one `run_grid` call did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    /// Fits of the grid (of the shard, when sharded).
    pub fits: usize,
    /// Fits already finished before this call.
    pub already_done: usize,
    /// Fits run and committed by this call.
    pub completed: usize,
    /// Fits that failed in this call: (description, error).
    pub failed: Vec<(String, String)>,
    /// Records appended by this call.
    pub records_written: usize,
}

/// The fits of `recipe` that belong to `shard` (all when `None`), in grid order; shards are balanced
/// by estimated cost over the whole grid (see [`crate::shard`]).
pub fn shard_fits(recipe: &Recipe, shard: Option<Shard>) -> Vec<FitSpec> {
    let grid = expand(recipe);
    match shard {
        None => grid,
        Some(s) => s.select(recipe, grid),
    }
}

/// Runs the grid (see the module docs).
pub fn run_grid(
    recipe: &Recipe,
    store: &mut RunStore,
    executor: &dyn Executor,
    shard: Option<Shard>,
    fail_fast: bool,
    progress: &mut dyn Progress,
) -> Result<RunSummary, RunError> {
    let fits = shard_fits(recipe, shard);
    let pending: Vec<&FitSpec> = fits.iter().filter(|f| !store.missing_slots(f).is_empty()).collect();
    let unsupported: Vec<String> = pending
        .iter()
        .filter_map(|f| executor.supports(f).err().map(|why| format!("{}: {why}", f.describe())))
        .collect();
    if !unsupported.is_empty() {
        return Err(RunError::Unsupported(unsupported));
    }
    let mut summary =
        RunSummary { fits: fits.len(), already_done: fits.len() - pending.len(), ..Default::default() };
    let total = pending.len();
    let own_datasets = DatasetCache::default();
    let datasets = executor.datasets().unwrap_or(&own_datasets);
    for (done, fit) in pending.into_iter().enumerate() {
        let missing = store.missing_slots(fit);
        progress.fit_started(done, total, fit);
        let started = Instant::now();
        let features = store.features_dir();
        let (outcome, fit_dir) = {
            let mut ctx = RunContext::new(fit, missing, &features, progress);
            let fit_dir = ctx.fit_dir();
            (execute_caught(executor, datasets, fit, &mut ctx), fit_dir)
        };
        let outcome = outcome.and_then(|outputs| store.commit(&fit.key, outputs).map_err(|e| e.to_string()));
        match outcome {
            Ok(n) => {
                summary.completed += 1;
                summary.records_written += n;
                progress.fit_finished(fit, n, started.elapsed().as_secs_f64());
            }
            Err(error) => {
                remove_stray_temporaries(&features);
                remove_stray_temporaries(&fit_dir);
                store.record_failure(fit, &error)?;
                progress.fit_failed(fit, &error);
                if fail_fast {
                    return Err(RunError::FitFailed { fit: fit.describe(), message: error });
                }
                summary.failed.push((fit.describe(), error));
            }
        }
    }
    Ok(summary)
}

/// Fits one fit with the executor and makes its outputs; an error or a panic becomes the fit's error
/// text.
///
/// `AssertUnwindSafe`: what a panicking executor may leave inconsistent is its own state (caches of
/// loaded datasets and models) and the context; the runner drops the context and never reads the
/// fit's partial outputs. An executor whose caches could be left half-updated must tolerate that
/// (the burn executors' caches are insert-after-build maps, so an unwind leaves them unchanged).
fn execute_caught(
    executor: &dyn Executor,
    datasets: &DatasetCache,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<Vec<RunOutput>, String> {
    match catch_unwind(AssertUnwindSafe(|| outputs_of(executor, datasets, fit, ctx))) {
        Ok(result) => result,
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            Err(format!("executor panicked: {message}{}", out_of_memory_hint(&message)))
        }
    }
}

/// What a panic's text gains when it says a GPU ran out of memory (cubecl's launch and allocation
/// errors: "An out-of-memory error happened during launch", "out of device memory allocating N
/// bytes"): the two things a user can change. Empty for any other panic.
fn out_of_memory_hint(message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    if lower.contains("out-of-memory")
        || lower.contains("out of device memory")
        || lower.contains("outofmemory")
    {
        " (the device ran out of memory: lower the batch size, `--batch-size` or the regime's `batch_size`, \
         with `--accumulate` / `accumulate` to keep the effective batch, or use a device with more memory)"
    } else {
        ""
    }
}

/// The outputs of one fit: the executor's fitted model predicted, calibrated and scored for every
/// missing slot (or its scores, or its own checked records).
fn outputs_of(
    executor: &dyn Executor,
    datasets: &DatasetCache,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<Vec<RunOutput>, String> {
    let text = |e: ExecError| e.to_string();
    match executor.fit(fit, ctx).map_err(text)? {
        FitOutcome::Model(model) => model_outputs(fit, ctx, datasets, model.as_ref()).map_err(text),
        FitOutcome::Scores(metrics) => score_outputs(fit, ctx, metrics).map_err(text),
        FitOutcome::Records(outputs) => {
            check_outputs(fit, &ctx.missing, &outputs)?;
            Ok(outputs)
        }
    }
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// Whether `name` is a temporary name of this process's atomic writers: `.X.tmp-<pid>` /
/// `X.tmp-<pid>` (calibra-predictions, feature caches, checkpoints, adapters) or `X.tmp`.
fn is_stray_temporary(name: &str, pid: u32) -> bool {
    name.ends_with(&format!(".tmp-{pid}")) || name.ends_with(".tmp")
}

/// Removes every stray temporary (see [`is_stray_temporary`]) under `dir`, recursively. Best effort:
/// a directory that does not exist or cannot be read is left alone.
fn remove_stray_temporaries(dir: &Path) {
    let pid = std::process::id();
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if entry.file_name().to_str().is_some_and(|n| is_stray_temporary(n, pid)) {
            let _ = if is_dir { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        } else if is_dir {
            remove_stray_temporaries(&path);
        }
    }
}

/// Checks an executor's outputs against the fit (see the module docs).
pub fn check_outputs(
    fit: &FitSpec,
    missing: &[crate::grid::Slot],
    outputs: &[RunOutput],
) -> Result<(), String> {
    let c = &fit.config;
    let slots: BTreeSet<_> = fit.slots.iter().collect();
    let mut seen = BTreeSet::new();
    for (i, out) in outputs.iter().enumerate() {
        let r = &out.record;
        let at = |m: String| format!("executor output {} ({} / {}): {m}", i + 1, r.condition, r.calibrator);
        r.validate().map_err(|m| at(format!("invalid record: {m}")))?;
        for (field, got, want) in [
            ("encoder", r.encoder.as_str(), c.encoder.name.as_str()),
            ("dataset", r.dataset.as_str(), c.dataset.name.as_str()),
            ("regime", r.regime.name(), c.regime.name()),
            ("probe", r.probe.as_str(), c.probe.as_str()),
        ] {
            if got != want {
                return Err(at(format!("field `{field}` is `{got}`, expected `{want}`")));
            }
        }
        if r.label_fraction != c.label_fraction || r.seed != c.seed {
            return Err(at(format!(
                "label_fraction {} / seed {} differ from the fit's {} / {}",
                r.label_fraction, r.seed, c.label_fraction, c.seed
            )));
        }
        let slot = slot_of(r);
        if !slots.contains(&slot) {
            return Err(at("this (condition, calibrator) is not a slot of the fit".into()));
        }
        if !seen.insert(slot) {
            return Err(at("this (condition, calibrator) is emitted twice".into()));
        }
    }
    if let Some(s) = missing.iter().find(|s| !seen.contains(*s)) {
        return Err(format!(
            "the executor returned no record for condition {} / calibrator {}",
            s.condition, s.calibrator
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_out_of_memory_panic_says_what_to_change_and_no_other_panic_does() {
        for message in [
            "out of device memory allocating 4294967296 bytes\n<backtrace>",
            "An out-of-memory error happened during launch\nCaused by:\n  pool exhausted",
            "called `Result::unwrap()` on an `Err` value: OutOfMemory { size: 12 }",
        ] {
            let hint = out_of_memory_hint(message);
            assert!(hint.contains("--batch-size") && hint.contains("accumulate"), "{message}: {hint}");
        }
        for message in ["simulated panic", "index out of bounds: the len is 3 but the index is 7", ""] {
            assert_eq!(out_of_memory_hint(message), "", "{message}");
        }
    }
}
