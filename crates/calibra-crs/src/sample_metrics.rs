//! Per-sample metric evaluation on a subset of a run's test samples: the metrics the FOCUS additions
//! compare between groups, strata and paired bootstrap replicates.
//!
//! A [`SampleTable`] is one run's predictions (probabilities and targets, by sample id). Its metrics are
//! evaluated on any multiset of row indices (a subgroup, a quality stratum, a bootstrap resample with
//! repeated rows), with the definitions of the run-record metrics (`calibra metrics`):
//!
//! | metric | single-label (`label`, K classes) | multilabel (`label_<name>`, blanks masked) |
//! |---|---|---|
//! | `macro_auroc` | macro one-vs-rest AUROC, strict (K = 2: column 1); undefined if a class lacks a positive or a negative | mean over labels of the binary AUROC where defined |
//! | `ece` | top-label ECE, `n_bins` equal-width right-closed bins | mean over labels of the positive-class ECE |
//! | `brier` | K = 2: `mean (p₁ − y)²`; K ≥ 3: `mean Σ_k (p_k − 1[y=k])²` | mean over labels of the binary Brier |
//! | `accuracy` | top-1 (argmax ties → lowest index) | fraction of observed cells with `1[p ≥ 0.5] = y` |
//!
//! Undefined values (an AUROC with one class present, an empty subset) are `None`, never a number.
//!
//! [`SampleTable::metric`] materialises the selected rows and calls the calibra-metrics functions: the
//! definition, used for subgroups and strata. Bootstrap replicates use [`ResampledMetrics`] (module
//! `resampled`), which gives the same values bit for bit without re-sorting or re-validating per
//! resample.

mod resampled;

pub use resampled::{Resample, ResampledMetrics};

use calibra_metrics::{
    Binning, UndefinedPolicy, accuracy, brier_binary, brier_multiclass, ece_binary_positive, ece_top_label,
    macro_auroc_ovr, multilabel_macro_auroc,
};
use calibra_predictions::{Predictions, Targets};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A metric compared across groups and between paired runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleMetric {
    /// Macro one-vs-rest AUROC (larger is better).
    MacroAuroc,
    /// Expected calibration error (lower is better).
    Ece,
    /// Brier score (lower is better).
    Brier,
    /// Top-1 accuracy (larger is better).
    Accuracy,
}

impl SampleMetric {
    /// Every metric, in report order.
    pub const ALL: [SampleMetric; 4] =
        [SampleMetric::MacroAuroc, SampleMetric::Ece, SampleMetric::Brier, SampleMetric::Accuracy];

    /// The run-record name of the metric.
    pub fn name(self) -> &'static str {
        match self {
            SampleMetric::MacroAuroc => "macro_auroc",
            SampleMetric::Ece => "ece",
            SampleMetric::Brier => "brier",
            SampleMetric::Accuracy => "accuracy",
        }
    }

    /// Whether a larger value is better (AUROC, accuracy) or worse (ECE, Brier).
    pub fn larger_is_better(self) -> bool {
        matches!(self, SampleMetric::MacroAuroc | SampleMetric::Accuracy)
    }

    /// Parses a run-record metric name.
    pub fn from_name(name: &str) -> Option<Self> {
        SampleMetric::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for SampleMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Targets of a [`SampleTable`].
#[derive(Debug, Clone, PartialEq)]
pub enum SampleTargets {
    /// One class index per row.
    Classes(Vec<usize>),
    /// Row-major `n × L` labels, `None` = masked.
    Labels(Vec<Option<bool>>),
}

/// The targets of one row of a [`SampleTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowTargets<'a> {
    Class(usize),
    Labels(&'a [Option<bool>]),
}

/// One run's test predictions as probabilities, by sample id.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleTable {
    ids: Vec<String>,
    k: usize,
    probs: Vec<f64>,
    targets: SampleTargets,
}

impl SampleTable {
    /// From a validated predictions file (logits are turned into probabilities).
    pub fn from_predictions(p: &Predictions) -> Self {
        let targets = match p.targets() {
            Targets::Classes(c) => SampleTargets::Classes(c.clone()),
            Targets::Labels(l) => SampleTargets::Labels(l.clone()),
        };
        SampleTable { ids: p.ids().to_vec(), k: p.num_classes(), probs: p.probabilities(), targets }
    }

    /// From parts; `probs` is row-major `n × k` and `targets` must have `n` rows (`n × k` for labels).
    ///
    /// # Panics
    /// On inconsistent shapes.
    pub fn new(ids: Vec<String>, k: usize, probs: Vec<f64>, targets: SampleTargets) -> Self {
        assert!(k > 0 && probs.len() == ids.len() * k, "probabilities must be n × k");
        match &targets {
            SampleTargets::Classes(c) => assert_eq!(c.len(), ids.len(), "one class per row"),
            SampleTargets::Labels(l) => assert_eq!(l.len(), probs.len(), "labels must be n × k"),
        }
        SampleTable { ids, k, probs, targets }
    }

    /// Sample ids in row order.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of score columns.
    pub fn num_classes(&self) -> usize {
        self.k
    }

    /// The targets of row `i`: its class, or its labels (`None` = masked).
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn targets_of(&self, i: usize) -> RowTargets<'_> {
        match &self.targets {
            SampleTargets::Classes(c) => RowTargets::Class(c[i]),
            SampleTargets::Labels(l) => RowTargets::Labels(&l[i * self.k..(i + 1) * self.k]),
        }
    }

    /// The same table with its rows reordered: row `i` of the result is row `order[i]` of `self`.
    pub fn reordered(&self, order: &[usize]) -> SampleTable {
        let k = self.k;
        let ids = order.iter().map(|&i| self.ids[i].clone()).collect();
        let probs = order.iter().flat_map(|&i| self.probs[i * k..(i + 1) * k].iter().copied()).collect();
        let targets = match &self.targets {
            SampleTargets::Classes(c) => SampleTargets::Classes(order.iter().map(|&i| c[i]).collect()),
            SampleTargets::Labels(l) => SampleTargets::Labels(
                order.iter().flat_map(|&i| l[i * k..(i + 1) * k].iter().copied()).collect(),
            ),
        };
        SampleTable { ids, k, probs, targets }
    }

    /// `metric` on the rows `rows` (a multiset: repeated indices count repeatedly); `None` when undefined
    /// (no rows, an AUROC without both classes, no observed multilabel cell).
    ///
    /// # Panics
    /// If a row index is out of range or `n_bins == 0`.
    pub fn metric(&self, metric: SampleMetric, rows: &[usize], n_bins: usize) -> Option<f64> {
        if rows.is_empty() {
            return None;
        }
        let k = self.k;
        let value = match &self.targets {
            SampleTargets::Classes(classes) => {
                let probs: Vec<f64> =
                    rows.iter().flat_map(|&i| self.probs[i * k..(i + 1) * k].iter().copied()).collect();
                let labels: Vec<usize> = rows.iter().map(|&i| classes[i]).collect();
                match metric {
                    SampleMetric::MacroAuroc => {
                        macro_auroc_ovr(&probs, k, &labels, UndefinedPolicy::Strict).ok()?.mean
                    }
                    SampleMetric::Ece => {
                        ece_top_label(&probs, k, &labels, n_bins, Binning::RightClosed).ok()?
                    }
                    SampleMetric::Brier if k == 2 => {
                        let pos: Vec<f64> = probs.chunks_exact(2).map(|r| r[1]).collect();
                        let y: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
                        brier_binary(&pos, &y)
                    }
                    SampleMetric::Brier => brier_multiclass(&probs, k, &labels).ok()?,
                    SampleMetric::Accuracy => accuracy(&probs, k, &labels).ok()?,
                }
            }
            SampleTargets::Labels(labels) => {
                let scores: Vec<f64> =
                    rows.iter().flat_map(|&i| self.probs[i * k..(i + 1) * k].iter().copied()).collect();
                let targets: Vec<Option<bool>> =
                    rows.iter().flat_map(|&i| labels[i * k..(i + 1) * k].iter().copied()).collect();
                match metric {
                    SampleMetric::MacroAuroc => {
                        multilabel_macro_auroc(&scores, k, &targets, UndefinedPolicy::SkipUndefined).mean
                    }
                    SampleMetric::Accuracy => {
                        let (hits, cells) =
                            scores.iter().zip(&targets).fold((0usize, 0usize), |(h, c), (&p, t)| match t {
                                Some(t) => (h + usize::from((p >= 0.5) == *t), c + 1),
                                None => (h, c),
                            });
                        if cells == 0 { f64::NAN } else { hits as f64 / cells as f64 }
                    }
                    SampleMetric::Ece | SampleMetric::Brier => {
                        let per_label: Vec<f64> = (0..k)
                            .filter_map(|j| {
                                let (p, y): (Vec<f64>, Vec<bool>) = scores
                                    .iter()
                                    .zip(&targets)
                                    .skip(j)
                                    .step_by(k)
                                    .filter_map(|(&p, t)| t.map(|t| (p, t)))
                                    .unzip();
                                if p.is_empty() {
                                    return None;
                                }
                                Some(if metric == SampleMetric::Ece {
                                    ece_binary_positive(&p, &y, n_bins, Binning::RightClosed)
                                } else {
                                    brier_binary(&p, &y)
                                })
                            })
                            .collect();
                        if per_label.is_empty() {
                            f64::NAN
                        } else {
                            per_label.iter().sum::<f64>() / per_label.len() as f64
                        }
                    }
                }
            }
        };
        value.is_finite().then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary() -> SampleTable {
        // Exact by construction: positives score 0.9, 0.6; negatives 0.2, 0.7.
        let p1 = [0.9, 0.6, 0.2, 0.7];
        let probs = p1.iter().flat_map(|&p| [1.0 - p, p]).collect();
        SampleTable::new(
            ["a", "b", "c", "d"].map(String::from).to_vec(),
            2,
            probs,
            SampleTargets::Classes(vec![1, 1, 0, 0]),
        )
    }

    #[test]
    fn exact_small_case() {
        let t = binary();
        let all = [0, 1, 2, 3];
        // Pairs (pos, neg): (0.9,0.2) (0.9,0.7) (0.6,0.2) win, (0.6,0.7) loses → 3/4.
        assert_eq!(t.metric(SampleMetric::MacroAuroc, &all, 15), Some(0.75));
        // Argmax: 1, 1, 0, 1 → 3 of 4 correct.
        assert_eq!(t.metric(SampleMetric::Accuracy, &all, 15), Some(0.75));
        // Brier (binary form): (0.01 + 0.16 + 0.04 + 0.49) / 4 = 0.175.
        assert!((t.metric(SampleMetric::Brier, &all, 15).unwrap() - 0.175).abs() < 1e-15);
        // One class only: AUROC undefined; empty subset: everything undefined.
        assert_eq!(t.metric(SampleMetric::MacroAuroc, &[0, 1], 15), None);
        assert_eq!(t.metric(SampleMetric::Ece, &[], 15), None);
    }

    #[test]
    fn repeated_rows_count_repeatedly() {
        let t = binary();
        // Row 3 (a wrong prediction) twice: 3 of 5 correct.
        assert_eq!(t.metric(SampleMetric::Accuracy, &[0, 1, 2, 3, 3], 15), Some(0.6));
    }

    #[test]
    fn reordering_keeps_rows_together() {
        let t = binary();
        let r = t.reordered(&[3, 2, 1, 0]);
        assert_eq!(r.ids()[0], "d");
        for m in SampleMetric::ALL {
            assert_eq!(r.metric(m, &[0, 1, 2, 3], 15), t.metric(m, &[0, 1, 2, 3], 15));
        }
    }

    #[test]
    fn multilabel_masks_blank_cells() {
        // Label 0: observed on rows 0, 1 (pos 0.8, neg 0.3); label 1 observed on rows 0, 2.
        let probs = vec![0.8, 0.4, 0.3, 0.9, 0.1, 0.6];
        let labels = vec![Some(true), Some(false), Some(false), None, None, Some(true)];
        let t = SampleTable::new(
            vec!["a".into(), "b".into(), "c".into()],
            2,
            probs,
            SampleTargets::Labels(labels),
        );
        // Both labels perfectly separated on their observed rows.
        assert_eq!(t.metric(SampleMetric::MacroAuroc, &[0, 1, 2], 15), Some(1.0));
        // Cells: (0.8,T) ok, (0.4,F) ok, (0.3,F) ok, (0.6,T) ok → 1.
        assert_eq!(t.metric(SampleMetric::Accuracy, &[0, 1, 2], 15), Some(1.0));
        // Brier: label 0 (0.04 + 0.09)/2, label 1 (0.16 + 0.16)/2 → mean 0.1125.
        assert!((t.metric(SampleMetric::Brier, &[0, 1, 2], 15).unwrap() - 0.1125).abs() < 1e-15);
    }
}
