//! The grid loop: every fit of a recipe (or of one shard) that the store has not finished, through an
//! executor, into the store.
//!
//! For each fit in grid order: skip it when the store already holds all its slots; otherwise run the
//! executor, check its outputs against the fit (right identity fields, only the fit's slots, every
//! missing slot present, each record valid), and commit them. An executor error, invalid outputs, or a
//! write error while committing make the fit **failed**: its error text goes to
//! `journal/failures.jsonl` (never read by the evaluator), nothing of it enters `runs.jsonl`, and the
//! grid continues — unless `fail_fast`, which stops with the error. Failed fits run again on resume.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::error::RunError;
use crate::executor::{Executor, Progress, RunContext};
use crate::grid::{FitSpec, expand};
use crate::recipe::Recipe;
use crate::shard::Shard;
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
    for (done, fit) in pending.into_iter().enumerate() {
        let missing = store.missing_slots(fit);
        progress.fit_started(done, total, fit);
        let started = Instant::now();
        let features = store.features_dir();
        let outcome = {
            let mut ctx = RunContext::new(fit, missing.clone(), &features, progress);
            executor.execute(fit, &mut ctx).map_err(|e| e.to_string())
        };
        let outcome = outcome
            .and_then(|outputs| check_outputs(fit, &missing, &outputs).map(|()| outputs))
            .and_then(|outputs| store.commit(&fit.key, outputs).map_err(|e| e.to_string()));
        match outcome {
            Ok(n) => {
                summary.completed += 1;
                summary.records_written += n;
                progress.fit_finished(fit, n, started.elapsed().as_secs_f64());
            }
            Err(error) => {
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
