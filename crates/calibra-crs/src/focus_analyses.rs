//! The FOCUS additions over a run set (spec §6): subgroup gaps, image-quality strata gaps and adaptation
//! deltas, computed from the runs' per-sample predictions files.
//!
//! Inputs: the run records (their `paths.predictions`, relative to the record file's directory unless
//! absolute, in the calibra-predictions CSV format) and the declared group columns
//! ([`crate::group_columns`]), whose values come either from one group table (`id,<columns…>`) or, when
//! none is given, from extra columns of each predictions file.
//!
//! 1. **Gaps** ([`crate::subgroup_gaps`]): for every run on the clean test split that has a predictions
//!    file, every declared column and every metric: the metric per group and `max − min` across groups
//!    with at least `min_group_size` samples. Then per cell (encoder, dataset, regime, probe, calibrator,
//!    label fraction) × column × metric: the mean and sample std (`n − 1`) of the gap over the runs
//!    (seeds) where it is defined.
//! 2. **Adaptation deltas** ([`crate::adaptation_deltas`]): every adapted run (regime `lora`, `coop` or
//!    `full`) is paired with THE base run (regime `frozen`) of the same encoder, dataset, seed, condition,
//!    label fraction and calibrator (any probe). An adapted run with no base, or with several base runs
//!    (several probes), is listed as unpaired with the reason. Paired predictions must hold the same
//!    sample ids (rows are aligned by id); otherwise it is an error. Each pair gets per-metric deltas
//!    with paired bootstrap intervals and p-values; p-values are BH-adjusted within each metric family
//!    (all pairs of the run set).
//!
//! Runs without a predictions file are counted in the notes, never silently dropped.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::adaptation_deltas::{
    DeltaEstimate, PairedBootstrapConfig, adjust_within_metric_families, paired_bootstrap_deltas,
};
use crate::focus_error::FocusError;
use crate::group_columns::{GapKind, GroupColumn, GroupSplit, GroupTable, assign_groups};
use crate::predictions_cache::PredictionsCache;
use crate::run_record::{Condition, LocatedRecord, Regime, RunRecordSet};
use crate::sample_metrics::{SampleMetric, SampleTable};
use crate::subgroup_gaps::{DEFAULT_MIN_GROUP_SIZE, MetricGap, metric_gaps};

/// What the FOCUS analyses compute.
#[derive(Debug, Clone)]
pub struct FocusOptions {
    /// Declared group columns (subgroups and quality strata).
    pub columns: Vec<GroupColumn>,
    /// The group table; `None` reads the columns from each predictions file.
    pub groups_file: Option<PathBuf>,
    /// Groups smaller than this are reported as skipped (default 30).
    pub min_group_size: usize,
    /// Metrics compared (default: AUROC, ECE, Brier, accuracy).
    pub metrics: Vec<SampleMetric>,
    /// Paired bootstrap of the adaptation deltas (its `n_bins` is also the ECE binning of the gaps);
    /// `replicates = 0` gives point deltas without intervals.
    pub bootstrap: PairedBootstrapConfig,
}

impl Default for FocusOptions {
    fn default() -> Self {
        FocusOptions {
            columns: Vec::new(),
            groups_file: None,
            min_group_size: DEFAULT_MIN_GROUP_SIZE,
            metrics: SampleMetric::ALL.to_vec(),
            bootstrap: PairedBootstrapConfig::default(),
        }
    }
}

/// The key of a run, flattened for tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunLabel {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub seed: u64,
    pub condition: Condition,
    /// `file:line` of the run record.
    pub record: String,
}

impl RunLabel {
    pub(crate) fn of(r: &LocatedRecord) -> Self {
        let x = &r.record;
        RunLabel {
            encoder: x.encoder.clone(),
            dataset: x.dataset.clone(),
            regime: x.regime,
            probe: x.probe.clone(),
            calibrator: x.calibrator.clone(),
            label_fraction: x.label_fraction,
            seed: x.seed,
            condition: x.condition.clone(),
            record: r.location.to_string(),
        }
    }
}

/// One run's groups and gaps for one column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunGaps {
    pub run: RunLabel,
    pub column: String,
    pub kind: GapKind,
    pub split: GroupSplit,
    /// Cut points used (the run's median, or the thresholds).
    pub cuts: Vec<f64>,
    /// Samples with no value in the column.
    pub missing: usize,
    pub metrics: Vec<MetricGap>,
}

/// The gap of one metric on one column, aggregated over a cell's runs (seeds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellGap {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub column: String,
    pub kind: GapKind,
    pub metric: SampleMetric,
    /// Mean gap over runs where it is defined; `None` when it is defined in none.
    pub mean_gap: Option<f64>,
    /// Sample std (`n − 1`) of the gap; `None` with fewer than 2 defined runs.
    pub std_gap: Option<f64>,
    /// Runs (seeds) of the cell, and how many had a defined gap.
    pub runs: usize,
    pub runs_with_gap: usize,
}

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

/// Everything the FOCUS analyses report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FocusReport {
    pub columns: Vec<GroupColumn>,
    /// `groups file PATH` or `predictions files`.
    pub group_source: String,
    pub min_group_size: usize,
    pub metrics: Vec<SampleMetric>,
    pub ece_bins: usize,
    pub bootstrap_replicates: usize,
    pub bootstrap_seed: u64,
    pub level: f64,
    pub run_gaps: Vec<RunGaps>,
    pub cell_gaps: Vec<CellGap>,
    pub adaptation: Vec<AdaptationPair>,
    pub unpaired: Vec<UnpairedRun>,
    pub notes: Vec<String>,
}

/// The predictions path of a record (relative paths are relative to the record file's directory).
pub fn predictions_path(r: &LocatedRecord) -> Option<PathBuf> {
    let rel = r.record.paths.get("predictions")?;
    let base = Path::new(&r.location.source).parent().unwrap_or(Path::new(""));
    Some(if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { base.join(rel) })
}

fn mean_std(values: &[f64]) -> (Option<f64>, Option<f64>) {
    if values.is_empty() {
        return (None, None);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let std = (values.len() >= 2)
        .then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    (Some(mean), std)
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

/// Runs the FOCUS analyses (see the module documentation).
///
/// # Errors
/// An unreadable group table or predictions file; a predictions sample missing from the group table; a
/// numeric group column with a non-numeric value; paired runs over different test samples; a level
/// outside (0, 1) or zero ECE bins.
pub fn focus_analyses(set: &RunRecordSet, options: &FocusOptions) -> Result<FocusReport, FocusError> {
    let config = options.bootstrap;
    if !(config.level > 0.0 && config.level < 1.0) {
        return Err(FocusError::InvalidParameter {
            name: "level",
            message: format!("{} is not in (0, 1)", config.level),
        });
    }
    if config.n_bins == 0 {
        return Err(FocusError::InvalidParameter { name: "ECE bins", message: "must be at least 1".into() });
    }
    // Estimate records (regime `estimate`) are predictions without a predictions file, not fits.
    let (fits, _) = set.split_estimates();
    let set = &fits;
    let mut notes = Vec::new();
    let mut cache = PredictionsCache::new(|p| SampleTable::from_predictions(&p));
    let names: Vec<String> = options.columns.iter().map(|c| c.name.clone()).collect();
    let groups = match &options.groups_file {
        Some(path) if !names.is_empty() => Some(GroupTable::read(path, &names)?),
        _ => None,
    };
    let without_predictions = set.records().iter().filter(|r| predictions_path(r).is_none()).count();
    if without_predictions > 0 {
        notes.push(format!(
            "{without_predictions} of {} run records have no predictions file (paths.predictions) and are not \
             part of the gap or adaptation analyses",
            set.len()
        ));
    }

    // 1. Gaps on the clean split.
    let mut run_gaps = Vec::new();
    if options.columns.is_empty() {
        notes.push("subgroup and quality gaps skipped: no group column declared".into());
    } else {
        for r in set.records() {
            if r.record.condition != Condition::Clean {
                continue;
            }
            let Some(path) = predictions_path(r) else { continue };
            let table = cache.get(r, &path)?;
            let own;
            let (source, lookup) = match &groups {
                Some(g) => (g.source().to_string(), g),
                None => {
                    own = GroupTable::read(&path, &names).map_err(|e| FocusError::Predictions {
                        record: r.location.to_string(),
                        path: path.display().to_string(),
                        message: format!("group columns: {e}"),
                    })?;
                    (path.display().to_string(), &own)
                }
            };
            for column in &options.columns {
                let values = lookup.values_for(&column.name, table.ids(), &path.display().to_string())?;
                let assignment = assign_groups(&values, &column.split, &column.name, &source)?;
                let metrics =
                    metric_gaps(&table, &assignment, &options.metrics, options.min_group_size, config.n_bins);
                run_gaps.push(RunGaps {
                    run: RunLabel::of(r),
                    column: column.name.clone(),
                    kind: column.kind,
                    split: column.split.clone(),
                    cuts: assignment.cuts.clone(),
                    missing: assignment.missing,
                    metrics,
                });
            }
        }
        if run_gaps.is_empty() {
            notes.push("subgroup and quality gaps: no clean-split run has a predictions file".into());
        }
    }
    type CellKey = (String, String, Regime, String, String, u64, String, SampleMetric);
    let mut cells: BTreeMap<CellKey, (GapKind, f64, usize, Vec<f64>)> = BTreeMap::new();
    for g in &run_gaps {
        for m in &g.metrics {
            let r = &g.run;
            let key = (
                r.encoder.clone(),
                r.dataset.clone(),
                r.regime,
                r.probe.clone(),
                r.calibrator.clone(),
                r.label_fraction.to_bits(),
                g.column.clone(),
                m.metric,
            );
            let entry = cells.entry(key).or_insert((g.kind, r.label_fraction, 0, Vec::new()));
            entry.2 += 1;
            entry.3.extend(m.gap);
        }
    }
    let cell_gaps = cells
        .into_iter()
        .map(
            |((encoder, dataset, regime, probe, calibrator, _, column, metric), (kind, frac, runs, gaps))| {
                let (mean_gap, std_gap) = mean_std(&gaps);
                CellGap {
                    encoder,
                    dataset,
                    regime,
                    probe,
                    calibrator,
                    label_fraction: frac,
                    column,
                    kind,
                    metric,
                    mean_gap,
                    std_gap,
                    runs,
                    runs_with_gap: gaps.len(),
                }
            },
        )
        .collect();

    // 2. Adaptation deltas.
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

    Ok(FocusReport {
        columns: options.columns.clone(),
        group_source: match &options.groups_file {
            Some(p) => format!("groups file {}", p.display()),
            None => "predictions files".into(),
        },
        min_group_size: options.min_group_size,
        metrics: options.metrics.clone(),
        ece_bins: config.n_bins,
        bootstrap_replicates: config.replicates,
        bootstrap_seed: config.seed,
        level: config.level,
        run_gaps,
        cell_gaps,
        adaptation,
        unpaired,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write;

    /// Writes a binary predictions file with an extra `site` column (by row position).
    fn predictions(dir: &Path, name: &str, ids: &[&str], p1: &[f64]) {
        let mut text = String::from("id,label,prob_0,prob_1,site\n");
        for (i, (id, p)) in ids.iter().zip(p1).enumerate() {
            // The label belongs to the sample: 1 for an even last digit.
            let label = u32::from(id.ends_with(['0', '2', '4', '6', '8']));
            let _ = writeln!(text, "{id},{label},{},{p},{}", 1.0 - p, if i < 2 { "a" } else { "b" });
        }
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn record(regime: &str, probe: &str, seed: u64, pred: Option<&str>) -> String {
        let paths = pred.map(|p| format!(r#","paths":{{"predictions":"{p}"}}"#)).unwrap_or_default();
        format!(
            r#"{{"encoder":"E","dataset":"D","regime":"{regime}","probe":"{probe}","calibrator":"none","label_fraction":1.0,"seed":{seed},"condition":{{"kind":"clean"}},"metrics":{{"macro_auroc":0.5}}{paths}}}"#
        )
    }

    fn run(lines: &[String], dir: &Path, options: &FocusOptions) -> Result<FocusReport, FocusError> {
        let path = dir.join("runs.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        focus_analyses(&RunRecordSet::from_path(&path).unwrap(), options)
    }

    #[test]
    fn pairs_unpaired_and_ambiguous_runs_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ["s1", "s2", "s3", "s4"];
        predictions(dir.path(), "base.csv", &ids, &[0.4, 0.6, 0.3, 0.7]);
        // The adapted file lists the same samples in another order.
        predictions(dir.path(), "lora.csv", &["s2", "s1", "s4", "s3"], &[0.2, 0.9, 0.1, 0.8]);
        let lines = vec![
            record("frozen", "linear", 0, Some("base.csv")),
            record("lora", "r8", 0, Some("lora.csv")),
            record("lora", "r8", 1, Some("lora.csv")), // no seed-1 base
            record("frozen", "linear", 2, None),
            record("frozen", "mlp", 2, None),
            record("full", "ft", 2, Some("lora.csv")), // two base probes
            // A prediction, not a fit: in no count, pairing or gap below.
            record("estimate", "estimators", 0, None),
        ];
        let options = FocusOptions {
            columns: vec![GroupColumn::parse("site", GapKind::Subgroup).unwrap()],
            min_group_size: 1,
            bootstrap: PairedBootstrapConfig { replicates: 50, ..Default::default() },
            ..Default::default()
        };
        let report = run(&lines, dir.path(), &options).unwrap();
        assert_eq!(report.adaptation.len(), 1);
        let pair = &report.adaptation[0];
        assert_eq!((pair.base.seed, pair.samples), (0, 4));
        let acc = pair.deltas.iter().find(|d| d.metric == SampleMetric::Accuracy).unwrap();
        // Aligned by id, the adapted run is right on every sample (exact): base 2/4 → adapted 4/4.
        // Base: s1 (label 0, p 0.4) ok, s2 (1, 0.6) ok, s3 (0, 0.3) ok, s4 (1, 0.7) ok → 1.
        // Adapted by id: s1 0.9 (label 0) wrong, s2 0.2 (label 1) wrong, s3 0.8 wrong, s4 0.1 wrong → 0.
        assert_eq!((acc.base, acc.adapted, acc.delta), (Some(1.0), Some(0.0), Some(-1.0)));
        let reasons: Vec<&str> = report.unpaired.iter().map(|u| u.reason.as_str()).collect();
        assert!(reasons[0].starts_with("no frozen base run"), "{reasons:?}");
        assert!(
            reasons[1].starts_with("ambiguous base: 2 frozen runs match (probes linear, mlp)"),
            "{reasons:?}"
        );
        // Gaps from the predictions files' `site` column: 4 clean runs with predictions (the estimate
        // record is not counted among the records without predictions).
        assert_eq!(report.run_gaps.len(), 4);
        assert!(report.notes.iter().any(|n| n.starts_with("2 of 6 run records have no predictions file")));
    }

    #[test]
    fn different_test_sets_are_an_error_naming_both_records() {
        let dir = tempfile::tempdir().unwrap();
        predictions(dir.path(), "base.csv", &["s1", "s2", "s3"], &[0.4, 0.6, 0.3]);
        predictions(dir.path(), "lora.csv", &["s1", "s2", "x9"], &[0.4, 0.6, 0.3]);
        let lines =
            vec![record("frozen", "linear", 0, Some("base.csv")), record("lora", "r8", 0, Some("lora.csv"))];
        let err = run(&lines, dir.path(), &FocusOptions::default()).unwrap_err().to_string();
        assert!(err.contains("runs.jsonl:1 (base)") && err.contains("runs.jsonl:2 (adapted)"), "{err}");
        assert!(err.contains("`s3`"), "{err}");
    }
}
