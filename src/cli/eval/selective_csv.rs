//! CSV outputs of `calibra eval --selective`: per run (`selective_runs.csv`, `conformal_sets.csv`,
//! `shift_detection.csv`) and per cell (`selective_cells.csv`, the rows of the report's per-cell
//! table). Numbers: shortest round-trip form, empty where undefined. Written only with `--selective`.

use super::{csv_bytes, csv_number};
use anyhow::Result;
use calibra_crs::focus_analyses::RunLabel;
use calibra_crs::selective_analyses::SelectiveReport;

const LABEL: [&str; 8] =
    ["encoder", "dataset", "regime", "probe", "calibrator", "label_fraction", "seed", "condition"];

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

fn header(extra: &[&'static str]) -> Vec<&'static str> {
    LABEL.iter().chain(extra).copied().collect()
}

/// The four CSV files (relative path, bytes).
pub(super) fn selective_csv_files(r: &SelectiveReport) -> Result<Vec<(String, Vec<u8>)>> {
    let grid: Vec<String> = r
        .runs
        .first()
        .map(|x| x.risk_coverage.iter().map(|p| format!("risk_at_{}", p.coverage)).collect())
        .unwrap_or_default();
    let mut runs_header: Vec<&str> = header(&["samples", "aurc", "eaurc", "augrc"]);
    runs_header.extend(grid.iter().map(String::as_str));
    let runs = r
        .runs
        .iter()
        .map(|x| {
            let mut row = label_cells(&x.run);
            row.push(x.samples.to_string());
            row.extend([x.aurc, x.eaurc, x.augrc].map(csv_number));
            row.extend(x.risk_coverage.iter().map(|p| csv_number(Some(p.risk))));
            row
        })
        .collect();
    let conformal = r
        .conformal
        .iter()
        .map(|x| {
            let mut row = label_cells(&x.run);
            row.push(x.calibration_samples.to_string());
            row.push(x.quantiles.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(" "));
            row.push(x.samples.to_string());
            row.push(x.excluded.to_string());
            row.extend([x.coverage, x.mean_set_size, x.empty_fraction].map(|v| csv_number(Some(v))));
            row
        })
        .collect();
    let shift = r
        .shift_detection
        .iter()
        .map(|x| {
            let mut row = label_cells(&x.run);
            row.extend([x.clean_samples.to_string(), x.shifted_samples.to_string()]);
            row.extend([x.auroc, x.fpr_at_95_tpr].map(csv_number));
            row
        })
        .collect();
    let cells = r
        .cells
        .iter()
        .map(|c| {
            let mut row = vec![
                c.encoder.clone(),
                c.dataset.clone(),
                c.regime.name().to_string(),
                c.probe.clone(),
                c.calibrator.clone(),
                c.label_fraction.to_string(),
                c.condition.to_string(),
                c.runs.to_string(),
            ];
            row.extend([c.aurc, c.eaurc, c.augrc, c.coverage, c.mean_set_size].map(csv_number));
            row.push(c.conformal_runs.to_string());
            row.extend([c.shift_auroc, c.shift_fpr_at_95_tpr].map(csv_number));
            row
        })
        .collect();
    Ok(vec![
        ("selective_runs.csv".to_string(), csv_bytes(&runs_header, runs)?),
        (
            "conformal_sets.csv".to_string(),
            csv_bytes(
                &header(&[
                    "calibration_samples",
                    "quantiles",
                    "samples",
                    "excluded",
                    "coverage",
                    "mean_set_size",
                    "empty_fraction",
                ]),
                conformal,
            )?,
        ),
        (
            "shift_detection.csv".to_string(),
            csv_bytes(&header(&["clean_samples", "shifted_samples", "auroc", "fpr_at_95_tpr"]), shift)?,
        ),
        (
            "selective_cells.csv".to_string(),
            csv_bytes(
                &[
                    "encoder",
                    "dataset",
                    "regime",
                    "probe",
                    "calibrator",
                    "label_fraction",
                    "condition",
                    "runs",
                    "aurc",
                    "eaurc",
                    "augrc",
                    "coverage",
                    "mean_set_size",
                    "conformal_runs",
                    "shift_auroc",
                    "shift_fpr_at_95_tpr",
                ],
                cells,
            )?,
        ),
    ])
}
