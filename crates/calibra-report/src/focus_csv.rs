//! CSV files of the encoder analyses E1–E6 (`e1_specialist.csv` … `e6_label_crossover.csv`, header
//! only when an analysis had not enough records) and of the FOCUS additions (`group_metrics.csv` per
//! run, column, metric and group; `group_gaps.csv` per cell, column and metric; `adaptation_deltas.csv`
//! per adapted run and metric). Each row is a `#[derive(Serialize)]` type: its field names are the
//! header.

use crate::csv_cells::{CellColumns, CsvTableError, Number, RunColumns, run_columns, serialized_table};
use calibra_crs::evaluation::Evaluation;
use serde::Serialize;

#[derive(Default, Serialize)]
struct SpecialistRow {
    encoder: String,
    matched: String,
    auroc_in: Number,
    auroc_out: Number,
    delta_spec: Number,
    crs_in: Number,
    crs_out: Number,
    delta_ood: Number,
    margin_in: Number,
}

#[derive(Default, Serialize)]
struct CalibrationRepairRow {
    encoder: String,
    dataset: String,
    probe: String,
    label_fraction: String,
    calibrator: String,
    ece_before: Number,
    ece_after: Number,
    ece_reduction: Number,
    brier_before: Number,
    brier_after: Number,
    auroc_before: Number,
    auroc_after: Number,
    delta_auroc: Number,
}

#[derive(Default, Serialize)]
struct FeatureDepthRow {
    encoder: String,
    dataset: String,
    probe: String,
    depth: String,
    auroc: Number,
    ece: Number,
    best_depth: Number,
    gain_over_final: Number,
}

#[derive(Default, Serialize)]
struct CorruptionRow {
    encoder: String,
    dataset: String,
    conditions: usize,
    mean_auroc_drop: Number,
    mean_ece_increase: Number,
    max_ece_increase: Number,
}

#[derive(Default, Serialize)]
struct PromptingRow {
    encoder: String,
    dataset: String,
    prompt: String,
    zero_shot_auroc: Number,
    zero_shot_accuracy: Number,
    parse_coverage: Number,
    probe_auroc: Number,
    delta_auroc: Number,
}

#[derive(Default, Serialize)]
struct LabelCrossoverRow {
    encoder: String,
    dataset: String,
    reference: String,
    auroc_at_1pct: Number,
    auroc_at_10pct: Number,
    crossover_fraction: Number,
}

#[derive(Default, Serialize)]
struct GroupMetric {
    column: String,
    kind: &'static str,
    cuts: String,
    missing: usize,
    metric: String,
    group: String,
    n: usize,
    value: Number,
    skipped: String,
}

#[derive(Default, Serialize)]
struct GroupGap {
    column: String,
    kind: &'static str,
    metric: String,
    mean_gap: Number,
    std_gap: Number,
    runs: usize,
    runs_with_gap: usize,
}

#[derive(Default, Serialize)]
struct AdaptationDelta {
    base_regime: &'static str,
    base_probe: String,
    samples: usize,
    metric: String,
    base: Number,
    adapted: Number,
    delta: Number,
    lower: Number,
    upper: Number,
    p_value: Number,
    p_adjusted_bh: Number,
    replicates_defined: usize,
}

/// The E1–E6 and FOCUS CSV files (relative path, bytes); the FOCUS ones only when the evaluation
/// ran FOCUS.
pub(crate) fn focus_csv_files(e: &Evaluation) -> Result<Vec<(String, Vec<u8>)>, CsvTableError> {
    let a = &e.encoder_analyses;
    let table = |name: &str, bytes: Vec<u8>| (name.to_string(), bytes);
    let mut files = vec![
        table(
            "e1_specialist.csv",
            serialized_table(
                "e1_specialist.csv",
                a.specialist.rows.iter().map(|r| SpecialistRow {
                    encoder: r.encoder.clone(),
                    matched: r.matched.join("+"),
                    auroc_in: Number(r.auroc_in),
                    auroc_out: Number(r.auroc_out),
                    delta_spec: Number(r.delta_spec),
                    crs_in: Number(r.crs_in),
                    crs_out: Number(r.crs_out),
                    delta_ood: Number(r.delta_ood),
                    margin_in: Number(r.margin_in),
                }),
            )?,
        ),
        table(
            "e2_calibration_repair.csv",
            serialized_table(
                "e2_calibration_repair.csv",
                a.calibration_repair.rows.iter().map(|r| CalibrationRepairRow {
                    encoder: r.encoder.clone(),
                    dataset: r.dataset.clone(),
                    probe: r.probe.clone(),
                    label_fraction: r.label_fraction.to_string(),
                    calibrator: r.calibrator.clone(),
                    ece_before: Number(r.ece_before),
                    ece_after: Number(r.ece_after),
                    ece_reduction: Number(r.ece_reduction),
                    brier_before: Number(r.brier_before),
                    brier_after: Number(r.brier_after),
                    auroc_before: Number(r.auroc_before),
                    auroc_after: Number(r.auroc_after),
                    delta_auroc: Number(r.delta_auroc),
                }),
            )?,
        ),
        table(
            "e3_feature_depth.csv",
            serialized_table(
                "e3_feature_depth.csv",
                a.feature_depth.rows.iter().flat_map(|r| {
                    r.depths.iter().map(move |&(depth, auroc, ece)| FeatureDepthRow {
                        encoder: r.encoder.clone(),
                        dataset: r.dataset.clone(),
                        probe: r.probe.clone(),
                        depth: depth.to_string(),
                        auroc: Number(auroc),
                        ece: Number(ece),
                        best_depth: Number(r.best_depth),
                        gain_over_final: Number(r.gain_over_final),
                    })
                }),
            )?,
        ),
        table(
            "e4_corruption_miscalibration.csv",
            serialized_table(
                "e4_corruption_miscalibration.csv",
                a.corruption_miscalibration.rows.iter().map(|r| CorruptionRow {
                    encoder: r.encoder.clone(),
                    dataset: r.dataset.clone(),
                    conditions: r.conditions,
                    mean_auroc_drop: Number::of(r.mean_auroc_drop),
                    mean_ece_increase: Number::of(r.mean_ece_increase),
                    max_ece_increase: Number::of(r.max_ece_increase),
                }),
            )?,
        ),
        table(
            "e5_prompting.csv",
            serialized_table(
                "e5_prompting.csv",
                a.prompting.rows.iter().map(|r| PromptingRow {
                    encoder: r.encoder.clone(),
                    dataset: r.dataset.clone(),
                    prompt: r.prompt.clone(),
                    zero_shot_auroc: Number(r.zero_shot_auroc),
                    zero_shot_accuracy: Number(r.zero_shot_accuracy),
                    parse_coverage: Number(r.parse_coverage),
                    probe_auroc: Number(r.probe_auroc),
                    delta_auroc: Number(r.delta_auroc),
                }),
            )?,
        ),
        table(
            "e6_label_crossover.csv",
            serialized_table(
                "e6_label_crossover.csv",
                a.label_crossover.rows.iter().map(|r| LabelCrossoverRow {
                    encoder: r.encoder.clone(),
                    dataset: r.dataset.clone(),
                    reference: r.reference.clone(),
                    auroc_at_1pct: Number(r.auroc_at_1pct),
                    auroc_at_10pct: Number(r.auroc_at_10pct),
                    crossover_fraction: Number(r.crossover_fraction),
                }),
            )?,
        ),
    ];

    let Some(f) = &e.focus else { return Ok(files) };
    let group_metrics = f.run_gaps.iter().flat_map(|g| {
        let run = run_columns(&g.run);
        let cuts = g.cuts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ");
        g.metrics.iter().flat_map(move |m| {
            let (run, cuts) = (run.clone(), cuts.clone());
            m.groups.iter().map(move |v| {
                let cells = GroupMetric {
                    column: g.column.clone(),
                    kind: g.kind.name(),
                    cuts: cuts.clone(),
                    missing: g.missing,
                    metric: m.metric.to_string(),
                    group: v.group.clone(),
                    n: v.n,
                    value: Number(v.value),
                    skipped: v.skipped.clone().unwrap_or_default(),
                };
                (run.clone(), cells)
            })
        })
    });
    files.push(table(
        "group_metrics.csv",
        serialized_table::<(RunColumns, GroupMetric)>("group_metrics.csv", group_metrics)?,
    ));
    let group_gaps = f.cell_gaps.iter().map(|c| {
        (
            CellColumns::new(&c.encoder, &c.dataset, c.regime, &c.probe, &c.calibrator, c.label_fraction),
            GroupGap {
                column: c.column.clone(),
                kind: c.kind.name(),
                metric: c.metric.to_string(),
                mean_gap: Number(c.mean_gap),
                std_gap: Number(c.std_gap),
                runs: c.runs,
                runs_with_gap: c.runs_with_gap,
            },
        )
    });
    files.push(table("group_gaps.csv", serialized_table("group_gaps.csv", group_gaps)?));
    let deltas = f.adaptation.iter().flat_map(|p| {
        let run = run_columns(&p.adapted);
        p.deltas.iter().map(move |d| {
            let cells = AdaptationDelta {
                base_regime: p.base.regime.name(),
                base_probe: p.base.probe.clone(),
                samples: p.samples,
                metric: d.metric.to_string(),
                base: Number(d.base),
                adapted: Number(d.adapted),
                delta: Number(d.delta),
                lower: Number(d.lower),
                upper: Number(d.upper),
                p_value: Number(d.p_value),
                p_adjusted_bh: Number(d.p_adjusted),
                replicates_defined: d.replicates_defined,
            };
            (run.clone(), cells)
        })
    });
    files.push(table("adaptation_deltas.csv", serialized_table("adaptation_deltas.csv", deltas)?));
    Ok(files)
}
