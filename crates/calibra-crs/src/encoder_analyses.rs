//! Encoder analyses E1–E6 (spec §5.7; CRS-Bench §3.7) from metric rows (seed means of run records).
//!
//! Every analysis reads the metric rows of the evaluation's regime (default `frozen`); "clean full-label"
//! means condition `clean` and label fraction 1; "raw" means calibrator `none`; the **primary probe** of
//! a cell is its probe without a depth suffix (see E3) — a cell with several primary probes is reported
//! as ambiguous and left out. An analysis whose records are missing says so in `status` (`"not enough
//! records: …"`) and reports no rows; nothing is imputed.
//!
//! - **E1 specialist matched-domain gain**: for each declared specialist (encoder → matched datasets):
//!   `AUROC_in` = mean clean full-label raw AUROC over its matched datasets, `AUROC_out` = the same over
//!   its other datasets, `Δspec = AUROC_in − AUROC_out`; `CRS_in`, `CRS_out`, `Δood = CRS_in − CRS_out`
//!   from the per-domain CRS; `margin_in` = `AUROC_in` − the mean AUROC of the other encoders on the
//!   matched datasets.
//! - **E2 calibration repair**: for every calibrated metric row set (calibrator ≠ `none`, clean), the raw
//!   row set of the same encoder, dataset, probe and label fraction: ECE and Brier before/after,
//!   relative ECE reduction `(before − after)/before`, and `ΔAUROC = after − before`.
//! - **E3 feature depth**: probes named `NAME@DEPTH` (DEPTH in (0, 1], the fraction of encoder blocks
//!   whose features the probe reads: `linear@0.5` = the middle block); the plain `NAME` probe counts as
//!   depth 1. Per (encoder, dataset, NAME) with at least 2 depths: AUROC and ECE per depth, the best depth
//!   by AUROC and its gain over depth 1 (when depth 1 is observed).
//! - **E4 corruption-induced miscalibration**: per cell, for every perturbation × severity with both
//!   metrics: AUROC drop `A₀ − A_j` and ECE increase `ECE_j − ECE₀`; per cell their means; across cells
//!   the Pearson r and Spearman ρ of (mean AUROC drop, mean ECE increase) (at least 3 cells).
//! - **E5 prompting vs probing**: per (encoder, dataset, prompt) with zero-shot runs: clean zero-shot
//!   AUROC (and accuracy, `parse_coverage` when recorded) next to the encoder's frozen primary-probe
//!   AUROC on the same dataset, and their difference.
//! - **E6 label-fraction crossover**: against a declared reference encoder: per cell the AUROC at
//!   fractions 0.01 and 0.10, and the first fraction (ascending) at which the encoder's clean raw AUROC
//!   reaches the reference's AUROC at that same fraction (`None`: never, over the shared fractions).

mod analysis;
mod calibration_repair;
mod corruption;
mod feature_depth;
mod label_crossover;
mod prompting;
mod regime_rows;
mod specialist;

use std::collections::BTreeMap;

use serde::Serialize;

pub use analysis::Analysis;
pub use calibration_repair::CalibrationRepair;
pub use corruption::{CorruptionCorrelation, CorruptionMiscalibration, pearson_r};
pub use feature_depth::{FeatureDepth, probe_depth};
pub use label_crossover::LabelCrossover;
pub use prompting::PromptingVsProbing;
pub use specialist::SpecialistGain;

use crate::metric_row_record::MetricRowRecord;
use crate::per_domain::DomainCrs;
use crate::run_record::Regime;
use regime_rows::RegimeRows;

/// Declarations the analyses need beyond the run records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncoderAnalysisOptions {
    /// E1: specialist encoder → its matched datasets.
    pub specialists: BTreeMap<String, Vec<String>>,
    /// E6: the reference encoder of the crossover.
    pub crossover_reference: Option<String>,
}

/// E1–E6.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderAnalyses {
    pub regime: Regime,
    pub specialist: Analysis<SpecialistGain>,
    pub calibration_repair: Analysis<CalibrationRepair>,
    pub feature_depth: Analysis<FeatureDepth>,
    pub corruption_miscalibration: Analysis<CorruptionMiscalibration>,
    pub corruption_correlation: Option<CorruptionCorrelation>,
    pub prompting: Analysis<PromptingVsProbing>,
    pub label_crossover: Analysis<LabelCrossover>,
    /// Cells left out of every analysis (e.g. several primary probes).
    pub notes: Vec<String>,
}

/// Runs E1–E6 (see the module documentation). `disc` and `cal` are the discrimination and calibration
/// metric names of the evaluation (default `macro_auroc`, `ece`).
pub fn encoder_analyses(
    rows: &[MetricRowRecord],
    per_domain: &[DomainCrs],
    regime: Regime,
    disc: &str,
    cal: &str,
    options: &EncoderAnalysisOptions,
) -> EncoderAnalyses {
    let rows = RegimeRows::new(rows, regime, disc, cal);
    let (corruption_miscalibration, corruption_correlation) = corruption::corruption_miscalibration(&rows);
    EncoderAnalyses {
        regime,
        specialist: specialist::specialist(&rows, per_domain, &options.specialists),
        calibration_repair: calibration_repair::calibration_repair(&rows),
        feature_depth: feature_depth::feature_depth(&rows),
        corruption_miscalibration,
        corruption_correlation,
        prompting: prompting::prompting(&rows),
        label_crossover: label_crossover::label_crossover(&rows, options.crossover_reference.as_deref()),
        notes: rows.ambiguous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_record::Condition;

    #[allow(clippy::too_many_arguments)]
    fn row(
        e: &str,
        d: &str,
        regime: Regime,
        probe: &str,
        cal: &str,
        frac: f64,
        c: Condition,
        m: &str,
        v: f64,
    ) -> MetricRowRecord {
        MetricRowRecord {
            encoder: e.into(),
            dataset: d.into(),
            regime,
            probe: probe.into(),
            calibrator: cal.into(),
            label_fraction: frac,
            condition: c,
            metric: m.into(),
            mean: v,
            std: None,
            n_seeds: 1,
        }
    }

    fn clean(e: &str, d: &str, probe: &str, cal: &str, frac: f64, m: &str, v: f64) -> MetricRowRecord {
        row(e, d, Regime::Frozen, probe, cal, frac, Condition::Clean, m, v)
    }

    fn blur(sev: u32) -> Condition {
        Condition::Perturbation { perturbation: "blur".into(), severity: sev }
    }

    #[test]
    fn empty_input_reports_not_enough_records_everywhere() {
        let a = encoder_analyses(&[], &[], Regime::Frozen, "macro_auroc", "ece", &Default::default());
        for status in [
            &a.specialist.status,
            &a.calibration_repair.status,
            &a.feature_depth.status,
            &a.corruption_miscalibration.status,
            &a.prompting.status,
            &a.label_crossover.status,
        ] {
            assert!(status.as_ref().unwrap().starts_with("not enough records: "), "{status:?}");
        }
        assert!(a.corruption_correlation.is_none());
    }

    #[test]
    fn small_exact_cases() {
        let mut rows = Vec::new();
        // Values chosen as dyadic fractions so every difference below is exact.
        for (e, a_in, a_out) in [("spec", 0.875, 0.625), ("gen", 0.75, 0.75)] {
            rows.push(clean(e, "in", "lin", "none", 1.0, "macro_auroc", a_in));
            rows.push(clean(e, "out", "lin", "none", 1.0, "macro_auroc", a_out));
            rows.push(clean(e, "in", "lin", "none", 1.0, "ece", 0.125));
            rows.push(clean(e, "in", "lin", "temperature", 1.0, "ece", 0.03125));
            rows.push(clean(
                e,
                "in",
                "lin",
                "none",
                0.01,
                "macro_auroc",
                if e == "spec" { 0.5 } else { 0.625 },
            ));
            rows.push(clean(e, "in", "lin", "none", 0.1, "macro_auroc", 0.75));
        }
        rows.push(clean("spec", "in", "lin@0.5", "none", 1.0, "macro_auroc", 0.9375));
        rows.push(clean("spec", "in", "lin@0.5", "none", 1.0, "ece", 0.25));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(1), "macro_auroc", 0.75));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(1), "ece", 0.25));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(2), "macro_auroc", 0.625));
        rows.push(row("spec", "in", Regime::Frozen, "lin", "none", 1.0, blur(2), "ece", 0.5));
        let options = EncoderAnalysisOptions {
            specialists: BTreeMap::from([("spec".to_string(), vec!["in".to_string()])]),
            crossover_reference: Some("gen".into()),
        };
        let domains = vec![
            DomainCrs {
                dataset: "in".into(),
                scores: vec![("gen".into(), 0.25, 2), ("spec".into(), 0.75, 1)],
            },
            DomainCrs {
                dataset: "out".into(),
                scores: vec![("gen".into(), 0.5, 1), ("spec".into(), 0.5, 2)],
            },
        ];
        let a = encoder_analyses(&rows, &domains, Regime::Frozen, "macro_auroc", "ece", &options);
        let e1 = &a.specialist.rows[0];
        assert_eq!((e1.delta_spec, e1.delta_ood, e1.margin_in), (Some(0.25), Some(0.25), Some(0.125)));
        let e2 = &a.calibration_repair.rows;
        assert_eq!(e2.len(), 2);
        // (0.125 − 0.03125) / 0.125 = 0.75.
        assert_eq!(e2[0].ece_reduction, Some(0.75));
        let e3 = &a.feature_depth.rows[0];
        assert_eq!((e3.probe.as_str(), e3.best_depth, e3.gain_over_final), ("lin", Some(0.5), Some(0.0625)));
        let e4 = &a.corruption_miscalibration.rows[0];
        // Drops 0.125, 0.25 → 0.1875; ECE increases 0.125, 0.375 → 0.25.
        assert_eq!((e4.conditions, e4.mean_auroc_drop, e4.mean_ece_increase), (2, 0.1875, 0.25));
        // One cell: no correlation (NaN), but the analysis reports it.
        assert!(a.corruption_correlation.as_ref().unwrap().pearson_r.is_nan());
        // Crossover vs `gen` at the same fraction: 0.01 (0.5 < 0.625) no, 0.1 (0.75 ≥ 0.75) yes.
        let e6: Vec<_> = a.label_crossover.rows.iter().filter(|r| r.dataset == "in").collect();
        assert_eq!((e6[0].crossover_fraction, e6[0].auroc_at_1pct), (Some(0.1), Some(0.5)));
        assert!(a.prompting.status.is_some());
        assert_eq!(probe_depth("lin@0.5"), Some(("lin", 0.5)));
        assert_eq!(probe_depth("lin@1.5"), None);
    }
}
