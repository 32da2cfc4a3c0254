//! The report section of `calibra eval --selective` (issue 24): AURC / E-AURC / AUGRC per cell,
//! conformal coverage and set size clean vs perturbed vs shifted, shift-detection AUROC, and the
//! figures `figures/risk_coverage_<dataset>.svg` (risk–coverage curves of the clean full-label cells)
//! and `figures/coverage_shift_<dataset>.svg` (conformal coverage per condition against `1 − α`).
//! Numbers are taken from the evaluation's [`SelectiveReport`] as is (4 decimals).

use std::collections::BTreeMap;

use calibra_crs::selective_analyses::{CellSelective, SelectiveReport};
use calibra_crs::{Condition, Regime};

use crate::capped_table::{FullTable, Tables};
use crate::eval_report::ReportFile;
use crate::line_chart::{ChartAxes, Series, line_chart};
use crate::markdown::format_number;

/// Series drawn per figure before the rest are left to the tables.
const MAX_SERIES: usize = 10;

fn opt(x: Option<f64>) -> String {
    format_number(x)
}

fn slug(dataset: &str) -> String {
    dataset.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// The method of a cell without its condition (and dataset): `encoder · regime · probe · calibrator`.
fn method_of(c: &CellSelective) -> String {
    let calibrator = if c.calibrator == "none" { String::new() } else { format!(" · {}", c.calibrator) };
    format!("{} · {} · {}{calibrator}", c.encoder, c.regime, c.probe)
}

type FitCell = (String, String, Regime, String, String, u64);

fn fit_cell(c: &CellSelective) -> FitCell {
    (
        c.encoder.clone(),
        c.dataset.clone(),
        c.regime,
        c.probe.clone(),
        c.calibrator.clone(),
        c.label_fraction.to_bits(),
    )
}

/// The rows of `selective_cells.csv` as the report shows them (same order).
fn cell_rows(r: &SelectiveReport) -> Vec<Vec<String>> {
    r.cells
        .iter()
        .map(|c| {
            vec![
                c.encoder.clone(),
                c.dataset.clone(),
                c.regime.to_string(),
                c.probe.clone(),
                c.calibrator.clone(),
                c.label_fraction.to_string(),
                c.condition.to_string(),
                c.runs.to_string(),
                opt(c.aurc),
                opt(c.eaurc),
                opt(c.augrc),
                opt(c.coverage),
                opt(c.mean_set_size),
                opt(c.shift_auroc),
                opt(c.shift_fpr_at_95_tpr),
            ]
        })
        .collect()
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// `## Selective prediction, conformal sets and shift detection` with its figures pushed to `files`.
pub(crate) fn selective_md(r: &SelectiveReport, tables: &mut Tables, files: &mut Vec<ReportFile>) -> String {
    let mut md = String::from("\n## Selective prediction, conformal sets and shift detection\n\n");
    md.push_str(&format!(
        "From the runs' predictions files (`--selective`). Confidence: {} (maximum softmax probability; \
         multilabel: per label, then the mean over labels). AURC, E-AURC and AUGRC (torch-uncertainty's \
         definitions; lower is better) over every test row of a run, seed means per cell. Conformal sets: \
         {} at α = {} (target coverage {}), eval seed {}. **Calibration set**: {}.\n",
        r.confidence,
        r.method,
        r.alpha,
        format_number(Some(1.0 - r.alpha)),
        r.seed,
        r.calibration_split
    ));

    md.push_str("\n### Per cell\n\n");
    md.push_str(&tables.table(
        FullTable::Beside("selective_cells.csv"),
        &[
            "encoder",
            "dataset",
            "regime",
            "method",
            "calibrator",
            "ρ",
            "condition",
            "runs",
            "AURC",
            "E-AURC",
            "AUGRC",
            "coverage",
            "set size",
            "shift AUROC",
            "FPR@95",
        ],
        &cell_rows(r),
    ));

    // Clean vs perturbed vs shifted, per fit cell.
    let mut order: Vec<FitCell> = Vec::new();
    let mut groups: BTreeMap<FitCell, Vec<&CellSelective>> = BTreeMap::new();
    for c in &r.cells {
        let key = fit_cell(c);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(c);
    }
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|key| {
            let members = &groups[key];
            let pick = |f: &dyn Fn(&Condition) -> bool, value: &dyn Fn(&CellSelective) -> Option<f64>| {
                mean(&members.iter().filter(|c| f(&c.condition)).filter_map(|c| value(c)).collect::<Vec<_>>())
            };
            let clean = |c: &Condition| *c == Condition::Clean;
            let perturbed = |c: &Condition| matches!(c, Condition::Perturbation { .. });
            let shifted = |c: &Condition| matches!(c, Condition::Shift { .. });
            let cov = |c: &CellSelective| c.coverage;
            let size = |c: &CellSelective| c.mean_set_size;
            let augrc = |c: &CellSelective| c.augrc;
            vec![
                key.0.clone(),
                key.1.clone(),
                key.2.to_string(),
                key.3.clone(),
                key.4.clone(),
                f64::from_bits(key.5).to_string(),
                opt(pick(&clean, &augrc)),
                opt(pick(&clean, &cov)),
                opt(pick(&perturbed, &cov)),
                opt(pick(&shifted, &cov)),
                opt(pick(&clean, &size)),
                opt(pick(&perturbed, &size)),
                opt(pick(&shifted, &size)),
            ]
        })
        .collect();
    md.push_str(&format!(
        "\n### Coverage: clean vs perturbed vs shifted\n\nConformal coverage and mean set size on the clean \
         evaluation half, the mean over perturbed conditions and the mean over shift targets (target {}); \
         AUGRC of the clean runs.\n\n",
        format_number(Some(1.0 - r.alpha))
    ));
    md.push_str(&tables.table(
        FullTable::Write("conformal_under_shift"),
        &[
            "encoder",
            "dataset",
            "regime",
            "method",
            "calibrator",
            "ρ",
            "AUGRC clean",
            "coverage clean",
            "coverage perturbed",
            "coverage shifted",
            "set size clean",
            "set size perturbed",
            "set size shifted",
        ],
        &rows,
    ));

    let shift_rows: Vec<Vec<String>> = r
        .cells
        .iter()
        .filter_map(|c| match &c.condition {
            Condition::Shift { target } => Some(vec![
                c.encoder.clone(),
                c.dataset.clone(),
                target.clone(),
                c.regime.to_string(),
                c.probe.clone(),
                c.calibrator.clone(),
                c.label_fraction.to_string(),
                c.runs.to_string(),
                opt(c.shift_auroc),
                opt(c.shift_fpr_at_95_tpr),
            ]),
            _ => None,
        })
        .collect();
    md.push_str(
        "\n### Shift detection\n\nHow well low confidence (−MSP) tells a shift target's rows from the fit's clean \
         test rows: AUROC (0.5 = no better than chance) and FPR at 95 % TPR, seed means.\n\n",
    );
    if shift_rows.is_empty() {
        md.push_str("_No run of a shift target with a predictions file._\n");
    } else {
        md.push_str(&tables.table(
            FullTable::Write("shift_detection_cells"),
            &[
                "encoder",
                "dataset",
                "target",
                "regime",
                "method",
                "calibrator",
                "ρ",
                "runs",
                "AUROC",
                "FPR@95",
            ],
            &shift_rows,
        ));
    }

    figures(r, files, &mut md);
    for n in &r.notes {
        md.push_str(&format!("\n- {n}"));
    }
    if !r.notes.is_empty() {
        md.push('\n');
    }
    md
}

/// Per dataset: the risk–coverage curves of its clean cells at the largest label fraction, and the
/// conformal coverage of each method per condition.
fn figures(r: &SelectiveReport, files: &mut Vec<ReportFile>, md: &mut String) {
    let mut datasets: Vec<&str> = Vec::new();
    for c in &r.cells {
        if !datasets.contains(&c.dataset.as_str()) {
            datasets.push(&c.dataset);
        }
    }
    for dataset in datasets {
        let cells: Vec<&CellSelective> = r.cells.iter().filter(|c| c.dataset == dataset).collect();
        let top = cells.iter().map(|c| c.label_fraction).fold(f64::NEG_INFINITY, f64::max);
        let cells: Vec<&CellSelective> = cells.into_iter().filter(|c| c.label_fraction == top).collect();
        let slug = slug(dataset);
        md.push_str(&format!("\n### Risk–coverage and coverage under shift: {dataset}\n\n"));

        let clean: Vec<&&CellSelective> =
            cells.iter().filter(|c| c.condition == Condition::Clean && !c.risk_coverage.is_empty()).collect();
        if !clean.is_empty() {
            let series: Vec<Series> = clean
                .iter()
                .take(MAX_SERIES)
                .map(|c| Series {
                    name: method_of(c),
                    points: c.risk_coverage.iter().map(|p| (p.coverage, Some(p.risk))).collect(),
                })
                .collect();
            let top_risk =
                clean.iter().flat_map(|c| c.risk_coverage.iter().map(|p| p.risk)).fold(0.0f64, f64::max);
            let axes = ChartAxes {
                title: format!("{dataset}: risk–coverage, clean test split, ρ = {top}, seed means"),
                x_label: "coverage".into(),
                y_label: "selective risk".into(),
                x_ticks: (0..=5)
                    .map(|i| (f64::from(i) / 5.0, format!("{:.1}", f64::from(i) / 5.0)))
                    .collect(),
                y_range: (0.0, ((top_risk * 10.0).ceil() / 10.0).clamp(0.1, 1.0)),
                reference: None,
            };
            let path = format!("figures/risk_coverage_{slug}.svg");
            files.push(ReportFile { path: path.clone(), contents: line_chart(&axes, &series) });
            md.push_str(&format!("![risk–coverage {dataset}]({path})\n\n"));
            if clean.len() > MAX_SERIES {
                md.push_str(&format!(
                    "_The figure draws the first {MAX_SERIES} of {} methods; the per-cell table has all._\n\n",
                    clean.len()
                ));
            }
        }

        // Conditions in order: clean, perturbations, shift targets (first appearance within each).
        let mut conditions: Vec<&Condition> = Vec::new();
        for rank in 0..3 {
            for c in &cells {
                let r = match c.condition {
                    Condition::Clean => 0,
                    Condition::Perturbation { .. } => 1,
                    Condition::Shift { .. } => 2,
                };
                if r == rank && c.coverage.is_some() && !conditions.contains(&&c.condition) {
                    conditions.push(&c.condition);
                }
            }
        }
        if conditions.len() < 2 {
            continue;
        }
        let mut methods: Vec<String> = Vec::new();
        for c in &cells {
            let m = method_of(c);
            if c.coverage.is_some() && !methods.contains(&m) {
                methods.push(m);
            }
        }
        let series: Vec<Series> = methods
            .iter()
            .take(MAX_SERIES)
            .map(|m| Series {
                name: m.clone(),
                points: conditions
                    .iter()
                    .enumerate()
                    .map(|(i, cond)| {
                        let v = cells
                            .iter()
                            .find(|c| &c.condition == *cond && method_of(c) == *m)
                            .and_then(|c| c.coverage);
                        (i as f64, v)
                    })
                    .collect(),
            })
            .collect();
        let low =
            series.iter().flat_map(|s| s.points.iter().filter_map(|p| p.1)).fold(1.0 - r.alpha, f64::min);
        let axes = ChartAxes {
            title: format!(
                "{dataset}: conformal coverage under shift ({} at α = {}), seed means",
                r.method, r.alpha
            ),
            x_label: "condition".into(),
            y_label: "coverage".into(),
            x_ticks: conditions.iter().enumerate().map(|(i, c)| (i as f64, c.to_string())).collect(),
            y_range: (((low - 0.05) * 10.0).floor() / 10.0, 1.0),
            reference: Some((1.0 - r.alpha, format!("1 − α = {}", format_number(Some(1.0 - r.alpha))))),
        };
        let path = format!("figures/coverage_shift_{slug}.svg");
        files.push(ReportFile { path: path.clone(), contents: line_chart(&axes, &series) });
        md.push_str(&format!("![coverage under shift {dataset}]({path})\n\n"));
    }
}

/// The section without capping (every row), and its figures.
pub fn selective_section(r: &SelectiveReport) -> (String, Vec<ReportFile>) {
    let mut files = Vec::new();
    let mut tables = Tables::uncapped();
    let md = selective_md(r, &mut tables, &mut files);
    files.append(&mut tables.files);
    (md, files)
}

#[cfg(test)]
mod tests {
    use calibra_crs::RunRecordSet;
    use calibra_crs::evaluation::{Evaluation, EvaluationOptions};
    use calibra_crs::selective_analyses::{SelectiveOptions, selective_analyses};

    use crate::eval_report;

    fn example() -> RunRecordSet {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/selective_runs/runs.jsonl");
        RunRecordSet::from_path(&path).unwrap()
    }

    #[test]
    fn the_section_and_its_figures_appear_only_when_attached() {
        let set = example();
        let options =
            EvaluationOptions { bootstrap: None, stability_seed: None, ..EvaluationOptions::default() };
        let plain = Evaluation::build(&set, &options).unwrap();
        let files = eval_report(&plain, &[]);
        let md = &files.last().unwrap().contents;
        assert!(
            !md.contains("Selective prediction") && !files.iter().any(|f| f.path.contains("risk_coverage"))
        );

        let report = selective_analyses(&set, &SelectiveOptions::default()).unwrap();
        let files = eval_report(&plain.with_selective(report), &[]);
        let md = &files.last().unwrap().contents;
        for needle in [
            "## Selective prediction, conformal sets and shift detection",
            "**Calibration set**: each fit's clean test predictions split by a seeded draw",
            "### Coverage: clean vs perturbed vs shifted",
            "| EncA | derm | frozen | linear | none | 1 | shift→derm-ext | 2 |",
            "![risk–coverage derm](figures/risk_coverage_derm.svg)",
            "![coverage under shift derm](figures/coverage_shift_derm.svg)",
        ] {
            assert!(md.contains(needle), "missing {needle:?} in\n{md}");
        }
        let svg = |p: &str| &files.iter().find(|f| f.path == p).unwrap().contents;
        // Two methods: two curves; three conditions on the coverage chart with the 1 − α line.
        assert_eq!(svg("figures/risk_coverage_derm.svg").matches("<polyline").count(), 2);
        let shift = svg("figures/coverage_shift_derm.svg");
        assert!(
            shift.contains(">clean<")
                && shift.contains(">shift→derm-ext<")
                && shift.contains("1 − α = 0.9000")
        );
    }
}
