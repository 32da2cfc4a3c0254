//! Step 2 of the FOCUS analyses (see `crate::focus_analyses`): every adapted run paired with its frozen
//! base run, with per-metric deltas (paired bootstrap intervals, BH-adjusted p-values).

use std::collections::HashMap;

use serde::Serialize;

use super::options::FocusOptions;
use crate::adaptation_deltas::{DeltaEstimate, adjust_within_metric_families, paired_bootstrap_deltas};
use crate::focus_error::FocusError;
use crate::predictions_cache::PredictionsCache;
use crate::run_label::{RunLabel, predictions_path};
use crate::run_record::{LocatedRecord, Regime, RunRecordSet};
use crate::sample_metrics::SampleTable;

/// A base–adapted pair with its deltas.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdaptationPair {
    pub base: RunLabel,
    pub adapted: RunLabel,
    /// Test samples (shared by both runs).
    pub samples: usize,
    pub deltas: Vec<DeltaEstimate>,
}

/// An adapted run that could not be paired, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnpairedRun {
    pub run: RunLabel,
    pub reason: String,
}

/// Aligns `adapted` rows to `base` rows by sample id.
fn align(base: &SampleTable, adapted: &SampleTable, pair: &str) -> Result<SampleTable, FocusError> {
    let mismatch = |message: String| FocusError::TestSetMismatch { pair: pair.to_string(), message };
    if base.len() != adapted.len() {
        return Err(mismatch(format!("{} base samples but {} adapted samples", base.len(), adapted.len())));
    }
    let mut row: HashMap<&str, usize> = HashMap::with_capacity(adapted.len());
    for (i, id) in adapted.ids().iter().enumerate() {
        if row.insert(id, i).is_some() {
            return Err(mismatch(format!("sample id `{id}` repeats in the adapted predictions")));
        }
    }
    let order = base
        .ids()
        .iter()
        .map(|id| {
            row.get(id.as_str()).copied().ok_or_else(|| {
                mismatch(format!("sample id `{id}` of the base run is not in the adapted run"))
            })
        })
        .collect::<Result<Vec<usize>, FocusError>>()?;
    if base.num_classes() != adapted.num_classes() {
        return Err(mismatch(format!(
            "{} base classes but {} adapted classes",
            base.num_classes(),
            adapted.num_classes()
        )));
    }
    let aligned = adapted.reordered(&order);
    if let Some(i) = (0..base.len()).find(|&i| base.targets_of(i) != aligned.targets_of(i)) {
        return Err(mismatch(format!("sample id `{}` has other labels in the two runs", base.ids()[i])));
    }
    Ok(aligned)
}

/// The base–adapted pairs with their deltas, and the adapted runs that could not be paired.
pub(crate) fn adaptation_pairs(
    set: &RunRecordSet,
    options: &FocusOptions,
    cache: &mut PredictionsCache<SampleTable>,
    notes: &mut Vec<String>,
) -> Result<(Vec<AdaptationPair>, Vec<UnpairedRun>), FocusError> {
    let config = options.bootstrap;
    let mut adaptation = Vec::new();
    let mut unpaired = Vec::new();
    let adapted_regimes = [Regime::Lora, Regime::Coop, Regime::Full];
    let base_key = |r: &LocatedRecord| {
        let x = &r.record;
        (
            x.encoder.clone(),
            x.dataset.clone(),
            x.seed,
            x.condition.clone(),
            x.label_fraction.to_bits(),
            x.calibrator.clone(),
        )
    };
    let mut bases: HashMap<_, Vec<&LocatedRecord>> = HashMap::new();
    for r in set.records().iter().filter(|r| r.record.regime == Regime::Frozen) {
        bases.entry(base_key(r)).or_default().push(r);
    }
    let adapted_runs: Vec<&LocatedRecord> =
        set.records().iter().filter(|r| adapted_regimes.contains(&r.record.regime)).collect();
    if adapted_runs.is_empty() {
        notes.push("adaptation deltas skipped: no adapted run (regime lora, coop or full)".into());
    }
    for r in adapted_runs {
        let unpair = |reason: String| UnpairedRun { run: RunLabel::of(r), reason };
        let Some(path) = predictions_path(r) else {
            unpaired.push(unpair("the adapted run has no predictions file".into()));
            continue;
        };
        let candidates = bases.get(&base_key(r)).map(Vec::as_slice).unwrap_or(&[]);
        let base = match candidates {
            [] => {
                unpaired.push(unpair(
                    "no frozen base run with the same encoder, dataset, seed, condition, label fraction and calibrator"
                        .into(),
                ));
                continue;
            }
            [one] => *one,
            many => {
                let probes: Vec<&str> = many.iter().map(|b| b.record.probe.as_str()).collect();
                unpaired.push(unpair(format!(
                    "ambiguous base: {} frozen runs match (probes {})",
                    many.len(),
                    probes.join(", ")
                )));
                continue;
            }
        };
        let Some(base_path) = predictions_path(base) else {
            unpaired.push(unpair(format!("its base run ({}) has no predictions file", base.location)));
            continue;
        };
        let base_table = cache.get(base, &base_path)?;
        let adapted_table = cache.get(r, &path)?;
        let pair = format!("{} (base) / {} (adapted)", base.location, r.location);
        let aligned = align(&base_table, &adapted_table, &pair)?;
        let deltas = if config.replicates == 0 {
            crate::adaptation_deltas::paired_deltas_with_draws(
                &base_table,
                &aligned,
                &options.metrics,
                &[],
                config.level,
                config.n_bins,
            )
        } else {
            paired_bootstrap_deltas(&base_table, &aligned, &options.metrics, &config)
        };
        adaptation.push(AdaptationPair {
            base: RunLabel::of(base),
            adapted: RunLabel::of(r),
            samples: base_table.len(),
            deltas,
        });
    }
    adjust_within_metric_families(adaptation.iter_mut().flat_map(|p| p.deltas.iter_mut()));
    Ok((adaptation, unpaired))
}
