//! The metric rows the encoder analyses read: seed means indexed by run key, and each cell's primary
//! probe in the evaluation's regime (its probe without a depth suffix; a cell with several is ambiguous
//! and left out).

use std::collections::{BTreeMap, BTreeSet};

use crate::metric_row_record::MetricRowRecord;
use crate::run_record::{Condition, Regime};

type Key<'a> = (&'a str, &'a str, Regime, &'a str, &'a str, u64, &'a Condition, &'a str);

/// The metric rows of one evaluation, for the analyses of one regime.
pub(crate) struct RegimeRows<'a> {
    pub rows: &'a [MetricRowRecord],
    /// The analysed regime.
    pub regime: Regime,
    /// Discrimination and calibration metric names.
    pub disc: &'a str,
    pub cal: &'a str,
    /// Metric-row means by key.
    index: BTreeMap<Key<'a>, f64>,
    /// The primary probe per (encoder, dataset) of the regime.
    pub primary: BTreeMap<(&'a str, &'a str), &'a str>,
    /// Cells left out of every analysis (several primary probes).
    pub ambiguous: Vec<String>,
}

impl<'a> RegimeRows<'a> {
    pub(crate) fn new(rows: &'a [MetricRowRecord], regime: Regime, disc: &'a str, cal: &'a str) -> Self {
        let index = rows
            .iter()
            .map(|r| {
                (
                    (
                        r.encoder.as_str(),
                        r.dataset.as_str(),
                        r.regime,
                        r.probe.as_str(),
                        r.calibrator.as_str(),
                        r.label_fraction.to_bits(),
                        &r.condition,
                        r.metric.as_str(),
                    ),
                    r.mean,
                )
            })
            .collect();
        // Primary probe per (encoder, dataset) in the regime: probes without a depth suffix.
        let mut probes: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.regime == regime && !r.probe.contains('@')) {
            probes.entry((r.encoder.as_str(), r.dataset.as_str())).or_default().insert(r.probe.as_str());
        }
        let mut ambiguous = Vec::new();
        let primary: BTreeMap<(&str, &str), &str> = probes
            .iter()
            .filter_map(|(&(e, d), set)| {
                if set.len() == 1 {
                    Some(((e, d), *set.iter().next()?))
                } else {
                    ambiguous.push(format!(
                        "{e}/{d}: several probes ({}) without a depth suffix; cell left out",
                        set.iter().copied().collect::<Vec<_>>().join(", ")
                    ));
                    None
                }
            })
            .collect();
        RegimeRows { rows, regime, disc, cal, index, primary, ambiguous }
    }

    /// The seed mean of one metric of one run key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn get(
        &self,
        e: &str,
        d: &str,
        regime: Regime,
        probe: &str,
        cal: &str,
        frac: f64,
        cond: &Condition,
        metric: &str,
    ) -> Option<f64> {
        self.index.get(&(e, d, regime, probe, cal, frac.to_bits(), cond, metric)).copied()
    }

    /// `metric` of the cell's primary probe: clean, full-label, raw (calibrator `none`).
    pub(crate) fn clean_full(&self, e: &str, d: &str, metric: &str) -> Option<f64> {
        let probe = self.primary.get(&(e, d))?;
        self.get(e, d, self.regime, probe, "none", 1.0, &Condition::Clean, metric)
    }
}
