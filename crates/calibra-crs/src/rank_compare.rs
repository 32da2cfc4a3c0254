//! Rank comparison of two orderings of the same encoders (spec §5.4): AUROC vs CRS, frozen vs adapted,
//! predicted vs actual.
//!
//! Each ordering is a list of `(encoder, score)` with **higher scores better**. Definitions, with `n`
//! encoders and `pairs = n(n−1)/2`:
//!
//! - **ordinal ranks** (`crate::score::ordinal_ranks`): 1 = highest score; equal scores are broken by input order (the encoder listed
//!   first gets the better rank). `ties_a` / `ties_b` count the tied *pairs* of raw scores in each
//!   ordering (Σ over groups of equal scores of `t(t−1)/2`), so a reader sees how many rank orderings
//!   the tie-break decided;
//! - `kendall_tau` = Kendall τ on the two ordinal rank vectors (no ties by construction, so τ-a = τ-b
//!   `= 1 − 2·reversals/pairs`); `spearman_rho` = Spearman ρ on the ordinal ranks;
//! - `reversals` = the number of encoder pairs ordered differently by the two ordinal rankings;
//! - `kendall_tau_b_scores` = Kendall τ-b on the raw scores (ties honoured; scipy `kendalltau`);
//! - `weighted_tau` = the weighted (additive hyperbolic) τ on the raw scores (scipy `weightedtau` with
//!   its defaults);
//! - `mean_abs_displacement` = `(1/n) Σ |rank_a − rank_b|`;
//! - `top_k_overlap[k]` = `|top_k(a) ∩ top_k(b)| / k` for k ∈ {3, 5} with `k ≤ n` (top-k by ordinal rank);
//! - `moves`: every encoder with its two ordinal ranks, in the order of the first ordering's ranks.
//!
//! The correlation statistics come from calibra-metrics (scipy parity there); this module owns the rank
//! construction, the reversal count, displacement and overlap.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::error::CrsError;
use crate::score::ordinal_ranks;

/// The k of the top-k overlaps reported.
pub const TOP_K: [usize; 2] = [3, 5];

/// One encoder's rank in each ordering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankMove {
    pub encoder: String,
    pub rank_a: usize,
    pub rank_b: usize,
}

/// The comparison of two orderings (field names are the `compare-ranks` JSON keys).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankComparison {
    pub n: usize,
    pub kendall_tau: f64,
    pub spearman_rho: f64,
    pub kendall_tau_b_scores: f64,
    pub weighted_tau: f64,
    pub reversals: usize,
    pub pairs: usize,
    pub mean_abs_displacement: f64,
    /// k → overlap fraction (serialised with the k as the key string, e.g. `"3"`).
    pub top_k_overlap: BTreeMap<usize, f64>,
    pub ties_a: usize,
    pub ties_b: usize,
    pub moves: Vec<RankMove>,
}

/// A rank comparison with what it compares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedComparison {
    /// e.g. `auroc_vs_crs`, `frozen_vs_lora_discrimination`.
    pub name: String,
    /// Ordering A (e.g. `clean macro_auroc (frozen)`).
    pub a: String,
    /// Ordering B.
    pub b: String,
    pub comparison: RankComparison,
}

/// Number of tied pairs: Σ over groups of equal scores of `t(t−1)/2`.
pub fn tied_pairs(scores: &[f64]) -> usize {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut total = 0;
    let mut run = 1usize;
    for w in sorted.windows(2) {
        if w[0] == w[1] {
            run += 1;
        } else {
            total += run * (run - 1) / 2;
            run = 1;
        }
    }
    total + run * (run - 1) / 2
}

fn validate<'a>(which: &str, ordering: &'a [(String, f64)]) -> Result<HashMap<&'a str, usize>, CrsError> {
    let mut index = HashMap::with_capacity(ordering.len());
    for (i, (encoder, score)) in ordering.iter().enumerate() {
        if encoder.trim().is_empty() {
            return Err(CrsError::RankInput {
                message: format!("ordering {which}: entry {} has an empty encoder name", i + 1),
            });
        }
        if !score.is_finite() {
            return Err(CrsError::RankInput {
                message: format!(
                    "ordering {which}: encoder {encoder} has score {score}, expected a finite number"
                ),
            });
        }
        if let Some(first) = index.insert(encoder.as_str(), i) {
            return Err(CrsError::RankInput {
                message: format!(
                    "ordering {which}: encoder {encoder} appears twice (entries {} and {})",
                    first + 1,
                    i + 1
                ),
            });
        }
    }
    Ok(index)
}

/// The encoders only in `a` and only in `b` (each sorted); both empty when the sets match.
pub fn encoder_set_difference(a: &[(String, f64)], b: &[(String, f64)]) -> (Vec<String>, Vec<String>) {
    let in_a: std::collections::BTreeSet<&str> = a.iter().map(|(e, _)| e.as_str()).collect();
    let in_b: std::collections::BTreeSet<&str> = b.iter().map(|(e, _)| e.as_str()).collect();
    (
        in_a.difference(&in_b).map(|s| s.to_string()).collect(),
        in_b.difference(&in_a).map(|s| s.to_string()).collect(),
    )
}

/// Compares two orderings of the same encoders (see the module docs for every statistic).
///
/// Errors: fewer than two encoders, an empty name, a non-finite score, an encoder listed twice, or
/// encoder sets that differ (the error lists the encoders only in each ordering).
pub fn compare_rankings(a: &[(String, f64)], b: &[(String, f64)]) -> Result<RankComparison, CrsError> {
    validate("A", a)?;
    let index_b = validate("B", b)?;
    let (only_a, only_b) = encoder_set_difference(a, b);
    if !only_a.is_empty() || !only_b.is_empty() {
        return Err(CrsError::RankInput {
            message: format!(
                "the orderings rank different encoders: only in A: [{}]; only in B: [{}]",
                only_a.join(", "),
                only_b.join(", ")
            ),
        });
    }
    let n = a.len();
    if n < 2 {
        return Err(CrsError::RankInput { message: format!("need at least 2 encoders to compare, got {n}") });
    }
    let scores_a: Vec<f64> = a.iter().map(|(_, s)| *s).collect();
    let scores_b_own: Vec<f64> = b.iter().map(|(_, s)| *s).collect();
    let ranks_a = ordinal_ranks(&scores_a);
    let ranks_b_own = ordinal_ranks(&scores_b_own);
    // Align B to A's encoder order.
    let to_b: Vec<usize> = a.iter().map(|(e, _)| index_b[e.as_str()]).collect();
    let scores_b: Vec<f64> = to_b.iter().map(|&j| scores_b_own[j]).collect();
    let ranks_b: Vec<usize> = to_b.iter().map(|&j| ranks_b_own[j]).collect();

    let pairs = n * (n - 1) / 2;
    let mut reversals = 0;
    for i in 0..n {
        for j in (i + 1)..n {
            let da = ranks_a[i] as i64 - ranks_a[j] as i64;
            let db = ranks_b[i] as i64 - ranks_b[j] as i64;
            if da * db < 0 {
                reversals += 1;
            }
        }
    }
    let ra: Vec<f64> = ranks_a.iter().map(|&r| r as f64).collect();
    let rb: Vec<f64> = ranks_b.iter().map(|&r| r as f64).collect();
    let mean_abs_displacement =
        ranks_a.iter().zip(&ranks_b).map(|(&x, &y)| x.abs_diff(y) as f64).sum::<f64>() / n as f64;
    let top_k_overlap = TOP_K
        .iter()
        .filter(|&&k| k <= n)
        .map(|&k| {
            let shared = ranks_a.iter().zip(&ranks_b).filter(|&(&x, &y)| x <= k && y <= k).count();
            (k, shared as f64 / k as f64)
        })
        .collect();
    let mut moves: Vec<RankMove> = a
        .iter()
        .zip(ranks_a.iter().zip(&ranks_b))
        .map(|((encoder, _), (&rank_a, &rank_b))| RankMove { encoder: encoder.clone(), rank_a, rank_b })
        .collect();
    moves.sort_by_key(|m| m.rank_a);
    Ok(RankComparison {
        n,
        kendall_tau: calibra_metrics::kendall_tau_a(&ra, &rb),
        spearman_rho: calibra_metrics::spearman_rho(&ra, &rb),
        kendall_tau_b_scores: calibra_metrics::kendall_tau_b(&scores_a, &scores_b),
        weighted_tau: calibra_metrics::weighted_tau(&scores_a, &scores_b),
        reversals,
        pairs,
        mean_abs_displacement,
        top_k_overlap,
        ties_a: tied_pairs(&scores_a),
        ties_b: tied_pairs(&scores_b),
        moves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ordering(scores: &[f64]) -> Vec<(String, f64)> {
        scores.iter().enumerate().map(|(i, &s)| (format!("e{i}"), s)).collect()
    }

    #[test]
    fn ordinal_ranks_break_ties_by_input_order() {
        assert_eq!(ordinal_ranks(&[0.5, 0.9, 0.5, 0.1]), vec![2, 1, 3, 4]);
        assert_eq!(tied_pairs(&[0.5, 0.9, 0.5, 0.5, 0.1, 0.1]), 4);
    }

    #[test]
    fn identical_orderings_agree_perfectly() {
        let a = ordering(&[0.9, 0.8, 0.7, 0.6, 0.5, 0.4]);
        let c = compare_rankings(&a, &a).unwrap();
        assert_eq!((c.reversals, c.pairs), (0, 15));
        assert_eq!(c.kendall_tau, 1.0);
        assert_eq!(c.mean_abs_displacement, 0.0);
        assert_eq!(c.top_k_overlap, BTreeMap::from([(3, 1.0), (5, 1.0)]));
    }

    #[test]
    fn reversed_ordering_reverses_every_pair() {
        let a = ordering(&[4.0, 3.0, 2.0, 1.0]);
        let b = ordering(&[1.0, 2.0, 3.0, 4.0]);
        let c = compare_rankings(&a, &b).unwrap();
        assert_eq!((c.reversals, c.pairs), (6, 6));
        assert_eq!(c.kendall_tau, -1.0);
        // |1−4| + |2−3| + |3−2| + |4−1| = 8 → 2.
        assert_eq!(c.mean_abs_displacement, 2.0);
        assert_eq!(c.top_k_overlap, BTreeMap::from([(3, 2.0 / 3.0)]));
    }

    #[test]
    fn b_may_list_encoders_in_another_order() {
        let a = ordering(&[0.9, 0.5, 0.1]);
        let b: Vec<(String, f64)> = vec![("e2".into(), 1.0), ("e0".into(), 3.0), ("e1".into(), 2.0)];
        let c = compare_rankings(&a, &b).unwrap();
        assert_eq!(c.reversals, 0);
        assert!(c.moves.iter().all(|m| m.rank_a == m.rank_b));
    }

    #[test]
    fn mismatched_encoders_are_listed() {
        let a = ordering(&[0.9, 0.5, 0.1]);
        let mut b = ordering(&[0.9, 0.5]);
        b.push(("x".into(), 0.2));
        let err = compare_rankings(&a, &b).unwrap_err().to_string();
        assert!(err.contains("only in A: [e2]") && err.contains("only in B: [x]"), "{err}");
        let dup = vec![("e0".to_string(), 1.0), ("e0".to_string(), 2.0)];
        assert!(compare_rankings(&dup, &dup).unwrap_err().to_string().contains("twice"));
        let nan = ordering(&[f64::NAN, 1.0]);
        assert!(compare_rankings(&nan, &nan).is_err());
    }

    proptest! {
        #[test]
        fn statistics_are_consistent(
            pairs in proptest::collection::vec((0u8..6, 0u8..6), 2..30),
        ) {
            let a = ordering(&pairs.iter().map(|p| f64::from(p.0)).collect::<Vec<_>>());
            let b = ordering(&pairs.iter().map(|p| f64::from(p.1)).collect::<Vec<_>>());
            let c = compare_rankings(&a, &b).unwrap();
            let n = pairs.len();
            prop_assert_eq!(c.pairs, n * (n - 1) / 2);
            // Ordinal ranks have no ties: τ = 1 − 2·reversals/pairs.
            prop_assert!((c.kendall_tau - (1.0 - 2.0 * c.reversals as f64 / c.pairs as f64)).abs() < 1e-12);
            // Symmetry: swapping the orderings keeps τ, ρ, reversals and displacement.
            let d = compare_rankings(&b, &a).unwrap();
            prop_assert_eq!(c.reversals, d.reversals);
            prop_assert!((c.kendall_tau - d.kendall_tau).abs() < 1e-12);
            prop_assert!((c.spearman_rho - d.spearman_rho).abs() < 1e-12);
            prop_assert!((c.mean_abs_displacement - d.mean_abs_displacement).abs() < 1e-12);
            // Every rank 1..n appears once in each ordering.
            let mut ra: Vec<usize> = c.moves.iter().map(|m| m.rank_a).collect();
            let mut rb: Vec<usize> = c.moves.iter().map(|m| m.rank_b).collect();
            ra.sort_unstable();
            rb.sort_unstable();
            prop_assert_eq!(&ra, &(1..=n).collect::<Vec<_>>());
            prop_assert_eq!(&rb, &(1..=n).collect::<Vec<_>>());
            for (k, overlap) in &c.top_k_overlap {
                prop_assert!(*k <= n && (0.0..=1.0).contains(overlap));
            }
        }

        #[test]
        fn comparing_with_itself_is_perfect(scores in proptest::collection::vec(-5i32..5, 2..25)) {
            let a = ordering(&scores.iter().map(|&s| f64::from(s)).collect::<Vec<_>>());
            let c = compare_rankings(&a, &a).unwrap();
            prop_assert_eq!(c.reversals, 0);
            prop_assert_eq!(c.mean_abs_displacement, 0.0);
            prop_assert_eq!(c.ties_a, c.ties_b);
        }
    }
}
