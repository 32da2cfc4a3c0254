//! The Markdown report of one evaluation (spec §7) with its SVG figures.
//!
//! [`eval_report`] turns a [`calibra_crs::Evaluation`] (and the reliability bins of the runs whose
//! predictions file was available) into a list of files: `figures/*.svg` and `report.md`, which links
//! them. Every number shown is taken from the evaluation as is (4 decimals); nothing is recomputed here.

use calibra_crs::evaluation::{Evaluation, NamedComparison};
use calibra_crs::{
    AXES, CalibrationStability, Condition, STABILITY_METRICS, StabilityAxis, StabilityReport, StabilityRow,
};
use calibra_metrics::ReliabilityBin;

use crate::markdown::{format_number, markdown_table};
use crate::{ProfileBar, profile_bars, rank_displacement, reliability_diagram};

/// The reliability bins of one run, computed from its predictions file.
#[derive(Debug, Clone, PartialEq)]
pub struct ReliabilityFigure {
    /// The run, e.g. `PanDerm / isic2019 / frozen / clean / ρ=1 / seed 0`.
    pub run: String,
    /// The predictions file (as given in the run record).
    pub source: String,
    /// Top-label bins (single-label) or positive-class bins pooled over labels (multilabel).
    pub bins: Vec<ReliabilityBin>,
    /// ECE of these bins.
    pub ece: f64,
}

/// One output file of the report: a path relative to the output directory and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportFile {
    pub path: String,
    pub contents: String,
}

fn num(x: f64) -> String {
    format_number(Some(x))
}

fn opt(x: Option<f64>) -> String {
    format_number(x)
}

fn comparison_table(c: &NamedComparison) -> String {
    let r = &c.comparison;
    let top = |k: usize| opt(r.top_k_overlap.get(&k).copied());
    markdown_table(
        &[
            "n",
            "Kendall τ",
            "Spearman ρ",
            "τ-b (scores)",
            "weighted τ",
            "reversals",
            "mean |Δrank|",
            "top-3 overlap",
            "top-5 overlap",
            "ties A / B",
        ],
        &[vec![
            r.n.to_string(),
            num(r.kendall_tau),
            num(r.spearman_rho),
            num(r.kendall_tau_b_scores),
            num(r.weighted_tau),
            format!("{} / {}", r.reversals, r.pairs),
            num(r.mean_abs_displacement),
            top(3),
            top(5),
            format!("{} / {}", r.ties_a, r.ties_b),
        ]],
    )
}

fn stability_section(s: &StabilityReport, out: &mut String) {
    let agreement_row = |name: String, a: &calibra_crs::Agreement| {
        vec![
            name,
            a.trials.to_string(),
            a.skipped_degenerate.to_string(),
            num(a.mean_tau),
            num(a.min_tau),
            num(a.mean_top_k_overlap),
            num(a.top_k_unchanged),
        ]
    };
    let mut rows = vec![agreement_row("leave one encoder out".into(), &s.leave_one_out_agreement)];
    for sp in &s.subpanels {
        rows.push(agreement_row(format!("random sub-panels of {}", sp.size), &sp.agreement));
    }
    rows.push(agreement_row("Dirichlet axis weights".into(), &s.axis_weights));
    rows.push(agreement_row("Dirichlet component weights".into(), &s.component_weights));
    let k = s.config.top_k;
    out.push_str(&markdown_table(
        &[
            "perturbation",
            "trials",
            "skipped",
            "mean τ-b",
            "min τ-b",
            &format!("mean top-{k} overlap"),
            &format!("top-{k} unchanged"),
        ],
        &rows,
    ));
    let ins = &s.insertion;
    out.push_str(&format!(
        "\nInsertion trials ({} trials, {} newcomers each, {} skipped): base-encoder CRS displacement with the \
         fixed reference mean {} / max {}; with cohort recomputation mean {} / median {} / max {} \
         (mean τ-b of the base ranking {}).\n",
        ins.trials,
        s.config.inserted_per_trial,
        ins.skipped_degenerate,
        num(ins.fixed_reference.mean),
        num(ins.fixed_reference.max),
        num(ins.cohort.mean),
        num(ins.cohort.median),
        num(ins.cohort.max),
        num(ins.cohort_mean_tau),
    ));
}

/// `mean ± std` of one stability metric, `mean` alone when the std is absent (fewer than 2 members),
/// `—` when the group does not carry the metric.
fn spread_cell(row: &StabilityRow, metric: &str) -> String {
    match row.metric(metric) {
        Some(m) => match m.std {
            Some(std) => format!("{} ± {}", num(m.mean), num(std)),
            None => num(m.mean),
        },
        None => "—".to_string(),
    }
}

/// The "Calibration stability" section (spec §6): accuracy, ECE, MCE and ACE side by side as
/// `mean ± sample std` across seeds and across prompt templates, clean test condition (every condition
/// is in `calibration_stability.csv`).
pub fn calibration_stability_section(table: &CalibrationStability) -> String {
    let mut md = String::from("\n## Calibration stability\n\n");
    md.push_str(
        "Accuracy, ECE, MCE and ACE (`adaptive_ece`) as mean ± sample standard deviation (ddof 1; the mean \
         alone with a single member) on the clean test split; every condition is in \
         `calibration_stability.csv`.\n",
    );
    let clean = |r: &&StabilityRow| r.condition == Condition::Clean;
    let metric_header = ["accuracy", "ECE", "MCE", "ACE"];
    let metric_cells =
        |r: &StabilityRow| STABILITY_METRICS.iter().map(|m| spread_cell(r, m)).collect::<Vec<_>>();
    for (axis, title, fixed, members) in [
        (StabilityAxis::Seeds, "Across seeds", "template", "seeds"),
        (StabilityAxis::Templates, "Across prompt templates", "seed", "templates"),
    ] {
        let rows: Vec<Vec<String>> = table
            .axis(axis)
            .filter(clean)
            .map(|r| {
                let held = match axis {
                    StabilityAxis::Seeds => r.template.clone().unwrap_or_else(|| "—".to_string()),
                    StabilityAxis::Templates => r.seed.map_or("—".to_string(), |s| s.to_string()),
                };
                let mut row = vec![
                    r.encoder.clone(),
                    r.dataset.clone(),
                    r.regime.name().to_string(),
                    r.method.clone(),
                    r.calibrator.clone(),
                    r.label_fraction.to_string(),
                    held,
                    r.members.join(", "),
                ];
                row.extend(metric_cells(r));
                row
            })
            .collect();
        md.push_str(&format!("\n### {title}\n\n"));
        if rows.is_empty() {
            md.push_str(match axis {
                StabilityAxis::Seeds => "No clean runs carry these metrics.\n",
                StabilityAxis::Templates => {
                    "No clean runs with a prompt-template probe (`<method>:<template id>`, e.g. \
                     `zero-shot:P1`).\n"
                }
            });
            continue;
        }
        let mut header = vec!["encoder", "dataset", "regime", "method", "calibrator", "ρ", fixed, members];
        header.extend(metric_header);
        md.push_str(&markdown_table(&header, &rows));
    }
    md
}

/// The report files of an evaluation: the figures (`figures/profiles.svg`, `figures/rank_<name>.svg`,
/// `figures/reliability_<i>.svg`) and, last, `report.md` linking them.
pub fn eval_report(evaluation: &Evaluation, reliability: &[ReliabilityFigure]) -> Vec<ReportFile> {
    let e = evaluation;
    let mut files = Vec::new();
    let mut md = String::new();
    md.push_str("# calibra evaluation\n\n");
    md.push_str(&format!(
        "{} run records, {} metric rows; {} encoders, datasets {}, regimes {}, seeds {:?}. Axes from regime \
         `{}`, discrimination `{}`, calibration `{}` (oriented as −{}), robustness `{}`.\n\n",
        e.input.records,
        e.input.metric_rows,
        e.input.encoders.len(),
        e.input.datasets.join(", "),
        e.input.regimes.iter().map(|r| r.name()).collect::<Vec<_>>().join(", "),
        e.input.seeds,
        e.axes.regime,
        e.axes.discrimination_metric,
        e.axes.calibration_metric,
        e.axes.calibration_metric,
        e.estimators.robustness,
    ));
    md.push_str(&crate::convergence_report::convergence_section(&e.convergence));
    if let Some(why) = &e.crs_not_computed {
        md.push_str(&format!(
            "**{why}.** The sections below hold what the run records give without profiles.\n"
        ));
        md.push_str(&calibration_stability_section(&e.calibration_stability));
        md.push_str(&crate::focus_report::encoder_analyses_section(&e.encoder_analyses));
        if let Some(f) = &e.focus {
            md.push_str(&crate::focus_report::focus_section(f));
        }
        reliability_and_notes(e, reliability, &mut files, &mut md);
        files.push(ReportFile { path: "report.md".into(), contents: md });
        return files;
    }
    let w = e.component_weights;
    let a = e.axis_weights;
    md.push_str(&format!(
        "Reference: {} (|R| = {}). CRS = {}·D + {}·S + {}·W; axis weights (disc, cal, le, rob) = ({}, {}, {}, {}).\n\n",
        if e.reference_origin == "saved" { "a saved reference" } else { "built from this run set's panel" },
        e.reference.get("panel").and_then(|p| p.as_array()).map_or(0, Vec::len),
        w.dominance,
        w.ideal,
        w.worst,
        a[0],
        a[1],
        a[2],
        a[3]
    ));

    // Ranked order of the CRS table.
    let mut order: Vec<usize> = (0..e.crs.len()).collect();
    order.sort_by_key(|&i| e.crs[i].rank);

    md.push_str("## Profiles\n\nMeasured values (calibration = ECE, lower is better; AULC is a contrast, not an axis) and values normalised with the reference's anchors.\n\n");
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|&i| {
            let c = &e.crs[i];
            let p = e.profiles.iter().find(|p| p.encoder == c.encoder);
            let mut row = vec![c.encoder.clone()];
            row.extend([
                opt(p.and_then(|p| p.discrimination)),
                opt(p.and_then(|p| p.calibration_error)),
                opt(p.and_then(|p| p.label_efficiency)),
                opt(p.and_then(|p| p.robustness)),
                opt(p.and_then(|p| p.robustness_corruption_only)),
                opt(p.and_then(|p| p.aulc)),
            ]);
            row.extend(c.normalized.iter().map(|&v| num(v)));
            row
        })
        .collect();
    md.push_str(&markdown_table(
        &["encoder", "disc", "ECE", "LE", "rob", "rob (corruption-only)", "AULC", "disc̃", "cal̃", "LẼ", "rob̃"],
        &rows,
    ));

    md.push_str("\n## Clinical Reliability Score\n\n");
    let has_boot = e.bootstrap.is_some();
    if let Some(b) = &e.bootstrap {
        md.push_str(&format!(
            "Paired-seed bootstrap: {} replicates ({} dropped), seed {}, {}% percentile intervals.\n\n",
            b.replicates,
            b.dropped_replicates,
            b.seed,
            b.level * 100.0
        ));
    }
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|&i| {
            let c = &e.crs[i];
            let mut row = vec![
                c.rank.to_string(),
                c.encoder.clone(),
                num(c.dominance),
                num(c.ideal),
                num(c.worst),
                num(c.crs),
            ];
            if has_boot {
                row.push(format!("[{}, {}]", opt(c.lower), opt(c.upper)));
                row.push(opt(c.p_rank1));
                row.push(opt(c.p_top3));
            }
            row
        })
        .collect();
    let mut header = vec!["rank", "encoder", "D", "S", "W", "CRS"];
    if has_boot {
        header.extend(["95% interval", "P(rank 1)", "P(top 3)"]);
    }
    md.push_str(&markdown_table(&header, &rows));

    let axis_names: Vec<&str> = AXES.iter().map(|a| a.name()).collect();
    let bars: Vec<ProfileBar> = order
        .iter()
        .map(|&i| ProfileBar {
            encoder: e.crs[i].encoder.clone(),
            values: e.crs[i].normalized.iter().map(|&v| Some(v)).collect(),
            crs: Some(e.crs[i].crs),
        })
        .collect();
    files.push(ReportFile {
        path: "figures/profiles.svg".into(),
        contents: profile_bars("Normalised reliability profiles (CRS order)", &axis_names, &bars),
    });
    md.push_str("\n![Normalised profiles](figures/profiles.svg)\n");

    if !e.per_domain.is_empty() {
        md.push_str("\n### Per-domain CRS\n\nEach dataset scored against its own reference built from that dataset's cells.\n\n");
        let rows: Vec<Vec<String>> = e
            .per_domain
            .iter()
            .flat_map(|d| {
                d.scores.iter().map(move |(enc, crs, rank)| {
                    vec![d.dataset.clone(), enc.clone(), num(*crs), rank.to_string()]
                })
            })
            .collect();
        md.push_str(&markdown_table(&["dataset", "encoder", "CRS", "rank"], &rows));
    }

    md.push_str("\n## Rank comparisons\n");
    for c in &e.rank_comparisons {
        md.push_str(&format!("\n### {}: {} vs {}\n\n", c.name, c.a, c.b));
        md.push_str(&comparison_table(c));
        let moves: Vec<(String, usize, usize)> =
            c.comparison.moves.iter().map(|m| (m.encoder.clone(), m.rank_a, m.rank_b)).collect();
        let path = format!("figures/rank_{}.svg", c.name);
        files.push(ReportFile {
            path: path.clone(),
            contents: rank_displacement(&format!("{} → {}", c.a, c.b), &c.a, &c.b, &moves),
        });
        md.push_str(&format!("\n![{}]({path})\n", c.name));
    }

    if !e.substitutions.is_empty() {
        md.push_str("\n## Estimator substitution\n\nPrimary CRS ranking (A) vs the ranking with one estimator substituted (B), reference rebuilt on the panel.\n\n");
        let rows: Vec<Vec<String>> = e
            .substitutions
            .iter()
            .map(|s| match &s.comparison {
                Some(c) => vec![
                    s.estimator.clone(),
                    num(c.kendall_tau),
                    opt(c.top_k_overlap.get(&3).copied()),
                    opt(c.top_k_overlap.get(&5).copied()),
                    String::new(),
                ],
                None => vec![
                    s.estimator.clone(),
                    "—".into(),
                    "—".into(),
                    "—".into(),
                    s.skipped.clone().unwrap_or_default(),
                ],
            })
            .collect();
        md.push_str(&markdown_table(
            &["estimator", "Kendall τ", "top-3 overlap", "top-5 overlap", "skipped"],
            &rows,
        ));
    }

    md.push_str("\n## Axis correlations (Spearman ρ)\n\n");
    let rows: Vec<Vec<String>> = e
        .correlations
        .iter()
        .map(|c| vec![c.level.to_string(), c.a.clone(), c.b.clone(), c.n.to_string(), num(c.spearman_rho)])
        .collect();
    md.push_str(&markdown_table(&["level", "a", "b", "n", "ρ"], &rows));

    if let Some(s) = &e.stability {
        md.push_str("\n## Stability of the CRS ranking\n\n");
        stability_section(s, &mut md);
    }

    md.push_str(&calibration_stability_section(&e.calibration_stability));
    md.push_str(&crate::focus_report::encoder_analyses_section(&e.encoder_analyses));
    if let Some(f) = &e.focus {
        md.push_str(&crate::focus_report::focus_section(f));
    }
    reliability_and_notes(e, reliability, &mut files, &mut md);
    files.push(ReportFile { path: "report.md".into(), contents: md });
    files
}

/// The reliability diagrams (figures and their section) and the notes, shared by reports with and
/// without a CRS.
fn reliability_and_notes(
    e: &Evaluation,
    reliability: &[ReliabilityFigure],
    files: &mut Vec<ReportFile>,
    md: &mut String,
) {
    if !reliability.is_empty() {
        md.push_str(
            "\n## Reliability diagrams\n\nComputed from the runs' predictions files (15 equal-width bins).\n",
        );
        for (i, r) in reliability.iter().enumerate() {
            let path = format!("figures/reliability_{}.svg", i + 1);
            files.push(ReportFile {
                path: path.clone(),
                contents: reliability_diagram(&r.run, &r.bins, Some(r.ece)),
            });
            md.push_str(&format!(
                "\n**{}** (`{}`, ECE {})\n\n![reliability]({path})\n",
                r.run,
                r.source,
                num(r.ece)
            ));
        }
    }

    if !e.notes.is_empty() {
        md.push_str("\n## Notes\n\n");
        for n in &e.notes {
            md.push_str(&format!("- {n}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_crs::{EvaluationOptions, Regime, RunRecord, RunRecordSet};
    use std::collections::BTreeMap;

    /// Zero-shot records as `calibra zero-shot` writes them (one per template, seed 0, fraction 1) plus
    /// one perturbed run (not shown in the clean-only tables).
    fn zero_shot_set() -> RunRecordSet {
        let rec = |template: usize, condition: Condition| RunRecord {
            encoder: "clip".into(),
            dataset: "derm".into(),
            regime: Regime::ZeroShot,
            probe: format!("zero-shot:P{template}"),
            calibrator: "none".into(),
            label_fraction: 1.0,
            seed: 0,
            condition,
            // Dyadic values: mean 0.25 and std 0.125 of {0.125, 0.25, 0.375} exact by construction.
            metrics: BTreeMap::from([
                ("accuracy".to_string(), 0.5),
                ("ece".to_string(), 0.125 * template as f64),
            ]),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        };
        let mut records: Vec<RunRecord> = (1..=3).map(|t| rec(t, Condition::Clean)).collect();
        records.push(rec(1, Condition::Perturbation { perturbation: "blur".into(), severity: 1 }));
        RunRecordSet::from_records(records, "mem").unwrap()
    }

    #[test]
    fn a_report_without_a_crs_says_why_and_shows_the_stability_tables() {
        let e = Evaluation::build(&zero_shot_set(), &EvaluationOptions::default()).unwrap();
        let files = eval_report(&e, &[]);
        assert_eq!(files.len(), 1, "no profile or rank figures without a CRS");
        let md = &files[0].contents;
        assert!(md.contains("**CRS not computed: no runs of regime `frozen`"), "{md}");
        assert!(!md.contains("## Clinical Reliability Score") && !md.contains("## Profiles"), "{md}");
        assert!(
            md.contains("## Calibration stability") && md.contains("### Across prompt templates"),
            "{md}"
        );
        // One template row (seed 0) with the three templates, ECE 0.25 ± 0.125, accuracy constant.
        assert!(md.contains("| P1, P2, P3 | 0.5000 ± 0.0000 | 0.2500 ± 0.1250 | — | — |"), "{md}");
        // Seeds axis: one seed per template → means without a std; the perturbed run is not shown.
        assert!(md.contains("| P2 | 0 | 0.5000 | 0.2500 | — | — |"), "{md}");
        assert_eq!(md.matches("| zero-shot |").count(), 4, "{md}");
    }

    #[test]
    fn a_section_without_template_probes_says_so() {
        let table = CalibrationStability::default();
        let md = calibration_stability_section(&table);
        assert!(
            md.contains("No clean runs carry these metrics") && md.contains("No clean runs with a prompt")
        );
    }
}
