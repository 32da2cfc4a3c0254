//! The evaluation's metric rows as owned records (`evaluation.json` `metric_rows`), which the encoder
//! analyses read.

use serde::Serialize;

use crate::metric_rows::MetricRows;
use crate::run_record::{Condition, Regime};

/// One metric row (seed aggregate), owned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRowRecord {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub condition: Condition,
    pub metric: String,
    pub mean: f64,
    /// Sample std (`n − 1`); `None` with fewer than 2 seeds.
    pub std: Option<f64>,
    pub n_seeds: usize,
}

impl MetricRowRecord {
    /// Every observed row of `rows`, in their order (group, then metric name).
    pub(crate) fn all(rows: &MetricRows) -> Vec<Self> {
        rows.iter()
            .map(|r| MetricRowRecord {
                encoder: r.key.encoder.clone(),
                dataset: r.key.dataset.clone(),
                regime: r.key.regime,
                probe: r.key.probe.clone(),
                calibrator: r.key.calibrator.clone(),
                label_fraction: r.key.label_fraction.get(),
                condition: r.key.condition.clone(),
                metric: r.metric.to_string(),
                mean: r.mean,
                std: r.std,
                n_seeds: r.n_seeds,
            })
            .collect()
    }
}
