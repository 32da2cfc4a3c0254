//! `calibra metrics`: the metric set of one predictions file — discrimination and calibration
//! ([`calibra_metrics::MetricSummary`]) followed by the selective-prediction set
//! ([`calibra_metrics::SelectiveSummary`]) — as one JSON document (the original keys, then the
//! selective keys) or as the terminal table.

use calibra_metrics::{MetricSummary, MetricsError, SelectiveSummary, SummaryOptions, SummaryTask};
use calibra_predictions::Predictions;
pub use calibra_predictions::{summarize_predictions, summarize_selective_predictions};
use serde::Serialize;
use std::fmt::Write;
use thiserror::Error;

use crate::text_cell::cell;

/// Why the metrics of a predictions file could not be computed; names the file.
#[derive(Debug, Error)]
pub enum MetricsReportError {
    #[error("computing metrics of {file}")]
    Summary { file: String, source: MetricsError },
    #[error("computing selective-prediction metrics of {file}")]
    Selective { file: String, source: MetricsError },
}

/// The `calibra metrics` document: serialised, the summary's keys, then the selective keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricsReport {
    #[serde(flatten)]
    pub summary: MetricSummary,
    #[serde(flatten)]
    pub selective: SelectiveSummary,
    /// The class (or label) names in column order, for the table's undefined-AUROC line.
    #[serde(skip)]
    pub class_names: Vec<String>,
}

impl MetricsReport {
    /// The metrics of `predictions`, read from `file` (named in errors).
    pub fn of(
        predictions: &Predictions,
        file: &str,
        options: &SummaryOptions,
    ) -> Result<Self, MetricsReportError> {
        let summary = summarize_predictions(predictions, options)
            .map_err(|source| MetricsReportError::Summary { file: file.to_string(), source })?;
        let selective = summarize_selective_predictions(predictions)
            .map_err(|source| MetricsReportError::Selective { file: file.to_string(), source })?;
        Ok(MetricsReport { summary, selective, class_names: predictions.class_names().to_vec() })
    }

    /// The terminal table: the metric set, the reliability diagram, then the selective set.
    pub fn table(&self) -> String {
        summary_table(&self.summary, &self.class_names) + &selective_table(&self.selective)
    }
}

fn defined(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

fn summary_table(s: &MetricSummary, class_names: &[String]) -> String {
    let mut out = String::new();
    // The task as serialised (serde's lowercase names).
    let task = match s.task {
        SummaryTask::Multiclass => "multiclass",
        SummaryTask::Binary => "binary",
        SummaryTask::Multilabel => "multilabel",
    };
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
        .zip(class_names)
        .filter(|(a, _)| a.is_none())
        .map(|(_, name)| name.as_str())
        .collect();
    if !undefined.is_empty() && s.auroc_per_class.len() == class_names.len() {
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

fn selective_table(s: &SelectiveSummary) -> String {
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
