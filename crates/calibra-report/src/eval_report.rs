//! The Markdown report of one evaluation (spec §7) with its SVG figures.
//!
//! [`eval_report`] turns a [`calibra_crs::Evaluation`] (and the reliability bins of the runs whose
//! predictions file was available) into a list of files: `figures/*.svg` and `report.md`, which links
//! them. Every number shown is taken from the evaluation as is (4 decimals); nothing is recomputed here.

use calibra_crs::evaluation::{Evaluation, NamedComparison};
use calibra_crs::{
    CalibrationStability, Condition, STABILITY_METRICS, StabilityAxis, StabilityReport, StabilityRow, axes_of,
};
use calibra_metrics::ReliabilityBin;

use crate::capped_table::{FullTable, Tables};
use crate::markdown::{format_number, markdown_table};
use crate::reliability_grid::{GridPanel, reliability_grid};
use crate::{ProfileBar, profile_bars, rank_displacement, reliability_diagram};

/// The reliability bins of one run, computed from its predictions file.
#[derive(Debug, Clone, PartialEq)]
pub struct ReliabilityFigure {
    /// The run, e.g. `PanDerm / isic2019 / frozen / clean / ρ=1 / seed 0`.
    pub run: String,
    pub encoder: String,
    pub dataset: String,
    /// Regime name (`frozen`, `lora`, …).
    pub regime: String,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    /// Whether the run is on the clean test split (no perturbation, no shift target).
    pub clean: bool,
    pub seed: u64,
    /// The predictions file (as given in the run record).
    pub source: String,
    /// Top-label bins (single-label) or positive-class bins pooled over labels (multilabel).
    pub bins: Vec<ReliabilityBin>,
    /// ECE of these bins.
    pub ece: f64,
}

/// How the report is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// Rows shown of a long table before it is cut (the whole table is a CSV beside `report.md`).
    pub table_rows: usize,
    /// One reliability diagram per record (instead of one grid per dataset of the chosen slice).
    pub all_diagrams: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { table_rows: 12, all_diagrams: false }
    }
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
/// Long tables are capped as `tables` says (the whole one is `calibration_stability.csv`).
fn calibration_stability_md(table: &CalibrationStability, tables: &mut Tables) -> String {
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
        md.push_str(&tables.table(FullTable::Beside("calibration_stability.csv"), &header, &rows));
    }
    md
}

/// The report files of an evaluation with the default layout ([`ReportOptions::default`]).
pub fn eval_report(evaluation: &Evaluation, reliability: &[ReliabilityFigure]) -> Vec<ReportFile> {
    eval_report_with(evaluation, reliability, &ReportOptions::default())
}

/// A heading's anchor as GitHub and `report.html` write it: lower case, spaces to `-`, punctuation
/// other than `-` and `_` dropped.
pub fn heading_anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The leading tier: the rank-1 encoder and every encoder whose bootstrap interval reaches the
/// leader's lower bound (intervals overlap); the leader alone without a bootstrap.
fn leading_tier(e: &Evaluation, order: &[usize]) -> Vec<usize> {
    let Some(&leader) = order.first() else { return Vec::new() };
    match e.crs[leader].lower {
        Some(lower) => {
            order.iter().copied().filter(|&i| e.crs[i].upper.is_some_and(|u| u >= lower)).collect()
        }
        None => vec![leader],
    }
}

fn mean_of(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// `## Summary`: the page a clinical team reads first.
fn summary_section(e: &Evaluation, order: &[usize], tables: &mut Tables, md: &mut String) {
    md.push_str("\n## Summary\n");
    let has_boot = e.bootstrap.is_some();

    md.push_str("\n### Leading tier\n\n");
    let tier = leading_tier(e, order);
    let names: Vec<String> = tier.iter().map(|&i| format!("**{}**", e.crs[i].encoder)).collect();
    md.push_str(&format!(
        "Leading tier: {} ({}).\n\n",
        names.join(", "),
        if has_boot {
            "the rank-1 encoder and every encoder whose CRS interval overlaps its interval"
        } else {
            "the rank-1 encoder; no bootstrap, so no intervals to define a tier"
        }
    ));
    if has_boot {
        let rows: Vec<Vec<String>> = tier
            .iter()
            .map(|&i| {
                let c = &e.crs[i];
                vec![
                    c.encoder.clone(),
                    num(c.crs),
                    format!("[{}, {}]", opt(c.lower), opt(c.upper)),
                    opt(c.p_rank1),
                    opt(c.p_top3),
                ]
            })
            .collect();
        md.push_str(&markdown_table(&["encoder", "CRS", "95% interval", "P(rank 1)", "P(top 3)"], &rows));
    }

    md.push_str("\n### Clinical Reliability Score\n\n");
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
    md.push_str(&tables.table(FullTable::Beside("crs.csv"), &header, &rows));

    md.push_str("\n### AUROC vs CRS\n\n");
    match e.rank_comparisons.iter().find(|c| c.name == "auroc_vs_crs") {
        Some(c) => {
            let r = &c.comparison;
            md.push_str(&format!(
                "Ranking by {} vs by CRS over {} encoders: Kendall τ {}, {} of {} pairs reversed, mean |Δrank| {}, \
                 top-3 overlap {} ([details](#{})).\n",
                c.a,
                r.n,
                num(r.kendall_tau),
                r.reversals,
                r.pairs,
                num(r.mean_abs_displacement),
                opt(r.top_k_overlap.get(&3).copied()),
                heading_anchor(&format!("{}: {} vs {}", c.name, c.a, c.b)),
            ));
        }
        None => md.push_str("_Fewer than 2 encoders with a discrimination value: no comparison._\n"),
    }

    let base = e.axes.regime.to_string();
    let capitalised: String =
        base.chars().take(1).flat_map(char::to_uppercase).chain(base.chars().skip(1)).collect();
    md.push_str(&format!("\n### {capitalised} vs each adapted regime\n\n"));
    if e.regime_comparisons.is_empty() {
        md.push_str(&format!("_The run set holds no regime other than `{}`._\n", e.axes.regime));
    } else {
        md.push_str(&format!(
            "Per method, on the cells (encoder × dataset) observed in both regimes: mean clean full-label {} and \
             raw {} (lower is better), {} → adapted; Δ = adapted − {}. Kendall τ compares the two encoder \
             orderings (at least 2 encoders).\n\n",
            e.axes.discrimination_metric, e.axes.calibration_metric, e.axes.regime, e.axes.regime
        ));
        let tau = |c: &calibra_crs::RegimeComparison, axis: &str| {
            c.rank_comparisons
                .iter()
                .find(|n| n.ends_with(axis))
                .and_then(|n| e.rank_comparisons.iter().find(|r| &r.name == n))
                .map_or("—".to_string(), |r| num(r.comparison.kendall_tau))
        };
        let rows: Vec<Vec<String>> = e
            .regime_comparisons
            .iter()
            .map(|c| {
                let d = |f: fn(&calibra_crs::RegimeDelta) -> (Option<f64>, Option<f64>)| {
                    let v: Vec<f64> = c.encoders.iter().filter_map(|x| Some(f(x).1? - f(x).0?)).collect();
                    opt(mean_of(&v))
                };
                let cells: usize = c.encoders.iter().map(|x| x.datasets.len()).sum();
                vec![
                    c.regime.to_string(),
                    c.method.clone(),
                    c.encoders.len().to_string(),
                    cells.to_string(),
                    d(|x| (x.base_discrimination, x.adapted_discrimination)),
                    d(|x| (x.base_calibration_error, x.adapted_calibration_error)),
                    tau(c, "_discrimination"),
                    tau(c, "_calibration"),
                ]
            })
            .collect();
        md.push_str(&markdown_table(
            &[
                "regime",
                "method",
                "encoders",
                "cells",
                &format!("mean Δ {}", e.axes.discrimination_metric),
                &format!("mean Δ {}", e.axes.calibration_metric),
                "τ (disc)",
                "τ (−cal)",
            ],
            &rows,
        ));
        md.push_str("\nPer encoder:\n\n");
        let rows: Vec<Vec<String>> = e
            .regime_comparisons
            .iter()
            .flat_map(|c| {
                c.encoders.iter().map(move |x| {
                    vec![
                        c.regime.to_string(),
                        match &x.template {
                            Some(t) => format!("{} ({t})", c.method),
                            None => c.method.clone(),
                        },
                        x.encoder.clone(),
                        x.datasets.join(", "),
                        opt(x.base_discrimination),
                        opt(x.adapted_discrimination),
                        opt(x.base_calibration_error),
                        opt(x.adapted_calibration_error),
                    ]
                })
            })
            .collect();
        let (b, d, c) = (&e.axes.regime, &e.axes.discrimination_metric, &e.axes.calibration_metric);
        md.push_str(&tables.table(
            FullTable::Write("regime_comparisons"),
            &[
                "regime",
                "method",
                "encoder",
                "datasets",
                &format!("{d} ({b})"),
                &format!("{d} (adapted)"),
                &format!("{c} ({b})"),
                &format!("{c} (adapted)"),
            ],
            &rows,
        ));
        md.push_str("\nWhat each method stands for (chosen by default, none skipped):\n\n");
        for c in &e.regime_comparisons {
            md.push_str(&format!("- {} {}: {}\n", c.regime, c.method, c.selection));
        }
        md.push_str(
            "\nEach probe (loss) is its own method; prompt-template probes (`<method>:<template>`) are shown as \
             their mean over templates and as the best template per encoder. To compare one chosen probe \
             instead, evaluate that regime's runs on their own: `calibra eval RUN_DIR --regime coop --probe mcm` \
             (or `--regime zero-shot --probe zero-shot:P3`).\n",
        );
    }

    if let Some(line) = crate::transfer_report::summary_line(e.transfer_prediction.as_ref()) {
        md.push_str(&format!("\n### Predicted vs adapted\n\n{line}"));
    }

    md.push_str("\n### Calibration repair\n\n");
    let repair = &e.encoder_analyses.calibration_repair;
    match &repair.status {
        Some(status) => md.push_str(&format!("_{status}._\n")),
        None => {
            let mut by_cal: std::collections::BTreeMap<
                &str,
                Vec<&calibra_crs::encoder_analyses::CalibrationRepair>,
            > = std::collections::BTreeMap::new();
            for r in &repair.rows {
                by_cal.entry(&r.calibrator).or_default().push(r);
            }
            let rows: Vec<Vec<String>> = by_cal
                .into_iter()
                .map(|(cal, rs)| {
                    let m = |f: fn(&calibra_crs::encoder_analyses::CalibrationRepair) -> Option<f64>| {
                        opt(mean_of(&rs.iter().filter_map(|r| f(r)).collect::<Vec<_>>()))
                    };
                    let improved = rs.iter().filter(|r| r.ece_reduction.is_some_and(|x| x > 0.0)).count();
                    vec![
                        cal.to_string(),
                        rs.len().to_string(),
                        m(|r| r.ece_before),
                        m(|r| r.ece_after),
                        m(|r| r.ece_reduction),
                        format!("{improved} / {}", rs.len()),
                        m(|r| r.brier_before),
                        m(|r| r.brier_after),
                        m(|r| r.delta_auroc),
                    ]
                })
                .collect();
            md.push_str(
                "Post-hoc calibrators against the raw outputs (E2), means over cells (encoder × dataset × probe × \
                 label fraction; every cell in [e2_calibration_repair.csv](e2_calibration_repair.csv)).\n\n",
            );
            md.push_str(&markdown_table(
                &[
                    "calibrator",
                    "cells",
                    "ECE before",
                    "ECE after",
                    "ECE reduction",
                    "cells improved",
                    "Brier before",
                    "Brier after",
                    "ΔAUROC",
                ],
                &rows,
            ));
        }
    }

    md.push_str("\n### Headline figures\n\n![Normalised profiles](figures/profiles.svg)\n");
    if e.rank_comparisons.iter().any(|c| c.name == "auroc_vs_crs") {
        md.push_str("\n![auroc_vs_crs](figures/rank_auroc_vs_crs.svg)\n");
    }
}

/// The report files of an evaluation: the figures (`figures/profiles.svg`, `figures/rank_<name>.svg`,
/// the reliability grids `figures/reliability_<dataset>.svg` or, with [`ReportOptions::all_diagrams`],
/// `figures/reliability_<i>.svg`), the whole tables of capped ones (`tables/*.csv`) and, last,
/// `report.md` linking them: a summary page first, then the sections.
pub fn eval_report_with(
    evaluation: &Evaluation,
    reliability: &[ReliabilityFigure],
    options: &ReportOptions,
) -> Vec<ReportFile> {
    let e = evaluation;
    let mut files = Vec::new();
    let mut tables = Tables::capped(options.table_rows);
    let mut md = String::new();
    md.push_str("# calibra evaluation\n\n");
    md.push_str(&format!(
        "{} run records, {} metric rows; {} encoders, datasets {}, regimes {}, seeds {:?}. Axes from regime \
         `{}`, discrimination `{}`, calibration `{}` (oriented as −{}), robustness `{}`.\n",
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
    if let Some(selective) = &e.estimators.selective {
        md.push_str(&format!(
            "\nThe optional fifth axis **selective** is on: `{selective}`, the negated seed-mean `{}` of each \
             cell's clean full-label predictions (maximum softmax probability as confidence).\n",
            e.axes.selective_metric.as_deref().unwrap_or("augrc")
        ));
    }
    md.push_str(
        "\nEvery number is taken from `evaluation.json` or from the per-row tables it leaves to the CSV files \
         beside this file (`metric_rows.csv`, `calibration_stability.csv`, `adaptation_deltas.csv`), shown to \
         4 decimals; long tables show their first rows and link the whole table as CSV beside this file.\n",
    );
    md.push_str(&crate::convergence_report::convergence_section(&e.convergence));
    if let Some(why) = &e.crs_not_computed {
        md.push_str(&format!(
            "\n**{why}.** The sections below hold what the run records give without profiles.\n"
        ));
        if let Some(line) = crate::transfer_report::summary_line(e.transfer_prediction.as_ref()) {
            md.push_str(&format!("\n{line}"));
        }
        md.push_str(&crate::transfer_report::transfer_prediction_md(
            e.transfer_prediction.as_ref(),
            &mut tables,
            &mut files,
        ));
        md.push_str(&calibration_stability_md(&e.calibration_stability, &mut tables));
        md.push_str(&crate::focus_report::encoder_analyses_md(&e.encoder_analyses, &mut tables));
        if let Some(f) = &e.focus {
            md.push_str(&crate::focus_report::focus_md(f, &mut tables));
        }
        if let Some(r) = &e.selective {
            md.push_str(&crate::selective_report::selective_md(r, &mut tables, &mut files));
        }
        reliability_and_notes(e, reliability, options, &mut tables, &mut files, &mut md);
        files.append(&mut tables.files);
        files.push(ReportFile { path: "report.md".into(), contents: md });
        return files;
    }

    // Ranked order of the CRS table.
    let mut order: Vec<usize> = (0..e.crs.len()).collect();
    order.sort_by_key(|&i| e.crs[i].rank);
    summary_section(e, &order, &mut tables, &mut md);

    let w = e.component_weights;
    let a = &e.axis_weights;
    let selective_axis = a.len() == 5;
    let axis_labels = if selective_axis { "disc, cal, le, rob, sel" } else { "disc, cal, le, rob" };
    md.push_str("\n## Profiles\n\n");
    md.push_str(&format!(
        "Reference: {} (|R| = {}). CRS = {}·D + {}·S + {}·W; axis weights ({axis_labels}) = ({}). \
         Measured values (calibration = ECE, lower is better; AULC is a contrast, not an axis) and values \
         normalised with the reference's anchors.\n\n",
        if e.reference_origin == "saved" { "a saved reference" } else { "built from this run set's panel" },
        e.reference.get("panel").and_then(|p| p.as_array()).map_or(0, Vec::len),
        w.dominance,
        w.ideal,
        w.worst,
        a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
    ));
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
            if selective_axis {
                row.push(opt(p.and_then(|p| p.selective_error)));
            }
            row.extend(c.normalized.iter().map(|&v| num(v)));
            row
        })
        .collect();
    let header: &[&str] = if selective_axis {
        &[
            "encoder",
            "disc",
            "ECE",
            "LE",
            "rob",
            "rob (corruption-only)",
            "AULC",
            "AUGRC",
            "disc̃",
            "cal̃",
            "LẼ",
            "rob̃",
            "sel̃",
        ]
    } else {
        &["encoder", "disc", "ECE", "LE", "rob", "rob (corruption-only)", "AULC", "disc̃", "cal̃", "LẼ", "rob̃"]
    };
    md.push_str(&tables.table(FullTable::Beside("profiles.csv"), header, &rows));

    let axis_names: Vec<&str> = axes_of(a.len()).iter().map(|a| a.name()).collect();
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
        md.push_str(&tables.table(
            FullTable::Write("per_domain_crs"),
            &["dataset", "encoder", "CRS", "rank"],
            &rows,
        ));
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
        if c.name == "auroc_vs_crs" {
            md.push_str("\nIts rank-displacement chart is in the [headline figures](#headline-figures).\n");
        } else {
            md.push_str(&format!("\n![{}]({path})\n", c.name));
        }
    }

    md.push_str(&crate::transfer_report::transfer_prediction_md(
        e.transfer_prediction.as_ref(),
        &mut tables,
        &mut files,
    ));

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
    md.push_str(&tables.table(FullTable::Write("axis_correlations"), &["level", "a", "b", "n", "ρ"], &rows));

    if let Some(s) = &e.stability {
        md.push_str("\n## Stability of the CRS ranking\n\n");
        stability_section(s, &mut md);
    }

    md.push_str(&calibration_stability_md(&e.calibration_stability, &mut tables));
    md.push_str(&crate::focus_report::encoder_analyses_md(&e.encoder_analyses, &mut tables));
    if let Some(f) = &e.focus {
        md.push_str(&crate::focus_report::focus_md(f, &mut tables));
    }
    if let Some(r) = &e.selective {
        md.push_str(&crate::selective_report::selective_md(r, &mut tables, &mut files));
    }
    reliability_and_notes(e, reliability, options, &mut tables, &mut files, &mut md);
    files.append(&mut tables.files);
    files.push(ReportFile { path: "report.md".into(), contents: md });
    files
}

/// Seed-pooled bins: counts summed, confidence and accuracy count-weighted (the bins of the pooled
/// samples, since every seed uses the same edges); `None` when the bin edges differ.
fn pool_bins(members: &[&ReliabilityFigure]) -> Option<(Vec<ReliabilityBin>, f64)> {
    let first = &members.first()?.bins;
    if members.iter().any(|m| {
        m.bins.len() != first.len()
            || m.bins.iter().zip(first).any(|(a, b)| a.lower != b.lower || a.upper != b.upper)
    }) {
        return None;
    }
    let mut pooled = Vec::with_capacity(first.len());
    let mut total = 0usize;
    let mut gap = 0.0;
    for (i, b) in first.iter().enumerate() {
        let count: usize = members.iter().map(|m| m.bins[i].count).sum();
        let weighted = |f: fn(&ReliabilityBin) -> f64| {
            members
                .iter()
                .filter(|m| m.bins[i].count > 0)
                .map(|m| f(&m.bins[i]) * m.bins[i].count as f64)
                .sum::<f64>()
                / count as f64
        };
        let (confidence, accuracy) = if count > 0 {
            (weighted(|b| b.confidence), weighted(|b| b.accuracy))
        } else {
            (f64::NAN, f64::NAN)
        };
        if count > 0 {
            gap += count as f64 * (accuracy - confidence).abs();
        }
        total += count;
        pooled.push(ReliabilityBin { lower: b.lower, upper: b.upper, count, confidence, accuracy });
    }
    Some((pooled, if total > 0 { gap / total as f64 } else { f64::NAN }))
}

/// The reliability diagrams of the chosen slice: clean, full labels, one panel per encoder × regime ×
/// method × calibrator pooled over seeds, one grid figure per dataset.
fn reliability_grids(
    reliability: &[ReliabilityFigure],
    tables: &mut Tables,
    files: &mut Vec<ReportFile>,
    md: &mut String,
) {
    type Key = (String, String, String, String);
    let mut by_dataset: std::collections::BTreeMap<
        &str,
        std::collections::BTreeMap<Key, Vec<&ReliabilityFigure>>,
    > = std::collections::BTreeMap::new();
    for r in reliability.iter().filter(|r| r.clean && r.label_fraction == 1.0) {
        by_dataset
            .entry(&r.dataset)
            .or_default()
            .entry((r.encoder.clone(), r.regime.clone(), r.probe.clone(), r.calibrator.clone()))
            .or_default()
            .push(r);
    }
    md.push_str(&format!(
        "\n## Reliability diagrams\n\nThe chosen slice: clean test split, full labels; one panel per encoder × regime × \
         method × calibrator, pooled over seeds (bin counts summed, per-bin confidence and accuracy \
         count-weighted; ECE of the pooled bins); one grid per dataset. {} of {} runs with a predictions file \
         are in the slice; `calibra eval --all-diagrams` draws one diagram per run instead.\n",
        by_dataset.values().flat_map(|m| m.values()).map(Vec::len).sum::<usize>(),
        reliability.len()
    ));
    for (dataset, cells) in by_dataset {
        let mut rows: Vec<String> = Vec::new();
        let mut columns: Vec<String> = Vec::new();
        for (enc, regime, probe, cal) in cells.keys() {
            let row = format!("{enc} · {regime} · {probe}");
            if !rows.contains(&row) {
                rows.push(row);
            }
            if !columns.contains(cal) {
                columns.push(cal.clone());
            }
        }
        // Raw outputs first, then the calibrators by name.
        columns.sort_by_key(|c| (c != "none", c.clone()));
        let mut pooled = Vec::new();
        let mut table = Vec::new();
        for ((enc, regime, probe, cal), members) in &cells {
            let Some((bins, ece)) = pool_bins(members) else { continue };
            let row = rows.iter().position(|r| *r == format!("{enc} · {regime} · {probe}")).unwrap_or(0);
            let column = columns.iter().position(|c| c == cal).unwrap_or(0);
            let mut seeds: Vec<u64> = members.iter().map(|m| m.seed).collect();
            seeds.sort_unstable();
            table.push(vec![
                enc.clone(),
                regime.clone(),
                probe.clone(),
                cal.clone(),
                seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(" "),
                bins.iter().map(|b| b.count).sum::<usize>().to_string(),
                num(ece),
                members.iter().map(|m| format!("`{}`", m.source)).collect::<Vec<_>>().join(" "),
            ]);
            pooled.push((row, column, bins, ece));
        }
        let panels: Vec<GridPanel<'_>> = pooled
            .iter()
            .map(|(row, column, bins, ece)| GridPanel { row: *row, column: *column, bins, ece: *ece })
            .collect();
        let slug: String =
            dataset.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '_' }).collect();
        let path = format!("figures/reliability_{slug}.svg");
        files.push(ReportFile {
            path: path.clone(),
            contents: reliability_grid(
                &format!("{dataset}: reliability, clean test split, full labels, pooled over seeds"),
                &rows,
                &columns,
                &panels,
            ),
        });
        md.push_str(&format!("\n### {dataset}\n\n![reliability {dataset}]({path})\n\n"));
        md.push_str(&tables.table(
            FullTable::Write(&format!("reliability_{slug}")),
            &[
                "encoder",
                "regime",
                "method",
                "calibrator",
                "seeds",
                "samples",
                "pooled ECE",
                "predictions files",
            ],
            &table,
        ));
    }
}

/// The reliability diagrams (figures and their section) and the notes, shared by reports with and
/// without a CRS.
fn reliability_and_notes(
    e: &Evaluation,
    reliability: &[ReliabilityFigure],
    options: &ReportOptions,
    tables: &mut Tables,
    files: &mut Vec<ReportFile>,
    md: &mut String,
) {
    if !reliability.is_empty() && !options.all_diagrams {
        reliability_grids(reliability, tables, files, md);
    } else if !reliability.is_empty() {
        md.push_str(
            "\n## Reliability diagrams\n\nComputed from the runs' predictions files (15 equal-width bins), one per run \
             (`--all-diagrams`).\n",
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
        let shown = e.notes.len().min(tables.cap);
        for n in &e.notes[..shown] {
            md.push_str(&format!("- {n}\n"));
        }
        if shown < e.notes.len() {
            md.push_str(&format!("- … and {} more (`notes` in `evaluation.json`)\n", e.notes.len() - shown));
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
        let md = calibration_stability_md(&table, &mut Tables::uncapped());
        assert!(
            md.contains("No clean runs carry these metrics") && md.contains("No clean runs with a prompt")
        );
    }
}
