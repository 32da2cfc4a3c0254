//! E5 prompting vs probing (see `crate::encoder_analyses`).

use std::collections::BTreeSet;

use serde::Serialize;

use super::analysis::Analysis;
use super::regime_rows::RegimeRows;
use crate::run_record::{Condition, Regime};

/// E5 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptingVsProbing {
    pub encoder: String,
    pub dataset: String,
    pub prompt: String,
    pub zero_shot_auroc: Option<f64>,
    pub zero_shot_accuracy: Option<f64>,
    pub parse_coverage: Option<f64>,
    pub probe_auroc: Option<f64>,
    /// Zero-shot − probe AUROC.
    pub delta_auroc: Option<f64>,
}

/// E5 for every (encoder, dataset, prompt) with clean raw zero-shot runs.
pub(crate) fn prompting(rows: &RegimeRows) -> Analysis<PromptingVsProbing> {
    let (regime, disc) = (rows.regime, rows.disc);
    let clean = Condition::Clean;
    let mut e5 = Vec::new();
    let zs: BTreeSet<(&str, &str, &str)> = rows
        .rows
        .iter()
        .filter(|r| r.regime == Regime::ZeroShot && r.condition == clean && r.calibrator == "none")
        .map(|r| (r.encoder.as_str(), r.dataset.as_str(), r.probe.as_str()))
        .collect();
    for (e, d, prompt) in zs {
        let g = |m| rows.get(e, d, Regime::ZeroShot, prompt, "none", 1.0, &clean, m);
        let zero_shot_auroc = g(disc);
        let probe_auroc = rows
            .primary
            .get(&(e, d))
            .and_then(|p| rows.get(e, d, Regime::Frozen, p, "none", 1.0, &clean, disc));
        e5.push(PromptingVsProbing {
            encoder: e.to_string(),
            dataset: d.to_string(),
            prompt: prompt.to_string(),
            zero_shot_auroc,
            zero_shot_accuracy: g("accuracy"),
            parse_coverage: g("parse_coverage"),
            probe_auroc: if regime == Regime::Frozen { probe_auroc } else { None },
            delta_auroc: zero_shot_auroc
                .zip(probe_auroc)
                .filter(|_| regime == Regime::Frozen)
                .map(|(z, p)| z - p),
        });
    }
    Analysis::new(e5, || "no zero-shot (prompted) clean run".into(), Vec::new())
}
