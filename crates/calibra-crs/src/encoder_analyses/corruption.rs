//! E4 corruption-induced miscalibration (see `crate::encoder_analyses`).

use std::collections::BTreeSet;

use calibra_metrics::spearman_rho;
use serde::Serialize;

use super::analysis::{Analysis, mean};
use super::regime_rows::RegimeRows;
use crate::run_record::Condition;

/// E4 row (one cell).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorruptionMiscalibration {
    pub encoder: String,
    pub dataset: String,
    pub conditions: usize,
    pub mean_auroc_drop: f64,
    pub mean_ece_increase: f64,
    pub max_ece_increase: f64,
}

/// E4 across cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorruptionCorrelation {
    pub cells: usize,
    /// NaN (JSON null) with fewer than 3 cells or a constant series.
    pub pearson_r: f64,
    pub spearman_rho: f64,
}

/// Pearson correlation; NaN with fewer than 3 pairs or a constant series.
pub fn pearson_r(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    if n < 3 || n != y.len() {
        return f64::NAN;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 { f64::NAN } else { sxy / (sxx * syy).sqrt() }
}

/// E4 per cell of a primary probe, and the correlation across cells.
pub(crate) fn corruption_miscalibration(
    rows: &RegimeRows,
) -> (Analysis<CorruptionMiscalibration>, Option<CorruptionCorrelation>) {
    let (regime, disc, cal) = (rows.regime, rows.disc, rows.cal);
    let clean = Condition::Clean;
    let mut e4 = Vec::new();
    for (&(e, d), &probe) in &rows.primary {
        let (Some(a0), Some(c0)) = (
            rows.get(e, d, regime, probe, "none", 1.0, &clean, disc),
            rows.get(e, d, regime, probe, "none", 1.0, &clean, cal),
        ) else {
            continue;
        };
        let conds: BTreeSet<&Condition> = rows
            .rows
            .iter()
            .filter(|r| {
                r.encoder == e
                    && r.dataset == d
                    && r.regime == regime
                    && r.probe == probe
                    && r.calibrator == "none"
                    && r.label_fraction == 1.0
                    && matches!(r.condition, Condition::Perturbation { .. })
            })
            .map(|r| &r.condition)
            .collect();
        let (mut drops, mut rises) = (Vec::new(), Vec::new());
        for c in conds {
            if let (Some(a), Some(ce)) = (
                rows.get(e, d, regime, probe, "none", 1.0, c, disc),
                rows.get(e, d, regime, probe, "none", 1.0, c, cal),
            ) {
                drops.push(a0 - a);
                rises.push(ce - c0);
            }
        }
        if drops.is_empty() {
            continue;
        }
        e4.push(CorruptionMiscalibration {
            encoder: e.to_string(),
            dataset: d.to_string(),
            conditions: drops.len(),
            mean_auroc_drop: mean(&drops).unwrap_or(f64::NAN),
            mean_ece_increase: mean(&rises).unwrap_or(f64::NAN),
            max_ece_increase: rises.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        });
    }
    let correlation = (!e4.is_empty()).then(|| {
        let x: Vec<f64> = e4.iter().map(|c| c.mean_auroc_drop).collect();
        let y: Vec<f64> = e4.iter().map(|c| c.mean_ece_increase).collect();
        CorruptionCorrelation {
            cells: x.len(),
            pearson_r: pearson_r(&x, &y),
            spearman_rho: if x.len() >= 3 { spearman_rho(&x, &y) } else { f64::NAN },
        }
    });
    let analysis = Analysis::new(
        e4,
        || format!("no {regime} cell with clean and perturbed runs carrying both `{disc}` and `{cal}`"),
        Vec::new(),
    );
    (analysis, correlation)
}
