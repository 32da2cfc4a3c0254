//! AUROC: binary (Mann–Whitney with mid-ranks), one-vs-rest macro for multiclass, and macro over
//! multilabel columns with masked entries (spec §C8, §C9). Also the [`MacroAverage`] result and the
//! [`UndefinedPolicy`] shared by every macro-averaged ranking metric.

use serde::{Deserialize, Serialize};

use crate::MetricsError;
use crate::input::{validate_labels, validate_probabilities};
use crate::score_groups::ScoreGroups;
use rayon::prelude::*;

/// What a macro average does with classes (or labels) on which the per-class metric is undefined
/// (e.g. AUROC of a class with no positives or no negatives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndefinedPolicy {
    /// sklearn parity: the undefined classes keep their sklearn value (NaN for AUROC, so the mean is
    /// NaN; 0.0 for average precision) and are part of the mean.
    #[default]
    Strict,
    /// The mean runs over the defined classes only (NaN if none is defined); `defined` says how many.
    SkipUndefined,
}

impl UndefinedPolicy {
    /// The names used on the command line and in serialised output.
    pub const NAMES: [&'static str; 2] = ["strict", "skip-undefined"];

    fn name(self) -> &'static str {
        match self {
            UndefinedPolicy::Strict => Self::NAMES[0],
            UndefinedPolicy::SkipUndefined => Self::NAMES[1],
        }
    }
}

impl std::fmt::Display for UndefinedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for UndefinedPolicy {
    type Err = MetricsError;

    /// Parses `strict` or `skip-undefined`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "strict" => Ok(UndefinedPolicy::Strict),
            "skip-undefined" => Ok(UndefinedPolicy::SkipUndefined),
            other => Err(MetricsError::InvalidArgument(format!(
                "unknown undefined-class policy {other:?}; expected one of {:?}",
                Self::NAMES
            ))),
        }
    }
}

/// A macro (unweighted) average over classes or labels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MacroAverage {
    /// The average under the chosen [`UndefinedPolicy`].
    pub mean: f64,
    /// The per-class (per-label) values in class order; undefined classes hold the sklearn value.
    pub per_class: Vec<f64>,
    /// How many classes the metric is defined on.
    pub defined: usize,
}

impl MacroAverage {
    /// Averages `per_class` under `policy`; `defined[c]` says whether class `c` is defined. A NaN of a
    /// defined class (NaN input scores) propagates to the mean under both policies.
    pub(crate) fn new(per_class: Vec<f64>, defined: &[bool], policy: UndefinedPolicy) -> Self {
        debug_assert_eq!(per_class.len(), defined.len());
        let included: Vec<f64> = match policy {
            UndefinedPolicy::Strict => per_class.clone(),
            UndefinedPolicy::SkipUndefined => {
                per_class.iter().zip(defined).filter(|(_, d)| **d).map(|(v, _)| *v).collect()
            }
        };
        let mean =
            if included.is_empty() { f64::NAN } else { included.iter().sum::<f64>() / included.len() as f64 };
        MacroAverage { mean, per_class, defined: defined.iter().filter(|d| **d).count() }
    }
}

/// AUROC from tie groups (see [`binary_auroc`]); NaN when undefined or a score is NaN.
pub(crate) fn auroc_of_groups(groups: &ScoreGroups) -> f64 {
    let (pos, neg) = (groups.positives(), groups.negatives());
    if pos == 0 || neg == 0 || groups.has_nan() {
        return f64::NAN;
    }
    // Twice the Mann–Whitney U of the positives: each (positive, lower negative) pair counts 2, each
    // (positive, tied negative) pair counts 1. Exact in u64 for n < 6e9. Groups come in decreasing
    // score, so the negatives below a group are those not yet seen.
    let mut twice_u = 0u64;
    let mut negatives_below = neg;
    for g in groups.descending() {
        negatives_below -= g.negatives;
        twice_u += g.positives * (2 * negatives_below + g.negatives);
    }
    twice_u as f64 / (2 * pos * neg) as f64
}

/// Binary AUROC (spec §C8) = sklearn `roc_auc_score(targets, scores)`: the Mann–Whitney statistic with
/// mid-ranks,
///
/// `AUC = (Σ_{i: pos} rank_i − n₊(n₊+1)/2) / (n₊ n₋)`,
///
/// i.e. the fraction of (positive, negative) pairs in which the positive scores higher, a tie counting
/// ½. Evaluated exactly in integers (one sort, then one pass over the tie groups) and divided once.
///
/// Edge cases: only one class present (or no samples) → NaN (sklearn ≥ 1.6); any NaN score → NaN.
/// Infinite scores are ordinary, ordered values; `-0.0` ties with `0.0`.
///
/// # Panics
/// If `scores` and `targets` differ in length.
pub fn binary_auroc(scores: &[f64], targets: &[bool]) -> f64 {
    assert_eq!(scores.len(), targets.len(), "AUROC needs one target per score");
    auroc_of_groups(&ScoreGroups::from_items(scores.iter().copied().zip(targets.iter().copied())))
}

/// Validates a probability matrix with labels for the one-vs-rest metrics; returns the number of rows.
pub(crate) fn validate_ovr(probs: &[f64], k: usize, labels: &[usize]) -> Result<usize, MetricsError> {
    let n = validate_probabilities(probs, k)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    validate_labels(labels, n, k)?;
    Ok(n)
}

/// Evaluates `metric` one-vs-rest (sklearn semantics shared by AUROC and AP): for `k == 2` the binary
/// metric of column 1 against `label == 1` (one entry in `per_class`); otherwise the metric of each
/// column `c` against `label == c`. `defined` decides per class from the (positives, negatives) counts.
/// One grouping (one sort) per class.
pub(crate) fn one_vs_rest(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    policy: UndefinedPolicy,
    metric: fn(&ScoreGroups) -> f64,
    defined: fn(u64, u64) -> bool,
) -> MacroAverage {
    let columns: Vec<usize> = if k == 2 { vec![1] } else { (0..k).collect() };
    // Classes are computed in parallel and collected in class order: results do not depend on the
    // number of threads.
    let (values, is_defined): (Vec<f64>, Vec<bool>) = columns
        .par_iter()
        .map(|&c| {
            let groups =
                ScoreGroups::from_items(probs.chunks_exact(k).zip(labels).map(|(row, &y)| (row[c], y == c)));
            (metric(&groups), defined(groups.positives(), groups.negatives()))
        })
        .unzip();
    MacroAverage::new(values, &is_defined, policy)
}

/// Evaluates `metric` on every column of a multilabel score matrix, leaving out masked (`None`)
/// entries of that column. `defined` decides per label from the (positives, negatives) counts.
///
/// # Panics
/// If `l == 0`, `scores.len()` is not a multiple of `l`, or `targets.len() != scores.len()`.
pub(crate) fn per_label(
    scores: &[f64],
    l: usize,
    targets: &[Option<bool>],
    policy: UndefinedPolicy,
    metric: fn(&ScoreGroups) -> f64,
    defined: fn(u64, u64) -> bool,
) -> MacroAverage {
    assert!(l > 0, "a multilabel score matrix needs at least one label column");
    assert!(scores.len().is_multiple_of(l), "{} scores do not form rows of {l} labels", scores.len());
    assert_eq!(targets.len(), scores.len(), "targets must have the same shape as scores");
    let mut groups = ScoreGroups::default();
    let mut values = Vec::with_capacity(l);
    let mut is_defined = Vec::with_capacity(l);
    for j in 0..l {
        groups.fill(scores.iter().zip(targets).skip(j).step_by(l).filter_map(|(&s, t)| t.map(|t| (s, t))));
        is_defined.push(defined(groups.positives(), groups.negatives()));
        values.push(metric(&groups));
    }
    MacroAverage::new(values, &is_defined, policy)
}

pub(crate) fn auroc_defined(pos: u64, neg: u64) -> bool {
    pos > 0 && neg > 0
}

/// Macro one-vs-rest AUROC (spec §C8) = sklearn `roc_auc_score(labels, probs, multi_class="ovr",
/// average="macro", labels=range(k))`: the unweighted mean over classes `c` of the binary AUROC of
/// column `c` against `label == c`.
///
/// `k == 2` is sklearn's binary mode: the binary AUROC of column 1 against `label == 1`, and
/// `per_class` has that single entry. A class with no positives (absent from `labels`) or no negatives
/// is undefined (NaN): [`UndefinedPolicy::Strict`] then gives a NaN mean (sklearn ≥ 1.6),
/// [`UndefinedPolicy::SkipUndefined`] the mean over the defined classes.
///
/// Cost: per class, one sort of the positive and one of the negative scores (as integer keys), in
/// buffers reused across classes; no per-row allocation.
///
/// # Errors
/// No rows; rows not probabilities (finite, in [0, 1], summing to 1 within 1e-6 — sklearn requires
/// this too); labels not one per row in `0..k`.
pub fn macro_auroc_ovr(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    policy: UndefinedPolicy,
) -> Result<MacroAverage, MetricsError> {
    validate_ovr(probs, k, labels)?;
    Ok(one_vs_rest(probs, k, labels, policy, auroc_of_groups, auroc_defined))
}

/// Multilabel macro AUROC (spec §C9) = sklearn `roc_auc_score(Y, S, average="macro")`, with masking:
/// `scores` and `targets` are row-major `n × l`; for label column `j` the binary AUROC uses the rows
/// whose target is `Some(_)` (a `None` — blank or uncertain label — leaves that entry out for that
/// label only). No row-sum constraint. A label whose kept entries lack a positive or a negative is
/// undefined (NaN) and handled per `policy` as in [`macro_auroc_ovr`]; a NaN score among the kept
/// entries makes that label NaN under both policies.
///
/// # Panics
/// If `l == 0`, `scores.len()` is not a multiple of `l`, or `targets.len() != scores.len()`.
pub fn multilabel_macro_auroc(
    scores: &[f64],
    l: usize,
    targets: &[Option<bool>],
    policy: UndefinedPolicy,
) -> MacroAverage {
    per_label(scores, l, targets, policy, auroc_of_groups, auroc_defined)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::average_ranks;
    use proptest::prelude::*;

    /// Direct O(n₊ n₋) count over (positive, negative) pairs, ties counting ½.
    fn brute_force_auroc(scores: &[f64], targets: &[bool]) -> f64 {
        let (mut num, mut pairs) = (0.0, 0.0);
        for (i, &si) in scores.iter().enumerate() {
            for (j, &sj) in scores.iter().enumerate() {
                if targets[i] && !targets[j] {
                    pairs += 1.0;
                    num += if si > sj {
                        1.0
                    } else if si == sj {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
        }
        num / pairs
    }

    #[test]
    fn exact_cases() {
        // Exact by construction: every positive above every negative → 1; below → 0; all tied → ½.
        let t = [false, false, true, false, true, true];
        let perfect = [0.1, 0.2, 0.8, 0.3, 0.9, 0.7];
        let reversed: Vec<f64> = perfect.iter().map(|s| 1.0 - s).collect();
        assert_eq!(binary_auroc(&perfect, &t), 1.0);
        assert_eq!(binary_auroc(&reversed, &t), 0.0);
        assert_eq!(binary_auroc(&[0.4; 6], &t), 0.5);
        // One positive tied with one of two negatives, above the other: (1 + ½) / 2.
        assert_eq!(binary_auroc(&[0.5, 0.5, 0.1], &[true, false, false]), 0.75);
        // -0.0 ties with 0.0.
        assert_eq!(binary_auroc(&[-0.0, 0.0], &[true, false]), 0.5);
    }

    #[test]
    fn policy_names_round_trip() {
        for p in [UndefinedPolicy::Strict, UndefinedPolicy::SkipUndefined] {
            assert_eq!(p.to_string().parse::<UndefinedPolicy>(), Ok(p));
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
        }
        assert!(matches!("skip".parse::<UndefinedPolicy>(), Err(MetricsError::InvalidArgument(_))));
    }

    #[test]
    fn undefined_and_nan() {
        assert!(binary_auroc(&[0.1, 0.2], &[true, true]).is_nan());
        assert!(binary_auroc(&[0.1, 0.2], &[false, false]).is_nan());
        assert!(binary_auroc(&[], &[]).is_nan());
        assert!(binary_auroc(&[0.1, f64::NAN], &[true, false]).is_nan());
    }

    #[test]
    #[should_panic(expected = "one target per score")]
    fn length_mismatch_panics() {
        binary_auroc(&[0.1], &[]);
    }

    #[test]
    #[should_panic(expected = "do not form rows of 2 labels")]
    fn multilabel_shape_mismatch_panics() {
        multilabel_macro_auroc(&[0.1, 0.2, 0.3], 2, &[Some(true); 3], UndefinedPolicy::Strict);
    }

    #[test]
    fn macro_ovr_modes_and_policies() {
        // 3 classes, perfectly separated: each class's column is highest on its own rows.
        let probs = [0.8, 0.1, 0.1, 0.1, 0.8, 0.1, 0.1, 0.1, 0.8, 0.7, 0.2, 0.1];
        let r = macro_auroc_ovr(&probs, 3, &[0, 1, 2, 0], UndefinedPolicy::Strict).unwrap();
        assert_eq!((r.mean, r.per_class.clone(), r.defined), (1.0, vec![1.0; 3], 3));
        // Class 2 absent: undefined. Strict → NaN mean; SkipUndefined → mean of the two defined.
        let labels = [0, 1, 1, 0];
        let strict = macro_auroc_ovr(&probs, 3, &labels, UndefinedPolicy::Strict).unwrap();
        assert!(strict.mean.is_nan() && strict.per_class[2].is_nan());
        assert_eq!(strict.defined, 2);
        let skip = macro_auroc_ovr(&probs, 3, &labels, UndefinedPolicy::SkipUndefined).unwrap();
        assert_eq!(skip.mean, (skip.per_class[0] + skip.per_class[1]) / 2.0);
        // K = 2: binary on column 1 only.
        let p2 = [0.9, 0.1, 0.4, 0.6, 0.3, 0.7, 0.6, 0.4];
        let l2 = [0, 1, 0, 1];
        let r2 = macro_auroc_ovr(&p2, 2, &l2, UndefinedPolicy::Strict).unwrap();
        let expected = binary_auroc(&[0.1, 0.6, 0.7, 0.4], &[false, true, false, true]);
        assert_eq!((r2.mean, r2.per_class, r2.defined), (expected, vec![expected], 1));
    }

    #[test]
    fn macro_ovr_errors_name_the_problem() {
        let bad_sum = [0.5, 0.4, 0.5, 0.5];
        assert!(matches!(
            macro_auroc_ovr(&bad_sum, 2, &[0, 1], UndefinedPolicy::Strict),
            Err(MetricsError::RowSum { row: 0, .. })
        ));
        assert!(matches!(
            macro_auroc_ovr(&[0.5, 0.5], 2, &[2], UndefinedPolicy::Strict),
            Err(MetricsError::LabelOutOfRange { row: 0, label: 2, .. })
        ));
        assert_eq!(macro_auroc_ovr(&[], 2, &[], UndefinedPolicy::Strict), Err(MetricsError::Empty));
    }

    #[test]
    fn multilabel_masks_entries_per_label() {
        // 4 rows × 2 labels. Label 0 would be misordered by row 3, but row 3 is masked for label 0.
        let scores = [0.9, 0.2, 0.1, 0.8, 0.8, 0.3, 0.95, 0.7];
        let targets = [Some(true), Some(false), Some(false), Some(true), Some(true), None, None, Some(false)];
        let r = multilabel_macro_auroc(&scores, 2, &targets, UndefinedPolicy::Strict);
        assert_eq!(r.per_class[0], 1.0);
        assert_eq!(r.per_class[1], binary_auroc(&[0.2, 0.8, 0.7], &[false, true, false]));
        assert_eq!(r.defined, 2);
        // A label with only negatives among its kept entries is undefined.
        let t2 = [Some(true), Some(false), Some(false), None, Some(true), None, None, Some(false)];
        let strict = multilabel_macro_auroc(&scores, 2, &t2, UndefinedPolicy::Strict);
        assert!(strict.mean.is_nan());
        let skip = multilabel_macro_auroc(&scores, 2, &t2, UndefinedPolicy::SkipUndefined);
        assert_eq!((skip.mean, skip.defined), (1.0, 1));
        // A NaN score in a defined label propagates even when skipping undefined labels.
        let mut s3 = scores;
        s3[0] = f64::NAN;
        assert!(multilabel_macro_auroc(&s3, 2, &targets, UndefinedPolicy::SkipUndefined).mean.is_nan());
    }

    fn scored_targets() -> impl Strategy<Value = Vec<(f64, bool)>> {
        prop::collection::vec(((-30i32..30).prop_map(f64::from), any::<bool>()), 0..150)
    }

    proptest! {
        #[test]
        fn equals_pair_count_and_mid_rank_formula(pairs in scored_targets()) {
            let (s, t): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
            let auc = binary_auroc(&s, &t);
            let reference = brute_force_auroc(&s, &t);
            prop_assert_eq!(auc.is_nan(), reference.is_nan());
            if !auc.is_nan() {
                prop_assert!((auc - reference).abs() <= 1e-12);
                let ranks = average_ranks(&s);
                let pos = t.iter().filter(|&&b| b).count() as f64;
                let neg = t.len() as f64 - pos;
                let rank_sum: f64 = ranks.iter().zip(&t).filter(|(_, b)| **b).map(|(r, _)| r).sum();
                prop_assert!((auc - (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg)).abs() <= 1e-12);
            }
        }

        #[test]
        fn negating_scores_complements(pairs in scored_targets()) {
            let (s, t): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
            let neg: Vec<f64> = s.iter().map(|v| -v).collect();
            let (a, b) = (binary_auroc(&s, &t), binary_auroc(&neg, &t));
            prop_assert_eq!(a.is_nan(), b.is_nan());
            prop_assert!(a.is_nan() || (a - (1.0 - b)).abs() <= 1e-15);
        }

        #[test]
        fn invariant_under_increasing_transforms_and_permutations(
            (pairs, shuffled) in scored_targets().prop_flat_map(|p| (Just(p.clone()), Just(p).prop_shuffle()))
        ) {
            let (s, t): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
            let a = binary_auroc(&s, &t);
            // s³ + 5s and exp(s / 7) are strictly increasing and exact/injective on these integers.
            let cubic: Vec<f64> = s.iter().map(|v| v * v * v + 5.0 * v).collect();
            let exp: Vec<f64> = s.iter().map(|v| (v / 7.0).exp()).collect();
            let (ps, pt): (Vec<f64>, Vec<bool>) = shuffled.into_iter().unzip();
            for other in [binary_auroc(&cubic, &t), binary_auroc(&exp, &t), binary_auroc(&ps, &pt)] {
                prop_assert_eq!(a.to_bits(), other.to_bits());
            }
        }
    }
}
