//! Subgroup and quality-stratum gaps of one run (spec §6; FOCUS §H–J): a metric per group and the gap
//! `max − min` across the groups that are large enough.
//!
//! For a run's test samples split by one group column ([`crate::group_columns`]) and a metric `M`:
//!
//! - every group `g` with `n_g ≥ min_group_size` gets `M(g)` (the metric on its samples); a smaller
//!   group is **reported as skipped** with its size (never dropped silently), and a group where `M` is
//!   undefined (an AUROC with one class) is reported with no value;
//! - `gap = max_g M(g) − min_g M(g)` over the groups with a value, defined when at least 2 groups have
//!   one (for two strata this is FOCUS's absolute metric gap `|M(a) − M(b)|`); `max_group`/`min_group`
//!   name the groups reaching the extremes (first in group order on ties).
//!
//! The gap is descriptive (FOCUS: not a causal fairness estimate) and always ≥ 0 whatever the metric's
//! orientation.

use serde::Serialize;

use crate::group_columns::GroupAssignment;
use crate::sample_metrics::{SampleMetric, SampleTable};

/// The default minimum group size.
pub const DEFAULT_MIN_GROUP_SIZE: usize = 30;

/// One group's metric value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupValue {
    pub group: String,
    /// Samples in the group.
    pub n: usize,
    /// The metric on the group; `None` when skipped or undefined.
    pub value: Option<f64>,
    /// `Some(reason)` when the group did not enter the gap.
    pub skipped: Option<String>,
}

/// One metric's values per group and its gap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricGap {
    pub metric: SampleMetric,
    pub groups: Vec<GroupValue>,
    /// `max − min` over groups with a value; `None` with fewer than 2 such groups.
    pub gap: Option<f64>,
    pub max_group: Option<String>,
    pub min_group: Option<String>,
}

/// Metric values per group and the gaps, for every metric in `metrics`.
pub fn metric_gaps(
    table: &SampleTable,
    assignment: &GroupAssignment,
    metrics: &[SampleMetric],
    min_group_size: usize,
    n_bins: usize,
) -> Vec<MetricGap> {
    metrics
        .iter()
        .map(|&metric| {
            let groups: Vec<GroupValue> = assignment
                .groups
                .iter()
                .zip(&assignment.rows)
                .map(|(group, rows)| {
                    let n = rows.len();
                    if n < min_group_size {
                        return GroupValue {
                            group: group.clone(),
                            n,
                            value: None,
                            skipped: Some(format!("{n} samples < minimum group size {min_group_size}")),
                        };
                    }
                    let value = table.metric(metric, rows, n_bins);
                    GroupValue {
                        group: group.clone(),
                        n,
                        value,
                        skipped: value.is_none().then(|| format!("{metric} undefined on this group")),
                    }
                })
                .collect();
            let mut max: Option<(f64, &str)> = None;
            let mut min: Option<(f64, &str)> = None;
            let mut with_value = 0;
            for g in &groups {
                if let Some(v) = g.value {
                    with_value += 1;
                    if max.is_none_or(|(m, _)| v > m) {
                        max = Some((v, &g.group));
                    }
                    if min.is_none_or(|(m, _)| v < m) {
                        min = Some((v, &g.group));
                    }
                }
            }
            let (gap, max_group, min_group) = match (max, min) {
                (Some((hi, hg)), Some((lo, lg))) if with_value >= 2 => {
                    (Some(hi - lo), Some(hg.to_string()), Some(lg.to_string()))
                }
                _ => (None, None, None),
            };
            MetricGap { metric, groups, gap, max_group, min_group }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample_metrics::SampleTargets;

    /// 6 samples: group A rows 0..3 all correct, group B rows 3..6 one wrong, group C row 6 alone.
    fn setup() -> (SampleTable, GroupAssignment) {
        let p1 = [0.9, 0.8, 0.2, 0.7, 0.3, 0.6, 0.9];
        let labels = vec![1, 1, 0, 1, 0, 0, 1];
        let probs = p1.iter().flat_map(|&p| [1.0 - p, p]).collect();
        let ids = (0..7).map(|i| i.to_string()).collect();
        let table = SampleTable::new(ids, 2, probs, SampleTargets::Classes(labels));
        let assignment = GroupAssignment {
            groups: vec!["A".into(), "B".into(), "C".into()],
            rows: vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]],
            missing: 0,
            cuts: vec![],
        };
        (table, assignment)
    }

    #[test]
    fn gap_is_max_minus_min_and_small_groups_are_reported() {
        let (table, a) = setup();
        let gaps = metric_gaps(&table, &a, &[SampleMetric::Accuracy], 2, 15);
        let g = &gaps[0];
        // Exact: A 3/3, B 2/3 (row 5 predicts 1, label 0), C skipped (1 sample < 2).
        assert_eq!(g.groups[0].value, Some(1.0));
        assert_eq!(g.groups[1].value, Some(2.0 / 3.0));
        assert_eq!((g.groups[2].value, g.groups[2].n), (None, 1));
        assert!(g.groups[2].skipped.as_ref().unwrap().contains("minimum group size 2"));
        assert_eq!(g.gap, Some(1.0 - 2.0 / 3.0));
        assert_eq!((g.max_group.as_deref(), g.min_group.as_deref()), (Some("A"), Some("B")));
    }

    #[test]
    fn undefined_group_metric_is_reported_not_counted() {
        let (table, a) = setup();
        // Within A: labels 1, 1, 0 → AUROC defined (1.0); within B: 1, 0, 0 → 0.7 vs 0.3, 0.6 → 1.0.
        let gaps = metric_gaps(&table, &a, &[SampleMetric::MacroAuroc], 1, 15);
        assert_eq!(gaps[0].groups[2].value, None); // C: one class only.
        assert!(gaps[0].groups[2].skipped.as_ref().unwrap().contains("undefined"));
        assert_eq!(gaps[0].gap, Some(0.0));
        // Fewer than 2 groups with a value (every group below 4 samples): no gap.
        let gaps = metric_gaps(&table, &a, &[SampleMetric::Accuracy], 4, 15);
        assert_eq!(gaps[0].gap, None);
    }
}
