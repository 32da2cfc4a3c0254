//! E3 feature depth (see `crate::encoder_analyses`): probes named `NAME@DEPTH`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::analysis::Analysis;
use super::regime_rows::RegimeRows;
use crate::run_record::Condition;

/// E3 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeatureDepth {
    pub encoder: String,
    pub dataset: String,
    pub probe: String,
    /// `(depth, AUROC, ECE)` by ascending depth.
    pub depths: Vec<(f64, Option<f64>, Option<f64>)>,
    pub best_depth: Option<f64>,
    /// Best AUROC − AUROC at depth 1.
    pub gain_over_final: Option<f64>,
}

/// Splits `NAME@DEPTH` into `(NAME, DEPTH)`; a plain name is depth 1. `None` for a malformed depth.
pub fn probe_depth(probe: &str) -> Option<(&str, f64)> {
    match probe.rsplit_once('@') {
        None => Some((probe, 1.0)),
        Some((name, d)) => {
            let d: f64 = d.parse().ok()?;
            (d > 0.0 && d <= 1.0 && !name.is_empty()).then_some((name, d))
        }
    }
}

/// E3 for every (encoder, dataset, probe name) with clean full-label raw runs at 2 or more depths.
pub(crate) fn feature_depth(rows: &RegimeRows) -> Analysis<FeatureDepth> {
    let (regime, disc, cal) = (rows.regime, rows.disc, rows.cal);
    let clean = Condition::Clean;
    // (encoder, dataset, probe name) → depth bits → (depth, full probe name).
    type DepthSets<'a> = BTreeMap<(&'a str, &'a str, &'a str), BTreeMap<u64, (f64, &'a str)>>;
    let mut depth_sets: DepthSets = BTreeMap::new();
    let mut e3_notes = Vec::new();
    for r in rows.rows.iter().filter(|r| r.regime == regime && r.calibrator == "none" && r.condition == clean)
    {
        if r.label_fraction != 1.0 || r.metric != disc {
            continue;
        }
        match probe_depth(&r.probe) {
            Some((name, d)) => {
                depth_sets
                    .entry((r.encoder.as_str(), r.dataset.as_str(), name))
                    .or_default()
                    .insert(d.to_bits(), (d, r.probe.as_str()));
            }
            None => e3_notes
                .push(format!("{}/{}: probe `{}` has a malformed depth", r.encoder, r.dataset, r.probe)),
        }
    }
    let mut e3 = Vec::new();
    for ((e, d, name), depths) in depth_sets {
        if depths.len() < 2 {
            continue;
        }
        let mut list: Vec<(f64, Option<f64>, Option<f64>)> = depths
            .values()
            .map(|&(depth, probe)| {
                let g = |m| rows.get(e, d, regime, probe, "none", 1.0, &clean, m);
                (depth, g(disc), g(cal))
            })
            .collect();
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        let best =
            list.iter().filter_map(|&(dp, a, _)| Some((dp, a?))).fold(None, |acc: Option<(f64, f64)>, x| {
                match acc {
                    Some(b) if b.1 >= x.1 => Some(b),
                    _ => Some(x),
                }
            });
        let last = list.iter().find(|x| x.0 == 1.0).and_then(|x| x.1);
        e3.push(FeatureDepth {
            encoder: e.to_string(),
            dataset: d.to_string(),
            probe: name.to_string(),
            best_depth: best.map(|b| b.0),
            gain_over_final: best.zip(last).map(|(b, l)| b.1 - l),
            depths: list,
        });
    }
    Analysis::new(
        e3,
        || "no cell with probes at 2 or more depths (probe names `NAME@DEPTH`, e.g. `linear@0.5`)".into(),
        e3_notes,
    )
}
