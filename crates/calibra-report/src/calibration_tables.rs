//! `calibra calibrate --report`: the before/after table of a calibrator (ECE, adaptive ECE, Brier,
//! NLL, accuracy, macro AUROC and the change in AUROC — CRS-Bench's E2 table) and the coverage and
//! size table of conformal prediction sets, with the fit summary lines printed for the sets.

use calibra_calibrate::{Method, SetReport};
use calibra_metrics::{Binning, MetricSummary, MetricsError, SummaryOptions};
use calibra_predictions::Predictions;
use serde::Serialize;
use std::fmt::Write;

use crate::metrics_report::summarize_predictions;
use crate::text_cell::cell;

/// One row of the before/after table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportRow {
    pub metric: &'static str,
    pub before: Option<f64>,
    pub after: Option<f64>,
}

/// The `--report` document of a calibrator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    pub method: Method,
    pub samples: usize,
    pub rows: Vec<ReportRow>,
    /// macro AUROC after − before.
    pub delta_auroc: Option<f64>,
}

impl CalibrationReport {
    /// The metrics of `before` and `after` (ECE with `bins` right-closed equal-width bins).
    pub fn of(
        method: Method,
        before: &Predictions,
        after: &Predictions,
        bins: usize,
    ) -> Result<Self, MetricsError> {
        let summary = |p: &Predictions| -> Result<MetricSummary, MetricsError> {
            let options = SummaryOptions { n_bins: bins, binning: Binning::RightClosed, ordinal: false };
            summarize_predictions(p, &options)
        };
        let (b, a) = (summary(before)?, summary(after)?);
        let rows = vec![
            ReportRow { metric: "ECE", before: b.ece, after: a.ece },
            ReportRow { metric: "adaptive ECE", before: b.adaptive_ece, after: a.adaptive_ece },
            ReportRow { metric: "Brier", before: b.brier, after: a.brier },
            ReportRow { metric: "NLL", before: b.nll, after: a.nll },
            ReportRow { metric: "accuracy", before: b.accuracy, after: a.accuracy },
            ReportRow { metric: "macro AUROC", before: b.macro_auroc, after: a.macro_auroc },
        ];
        let delta_auroc = a.macro_auroc.zip(b.macro_auroc).map(|(x, y)| x - y);
        Ok(CalibrationReport { method, samples: before.len(), rows, delta_auroc })
    }

    /// The terminal table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} calibration, {} samples", self.method, self.samples);
        let _ = writeln!(out, "{:<14} {:>12} {:>12} {:>12}", "metric", "before", "after", "change");
        for row in &self.rows {
            let change = row.after.zip(row.before).map(|(a, b)| a - b);
            let _ = writeln!(
                out,
                "{:<14} {:>12} {:>12} {:>12}",
                row.metric,
                cell(row.before),
                cell(row.after),
                change.map_or("n/a".to_string(), |c| format!("{c:+.6}"))
            );
        }
        let _ =
            writeln!(out, "ΔAUROC {}", self.delta_auroc.map_or("n/a".to_string(), |d| format!("{d:+.6}")));
        out
    }
}

/// The lines that summarise fitted sets: `q̂` per label (multilabel), then the fit's coverage and
/// mean set size.
pub fn set_fit_lines(r: &SetReport) -> Vec<String> {
    let mut lines = Vec::new();
    if r.quantiles.len() > 1 {
        for ((label, _), q) in r.class_coverage.iter().zip(&r.quantiles) {
            lines.push(format!("label `{label}`: q̂ = {q}"));
        }
    }
    lines.push(format!(
        "fitted {} sets (α = {}) on {} calibration samples; coverage {} with mean set size {}",
        r.method,
        r.alpha,
        r.calibration_samples,
        cell(Some(r.coverage)),
        cell(Some(r.mean_set_size))
    ));
    lines
}

/// The terminal table of conformal sets: coverage against its target, set size, empty sets, and
/// the coverage per class (multilabel: per label).
pub fn set_table(r: &SetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} prediction sets, α = {}, {} calibration samples, {} test samples",
        r.method, r.alpha, r.calibration_samples, r.samples
    );
    let _ = writeln!(out, "{:<26}{:>12}", "coverage", cell(Some(r.coverage)));
    let _ = writeln!(out, "{:<26}{:>12}", "target coverage (1 − α)", cell(Some(1.0 - r.alpha)));
    let _ = writeln!(out, "{:<26}{:>12}", "mean set size", cell(Some(r.mean_set_size)));
    let _ = writeln!(out, "{:<26}{:>12}", "empty sets", cell(Some(r.empty_fraction)));
    let _ = writeln!(out, "\nclass-conditional coverage");
    for (name, c) in &r.class_coverage {
        let _ = writeln!(out, "{name:<26}{:>12}", cell(*c));
    }
    out
}
