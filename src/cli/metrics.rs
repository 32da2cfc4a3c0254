//! `calibra metrics FILE`: the discrimination and calibration metric set of one predictions file,
//! followed by the selective-prediction set (`aurc`, `eaurc`, `augrc`, `risk_at_80_coverage`,
//! `coverage_at_5_risk`, `smooth_ece`, `debiased_ece`, `selective_by_score`; see
//! `calibra_metrics::selective_summary`), added after the original keys.

use crate::cli::output::{OutputFormat, cell, emit};
use anyhow::{Context, Result};
use calibra_metrics::{
    Binning, MetricSummary, SelectiveSummary, SummaryOptions, summarize_multilabel,
    summarize_selective_multilabel, summarize_selective_single_label, summarize_single_label,
};
use calibra_predictions::{Predictions, Targets, read_predictions};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    /// Predictions CSV: `id`, `label` or `label_<name>` columns, and `logit_<class>` or `prob_<class>` columns.
    pub file: PathBuf,
    /// Number of equal-width bins for ECE, MCE, class-wise ECE and the reliability diagram (and of
    /// equal-mass bins for adaptive ECE).
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = crate::cli::eval::numbers::bins)]
    pub bins: u32,
    /// Which bin a confidence exactly on an inner edge belongs to: `right-closed` (lo, hi] as in
    /// Guo et al. and MVC-Bench; `left-closed` [lo, hi) as netcal; `torchmetrics` [lo, hi) with an
    /// extra bin for exactly 1.0.
    #[arg(long, default_value = "right-closed")]
    pub binning: Binning,
    /// The classes are ordered grades: also report quadratic weighted kappa and ordinal MAE.
    #[arg(long)]
    pub ordinal: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

pub fn run(args: &MetricsArgs) -> Result<()> {
    let predictions = read_predictions(&args.file)?;
    let options = SummaryOptions { n_bins: args.bins as usize, binning: args.binning, ordinal: args.ordinal };
    let summary = summarize(&predictions, &options)
        .with_context(|| format!("computing metrics of {}", args.file.display()))?;
    let selective = summarize_selective(&predictions)
        .with_context(|| format!("computing selective-prediction metrics of {}", args.file.display()))?;
    match args.format {
        OutputFormat::Json => {
            let all = WithSelective { summary: &summary, selective: &selective };
            emit(&(serde_json::to_string_pretty(&all)? + "\n"))?
        }
        OutputFormat::Table => emit(&(table(&summary, &predictions) + &selective_table(&selective)))?,
    }
    Ok(())
}

/// The JSON document: the original keys, then the selective-prediction keys.
#[derive(serde::Serialize)]
struct WithSelective<'a> {
    #[serde(flatten)]
    summary: &'a MetricSummary,
    #[serde(flatten)]
    selective: &'a SelectiveSummary,
}

/// The selective-prediction metric set of a predictions table, whatever its task.
pub fn summarize_selective(predictions: &Predictions) -> Result<SelectiveSummary> {
    let probs = predictions.probabilities();
    let k = predictions.num_classes();
    Ok(match predictions.targets() {
        Targets::Classes(labels) => {
            summarize_selective_single_label(&probs, predictions.logits(), k, labels)?
        }
        Targets::Labels(values) => summarize_selective_multilabel(&probs, k, values)?,
    })
}

fn selective_table(s: &SelectiveSummary) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "\nselective prediction (confidence = max probability)");
    for (name, value) in [
        ("AURC", s.aurc),
        ("E-AURC", s.eaurc),
        ("AUGRC", s.augrc),
        ("risk at 80% coverage", s.risk_at_80_coverage),
        ("coverage at 5% risk", s.coverage_at_5_risk),
        ("smooth ECE (relplot)", s.smooth_ece),
        ("debiased ECE (L2, Kumar)", s.debiased_ece),
    ] {
        let _ = writeln!(out, "{name:<26}{:>12}", cell(value));
    }
    let _ = writeln!(out, "\n{:<14} {:>12} {:>12} {:>12}", "score", "AURC", "E-AURC", "AUGRC");
    for (name, a) in &s.selective_by_score {
        let _ = writeln!(out, "{name:<14} {:>12} {:>12} {:>12}", cell(a.aurc), cell(a.eaurc), cell(a.augrc));
    }
    out
}

/// The metric set of a predictions table, whatever its task.
pub fn summarize(predictions: &Predictions, options: &SummaryOptions) -> Result<MetricSummary> {
    let probs = predictions.probabilities();
    let k = predictions.num_classes();
    Ok(match predictions.targets() {
        Targets::Classes(labels) => summarize_single_label(&probs, predictions.logits(), k, labels, options)?,
        Targets::Labels(values) => summarize_multilabel(&probs, k, values, options)?,
    })
}

fn defined(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

fn table(s: &MetricSummary, predictions: &Predictions) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let task =
        serde_json::to_value(s.task).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let _ = writeln!(
        out,
        "{} samples, {} {}, task {task}",
        s.n,
        s.num_classes,
        if task == "multilabel" { "labels" } else { "classes" }
    );
    let _ = writeln!(out, "bins: {} equal-width, {}", s.n_bins, s.binning);
    let _ = writeln!(out);
    let mut rows: Vec<(&str, Option<f64>)> = vec![
        ("accuracy", s.accuracy),
        ("macro AUROC", s.macro_auroc),
        ("macro AUPRC", s.macro_auprc),
        ("ECE (top-label)", s.ece),
    ];
    if s.ece_binary_positive.is_some() {
        rows.push(("ECE (positive class)", s.ece_binary_positive));
    }
    rows.extend([
        ("adaptive ECE", s.adaptive_ece),
        ("ACE (Nixon)", s.ace),
        ("MCE", s.mce),
        ("class-wise ECE", s.classwise_ece),
        ("Brier", s.brier),
        ("NLL", s.nll),
        ("macro F1", s.macro_f1),
    ]);
    if let Some(o) = &s.ordinal {
        rows.push(("quadratic weighted kappa", o.qwk));
        rows.push(("ordinal MAE", o.ordinal_mae));
    }
    for (name, value) in rows {
        let _ = writeln!(out, "{name:<26}{:>12}", cell(value));
    }
    let undefined: Vec<&str> = s
        .auroc_per_class
        .iter()
        .zip(predictions.class_names())
        .filter(|(a, _)| a.is_none())
        .map(|(_, name)| name.as_str())
        .collect();
    if !undefined.is_empty() && s.auroc_per_class.len() == predictions.num_classes() {
        let _ = writeln!(
            out,
            "\nAUROC undefined (a single label value in the data) for: {}",
            undefined.join(", ")
        );
    }
    let _ = writeln!(out, "\nreliability diagram");
    let _ =
        writeln!(out, "{:>8} {:>8} {:>8} {:>12} {:>12}", "lower", "upper", "count", "confidence", "accuracy");
    for b in &s.reliability {
        let _ = writeln!(
            out,
            "{:>8.4} {:>8.4} {:>8} {:>12} {:>12}",
            b.lower,
            b.upper,
            b.count,
            cell(defined(b.confidence)),
            cell(defined(b.accuracy))
        );
    }
    out
}
