//! "Not converged": adapted fits whose training curve (a run record's `training` field) says the
//! model did not learn the task, so its records must not be ranked as if it had.
//!
//! # Rule
//!
//! A fit (encoder, dataset, regime, probe, label fraction, seed — its records share one curve) is
//! **not converged** when either
//!
//! - its calibration-split macro AUROC at the selected epoch ends within [`CHANCE_MARGIN`] of chance
//!   (0.5) or below it: `AUROC <= 0.5 + CHANCE_MARGIN`; or
//! - its training loss did not fall: the selected epoch's train loss is not below epoch 0's (the
//!   initial weights' training-set loss). This rule is not applied to an LP-FT fit (`head_init =
//!   "probe"`), whose initial weights are already the fitted frozen probe: a loss that stays there
//!   means the fine-tuning did not improve on the probe, which its AUROC shows, not that it did not
//!   learn.
//!
//! Records without a curve (frozen probes, zero-shot, older records) are not judged.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::run_record::{Regime, RunRecord, TrainingCurve};

/// How close to chance (AUROC 0.5) a fit may end before it is flagged.
pub const CHANCE_MARGIN: f64 = 0.05;

/// One fit flagged as not converged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotConverged {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub label_fraction: f64,
    pub seed: u64,
    pub selected_epoch: usize,
    /// Calibration-split macro AUROC at the selected epoch.
    pub calibration_auroc: Option<f64>,
    /// Training loss at epoch 0 and at the selected epoch.
    pub initial_train_loss: f64,
    pub final_train_loss: f64,
    /// Why, in words.
    pub reasons: Vec<String>,
}

/// The convergence check over a run set (evaluation.json's `convergence`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConvergenceReport {
    /// Fits whose records carry a training curve.
    pub fits_with_curves: usize,
    /// The flagged fits, in (encoder, dataset, regime, probe, fraction, seed) order.
    pub not_converged: Vec<NotConverged>,
}

impl ConvergenceReport {
    /// Whether the fit of `record` is flagged.
    pub fn flags(&self, record: &RunRecord) -> bool {
        self.not_converged.iter().any(|n| {
            n.encoder == record.encoder
                && n.dataset == record.dataset
                && n.regime == record.regime
                && n.probe == record.probe
                && n.label_fraction == record.label_fraction
                && n.seed == record.seed
        })
    }
}

/// The evaluation note of a report with flagged fits: which, and that their ranks are not to be
/// read as the regime's.
pub fn note(report: &ConvergenceReport) -> String {
    let fits: Vec<String> = report
        .not_converged
        .iter()
        .map(|n| {
            format!(
                "{}/{}/{}/{} ρ={} seed={}",
                n.encoder, n.dataset, n.regime, n.probe, n.label_fraction, n.seed
            )
        })
        .collect();
    format!(
        "NOT CONVERGED: {} of {} adapted fits (training curves) did not converge — {}; their records are \
         still in the metric rows and rank comparisons, which therefore compare with an untrained model \
         for these encoders",
        report.not_converged.len(),
        report.fits_with_curves,
        fits.join(", ")
    )
}

/// Why `curve` is not converged (empty: it is).
pub fn reasons(curve: &TrainingCurve) -> Vec<String> {
    let mut out = Vec::new();
    let selected = curve.epochs.iter().find(|e| e.epoch == curve.selected_epoch).or(curve.epochs.last());
    let (Some(first), Some(sel)) = (curve.epochs.first(), selected) else {
        out.push("the training curve is empty".to_string());
        return out;
    };
    match sel.calibration_auroc {
        Some(a) if a <= 0.5 + CHANCE_MARGIN => out.push(format!(
            "calibration-split AUROC {a:.3} at epoch {} is within {CHANCE_MARGIN} of chance (0.5) or below it",
            sel.epoch
        )),
        _ => {}
    }
    // An LP-FT fit starts from the fitted frozen probe: its epoch-0 loss is already a trained model's,
    // so a loss that stays (or an early stop at epoch 0) means "no better than the probe", not "did
    // not learn"; only the AUROC rule applies to it.
    let probe_start = curve.head_init.as_deref() == Some("probe");
    if !probe_start && (sel.epoch == 0 || sel.train_loss >= first.train_loss) {
        out.push(format!(
            "the training loss did not fall ({:.4} at epoch 0, {:.4} at epoch {})",
            first.train_loss, sel.train_loss, sel.epoch
        ));
    }
    out
}

/// The convergence check of every fit with a curve in `records`.
pub fn check_convergence(records: &[RunRecord]) -> ConvergenceReport {
    type FitId = (String, String, Regime, String, u64, u64);
    let mut fits: BTreeMap<FitId, &RunRecord> = BTreeMap::new();
    for r in records.iter().filter(|r| r.training.is_some()) {
        let id = (
            r.encoder.clone(),
            r.dataset.clone(),
            r.regime,
            r.probe.clone(),
            r.label_fraction.to_bits(),
            r.seed,
        );
        fits.entry(id).or_insert(r);
    }
    let mut report = ConvergenceReport { fits_with_curves: fits.len(), not_converged: Vec::new() };
    for r in fits.values() {
        let curve = r.training.as_ref().expect("filtered on training");
        let why = reasons(curve);
        if why.is_empty() {
            continue;
        }
        let selected = curve.epochs.iter().find(|e| e.epoch == curve.selected_epoch).or(curve.epochs.last());
        report.not_converged.push(NotConverged {
            encoder: r.encoder.clone(),
            dataset: r.dataset.clone(),
            regime: r.regime,
            probe: r.probe.clone(),
            label_fraction: r.label_fraction,
            seed: r.seed,
            selected_epoch: curve.selected_epoch,
            calibration_auroc: selected.and_then(|e| e.calibration_auroc),
            initial_train_loss: curve.epochs.first().map_or(f64::NAN, |e| e.train_loss),
            final_train_loss: selected.map_or(f64::NAN, |e| e.train_loss),
            reasons: why,
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_record::{Condition, TrainingEpoch};

    fn epoch(epoch: usize, train_loss: f64, auroc: f64) -> TrainingEpoch {
        TrainingEpoch { epoch, train_loss, calibration_loss: train_loss, calibration_auroc: Some(auroc) }
    }

    fn record(seed: u64, calibrator: &str, curve: Option<TrainingCurve>) -> RunRecord {
        RunRecord {
            encoder: "e".into(),
            dataset: "d".into(),
            regime: Regime::Lora,
            probe: "ce".into(),
            calibrator: calibrator.into(),
            label_fraction: 1.0,
            seed,
            condition: Condition::Clean,
            metrics: BTreeMap::new(),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: curve,
        }
    }

    fn curve(epochs: Vec<TrainingEpoch>, selected_epoch: usize) -> TrainingCurve {
        TrainingCurve { epochs, selected_epoch, stopped_early: false, head_init: None }
    }

    #[test]
    fn a_fit_near_chance_or_whose_loss_did_not_fall_is_flagged_once() {
        let good = curve(vec![epoch(0, 1.1, 0.5), epoch(1, 0.6, 0.9), epoch(2, 0.4, 0.93)], 2);
        assert!(reasons(&good).is_empty());
        // 0.549 is within 0.05 of chance; the loss fell.
        let chance = curve(vec![epoch(0, 1.1, 0.5), epoch(1, 1.0, 0.549)], 1);
        assert_eq!(reasons(&chance).len(), 1);
        assert!(reasons(&chance)[0].contains("AUROC 0.549"));
        // Below chance counts too.
        assert_eq!(reasons(&curve(vec![epoch(0, 1.1, 0.5), epoch(1, 1.0, 0.30)], 1)).len(), 1);
        // Good AUROC but the loss rose.
        let rose = curve(vec![epoch(0, 0.5, 0.9), epoch(1, 0.7, 0.88)], 1);
        assert!(reasons(&rose)[0].contains("did not fall"));
        // An LP-FT fit (probe head) whose loss stays is judged by its AUROC alone.
        let lp_ft =
            |sel| TrainingCurve { head_init: Some("probe".into()), ..curve(rose.epochs.clone(), sel) };
        assert!(reasons(&lp_ft(1)).is_empty() && reasons(&lp_ft(0)).is_empty());
        let lp_ft_chance = TrainingCurve { head_init: Some("probe".into()), ..chance.clone() };
        assert_eq!(reasons(&lp_ft_chance).len(), 1);
        // Early stopping's selected epoch is judged, not the last one.
        let early = curve(vec![epoch(0, 1.1, 0.5), epoch(1, 0.6, 0.9), epoch(2, 1.2, 0.52)], 1);
        assert!(reasons(&early).is_empty());

        let records = vec![
            record(0, "none", Some(good.clone())),
            record(1, "none", Some(chance.clone())),
            record(1, "temperature", Some(chance)),
            record(2, "none", None),
        ];
        let report = check_convergence(&records);
        assert_eq!(report.fits_with_curves, 2);
        assert_eq!(report.not_converged.len(), 1, "one fit, however many records it has");
        assert_eq!(report.not_converged[0].seed, 1);
        assert!(report.flags(&records[2]) && !report.flags(&records[0]) && !report.flags(&records[3]));
    }
}
