//! Average precision, sklearn's step (non-interpolated, not trapezoidal) definition (spec §C10):
//! binary, one-vs-rest macro, and multilabel macro with masked entries.

use crate::MetricsError;
use crate::auroc::{MacroAverage, UndefinedPolicy, one_vs_rest, per_label, validate_ovr};
use crate::score_groups::ScoreGroups;

/// Neumaier-compensated running sum (keeps long AP sums accurate to about one rounding).
#[derive(Default)]
struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    fn add(&mut self, v: f64) {
        let t = self.sum + v;
        if self.sum.abs() >= v.abs() {
            self.compensation += (self.sum - t) + v;
        } else {
            self.compensation += (v - t) + self.sum;
        }
        self.sum = t;
    }

    fn value(&self) -> f64 {
        self.sum + self.compensation
    }
}

/// AP from tie groups (see [`average_precision`]).
pub(crate) fn average_precision_of_groups(groups: &ScoreGroups) -> f64 {
    let positives = groups.positives();
    if positives + groups.negatives() == 0 || groups.has_nan() {
        return f64::NAN;
    }
    if positives == 0 {
        return 0.0;
    }
    // Each distinct score, in decreasing order, is one threshold (ties enter together).
    let p = positives as f64;
    let (mut tp, mut fp) = (0u64, 0u64);
    let mut previous_recall = 0.0;
    let mut ap = CompensatedSum::default();
    for g in groups.descending() {
        tp += g.positives;
        fp += g.negatives;
        if g.positives > 0 {
            let recall = tp as f64 / p;
            let precision = tp as f64 / (tp + fp) as f64;
            ap.add((recall - previous_recall) * precision);
            previous_recall = recall;
        }
    }
    ap.value().max(0.0)
}

/// Average precision (spec §C10) = sklearn `average_precision_score(targets, scores)`:
///
/// `AP = Σ_n (R_n − R_{n−1}) · P_n`, over the distinct score thresholds in decreasing order (tied
/// scores form one threshold), `P_n = TP_n / (TP_n + FP_n)`, `R_n = TP_n / n₊`, `R_0 = 0`.
///
/// This is the step integral of the precision–recall curve, NOT the trapezoidal area.
///
/// Edge cases: no positives → 0.0 (sklearn, which warns "No positive class found in y_true"); no
/// negatives → 1.0; no samples → NaN; any NaN score → NaN.
///
/// # Panics
/// If `scores` and `targets` differ in length.
pub fn average_precision(scores: &[f64], targets: &[bool]) -> f64 {
    assert_eq!(scores.len(), targets.len(), "average precision needs one target per score");
    average_precision_of_groups(&ScoreGroups::from_items(scores.iter().copied().zip(targets.iter().copied())))
}

/// AP is defined (not sklearn's 0.0 fallback) when there is at least one positive.
pub(crate) fn ap_defined(pos: u64, _neg: u64) -> bool {
    pos > 0
}

/// Macro one-vs-rest average precision = sklearn `average_precision_score(label_binarize(labels,
/// classes=range(k)), probs, average="macro")`: the unweighted mean over classes `c` of the AP of column
/// `c` against `label == c`.
///
/// `k == 2` is binary mode: the AP of column 1 against `label == 1` (sklearn's
/// `average_precision_score(labels, probs[:, 1])`), and `per_class` has that single entry.
/// A class with no positives (absent from `labels`) has AP 0.0 as in sklearn and is "undefined":
/// [`UndefinedPolicy::Strict`] keeps its 0.0 in the mean (sklearn parity),
/// [`UndefinedPolicy::SkipUndefined`] averages over the classes present only.
///
/// # Errors
/// No rows; rows not probabilities (finite, in [0, 1], summing to 1 within 1e-6); labels not one per
/// row in `0..k`.
pub fn macro_average_precision_ovr(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    policy: UndefinedPolicy,
) -> Result<MacroAverage, MetricsError> {
    validate_ovr(probs, k, labels)?;
    Ok(one_vs_rest(probs, k, labels, policy, average_precision_of_groups, ap_defined))
}

/// Multilabel macro average precision = sklearn `average_precision_score(Y, S, average="macro")`,
/// with masking: `scores` and `targets` are row-major `n × l`; label column `j` uses the rows whose
/// target is `Some(_)`. A label with no positives among its kept entries has AP 0.0 (sklearn) and is
/// undefined for `policy` as in [`macro_average_precision_ovr`]; a label with no kept entry at all
/// is NaN (and undefined); a NaN score among the kept entries makes that label NaN.
///
/// # Panics
/// If `l == 0`, `scores.len()` is not a multiple of `l`, or `targets.len() != scores.len()`.
pub fn multilabel_macro_average_precision(
    scores: &[f64],
    l: usize,
    targets: &[Option<bool>],
    policy: UndefinedPolicy,
) -> MacroAverage {
    per_label(scores, l, targets, policy, average_precision_of_groups, ap_defined)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// sklearn's construction spelled out: precision/recall at every distinct threshold (sorted
    /// descending, O(n²) by recounting), then the step sum.
    fn reference_ap(scores: &[f64], targets: &[bool]) -> f64 {
        let p = targets.iter().filter(|&&t| t).count() as f64;
        let mut thresholds: Vec<f64> = scores.to_vec();
        thresholds.sort_by(|a, b| b.total_cmp(a));
        thresholds.dedup();
        let (mut ap, mut prev_recall) = (0.0, 0.0);
        for th in thresholds {
            let tp = scores.iter().zip(targets).filter(|(s, t)| **s >= th && **t).count() as f64;
            let fp = scores.iter().zip(targets).filter(|(s, t)| **s >= th && !**t).count() as f64;
            let recall = tp / p;
            ap += (recall - prev_recall) * tp / (tp + fp);
            prev_recall = recall;
        }
        ap
    }

    #[test]
    fn exact_cases() {
        // Exact by construction: positives ranked first → 1.
        let t = [true, false, true, false];
        assert_eq!(average_precision(&[0.9, 0.1, 0.8, 0.2], &t), 1.0);
        // Ranking P N P N with distinct scores: ½ · 1 + ½ · 2/3 = 5/6.
        assert!((average_precision(&[0.9, 0.8, 0.7, 0.6], &t) - 5.0 / 6.0).abs() <= 1e-15);
        // All tied: one threshold, recall 1 at precision = prevalence (½).
        assert_eq!(average_precision(&[0.5; 4], &t), 0.5);
        assert_eq!(average_precision(&[0.1, 0.2], &[false, false]), 0.0);
        assert_eq!(average_precision(&[0.1, 0.2], &[true, true]), 1.0);
        assert!(average_precision(&[], &[]).is_nan());
        assert!(average_precision(&[f64::NAN, 0.2], &[true, false]).is_nan());
    }

    #[test]
    #[should_panic(expected = "one target per score")]
    fn length_mismatch_panics() {
        average_precision(&[0.1], &[]);
    }

    #[test]
    fn macro_policies() {
        let probs = [0.8, 0.1, 0.1, 0.1, 0.8, 0.1, 0.6, 0.3, 0.1, 0.3, 0.6, 0.1];
        let labels = [0, 1, 1, 0];
        let strict = macro_average_precision_ovr(&probs, 3, &labels, UndefinedPolicy::Strict).unwrap();
        assert_eq!(strict.per_class[2], 0.0);
        assert_eq!(strict.defined, 2);
        let sum = strict.per_class[0] + strict.per_class[1];
        assert!((strict.mean - sum / 3.0).abs() <= 1e-15);
        let skip = macro_average_precision_ovr(&probs, 3, &labels, UndefinedPolicy::SkipUndefined).unwrap();
        assert!((skip.mean - sum / 2.0).abs() <= 1e-15);
        // K = 2: binary AP of column 1.
        let p2 = [0.9, 0.1, 0.4, 0.6, 0.3, 0.7, 0.6, 0.4];
        let r2 = macro_average_precision_ovr(&p2, 2, &[0, 1, 0, 1], UndefinedPolicy::Strict).unwrap();
        let expected = average_precision(&[0.1, 0.6, 0.7, 0.4], &[false, true, false, true]);
        assert_eq!((r2.mean, r2.per_class, r2.defined), (expected, vec![expected], 1));
        // Multilabel: masked entries are left out; a fully masked label is NaN.
        let scores = [0.9, 0.2, 0.1, 0.8, 0.95, 0.7];
        let targets = [Some(true), None, Some(false), None, None, None];
        let ml = multilabel_macro_average_precision(&scores, 2, &targets, UndefinedPolicy::SkipUndefined);
        assert_eq!((ml.per_class[0], ml.mean, ml.defined), (1.0, 1.0, 1));
        assert!(ml.per_class[1].is_nan());
    }

    proptest! {
        #[test]
        fn equals_threshold_by_threshold_construction(
            pairs in prop::collection::vec(((-10i32..10).prop_map(f64::from), any::<bool>()), 1..120)
        ) {
            let (s, t): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
            let ap = average_precision(&s, &t);
            if t.iter().any(|&b| b) {
                prop_assert!((ap - reference_ap(&s, &t)).abs() <= 1e-12);
            } else {
                prop_assert_eq!(ap, 0.0);
            }
            prop_assert!((0.0..=1.0).contains(&ap));
        }

        #[test]
        fn invariant_under_row_permutation(
            (pairs, shuffled) in prop::collection::vec(((-10i32..10).prop_map(f64::from), any::<bool>()), 1..120)
                .prop_flat_map(|p| (Just(p.clone()), Just(p).prop_shuffle()))
        ) {
            let (s, t): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
            let (ps, pt): (Vec<f64>, Vec<bool>) = shuffled.into_iter().unzip();
            prop_assert_eq!(average_precision(&s, &t).to_bits(), average_precision(&ps, &pt).to_bits());
        }
    }
}
