//! What an evaluation's run set holds (`evaluation.json` `input`): record and metric-row counts, seeds,
//! encoders, datasets, regimes and metric names.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::metric_rows::SeedTable;
use crate::run_record::Regime;

/// What the run set holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSummary {
    pub records: usize,
    pub metric_rows: usize,
    pub seeds: Vec<u64>,
    pub encoders: Vec<String>,
    pub datasets: Vec<String>,
    pub regimes: Vec<Regime>,
    pub metrics: Vec<String>,
}

impl InputSummary {
    /// The summary of `records` run records (estimate records included) whose fits make up `table`;
    /// `with_estimates` lists regime `estimate` among the regimes.
    pub(crate) fn new(records: usize, table: &SeedTable, metric_rows: usize, with_estimates: bool) -> Self {
        let groups = table.groups();
        let mut regimes: BTreeSet<Regime> = groups.iter().map(|g| g.regime).collect();
        if with_estimates {
            regimes.insert(Regime::Estimate);
        }
        InputSummary {
            records,
            metric_rows,
            seeds: table.seeds().to_vec(),
            encoders: groups.iter().map(|g| g.encoder.clone()).collect::<BTreeSet<_>>().into_iter().collect(),
            datasets: groups.iter().map(|g| g.dataset.clone()).collect::<BTreeSet<_>>().into_iter().collect(),
            regimes: regimes.into_iter().collect(),
            metrics: table.metrics().to_vec(),
        }
    }
}
