//! Step 1 of the FOCUS analyses (see `crate::focus_analyses`): subgroup and quality-stratum gaps per run
//! on the clean split, then per cell over its runs (seeds).

use std::collections::BTreeMap;

use serde::Serialize;

use super::options::FocusOptions;
use crate::focus_error::FocusError;
use crate::group_columns::{GapKind, GroupSplit, GroupTable, assign_groups};
use crate::predictions_cache::PredictionsCache;
use crate::run_label::{RunLabel, predictions_path};
use crate::run_record::{Condition, Regime, RunRecordSet};
use crate::sample_metrics::{SampleMetric, SampleTable};
use crate::subgroup_gaps::{MetricGap, metric_gaps};

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

/// The gaps of every declared column and metric for every clean-split run with a predictions file;
/// group values from `groups` (the group table) or, without it, from each predictions file.
pub(crate) fn run_gaps(
    set: &RunRecordSet,
    options: &FocusOptions,
    groups: Option<&GroupTable>,
    cache: &mut PredictionsCache<SampleTable>,
    notes: &mut Vec<String>,
) -> Result<Vec<RunGaps>, FocusError> {
    let mut run_gaps = Vec::new();
    if options.columns.is_empty() {
        notes.push("subgroup and quality gaps skipped: no group column declared".into());
        return Ok(run_gaps);
    }
    let names: Vec<String> = options.columns.iter().map(|c| c.name.clone()).collect();
    for r in set.records() {
        if r.record.condition != Condition::Clean {
            continue;
        }
        let Some(path) = predictions_path(r) else { continue };
        let table = cache.get(r, &path)?;
        let own;
        let (source, lookup) = match groups {
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
            let metrics = metric_gaps(
                &table,
                &assignment,
                &options.metrics,
                options.min_group_size,
                options.bootstrap.n_bins,
            );
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
    Ok(run_gaps)
}

/// Per cell (encoder, dataset, regime, probe, calibrator, label fraction) × column × metric: the gap's
/// mean and sample std over the cell's runs where it is defined.
pub(crate) fn cell_gaps(run_gaps: &[RunGaps]) -> Vec<CellGap> {
    type CellKey = (String, String, Regime, String, String, u64, String, SampleMetric);
    let mut cells: BTreeMap<CellKey, (GapKind, f64, usize, Vec<f64>)> = BTreeMap::new();
    for g in run_gaps {
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
    cells
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
        .collect()
}
