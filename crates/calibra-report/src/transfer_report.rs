//! The report's "Predicted vs adapted (transferability)" section (calibra-crs `transfer_prediction`):
//! how each transferability estimator's ranking of the encoders, from frozen features, agrees with the
//! ranking the adapted runs give; the verdicts, a τ-b figure and the table (capped; the whole table as
//! `tables/transfer_prediction.csv`). Absent when the run set has no estimate records.

use calibra_crs::transfer_prediction::{
    OVERALL, PREDICTS_TAU_B, SHORTLIST, TransferPrediction, estimator_label, target_label,
};

use crate::capped_table::{FullTable, Tables};
use crate::eval_report::ReportFile;
use crate::markdown::format_number;
use crate::tau_dots::tau_dots;

/// The section title (its anchor is [`crate::heading_anchor`] of it).
pub const TITLE: &str = "Predicted vs adapted (transferability)";

/// The figure's path.
pub const FIGURE: &str = "figures/transfer_tau_b.svg";

/// The summary page's line: per target the best estimator by discrimination (and calibration error),
/// with its mean τ-b; `None` without the analysis.
pub fn summary_line(t: Option<&TransferPrediction>) -> Option<String> {
    let t = t?;
    let mut parts = Vec::new();
    for target in &t.targets {
        let mut best = Vec::new();
        for v in t
            .verdicts
            .iter()
            .filter(|v| v.regime.zip(v.method.as_deref()).is_some_and(|(r, m)| target_label(r, m) == *target))
        {
            if let (Some(est), Some(layer), Some(tau)) = (&v.estimator, v.layer, v.mean_tau_b) {
                best.push(format!(
                    "{} {} (τ-b {}{})",
                    v.outcome.name().replace('_', " "),
                    estimator_label(est, layer),
                    format_number(Some(tau)),
                    if v.predicts { "" } else { ", predicts nothing" }
                ));
            }
        }
        if !best.is_empty() {
            parts.push(format!("{target}: {}", best.join(", ")));
        }
    }
    let body = if parts.is_empty() { "no estimator could be compared".to_string() } else { parts.join("; ") };
    Some(format!(
        "**Predicted vs adapted:** best estimator per target, mean per-dataset τ-b — {body} \
         ([details](#{})).\n",
        crate::heading_anchor(TITLE)
    ))
}

/// The section's Markdown; its figure is pushed to `files`. Empty without the analysis.
pub(crate) fn transfer_prediction_md(
    t: Option<&TransferPrediction>,
    tables: &mut Tables,
    files: &mut Vec<ReportFile>,
) -> String {
    let Some(t) = t else { return String::new() };
    let mut md = format!("\n## {TITLE}\n\n");
    let layers: Vec<String> = t.layers.iter().map(|l| l.to_string()).collect();
    md.push_str(&format!(
        "{} estimate records: estimators {} at layers {} (1 = full depth), computed on frozen train-split \
         features before any adaptation. Each estimator's ranking of the encoders is compared with the actual \
         ranking of each target ({}) per dataset and `{OVERALL}` (per encoder, the mean over the datasets \
         every compared encoder has). τ-b honours ties; the top-{SHORTLIST} regret is the best actual value \
         minus the best among the {SHORTLIST} encoders the estimator ranks highest (discrimination and \
         calibration error in points, ×100; CRS in CRS units); fits saved counts the target's fits \
         (encoder × dataset × probe × label fraction × seed) of the encoders outside the shortlist — run \
         records carry no timings, so this counts fits, not seconds.\n\n",
        t.estimate_records,
        t.estimators.join(", "),
        layers.join(", "),
        t.targets.join(", "),
    ));
    md.push_str(&format!("Rule: {}.\n\n", t.rule));
    for v in &t.headlines {
        md.push_str(&format!("- **{}**\n", v.sentence));
    }
    // A per-target verdict that says what a headline already says is not repeated.
    for v in t.verdicts.iter().filter(|v| !t.headlines.iter().any(|h| h.sentence == v.sentence)) {
        md.push_str(&format!("- {}\n", v.sentence));
    }

    // Figure: mean per-dataset τ-b, one row per estimator@layer, one series per target · outcome.
    let mut rows: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for s in &t.summaries {
        let r = estimator_label(&s.estimator, s.layer);
        if !rows.contains(&r) {
            rows.push(r);
        }
        let k = format!("{} · {}", target_label(s.regime, &s.method), s.outcome.name());
        if !series.contains(&k) {
            series.push(k);
        }
    }
    let mut values = vec![vec![None; series.len()]; rows.len()];
    for s in &t.summaries {
        let r = rows.iter().position(|x| *x == estimator_label(&s.estimator, s.layer)).unwrap_or(0);
        let k = format!("{} · {}", target_label(s.regime, &s.method), s.outcome.name());
        let c = series.iter().position(|x| *x == k).unwrap_or(0);
        values[r][c] = s.mean_tau_b;
    }
    if !rows.is_empty() {
        files.push(ReportFile {
            path: FIGURE.into(),
            contents: tau_dots(
                "Estimators vs adapted runs: mean per-dataset Kendall τ-b",
                &rows,
                &series,
                &values,
                Some(PREDICTS_TAU_B),
            ),
        });
        md.push_str(&format!("\n![transferability τ-b]({FIGURE})\n"));
    }

    let table: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let unit = if r.regret_unit == "crs" { "CRS" } else { "pts" };
            vec![
                r.scope.clone(),
                r.estimator.clone(),
                r.layer.to_string(),
                target_label(r.regime, &r.method),
                format!("{} ({})", r.outcome.name(), r.metric),
                r.encoders.len().to_string(),
                format_number(r.kendall_tau_b),
                format_number(r.spearman_rho),
                format_number(r.weighted_tau),
                r.regret.map_or("—".to_string(), |x| format!("{} {unit}", format_number(Some(x)))),
                match (r.fits_saved, r.fits_saved_fraction) {
                    (Some(s), Some(f)) => format!("{s} / {} ({:.0}%)", r.fits, f * 100.0),
                    (Some(s), None) => format!("{s} / {}", r.fits),
                    _ => "—".to_string(),
                },
            ]
        })
        .collect();
    md.push('\n');
    if table.is_empty() {
        md.push_str("_No estimator could be compared with any target (see the notes below)._\n");
    } else {
        md.push_str(&tables.table(
            FullTable::Write("transfer_prediction"),
            &[
                "scope",
                "estimator",
                "layer",
                "target",
                "outcome",
                "encoders",
                "τ-b",
                "ρ",
                "weighted τ",
                &format!("top-{SHORTLIST} regret"),
                "fits saved",
            ],
            &table,
        ));
    }
    if !t.notes.is_empty() {
        md.push_str("\nSkipped or ignored:\n\n");
        let shown = t.notes.len().min(tables.cap);
        for n in &t.notes[..shown] {
            md.push_str(&format!("- {n}\n"));
        }
        if shown < t.notes.len() {
            md.push_str(&format!(
                "- … and {} more (`transfer_prediction.notes` in `evaluation.json`)\n",
                t.notes.len() - shown
            ));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReportOptions, eval_report, eval_report_with, report_html, svg_to_png};
    use calibra_crs::{Condition, Evaluation, EvaluationOptions, Regime, RunRecord, RunRecordSet};
    use std::collections::BTreeMap;

    const ENCODERS: [&str; 4] = ["a", "b", "c", "d"];

    fn rec(
        enc: &str,
        regime: Regime,
        probe: &str,
        frac: f64,
        seed: u64,
        condition: Condition,
        m: &[(&str, f64)],
    ) -> RunRecord {
        RunRecord {
            encoder: enc.into(),
            dataset: "derm".into(),
            regime,
            probe: probe.into(),
            calibrator: "none".into(),
            label_fraction: frac,
            seed,
            condition,
            metrics: m.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    /// LoRA runs (one seed) with AUROC rising with the encoder index, and estimate records: `logme` =
    /// the LoRA AUROC (monotone), `gbc` = its negation (reversed).
    fn lora_and_estimates() -> Vec<RunRecord> {
        let mut out = Vec::new();
        for (i, enc) in ENCODERS.iter().enumerate() {
            let auroc = 0.7 + 0.05 * i as f64;
            out.push(rec(
                enc,
                Regime::Lora,
                "ce",
                1.0,
                0,
                Condition::Clean,
                &[("macro_auroc", auroc), ("ece", 0.1)],
            ));
            let m = [("logme", auroc), ("gbc", -auroc)];
            out.push(rec(enc, Regime::Estimate, "estimators", 1.0, 0, Condition::Clean, &m));
        }
        out
    }

    /// A frozen grid that gives a CRS (every axis observed) for the same encoders.
    fn frozen() -> Vec<RunRecord> {
        let mut out = Vec::new();
        for (e, enc) in ENCODERS.iter().enumerate() {
            let q = 0.02 * e as f64;
            let ece = 0.1 - 0.013 * ((e * 7) % 4) as f64;
            for seed in 0..2u64 {
                let noise = 0.003 * seed as f64;
                for (i, frac) in [0.01, 0.05, 0.1, 0.25, 1.0].into_iter().enumerate() {
                    let auroc = 0.7 + q + noise + 0.02 * i as f64 * (1.0 + 0.1 * ((e * 3) % 4) as f64);
                    let m = [("macro_auroc", auroc), ("ece", ece + noise)];
                    out.push(rec(enc, Regime::Frozen, "p", frac, seed, Condition::Clean, &m));
                }
                let blur = Condition::Perturbation { perturbation: "blur".into(), severity: 1 };
                let m = [("macro_auroc", 0.7 + q - 0.01 * ((e * 5) % 4) as f64), ("ece", ece)];
                out.push(rec(enc, Regime::Frozen, "p", 1.0, seed, blur, &m));
            }
        }
        out
    }

    fn evaluate(records: Vec<RunRecord>) -> Evaluation {
        let options =
            EvaluationOptions { bootstrap: None, stability_seed: None, ..EvaluationOptions::default() };
        Evaluation::build(&RunRecordSet::from_records(records, "mem").unwrap(), &options).unwrap()
    }

    fn report_md(files: &[ReportFile]) -> &str {
        &files.iter().find(|f| f.path == "report.md").unwrap().contents
    }

    #[test]
    fn absent_without_estimate_records() {
        let records: Vec<RunRecord> =
            lora_and_estimates().into_iter().filter(|r| r.regime != Regime::Estimate).collect();
        let files = eval_report(&evaluate(records), &[]);
        let md = report_md(&files);
        assert!(!md.contains(TITLE) && !md.contains("Predicted vs adapted"), "{md}");
        assert!(!files.iter().any(|f| f.path == FIGURE));
    }

    #[test]
    fn the_section_shows_table_verdicts_and_a_figure_that_renders() {
        let e = evaluate(lora_and_estimates());
        assert!(e.crs_not_computed.is_some(), "LoRA alone: no CRS, the section is still there");
        let files = eval_report(&e, &[]);
        let md = report_md(&files);
        assert!(md.contains(&format!("## {TITLE}")), "{md}");
        // One dataset, one seed: 4 LoRA fits; the shortlist keeps 3, so 1 fit (25 %) is saved.
        let fits = ENCODERS.len();
        let saved = ENCODERS.len() - SHORTLIST;
        let pct = 100 * saved / fits;
        for scope in ["derm", OVERALL] {
            let row = format!(
                "| {scope} | logme | 1 | lora ce | discrimination (macro_auroc) | 4 | 1.0000 | 1.0000 | 1.0000 | 0.0000 pts | {saved} / {fits} ({pct}%) |"
            );
            assert!(md.contains(&row), "{row}\n{md}");
        }
        // gbc reverses the ranking: τ-b −1, and the shortlist misses the best encoder d (AUROC 0.85),
        // its best being c (0.80): regret (0.85 − 0.80) × 100 points.
        let regret = ((0.7 + 0.05 * 3.0) - (0.7 + 0.05 * 2.0)) * 100.0;
        let gbc = format!(
            "| derm | gbc | 1 | lora ce | discrimination (macro_auroc) | 4 | -1.0000 | -1.0000 | -1.0000 | {} pts |",
            format_number(Some(regret))
        );
        assert!(md.contains(&gbc), "{gbc}\n{md}");
        assert!(
            md.contains("- **logme predicts post-adaptation macro_auroc for lora ce: τ-b ≥ 0.5 in 1 of 1"),
            "{md}"
        );
        // ECE is constant over the encoders: τ undefined, so nothing is assessed for it.
        assert!(md.contains("post-adaptation ECE for lora ce: not assessed"), "{md}");
        assert!(md.contains(&format!("![transferability τ-b]({FIGURE})")));
        let svg = &files.iter().find(|f| f.path == FIGURE).unwrap().contents;
        assert!(svg.contains("lora ce · discrimination") && svg.contains("gbc"), "{svg}");
        let png = svg_to_png(svg, 1.0).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        let figures: BTreeMap<String, String> = files
            .iter()
            .filter(|f| f.path.ends_with(".svg"))
            .map(|f| (f.path.clone(), f.contents.clone()))
            .collect();
        let html = report_html(md, &figures);
        assert!(html.contains(&format!("data-source=\"{FIGURE}\"")), "the figure is inlined in report.html");
    }

    #[test]
    fn with_a_crs_the_summary_has_its_line_and_long_tables_go_to_csv() {
        let e = evaluate(frozen().into_iter().chain(lora_and_estimates()).collect());
        assert!(e.crs_not_computed.is_none());
        let t = e.transfer_prediction.as_ref().unwrap();
        let options = ReportOptions { table_rows: 2, ..ReportOptions::default() };
        let files = eval_report_with(&e, &[], &options);
        let md = report_md(&files);
        let summary = md.find("## Summary").unwrap();
        let line = md.find("**Predicted vs adapted:**").unwrap();
        let section = md.find(&format!("## {TITLE}")).unwrap();
        assert!(summary < line && line < section, "the line is on the summary page, the section after it");
        assert!(md.contains("lora ce: discrimination logme (τ-b 1.0000)"), "{md}");
        assert!(md.contains(&format!("(#{})", crate::heading_anchor(TITLE))));
        assert!(md.contains("the CRS"), "the CRS verdict of the axis regime: {md}");
        // The whole table is the CSV: a header and one line per row of the analysis.
        let csv = &files.iter().find(|f| f.path == "tables/transfer_prediction.csv").unwrap().contents;
        assert_eq!(csv.lines().count(), 1 + t.rows.len());
        assert!(md.contains(&format!(
            "_First 2 of {} rows; the whole table: [tables/transfer_prediction.csv]",
            t.rows.len()
        )));
    }
}
