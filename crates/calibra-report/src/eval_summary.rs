//! The summary `calibra eval` prints on stdout (`--format table`): input counts, the CRS ranking with
//! its intervals, the rank comparisons, calibration stability, and one line per further analysis
//! with its notes.

use calibra_crs::{CalibrationStability, Condition, Evaluation, StabilityAxis};
use std::fmt::Write;

/// How many clean template groups the summary lists before pointing to the files.
const SUMMARY_TEMPLATE_ROWS: usize = 10;

/// The summary of `e`, one line per item, ending in a newline.
pub fn summary_table(e: &Evaluation) -> String {
    let mut out = String::new();
    let reference = match e.reference_origin {
        "saved" => "saved",
        "panel" => "built from the run set's panel",
        _ => "none",
    };
    let _ = writeln!(
        out,
        "{} run records → {} metric rows; {} encoders; reference: {reference}",
        e.input.records,
        e.input.metric_rows,
        e.crs.len(),
    );
    if let Some(why) = &e.crs_not_computed {
        let _ = writeln!(out, "{why}");
    }
    crs_ranking(e, &mut out);
    for c in &e.rank_comparisons {
        let _ = writeln!(
            out,
            "{}: Kendall τ {:.4}, reversals {}/{}, mean |Δrank| {:.4}",
            c.name,
            c.comparison.kendall_tau,
            c.comparison.reversals,
            c.comparison.pairs,
            c.comparison.mean_abs_displacement
        );
    }
    stability_summary(&e.calibration_stability, &mut out);
    if let Some(f) = &e.focus {
        let _ = writeln!(
            out,
            "gaps: {} (run, column) rows over {} columns; adaptation: {} base–adapted pairs, {} unpaired",
            f.run_gaps.len(),
            f.columns.len(),
            f.adaptation.len(),
            f.unpaired.len()
        );
        notes(&f.notes, &mut out);
    }
    if let Some(r) = &e.selective {
        let _ = writeln!(
            out,
            "selective: {} runs (AURC/E-AURC/AUGRC), {} conformal rows ({} at α = {}), {} shift-detection rows",
            r.runs.len(),
            r.conformal.len(),
            r.method,
            r.alpha,
            r.shift_detection.len()
        );
        notes(&r.notes, &mut out);
    }
    notes(&e.notes, &mut out);
    out
}

fn notes(notes: &[String], out: &mut String) {
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
}

/// The CRS table, by rank: CRS, bootstrap interval, P(rank 1), P(top 3). Nothing without a CRS.
fn crs_ranking(e: &Evaluation, out: &mut String) {
    let width = e.crs.iter().map(|c| c.encoder.chars().count()).max().unwrap_or(0).max("encoder".len());
    if !e.crs.is_empty() {
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:>8}  {:>19}  {:>9}  {:>8}",
            "rank", "encoder", "CRS", "95% interval", "P(rank1)", "P(top3)"
        );
    }
    let mut order: Vec<usize> = (0..e.crs.len()).collect();
    order.sort_by_key(|&i| e.crs[i].rank);
    let f = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.4}"));
    for i in order {
        let c = &e.crs[i];
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:>8.4}  {:>19}  {:>9}  {:>8}",
            c.rank,
            c.encoder,
            c.crs,
            format!("[{}, {}]", f(c.lower), f(c.upper)),
            f(c.p_rank1),
            f(c.p_top3)
        );
    }
}

/// The calibration-stability lines of the summary: group counts, then the std across templates of the
/// clean template groups (the first [`SUMMARY_TEMPLATE_ROWS`]).
fn stability_summary(table: &CalibrationStability, out: &mut String) {
    let seeds = table.axis(StabilityAxis::Seeds).count();
    let templates: Vec<_> = table.axis(StabilityAxis::Templates).collect();
    let _ = writeln!(
        out,
        "calibration stability: {seeds} seed groups, {} template groups (calibration_stability.csv)",
        templates.len()
    );
    let clean: Vec<_> = templates.iter().filter(|r| r.condition == Condition::Clean).collect();
    for r in clean.iter().take(SUMMARY_TEMPLATE_ROWS) {
        let std = |m: &str| r.metric(m).and_then(|s| s.std).map_or("n/a".to_string(), |v| format!("{v:.4}"));
        let _ = writeln!(
            out,
            "  std across {} templates: {} / {} / {} / {} calibrator {} ρ={} seed {}: accuracy {} ECE {} MCE {} ACE {}",
            r.members.len(),
            r.encoder,
            r.dataset,
            r.regime,
            r.method,
            r.calibrator,
            r.label_fraction,
            r.seed.unwrap_or_default(),
            std("accuracy"),
            std("ece"),
            std("mce"),
            std("adaptive_ece"),
        );
    }
    if clean.len() > SUMMARY_TEMPLATE_ROWS {
        let _ = writeln!(out, "  … and {} more", clean.len() - SUMMARY_TEMPLATE_ROWS);
    }
}
