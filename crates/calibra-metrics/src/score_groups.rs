//! Scores split by class and sorted, walked as groups of tied scores: the shared core of AUROC,
//! average precision and the ROC curve (one sort per class, buffers reusable across classes).

use crate::rank::rankdata::{order_key, value_of_key};

/// A `u64` whose unsigned order is the DESCENDING numeric order of the scores (`-0.0` ties `0.0`).
fn descending_key(score: f64) -> u64 {
    !order_key(score)
}

/// Inverse of [`descending_key`].
fn score_of(key: u64) -> f64 {
    value_of_key(!key)
}

/// Positive and negative scores, each sorted in decreasing order (as integer keys, which sort about
/// twice as fast as `(f64, bool)` pairs compared with `total_cmp`).
#[derive(Debug, Default)]
pub(crate) struct ScoreGroups {
    positives: Vec<u64>,
    negatives: Vec<u64>,
    nan_positives: u64,
    nan_negatives: u64,
}

/// One distinct score and how many positives and negatives have it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Group {
    pub score: f64,
    pub positives: u64,
    pub negatives: u64,
}

impl ScoreGroups {
    /// Groups `(score, is_positive)` items; see [`ScoreGroups::fill`].
    pub(crate) fn from_items(items: impl IntoIterator<Item = (f64, bool)>) -> Self {
        let mut groups = ScoreGroups::default();
        groups.fill(items);
        groups
    }

    /// Replaces the content with `items`, keeping the allocated buffers. A NaN score is counted
    /// ([`ScoreGroups::has_nan`]) but left out of the groups.
    pub(crate) fn fill(&mut self, items: impl IntoIterator<Item = (f64, bool)>) {
        self.positives.clear();
        self.negatives.clear();
        (self.nan_positives, self.nan_negatives) = (0, 0);
        for (score, positive) in items {
            if score.is_nan() {
                *(if positive { &mut self.nan_positives } else { &mut self.nan_negatives }) += 1;
            } else if positive {
                self.positives.push(descending_key(score));
            } else {
                self.negatives.push(descending_key(score));
            }
        }
        self.positives.sort_unstable();
        self.negatives.sort_unstable();
    }

    /// Whether any score was NaN.
    pub(crate) fn has_nan(&self) -> bool {
        self.nan_positives + self.nan_negatives > 0
    }

    /// Number of positives, including those whose score is NaN.
    pub(crate) fn positives(&self) -> u64 {
        self.positives.len() as u64 + self.nan_positives
    }

    /// Number of negatives, including those whose score is NaN.
    pub(crate) fn negatives(&self) -> u64 {
        self.negatives.len() as u64 + self.nan_negatives
    }

    /// Every non-NaN score above `threshold` in increasing order, with whether it belongs to a
    /// positive: a merge of the two sorted lists, O(n) without a new sort. `-0.0` comes back as `0.0`.
    pub(crate) fn ascending_above(&self, threshold: f64) -> (Vec<f64>, Vec<bool>) {
        let (pos, neg) = (&self.positives[..], &self.negatives[..]);
        let mut values = Vec::with_capacity(pos.len() + neg.len());
        let mut positive = Vec::with_capacity(pos.len() + neg.len());
        // Keys increase as scores decrease: walk both lists from their ends.
        let (mut i, mut j) = (pos.len(), neg.len());
        while i > 0 || j > 0 {
            let take_positive = j == 0 || (i > 0 && pos[i - 1] >= neg[j - 1]);
            let key = if take_positive {
                i -= 1;
                pos[i]
            } else {
                j -= 1;
                neg[j]
            };
            let v = score_of(key);
            if v > threshold {
                values.push(v);
                positive.push(take_positive);
            }
        }
        (values, positive)
    }

    /// The distinct scores in decreasing order, each with its positive and negative counts.
    pub(crate) fn descending(&self) -> impl Iterator<Item = Group> + '_ {
        let (pos, neg) = (&self.positives[..], &self.negatives[..]);
        let (mut i, mut j) = (0, 0);
        std::iter::from_fn(move || {
            let key = match (pos.get(i), neg.get(j)) {
                (Some(&p), Some(&n)) => p.min(n),
                (Some(&p), None) => p,
                (None, Some(&n)) => n,
                (None, None) => return None,
            };
            let (i0, j0) = (i, j);
            while i < pos.len() && pos[i] == key {
                i += 1;
            }
            while j < neg.len() && neg[j] == key {
                j += 1;
            }
            Some(Group { score: score_of(key), positives: (i - i0) as u64, negatives: (j - j0) as u64 })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_descending_and_invert() {
        let values = [f64::INFINITY, 3.5, 1e-300, 0.0, -1e-300, -2.0, f64::NEG_INFINITY];
        let keys: Vec<u64> = values.iter().map(|&v| descending_key(v)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        for (&v, &k) in values.iter().zip(&keys) {
            assert_eq!(score_of(k).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn groups_merge_both_classes() {
        let g = ScoreGroups::from_items([
            (0.5, true),
            (0.9, false),
            (0.5, false),
            (-0.0, true),
            (f64::NAN, true),
        ]);
        assert!(g.has_nan());
        assert_eq!((g.positives(), g.negatives()), (3, 2));
        let groups: Vec<Group> = g.descending().collect();
        assert_eq!(
            groups,
            vec![
                Group { score: 0.9, positives: 0, negatives: 1 },
                Group { score: 0.5, positives: 1, negatives: 1 },
                Group { score: 0.0, positives: 1, negatives: 0 },
            ]
        );
    }
}
