//! k-nearest-neighbour probe (sklearn `KNeighborsClassifier(n_neighbors=5)`: uniform weights,
//! Euclidean distance).
//!
//! `predict_proba(x)_c = #{j ∈ N_k(x) : y_j = c} / k`, N_k(x) the k training rows nearest to x.
//! Distances are exact `Σ_j (x_j − t_j)²` (no `‖x‖² − 2x·t + ‖t‖²` shortcut). **Ties**: rows are
//! ranked by (squared distance, training row index), so among equally distant rows the one that comes
//! first in the training data wins. sklearn does not define its tie order (its docs warn that the
//! result "depends on the ordering of the training data"; brute force and kd-tree can disagree), so
//! parity with sklearn holds whenever the k-th and (k+1)-th distances differ.
//!
//! Multilabel: for label l the neighbours are the k nearest rows *where l is observed*, and the
//! probability is the fraction of them that are positive (one-vs-rest, blanks masked).

use crate::error::ProbeError;
use crate::features::Features;
use crate::targets::Targets;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Settings of [`KnnClassifier`]. Default `k = 5`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KnnOptions {
    pub k: usize,
}

impl Default for KnnOptions {
    fn default() -> Self {
        KnnOptions { k: 5 }
    }
}

/// The stored training targets of a [`KnnClassifier`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum KnnTargets {
    Classes { labels: Vec<usize>, n_classes: usize },
    Labels { labels: Vec<Option<bool>>, n_labels: usize },
}

/// A fitted k-NN probe: the (standardised) training rows and their targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnnClassifier {
    pub k: usize,
    pub cols: usize,
    /// Row-major training features.
    pub train: Vec<f64>,
    pub targets: KnnTargets,
}

/// Probability floor used by [`KnnClassifier::predict_logits`] (k-NN gives exact zeros).
pub const KNN_PROBABILITY_FLOOR: f64 = 1e-12;

impl KnnClassifier {
    /// Store the training set. Errors when `k = 0` or when fewer than k rows are available (for
    /// multilabel: fewer than k observed rows for some label) — sklearn raises "Expected n_neighbors
    /// <= n_samples_fit".
    pub fn fit(
        features: Features<'_>,
        targets: Targets<'_>,
        options: &KnnOptions,
    ) -> Result<KnnClassifier, ProbeError> {
        targets.validate(features.rows())?;
        let k = options.k;
        if k == 0 {
            return Err(ProbeError::InvalidOptions("k must be ≥ 1".into()));
        }
        let stored = match targets {
            Targets::Classes { labels, n_classes } => {
                if features.rows() < k {
                    return Err(ProbeError::InvalidOptions(format!(
                        "k = {k} neighbours but only {} training rows",
                        features.rows()
                    )));
                }
                KnnTargets::Classes { labels: labels.to_vec(), n_classes }
            }
            Targets::Labels { labels, n_labels } => {
                for l in 0..n_labels {
                    let observed = labels.iter().skip(l).step_by(n_labels).filter(|v| v.is_some()).count();
                    if observed < k {
                        return Err(ProbeError::InvalidOptions(format!(
                            "k = {k} neighbours but label {l} is observed on only {observed} rows"
                        )));
                    }
                }
                KnnTargets::Labels { labels: labels.to_vec(), n_labels }
            }
        };
        Ok(KnnClassifier { k, cols: features.cols(), train: features.values().to_vec(), targets: stored })
    }

    /// Number of `predict_proba` columns.
    pub fn outputs(&self) -> usize {
        match &self.targets {
            KnnTargets::Classes { n_classes, .. } => *n_classes,
            KnnTargets::Labels { n_labels, .. } => *n_labels,
        }
    }

    /// Training rows ordered by (squared distance to `x`, index); only the first `take` when given.
    fn ranked(&self, x: &[f64], take: Option<usize>) -> Vec<usize> {
        let d2: Vec<f64> = self
            .train
            .chunks_exact(self.cols)
            .map(|t| t.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum())
            .collect();
        let mut idx: Vec<usize> = (0..d2.len()).collect();
        let cmp = |a: &usize, b: &usize| d2[*a].total_cmp(&d2[*b]).then(a.cmp(b));
        match take {
            Some(k) if k < idx.len() => {
                idx.select_nth_unstable_by(k - 1, cmp);
                idx.truncate(k);
                idx.sort_unstable_by(cmp);
            }
            _ => idx.sort_unstable_by(cmp),
        }
        idx
    }

    /// Neighbour frequencies, row-major `rows × outputs` (parallel over query rows; each row is
    /// computed independently, so the result does not depend on the thread count).
    pub fn predict_proba(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        features.expect_cols(self.cols)?;
        let out = self.outputs();
        let rows: Vec<Vec<f64>> = (0..features.rows())
            .into_par_iter()
            .map(|i| {
                let x = features.row(i);
                let mut p = vec![0.0; out];
                match &self.targets {
                    KnnTargets::Classes { labels, .. } => {
                        for j in self.ranked(x, Some(self.k)) {
                            p[labels[j]] += 1.0;
                        }
                        p.iter_mut().for_each(|v| *v /= self.k as f64);
                    }
                    KnnTargets::Labels { labels, n_labels } => {
                        let order = self.ranked(x, None);
                        for (l, pl) in p.iter_mut().enumerate() {
                            let mut seen = 0;
                            let mut pos = 0;
                            for &j in &order {
                                if let Some(v) = labels[j * n_labels + l] {
                                    seen += 1;
                                    pos += usize::from(v);
                                    if seen == self.k {
                                        break;
                                    }
                                }
                            }
                            *pl = pos as f64 / self.k as f64;
                        }
                    }
                }
                p
            })
            .collect();
        Ok(rows.concat())
    }

    /// Logits for the predictions file: classes → `ln(max(p, 1e-12))` (log-probabilities; a class with
    /// no neighbour gets ln 1e-12 ≈ −27.6); labels → `logit(clamp(p, 1e-12, 1 − 1e-12))`.
    pub fn predict_logits(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        let p = self.predict_proba(features)?;
        let f = KNN_PROBABILITY_FLOOR;
        Ok(match self.targets {
            KnnTargets::Classes { .. } => p.into_iter().map(|v| v.max(f).ln()).collect(),
            KnnTargets::Labels { .. } => p
                .into_iter()
                .map(|v| {
                    let v = v.clamp(f, 1.0 - f);
                    (v / (1.0 - v)).ln()
                })
                .collect(),
        })
    }
}
