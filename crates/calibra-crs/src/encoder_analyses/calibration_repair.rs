//! E2 calibration repair (see `crate::encoder_analyses`).

use serde::Serialize;

use super::analysis::Analysis;
use super::regime_rows::RegimeRows;
use crate::run_record::Condition;

/// E2 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRepair {
    pub encoder: String,
    pub dataset: String,
    pub probe: String,
    pub label_fraction: f64,
    pub calibrator: String,
    pub ece_before: Option<f64>,
    pub ece_after: Option<f64>,
    pub ece_reduction: Option<f64>,
    pub brier_before: Option<f64>,
    pub brier_after: Option<f64>,
    pub auroc_before: Option<f64>,
    pub auroc_after: Option<f64>,
    pub delta_auroc: Option<f64>,
}

/// E2 for every calibrated clean metric row set with its raw counterpart.
pub(crate) fn calibration_repair(rows: &RegimeRows) -> Analysis<CalibrationRepair> {
    let (regime, disc, cal) = (rows.regime, rows.disc, rows.cal);
    let clean = Condition::Clean;
    let mut e2 = Vec::new();
    for r in rows
        .rows
        .iter()
        .filter(|r| r.regime == regime && r.calibrator != "none" && r.condition == clean && r.metric == cal)
    {
        let get = |calibrator: &str, metric: &str| {
            rows.get(&r.encoder, &r.dataset, regime, &r.probe, calibrator, r.label_fraction, &clean, metric)
        };
        let (eb, ea) = (get("none", cal), get(&r.calibrator, cal));
        let (bb, ba) = (get("none", "brier"), get(&r.calibrator, "brier"));
        let (ab, aa) = (get("none", disc), get(&r.calibrator, disc));
        if eb.is_none() {
            continue;
        }
        e2.push(CalibrationRepair {
            encoder: r.encoder.clone(),
            dataset: r.dataset.clone(),
            probe: r.probe.clone(),
            label_fraction: r.label_fraction,
            calibrator: r.calibrator.clone(),
            ece_before: eb,
            ece_after: ea,
            ece_reduction: eb.zip(ea).filter(|(b, _)| *b > 0.0).map(|(b, a)| (b - a) / b),
            brier_before: bb,
            brier_after: ba,
            auroc_before: ab,
            auroc_after: aa,
            delta_auroc: ab.zip(aa).map(|(b, a)| a - b),
        });
    }
    Analysis::new(
        e2,
        || format!("no {regime} clean run with a post-hoc calibrator and its raw (`none`) counterpart"),
        Vec::new(),
    )
}
