//! Metric rows: seed aggregates of every metric per (cell, regime, probe, calibrator, condition, label
//! fraction) — spec §1.
//!
//! A [`SeedTable`] holds the per-seed values of a [`RunRecordSet`] densely: groups (the run key without
//! the seed, sorted) × metrics (sorted by name) × seeds (the sorted union of all seeds in the set), with
//! `NaN` where a run or a metric is absent. [`SeedTable::rows`] aggregates it into [`MetricRows`];
//! [`SeedTable::weighted_means_into`] is the same mean under seed multiplicities, which is what one
//! paired-seed bootstrap replicate needs (`crate::bootstrap`).
//!
//! # Aggregates
//! For a group with values `v_1 … v_n` over its `n` observed seeds:
//! - `mean = (1/n) Σ v_i`;
//! - `std` is the **sample** standard deviation `sqrt(Σ (v_i − mean)² / (n − 1))` (numpy `ddof=1`), and
//!   `None` when `n < 2`. Justification: the seeds are a sample of the training randomness (split
//!   subsampling, probe initialisation), and the std reported next to a seed mean is meant to estimate
//!   the run-to-run spread of that randomness, not to describe the five particular seeds; the population
//!   form (ddof = 0) is biased low by a factor `sqrt((n−1)/n)` (≈ 0.89 for the protocol's 5 seeds).
//! - A seed whose run lacks a metric does not count for that metric (`n` is per metric).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::run_record::{GroupKey, RunRecordSet};

/// Per-seed metric values of a run-record set, laid out `[group][metric][seed]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedTable {
    seeds: Vec<u64>,
    groups: Vec<GroupKey>,
    metrics: Vec<String>,
    values: Vec<f64>,
}

impl SeedTable {
    /// Lays out a record set. Run keys are unique in a [`RunRecordSet`], so every slot is written at
    /// most once (no run is double counted).
    pub fn from_records(set: &RunRecordSet) -> Self {
        let seeds: Vec<u64> =
            set.records().iter().map(|r| r.key.seed).collect::<BTreeSet<_>>().into_iter().collect();
        let groups: Vec<GroupKey> =
            set.records().iter().map(|r| r.key.group.clone()).collect::<BTreeSet<_>>().into_iter().collect();
        let metrics: Vec<String> = set
            .records()
            .iter()
            .flat_map(|r| r.record.metrics.keys().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let (ns, nm) = (seeds.len(), metrics.len());
        let mut values = vec![f64::NAN; groups.len() * nm * ns];
        for r in set.records() {
            let g = groups.binary_search(&r.key.group).expect("group collected above");
            let s = seeds.binary_search(&r.key.seed).expect("seed collected above");
            for (name, &value) in &r.record.metrics {
                let m = metrics.binary_search(name).expect("metric collected above");
                values[(g * nm + m) * ns + s] = value;
            }
        }
        SeedTable { seeds, groups, metrics, values }
    }

    /// The sorted union of seeds; bootstrap draws index into this list.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// The sorted group keys.
    pub fn groups(&self) -> &[GroupKey] {
        &self.groups
    }

    /// The sorted metric names.
    pub fn metrics(&self) -> &[String] {
        &self.metrics
    }

    /// The value of `metric` index `m` of group `g` at seed index `s` (`NaN` = not observed).
    pub fn value(&self, g: usize, m: usize, s: usize) -> f64 {
        self.values[(g * self.metrics.len() + m) * self.seeds.len() + s]
    }

    /// Seed means, sample stds and counts: the metric rows.
    pub fn rows(&self) -> MetricRows {
        let ns = self.seeds.len();
        let cells = self.groups.len() * self.metrics.len();
        let mut mean = Vec::with_capacity(cells);
        let mut std = Vec::with_capacity(cells);
        let mut count = Vec::with_capacity(cells);
        for slot in self.values.chunks(ns.max(1)).take(cells) {
            let observed: Vec<f64> = slot.iter().copied().filter(|v| !v.is_nan()).collect();
            let n = observed.len();
            let m = if n == 0 { f64::NAN } else { observed.iter().sum::<f64>() / n as f64 };
            let s = if n < 2 {
                f64::NAN
            } else {
                (observed.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64).sqrt()
            };
            mean.push(m);
            std.push(s);
            count.push(n);
        }
        MetricRows { groups: self.groups.clone(), metrics: self.metrics.clone(), mean, std, count }
    }

    /// Seed means under seed multiplicities `weights` (one count per entry of [`SeedTable::seeds`]):
    /// `Σ_s w_s v_s / Σ_s w_s` over the seeds observed for that group and metric, `NaN` when no drawn
    /// seed was observed. Writes `[group][metric]` into `out` (resized). With all weights 1 this is
    /// [`MetricRows::means`].
    ///
    /// # Panics
    /// If `weights.len()` differs from the number of seeds.
    pub fn weighted_means_into(&self, weights: &[u32], out: &mut Vec<f64>) {
        let all: Vec<usize> = (0..self.metrics.len()).collect();
        self.weighted_means_of_into(weights, &all, out);
    }

    /// [`SeedTable::weighted_means_into`] restricted to the metric indices `metrics` (the others are
    /// written as `NaN`): the bootstrap only needs the metrics its axes read.
    ///
    /// # Panics
    /// If `weights.len()` differs from the number of seeds or a metric index is out of range.
    pub fn weighted_means_of_into(&self, weights: &[u32], metrics: &[usize], out: &mut Vec<f64>) {
        let nm = self.metrics.len();
        assert!(metrics.iter().all(|&m| m < nm), "metric index out of range");
        let slots: Vec<usize> =
            (0..self.groups.len()).flat_map(|g| metrics.iter().map(move |&m| g * nm + m)).collect();
        self.weighted_means_at_into(weights, &slots, out);
    }

    /// [`SeedTable::weighted_means_into`] restricted to the `[group][metric]` slots `slots`
    /// (`g · metrics + m`; the others are written as `NaN`): the bootstrap computes only the slots its
    /// axis plan reads (`crate::axes::AxisPlan::metric_slots`). Each computed slot is bit-identical to
    /// [`SeedTable::weighted_means_into`]'s.
    ///
    /// # Panics
    /// If `weights.len()` differs from the number of seeds or a slot is out of range.
    pub fn weighted_means_at_into(&self, weights: &[u32], slots: &[usize], out: &mut Vec<f64>) {
        assert_eq!(weights.len(), self.seeds.len(), "one weight per seed");
        let ns = self.seeds.len();
        out.clear();
        out.resize(self.groups.len() * self.metrics.len(), f64::NAN);
        // The drawn seeds (weight > 0) in seed order: the sums below visit exactly these, in the same
        // order as a scan over every seed that skips the undrawn ones.
        let drawn: Vec<(usize, u32)> = weights.iter().copied().enumerate().filter(|&(_, w)| w > 0).collect();
        for &i in slots {
            let slot = &self.values[i * ns..(i + 1) * ns];
            let (mut sum, mut total) = (0.0, 0u64);
            for &(s, w) in &drawn {
                let v = slot[s];
                if !v.is_nan() {
                    sum += f64::from(w) * v;
                    total += u64::from(w);
                }
            }
            out[i] = if total == 0 { f64::NAN } else { sum / total as f64 };
        }
    }
}

/// The metric rows of a run-record set: per group and metric, the seed mean, sample std and count.
/// Dense layout `[group][metric]`; a `(group, metric)` with no observed seed has `n_seeds = 0`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRows {
    groups: Vec<GroupKey>,
    metrics: Vec<String>,
    mean: Vec<f64>,
    std: Vec<f64>,
    count: Vec<usize>,
}

/// One metric row (see the module docs for the aggregate definitions).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRow<'a> {
    #[serde(flatten)]
    pub key: &'a GroupKey,
    pub metric: &'a str,
    pub mean: f64,
    /// Sample std (ddof = 1); `None` with fewer than two seeds.
    pub std: Option<f64>,
    pub n_seeds: usize,
}

impl MetricRows {
    /// The sorted group keys.
    pub fn groups(&self) -> &[GroupKey] {
        &self.groups
    }

    /// The sorted metric names.
    pub fn metrics(&self) -> &[String] {
        &self.metrics
    }

    /// Seed means laid out `[group][metric]` (`NaN` = unobserved); the input of `crate::axes::AxisPlan`.
    pub fn means(&self) -> &[f64] {
        &self.mean
    }

    /// The row of `metric` for `group`, if that metric was observed for that group.
    pub fn get(&self, group: &GroupKey, metric: &str) -> Option<MetricRow<'_>> {
        let g = self.groups.binary_search(group).ok()?;
        let m = self.metrics.binary_search_by(|x| x.as_str().cmp(metric)).ok()?;
        self.row(g, m)
    }

    fn row(&self, g: usize, m: usize) -> Option<MetricRow<'_>> {
        let i = g * self.metrics.len() + m;
        (self.count[i] > 0).then(|| MetricRow {
            key: &self.groups[g],
            metric: &self.metrics[m],
            mean: self.mean[i],
            std: (self.count[i] >= 2).then_some(self.std[i]),
            n_seeds: self.count[i],
        })
    }

    /// Every observed row, ordered by group then metric name.
    pub fn iter(&self) -> impl Iterator<Item = MetricRow<'_>> + '_ {
        (0..self.groups.len()).flat_map(move |g| (0..self.metrics.len()).filter_map(move |m| self.row(g, m)))
    }

    /// Number of observed rows (group × metric pairs with at least one seed).
    pub fn len(&self) -> usize {
        self.count.iter().filter(|&&n| n > 0).count()
    }

    /// Whether no row was observed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_record::{Condition, Regime, RunRecord};
    use std::collections::BTreeMap;

    fn record(seed: u64, auroc: Option<f64>, ece: f64) -> RunRecord {
        let mut metrics = BTreeMap::from([("ece".to_string(), ece)]);
        if let Some(a) = auroc {
            metrics.insert("macro_auroc".to_string(), a);
        }
        RunRecord {
            encoder: "E".into(),
            dataset: "D".into(),
            regime: Regime::Frozen,
            probe: "linear".into(),
            calibrator: "none".into(),
            label_fraction: 1.0,
            seed,
            condition: Condition::Clean,
            metrics,
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    fn table() -> SeedTable {
        // Values chosen as dyadic rationals so the means below are exact by construction.
        let set = RunRecordSet::from_records(
            vec![record(0, Some(0.5), 0.25), record(1, Some(0.75), 0.125), record(2, None, 0.125)],
            "mem",
        )
        .unwrap();
        SeedTable::from_records(&set)
    }

    #[test]
    fn mean_std_and_counts_per_metric() {
        let rows = table().rows();
        let group = rows.groups()[0].clone();
        let auroc = rows.get(&group, "macro_auroc").unwrap();
        assert_eq!(auroc.n_seeds, 2);
        assert_eq!(auroc.mean, 0.625);
        // sample std of {0.5, 0.75}: sqrt(2 · 0.125² / 1) = 0.125·√2.
        assert!((auroc.std.unwrap() - 0.125 * 2f64.sqrt()).abs() < 1e-15);
        let ece = rows.get(&group, "ece").unwrap();
        assert_eq!(ece.n_seeds, 3);
        assert_eq!(ece.mean, 0.5 / 3.0);
        assert!(rows.get(&group, "brier").is_none());
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn unit_weights_reproduce_point_means_and_zero_weights_drop_seeds() {
        let t = table();
        let mut out = Vec::new();
        t.weighted_means_into(&[1, 1, 1], &mut out);
        assert_eq!(out, t.rows().means());
        // Only seed 2 drawn (twice): AUROC unobserved there → NaN; ECE = 0.125.
        t.weighted_means_into(&[0, 0, 2], &mut out);
        let m_auroc = t.metrics().iter().position(|m| m == "macro_auroc").unwrap();
        let m_ece = t.metrics().iter().position(|m| m == "ece").unwrap();
        assert!(out[m_auroc].is_nan());
        assert_eq!(out[m_ece], 0.125);
        // Seed 0 drawn three times, seed 1 once: (3·0.5 + 0.75) / 4.
        t.weighted_means_into(&[3, 1, 0], &mut out);
        assert_eq!(out[m_auroc], 0.5625);
    }

    #[test]
    fn a_single_seed_has_no_std() {
        let set = RunRecordSet::from_records(vec![record(7, Some(0.5), 0.25)], "mem").unwrap();
        let rows = SeedTable::from_records(&set).rows();
        assert!(rows.iter().all(|r| r.std.is_none() && r.n_seeds == 1));
    }
}
