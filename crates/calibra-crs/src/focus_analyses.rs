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

mod adaptation;
mod gaps;
mod options;

use serde::Serialize;

pub use crate::run_label::{RunLabel, predictions_path};
pub use adaptation::{AdaptationPair, UnpairedRun};
pub use gaps::{CellGap, RunGaps};
pub use options::FocusOptions;

use crate::focus_error::FocusError;
use crate::group_columns::{GroupColumn, GroupTable};
use crate::predictions_cache::PredictionsCache;
use crate::run_record::RunRecordSet;
use crate::sample_metrics::{SampleMetric, SampleTable};

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
    let run_gaps = gaps::run_gaps(set, options, groups.as_ref(), &mut cache, &mut notes)?;
    let cell_gaps = gaps::cell_gaps(&run_gaps);
    // 2. Adaptation deltas.
    let (adaptation, unpaired) = adaptation::adaptation_pairs(set, options, &mut cache, &mut notes)?;

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
    use crate::adaptation_deltas::PairedBootstrapConfig;
    use crate::group_columns::GapKind;
    use std::fmt::Write;
    use std::path::Path;

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
