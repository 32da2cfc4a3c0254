//! Report sections of the encoder analyses E1–E6 (spec §5.7) and the FOCUS additions (spec §6):
//! subgroup gaps, image-quality strata gaps and adaptation deltas. Numbers are taken from the
//! evaluation as is (4 decimals); an analysis without enough records shows its reason.

use calibra_crs::GapKind;
use calibra_crs::encoder_analyses::{Analysis, EncoderAnalyses};
use calibra_crs::focus_analyses::FocusReport;

use crate::capped_table::{FullTable, Tables};
use crate::markdown::format_number;

fn opt(x: Option<f64>) -> String {
    format_number(x)
}

fn num(x: f64) -> String {
    format_number(Some(x))
}

fn section<T>(
    md: &mut String,
    tables: &mut Tables,
    csv: &str,
    title: &str,
    a: &Analysis<T>,
    header: &[&str],
    row: impl Fn(&T) -> Vec<String>,
) {
    md.push_str(&format!("\n### {title}\n\n"));
    match &a.status {
        Some(status) => md.push_str(&format!("_{status}._\n")),
        None => md.push_str(&tables.table(
            FullTable::Beside(csv),
            header,
            &a.rows.iter().map(row).collect::<Vec<_>>(),
        )),
    }
    for n in &a.notes {
        md.push_str(&format!("\n- {n}"));
    }
    if !a.notes.is_empty() {
        md.push('\n');
    }
}

/// `## Encoder analyses (E1–E6)`, every row.
pub fn encoder_analyses_section(e: &EncoderAnalyses) -> String {
    encoder_analyses_md(e, &mut Tables::uncapped())
}

/// `## Encoder analyses (E1–E6)` with tables capped as `tables` says (each links its `eN_*.csv`).
pub(crate) fn encoder_analyses_md(e: &EncoderAnalyses, tables: &mut Tables) -> String {
    let mut md = format!(
        "\n## Encoder analyses (E1–E6)\n\nFrom the metric rows (seed means) of regime `{}`; clean, full-label, raw (`none`) \
         runs of each cell's primary probe unless stated.\n",
        e.regime
    );
    section(
        &mut md,
        tables,
        "e1_specialist.csv",
        "E1 Specialist matched-domain gain",
        &e.specialist,
        &["encoder", "matched", "AUROC in", "AUROC out", "Δspec", "CRS in", "CRS out", "Δood", "margin in"],
        |r| {
            vec![
                r.encoder.clone(),
                r.matched.join(", "),
                opt(r.auroc_in),
                opt(r.auroc_out),
                opt(r.delta_spec),
                opt(r.crs_in),
                opt(r.crs_out),
                opt(r.delta_ood),
                opt(r.margin_in),
            ]
        },
    );
    section(
        &mut md,
        tables,
        "e2_calibration_repair.csv",
        "E2 Post-hoc calibration repair",
        &e.calibration_repair,
        &[
            "encoder",
            "dataset",
            "probe",
            "ρ",
            "calibrator",
            "ECE before",
            "ECE after",
            "ECE reduction",
            "Brier before",
            "Brier after",
            "ΔAUROC",
        ],
        |r| {
            vec![
                r.encoder.clone(),
                r.dataset.clone(),
                r.probe.clone(),
                r.label_fraction.to_string(),
                r.calibrator.clone(),
                opt(r.ece_before),
                opt(r.ece_after),
                opt(r.ece_reduction),
                opt(r.brier_before),
                opt(r.brier_after),
                opt(r.delta_auroc),
            ]
        },
    );
    section(
        &mut md,
        tables,
        "e3_feature_depth.csv",
        "E3 Feature depth",
        &e.feature_depth,
        &["encoder", "dataset", "probe", "depth: AUROC / ECE", "best depth", "gain over final"],
        |r| {
            vec![
                r.encoder.clone(),
                r.dataset.clone(),
                r.probe.clone(),
                r.depths
                    .iter()
                    .map(|(d, a, c)| format!("{d}: {} / {}", opt(*a), opt(*c)))
                    .collect::<Vec<_>>()
                    .join("; "),
                r.best_depth.map_or("—".into(), |d| d.to_string()),
                opt(r.gain_over_final),
            ]
        },
    );
    section(
        &mut md,
        tables,
        "e4_corruption_miscalibration.csv",
        "E4 Corruption-induced miscalibration",
        &e.corruption_miscalibration,
        &["encoder", "dataset", "conditions", "mean AUROC drop", "mean ECE increase", "max ECE increase"],
        |r| {
            vec![
                r.encoder.clone(),
                r.dataset.clone(),
                r.conditions.to_string(),
                num(r.mean_auroc_drop),
                num(r.mean_ece_increase),
                num(r.max_ece_increase),
            ]
        },
    );
    if let Some(c) = &e.corruption_correlation {
        md.push_str(&format!(
            "\nAcross {} cells: Pearson r {} , Spearman ρ {} (mean AUROC drop vs mean ECE increase).\n",
            c.cells,
            num(c.pearson_r),
            num(c.spearman_rho)
        ));
    }
    section(
        &mut md,
        tables,
        "e5_prompting.csv",
        "E5 Prompting vs probing",
        &e.prompting,
        &[
            "encoder",
            "dataset",
            "prompt",
            "zero-shot AUROC",
            "accuracy",
            "parse coverage",
            "probe AUROC",
            "Δ",
        ],
        |r| {
            vec![
                r.encoder.clone(),
                r.dataset.clone(),
                r.prompt.clone(),
                opt(r.zero_shot_auroc),
                opt(r.zero_shot_accuracy),
                opt(r.parse_coverage),
                opt(r.probe_auroc),
                opt(r.delta_auroc),
            ]
        },
    );
    section(
        &mut md,
        tables,
        "e6_label_crossover.csv",
        "E6 Label-fraction crossover",
        &e.label_crossover,
        &[
            "encoder",
            "dataset",
            "reference",
            "AUROC @1%",
            "AUROC @10%",
            "crossover fraction",
            "shared fractions",
        ],
        |r| {
            vec![
                r.encoder.clone(),
                r.dataset.clone(),
                r.reference.clone(),
                opt(r.auroc_at_1pct),
                opt(r.auroc_at_10pct),
                r.crossover_fraction.map_or("never".into(), |f| f.to_string()),
                r.shared_fractions.iter().map(|f| f.to_string()).collect::<Vec<_>>().join(", "),
            ]
        },
    );
    for n in &e.notes {
        md.push_str(&format!("\n- {n}"));
    }
    if !e.notes.is_empty() {
        md.push('\n');
    }
    md
}

/// `## Subgroup and quality gaps` and `## Adaptation deltas`, every row.
pub fn focus_section(f: &FocusReport) -> String {
    focus_md(f, &mut Tables::uncapped())
}

/// Whether a delta favours the adapted run (larger AUROC/accuracy, smaller ECE/Brier).
fn favours_adapted(metric: calibra_crs::SampleMetric, delta: f64) -> bool {
    if metric.larger_is_better() { delta > 0.0 } else { delta < 0.0 }
}

/// Per (regimes, metric): pairs, BH-significant, significant favouring adapted, the point deltas.
type DeltaTally = (usize, usize, usize, Vec<f64>);

/// The significance level of the adaptation-delta summary (BH-adjusted p).
const ALPHA: f64 = 0.05;

/// The subgroup/quality gaps and adaptation deltas with tables capped as `tables` says: the deltas as a
/// summary per (regimes, metric), then the pairs significant after Benjamini–Hochberg first.
pub(crate) fn focus_md(f: &FocusReport, tables: &mut Tables) -> String {
    let mut md = String::new();
    for (kind, title) in
        [(GapKind::Subgroup, "Subgroup gaps"), (GapKind::Quality, "Image-quality strata gaps")]
    {
        let cells: Vec<_> = f.cell_gaps.iter().filter(|c| c.kind == kind).collect();
        let declared: Vec<String> = f
            .columns
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| format!("`{}` ({})", c.name, c.split.describe()))
            .collect();
        if declared.is_empty() {
            continue;
        }
        md.push_str(&format!(
            "\n## {title}\n\nColumns {} from {}; per clean-split run, the metric per group and max − min across groups \
             with at least {} samples; here the mean (± sample std) over the cell's seeds.\n\n",
            declared.join(", "),
            f.group_source,
            f.min_group_size
        ));
        if cells.is_empty() {
            md.push_str("_No clean-split run with a predictions file._\n");
            continue;
        }
        let rows: Vec<Vec<String>> = cells
            .iter()
            .map(|c| {
                vec![
                    c.encoder.clone(),
                    c.dataset.clone(),
                    c.regime.to_string(),
                    c.probe.clone(),
                    c.calibrator.clone(),
                    c.label_fraction.to_string(),
                    c.column.clone(),
                    c.metric.to_string(),
                    opt(c.mean_gap),
                    opt(c.std_gap),
                    format!("{} / {}", c.runs_with_gap, c.runs),
                ]
            })
            .collect();
        md.push_str(&tables.table(
            FullTable::Beside("group_gaps.csv"),
            &[
                "encoder",
                "dataset",
                "regime",
                "probe",
                "calibrator",
                "ρ",
                "column",
                "metric",
                "gap",
                "std",
                "runs with gap",
            ],
            &rows,
        ));
        let skipped: usize = f
            .run_gaps
            .iter()
            .filter(|g| g.kind == kind)
            .flat_map(|g| g.metrics.iter().take(1))
            .flat_map(|m| m.groups.iter())
            .filter(|g| g.skipped.as_deref().is_some_and(|s| s.contains("minimum group size")))
            .count();
        if skipped > 0 {
            md.push_str(&format!(
                "\n{skipped} (run, group) pairs were below the minimum group size and are listed as skipped in \
                 `group_metrics.csv`.\n"
            ));
        }
    }
    md.push_str("\n## Adaptation deltas\n\n");
    if f.adaptation.is_empty() {
        md.push_str("_No base–adapted pair with predictions files._\n");
    } else {
        md.push_str(&format!(
            "Adapted − base on the same test samples; {}% paired bootstrap intervals ({} replicates, seed {}); \
             p-values Benjamini–Hochberg adjusted within each metric. Positive favours AUROC/accuracy, negative \
             favours ECE/Brier.\n\n",
            100.0 * f.level,
            f.bootstrap_replicates,
            f.bootstrap_seed
        ));
        // Summary per (regimes, metric): pairs, BH-significant, and how many of those favour adapting.
        let mut summary: std::collections::BTreeMap<(String, &'static str), DeltaTally> =
            std::collections::BTreeMap::new();
        let mut rows: Vec<(f64, Vec<String>)> = Vec::new();
        for p in &f.adaptation {
            let regimes = format!("{} vs {}", p.adapted.regime, p.base.regime);
            for d in &p.deltas {
                let entry = summary.entry((regimes.clone(), d.metric.name())).or_default();
                entry.0 += 1;
                let significant = d.p_adjusted.is_some_and(|q| q < ALPHA);
                if let Some(delta) = d.delta {
                    entry.3.push(delta);
                    if significant {
                        entry.1 += 1;
                        if favours_adapted(d.metric, delta) {
                            entry.2 += 1;
                        }
                    }
                }
                rows.push((
                    d.p_adjusted.unwrap_or(f64::INFINITY),
                    vec![
                        p.adapted.encoder.clone(),
                        p.adapted.dataset.clone(),
                        regimes.clone(),
                        p.adapted.probe.clone(),
                        p.adapted.condition.to_string(),
                        p.adapted.seed.to_string(),
                        d.metric.to_string(),
                        opt(d.base),
                        opt(d.adapted),
                        opt(d.delta),
                        format!("[{}, {}]", opt(d.lower), opt(d.upper)),
                        opt(d.p_value),
                        opt(d.p_adjusted),
                    ],
                ));
            }
        }
        let summary_rows: Vec<Vec<String>> = summary
            .into_iter()
            .map(|((regimes, metric), (n, sig, fav, deltas))| {
                let mean = (!deltas.is_empty()).then(|| deltas.iter().sum::<f64>() / deltas.len() as f64);
                vec![regimes, metric.to_string(), n.to_string(), sig.to_string(), fav.to_string(), opt(mean)]
            })
            .collect();
        md.push_str(&format!("Summary (significant: BH-adjusted p < {ALPHA}):\n\n"));
        md.push_str(&tables.table(
            FullTable::Write("adaptation_delta_summary"),
            &["regimes", "metric", "pairs", "significant", "significant, favouring adapted", "mean Δ"],
            &summary_rows,
        ));
        // Significant first (smallest adjusted p), then the rest in evaluation order (stable sort).
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let rows: Vec<Vec<String>> = rows.into_iter().map(|(_, r)| r).collect();
        md.push_str("\nPairs, smallest adjusted p first:\n\n");
        md.push_str(&tables.table(
            FullTable::Beside("adaptation_deltas.csv"),
            &[
                "encoder",
                "dataset",
                "regimes",
                "method",
                "condition",
                "seed",
                "metric",
                "base",
                "adapted",
                "Δ",
                "interval",
                "p",
                "p (BH)",
            ],
            &rows,
        ));
    }
    // At most 10 unpaired runs are listed (all are in `evaluation.json`).
    for u in f.unpaired.iter().take(10) {
        md.push_str(&format!(
            "\n- unpaired: {} / {} / {} seed {} ({}): {}",
            u.run.encoder, u.run.dataset, u.run.regime, u.run.seed, u.run.record, u.reason
        ));
    }
    if f.unpaired.len() > 10 {
        md.push_str(&format!(
            "\n- … and {} more unpaired runs (see `evaluation.json`)",
            f.unpaired.len() - 10
        ));
    }
    if !f.unpaired.is_empty() {
        md.push('\n');
    }
    for n in &f.notes {
        md.push_str(&format!("\n- {n}"));
    }
    if !f.notes.is_empty() {
        md.push('\n');
    }
    md
}
