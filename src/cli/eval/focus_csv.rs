//! CSV outputs of `calibra eval` for the encoder analyses E1–E6 and the FOCUS additions (subgroup and
//! quality gaps, adaptation deltas). Numbers: shortest round-trip form, empty where undefined.

use super::{csv_bytes, csv_number};
use anyhow::Result;
use calibra_crs::evaluation::Evaluation;
use calibra_crs::focus_analyses::RunLabel;

fn label_cells(r: &RunLabel) -> Vec<String> {
    vec![
        r.encoder.clone(),
        r.dataset.clone(),
        r.regime.name().to_string(),
        r.probe.clone(),
        r.calibrator.clone(),
        r.label_fraction.to_string(),
        r.seed.to_string(),
        r.condition.to_string(),
    ]
}

const LABEL: [&str; 8] =
    ["encoder", "dataset", "regime", "probe", "calibrator", "label_fraction", "seed", "condition"];

/// The run-label columns (of the adapted run in `adaptation_deltas.csv`).
fn label_header() -> Vec<&'static str> {
    LABEL.to_vec()
}

/// The E1–E6 and FOCUS CSV files (relative path, bytes).
pub(super) fn focus_csv_files(e: &Evaluation) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    let a = &e.encoder_analyses;
    files.push((
        "e1_specialist.csv".to_string(),
        csv_bytes(
            &[
                "encoder",
                "matched",
                "auroc_in",
                "auroc_out",
                "delta_spec",
                "crs_in",
                "crs_out",
                "delta_ood",
                "margin_in",
            ],
            a.specialist
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![r.encoder.clone(), r.matched.join("+")];
                    row.extend(
                        [
                            r.auroc_in,
                            r.auroc_out,
                            r.delta_spec,
                            r.crs_in,
                            r.crs_out,
                            r.delta_ood,
                            r.margin_in,
                        ]
                        .map(csv_number),
                    );
                    row
                })
                .collect(),
        )?,
    ));
    files.push((
        "e2_calibration_repair.csv".to_string(),
        csv_bytes(
            &[
                "encoder",
                "dataset",
                "probe",
                "label_fraction",
                "calibrator",
                "ece_before",
                "ece_after",
                "ece_reduction",
                "brier_before",
                "brier_after",
                "auroc_before",
                "auroc_after",
                "delta_auroc",
            ],
            a.calibration_repair
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![
                        r.encoder.clone(),
                        r.dataset.clone(),
                        r.probe.clone(),
                        r.label_fraction.to_string(),
                        r.calibrator.clone(),
                    ];
                    row.extend(
                        [
                            r.ece_before,
                            r.ece_after,
                            r.ece_reduction,
                            r.brier_before,
                            r.brier_after,
                            r.auroc_before,
                            r.auroc_after,
                            r.delta_auroc,
                        ]
                        .map(csv_number),
                    );
                    row
                })
                .collect(),
        )?,
    ));
    files.push((
        "e3_feature_depth.csv".to_string(),
        csv_bytes(
            &["encoder", "dataset", "probe", "depth", "auroc", "ece", "best_depth", "gain_over_final"],
            a.feature_depth
                .rows
                .iter()
                .flat_map(|r| {
                    r.depths.iter().map(move |&(d, auroc, ece)| {
                        vec![
                            r.encoder.clone(),
                            r.dataset.clone(),
                            r.probe.clone(),
                            d.to_string(),
                            csv_number(auroc),
                            csv_number(ece),
                            csv_number(r.best_depth),
                            csv_number(r.gain_over_final),
                        ]
                    })
                })
                .collect(),
        )?,
    ));
    files.push((
        "e4_corruption_miscalibration.csv".to_string(),
        csv_bytes(
            &["encoder", "dataset", "conditions", "mean_auroc_drop", "mean_ece_increase", "max_ece_increase"],
            a.corruption_miscalibration
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.encoder.clone(),
                        r.dataset.clone(),
                        r.conditions.to_string(),
                        csv_number(Some(r.mean_auroc_drop)),
                        csv_number(Some(r.mean_ece_increase)),
                        csv_number(Some(r.max_ece_increase)),
                    ]
                })
                .collect(),
        )?,
    ));
    files.push((
        "e5_prompting.csv".to_string(),
        csv_bytes(
            &[
                "encoder",
                "dataset",
                "prompt",
                "zero_shot_auroc",
                "zero_shot_accuracy",
                "parse_coverage",
                "probe_auroc",
                "delta_auroc",
            ],
            a.prompting
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![r.encoder.clone(), r.dataset.clone(), r.prompt.clone()];
                    row.extend(
                        [
                            r.zero_shot_auroc,
                            r.zero_shot_accuracy,
                            r.parse_coverage,
                            r.probe_auroc,
                            r.delta_auroc,
                        ]
                        .map(csv_number),
                    );
                    row
                })
                .collect(),
        )?,
    ));
    files.push((
        "e6_label_crossover.csv".to_string(),
        csv_bytes(
            &["encoder", "dataset", "reference", "auroc_at_1pct", "auroc_at_10pct", "crossover_fraction"],
            a.label_crossover
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.encoder.clone(),
                        r.dataset.clone(),
                        r.reference.clone(),
                        csv_number(r.auroc_at_1pct),
                        csv_number(r.auroc_at_10pct),
                        csv_number(r.crossover_fraction),
                    ]
                })
                .collect(),
        )?,
    ));

    let Some(f) = &e.focus else { return Ok(files) };
    let mut header = label_header();
    header.extend(["column", "kind", "cuts", "missing", "metric", "group", "n", "value", "skipped"]);
    let rows = f
        .run_gaps
        .iter()
        .flat_map(|g| {
            g.metrics.iter().flat_map(move |m| {
                m.groups.iter().map(move |v| {
                    let mut row = label_cells(&g.run);
                    row.extend([
                        g.column.clone(),
                        g.kind.name().to_string(),
                        g.cuts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" "),
                        g.missing.to_string(),
                        m.metric.to_string(),
                        v.group.clone(),
                        v.n.to_string(),
                        csv_number(v.value),
                        v.skipped.clone().unwrap_or_default(),
                    ]);
                    row
                })
            })
        })
        .collect();
    files.push(("group_metrics.csv".to_string(), csv_bytes(&header, rows)?));
    let rows = f
        .cell_gaps
        .iter()
        .map(|c| {
            vec![
                c.encoder.clone(),
                c.dataset.clone(),
                c.regime.name().to_string(),
                c.probe.clone(),
                c.calibrator.clone(),
                c.label_fraction.to_string(),
                c.column.clone(),
                c.kind.name().to_string(),
                c.metric.to_string(),
                csv_number(c.mean_gap),
                csv_number(c.std_gap),
                c.runs.to_string(),
                c.runs_with_gap.to_string(),
            ]
        })
        .collect();
    files.push((
        "group_gaps.csv".to_string(),
        csv_bytes(
            &[
                "encoder",
                "dataset",
                "regime",
                "probe",
                "calibrator",
                "label_fraction",
                "column",
                "kind",
                "metric",
                "mean_gap",
                "std_gap",
                "runs",
                "runs_with_gap",
            ],
            rows,
        )?,
    ));
    let mut header = label_header();
    header.extend([
        "base_regime",
        "base_probe",
        "samples",
        "metric",
        "base",
        "adapted",
        "delta",
        "lower",
        "upper",
        "p_value",
        "p_adjusted_bh",
        "replicates_defined",
    ]);
    let rows = f
        .adaptation
        .iter()
        .flat_map(|p| {
            p.deltas.iter().map(move |d| {
                let mut row = label_cells(&p.adapted);
                row.extend([
                    p.base.regime.name().to_string(),
                    p.base.probe.clone(),
                    p.samples.to_string(),
                    d.metric.to_string(),
                ]);
                row.extend(
                    [d.base, d.adapted, d.delta, d.lower, d.upper, d.p_value, d.p_adjusted].map(csv_number),
                );
                row.push(d.replicates_defined.to_string());
                row
            })
        })
        .collect();
    files.push(("adaptation_deltas.csv".to_string(), csv_bytes(&header, rows)?));
    Ok(files)
}
