//! The files of an evaluation's output directory (`calibra eval --out DIR`), as bytes:
//! - `evaluation.json`: everything (`calibra_crs::Evaluation`) except the per-row tables written whole
//!   as CSV here (`metric_rows` → `metric_rows.csv`, `calibration_stability` →
//!   `calibration_stability.csv`, `focus.adaptation` → `adaptation_deltas.csv`), which its `tables`
//!   key names with their row counts (`calibra_crs::evaluation_file`), as one line of compact JSON
//!   (`jq . evaluation.json` indents it); `--format json` prints the whole evaluation, those tables
//!   included, indented on stdout;
//! - `metric_rows.csv`, `profiles.csv` (exactly the `calibra crs` input columns: raw ECE), `crs.csv`;
//! - `report.md`: a summary page first (leading tier, CRS, AUROC vs CRS, frozen vs each adapted
//!   method, calibration repair, headline figures), then sections whose long tables show their first
//!   rows and link the whole table (an analysis CSV here, or `tables/*.csv`);
//! - `report.html`: the same content as one self-contained page (figures inlined as SVG, no script);
//! - `figures/*.svg` (and `figures/*.png` with `--figures svg,png`): profiles, rank displacements, and
//!   one reliability grid per dataset of the clean full-label runs pooled over seeds
//!   (`--all-diagrams`: one diagram per run record);
//! - `reference.json`: the reference the CRS was computed against (absent without a CRS);
//! - `calibration_stability.csv`: accuracy, ECE, MCE and ACE
//!   (`adaptive_ece`) across seeds and across prompt templates, per (encoder, dataset, regime, method,
//!   calibrator, label fraction, condition): n, mean and sample std (ddof 1) of each
//!   (`calibra_crs::calibration_stability`);
//! - encoder analyses E1–E6: `e1_specialist.csv`, `e2_calibration_repair.csv`, `e3_feature_depth.csv`,
//!   `e4_corruption_miscalibration.csv`, `e5_prompting.csv`, `e6_label_crossover.csv` (header only when
//!   the analysis had not enough records; the reason is in `evaluation.json` and the report);
//! - FOCUS additions (unless `--no-focus`): `group_metrics.csv` (per run, column, metric and group),
//!   `group_gaps.csv` (per cell, column and metric: gap mean/std over seeds), `adaptation_deltas.csv`.
//! - with `--selective` only (absent otherwise, and so is the `selective` key of `evaluation.json`):
//!   `selective_runs.csv` (AURC, E-AURC, AUGRC per run), `conformal_sets.csv` (coverage and set size
//!   per run), `shift_detection.csv` (AUROC, FPR@95 per shift run), `selective_cells.csv` (seed means),
//!   and the figures `figures/risk_coverage_<dataset>.svg`, `figures/coverage_shift_<dataset>.svg`
//!   (`calibra_crs::selective_analyses`).

use crate::{EvalError, ReliabilityFigure, ReportOptions, eval_report_with, report_html, svg_to_png};
use calibra_crs::{Evaluation, Reference};
use std::collections::BTreeMap;

/// Every output file (relative path, bytes); `evaluation.json` last. `png` rasterises every figure.
pub fn output_files(
    e: &Evaluation,
    figures: &[ReliabilityFigure],
    reference: Option<&Reference>,
    options: &ReportOptions,
    png: bool,
) -> Result<Vec<(String, Vec<u8>)>, EvalError> {
    let mut files = crate::evaluation_csv_files(e)?;
    let report = eval_report_with(e, figures, options);
    // report.html: the same Markdown with every SVG figure inlined.
    let svgs: BTreeMap<String, String> = report
        .iter()
        .filter(|f| f.path.ends_with(".svg"))
        .map(|f| (f.path.clone(), f.contents.clone()))
        .collect();
    if let Some(md) = report.iter().find(|f| f.path == "report.md") {
        files.push(("report.html".to_string(), report_html(&md.contents, &svgs).into_bytes()));
    }
    if png {
        for (path, svg) in &svgs {
            let png = svg_to_png(svg, 2.0).map_err(|source| EvalError::Png { path: path.clone(), source })?;
            files.push((format!("{}.png", path.trim_end_matches(".svg")), png));
        }
    }
    for f in report {
        files.push((f.path, f.contents.into_bytes()));
    }
    if let Some(reference) = reference {
        files.push(("reference.json".to_string(), (reference.to_json() + "\n").into_bytes()));
    }
    let file = calibra_crs::evaluation_file::evaluation_file_json(e)?;
    files.push(("evaluation.json".to_string(), (file + "\n").into_bytes()));
    Ok(files)
}
