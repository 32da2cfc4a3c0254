//! The Clinical Reliability Score of a normalised profile against a panel of dominance peers (spec §4):
//!
//! ```text
//! D(k)   = (1/n_k) Σ_{j ∈ R, j ≠ k} 1[s̃^(k) ≻ s̃^(j)]     n_k = |R| − 1[k ∈ R]
//! S(k)   = 1 − Σ_a w_a (1 − s̃_a)²
//! W(k)   = min_a s̃_a
//! CRS(k) = α_D D + α_S S + α_W W
//! ```
//!
//! `≻` is Pareto dominance: `≥` on every axis and `>` on at least one. Everything here works on
//! already-normalised values in [0, 1]; anchors and the panel live in [`crate::reference`].

use crate::error::CrsError;
use serde::{Deserialize, Serialize};

/// Weights must sum to 1 within this tolerance.
pub const WEIGHT_SUM_TOLERANCE: f64 = 1e-9;

/// Check that `weights` are finite, non-negative and sum to 1 within [`WEIGHT_SUM_TOLERANCE`].
fn validate_simplex(what: &'static str, weights: &[f64]) -> Result<(), CrsError> {
    if let Some(w) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
        return Err(CrsError::InvalidWeights {
            what,
            message: format!("every weight must be a finite number ≥ 0, found {w}"),
        });
    }
    let sum: f64 = weights.iter().sum();
    if (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
        return Err(CrsError::InvalidWeights {
            what,
            message: format!(
                "the weights must sum to 1 (within {WEIGHT_SUM_TOLERANCE:e}), they sum to {sum}"
            ),
        });
    }
    Ok(())
}

/// Axis weights `w_a` of the ideal-point term `S`, indexed as [`crate::ALL_AXES`]: four (the default
/// CRS, 1/4 each) or five with the optional selective axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisWeights {
    /// The weights; entries from `len` on are 0 and unused.
    weights: [f64; 5],
    len: usize,
}

impl AxisWeights {
    /// Validated weights of the four default axes.
    ///
    /// # Errors
    /// [`CrsError::InvalidWeights`] unless all four are finite, ≥ 0 and sum to 1 within 1e-9.
    pub fn new(weights: [f64; 4]) -> Result<Self, CrsError> {
        AxisWeights::from_slice(&weights)
    }

    /// Validated weights of 4 axes or of 5 (the fifth is the selective axis).
    ///
    /// # Errors
    /// [`CrsError::InvalidWeights`] for another count, or unless all are finite, ≥ 0 and sum to 1
    /// within 1e-9.
    pub fn from_slice(weights: &[f64]) -> Result<Self, CrsError> {
        if !(weights.len() == 4 || weights.len() == 5) {
            return Err(CrsError::InvalidWeights {
                what: "axis weights",
                message: format!(
                    "expected 4 weights (or 5 with the selective axis), found {}",
                    weights.len()
                ),
            });
        }
        validate_simplex("axis weights", weights)?;
        let mut all = [0.0; 5];
        all[..weights.len()].copy_from_slice(weights);
        Ok(AxisWeights { weights: all, len: weights.len() })
    }

    /// `w_a = 1/4` on the four default axes.
    pub fn uniform() -> Self {
        AxisWeights { weights: [0.25, 0.25, 0.25, 0.25, 0.0], len: 4 }
    }

    /// The weights, indexed as [`crate::ALL_AXES`] (4 or 5 of them).
    pub fn as_slice(&self) -> &[f64] {
        &self.weights[..self.len]
    }

    /// The number of axes (4, or 5 with the selective axis).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty (4 or 5 weights); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether the selective (fifth) axis takes part.
    pub fn has_selective(&self) -> bool {
        self.len == 5
    }
}

impl Default for AxisWeights {
    fn default() -> Self {
        AxisWeights::uniform()
    }
}

/// Component weights `(α_D, α_S, α_W)`. Default `(0.60, 0.25, 0.15)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ComponentWeights {
    /// `α_D`, the weight of Pareto dominance.
    pub dominance: f64,
    /// `α_S`, the weight of ideal-point proximity.
    pub ideal: f64,
    /// `α_W`, the weight of the worst axis.
    pub worst: f64,
}

impl ComponentWeights {
    /// Validated component weights.
    ///
    /// # Errors
    /// [`CrsError::InvalidWeights`] unless all three are finite, ≥ 0 and sum to 1 within 1e-9.
    pub fn new(dominance: f64, ideal: f64, worst: f64) -> Result<Self, CrsError> {
        validate_simplex("component weights", &[dominance, ideal, worst])?;
        Ok(ComponentWeights { dominance, ideal, worst })
    }

    /// `(α_D, α_S, α_W) = (0.60, 0.25, 0.15)`, the paper's default.
    pub fn paper_default() -> Self {
        ComponentWeights { dominance: 0.60, ideal: 0.25, worst: 0.15 }
    }

    /// Re-validate (for values that came through deserialisation).
    ///
    /// # Errors
    /// As [`ComponentWeights::new`].
    pub fn validated(self) -> Result<Self, CrsError> {
        ComponentWeights::new(self.dominance, self.ideal, self.worst)
    }
}

impl Default for ComponentWeights {
    fn default() -> Self {
        ComponentWeights::paper_default()
    }
}

/// Both weight families of the CRS.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScoreWeights {
    /// `w_a`, used by `S` only.
    pub axis: AxisWeights,
    /// `(α_D, α_S, α_W)`.
    pub component: ComponentWeights,
}

/// `a ≻ b`: `a_i ≥ b_i` on every axis and `a_i > b_i` on at least one. Identical profiles do not
/// dominate each other.
pub fn pareto_dominates(a: &[f64], b: &[f64]) -> bool {
    debug_assert_eq!(a.len(), b.len(), "profiles of different axis counts");
    a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y)
}

/// `D(k) = (1/n_k) Σ_{j ∈ R, j ≠ k} 1[s̃^(k) ≻ s̃^(j)]` with `n_k = |R| − 1[k ∈ R]`.
///
/// `own_index` is `Some(i)` when the candidate is the panel member `peers[i]` (that member is then
/// skipped and `n_k = |R| − 1`), `None` for an outside candidate (`n_k = |R|`). When `n_k = 0` (a
/// one-member panel scoring its own member) there is no dominance evidence and `D = 0`.
///
/// # Panics
/// If `own_index` is out of range.
pub fn dominance<P: AsRef<[f64]>>(candidate: &[f64], peers: &[P], own_index: Option<usize>) -> f64 {
    if let Some(i) = own_index {
        assert!(i < peers.len(), "own_index {i} out of range for a panel of {}", peers.len());
    }
    let n_k = peers.len() - usize::from(own_index.is_some());
    if n_k == 0 {
        return 0.0;
    }
    let dominated = peers
        .iter()
        .enumerate()
        .filter(|&(j, peer)| Some(j) != own_index && pareto_dominates(candidate, peer.as_ref()))
        .count();
    dominated as f64 / n_k as f64
}

/// `S = 1 − Σ_a w_a (1 − s̃_a)²`: proximity to the ideal profile (1, 1, 1, 1); in [0, 1] for
/// normalised values.
///
/// # Panics
/// If `normalized` and `weights` have different axis counts.
pub fn ideal_proximity(normalized: &[f64], weights: &AxisWeights) -> f64 {
    assert_eq!(
        normalized.len(),
        weights.len(),
        "a profile of {} axes with {} axis weights",
        normalized.len(),
        weights.len()
    );
    let penalty: f64 =
        normalized.iter().zip(weights.as_slice()).map(|(s, w)| w * (1.0 - s) * (1.0 - s)).sum();
    1.0 - penalty
}

/// `W = min_a s̃_a`: the worst normalised axis.
pub fn worst_axis(normalized: &[f64]) -> f64 {
    normalized.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The three components of the CRS and their weighted sum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CrsComponents {
    /// `D`, Pareto dominance fraction over the panel.
    pub dominance: f64,
    /// `S`, ideal-point proximity.
    pub ideal: f64,
    /// `W`, worst normalised axis.
    pub worst: f64,
    /// `CRS = α_D D + α_S S + α_W W`, in [0, 1] (up to the 1e-9 weight-sum tolerance).
    pub crs: f64,
}

/// The CRS of one normalised candidate against normalised peers (see [`dominance`] for `own_index`).
pub fn crs_components<P: AsRef<[f64]>>(
    normalized: &[f64],
    peers: &[P],
    own_index: Option<usize>,
    weights: &ScoreWeights,
) -> CrsComponents {
    let d = dominance(normalized, peers, own_index);
    let s = ideal_proximity(normalized, &weights.axis);
    let w = worst_axis(normalized);
    let a = weights.component;
    CrsComponents { dominance: d, ideal: s, worst: w, crs: a.dominance * d + a.ideal * s + a.worst * w }
}

/// Ordinal ranks, 1 = largest score; equal scores are ranked in input order (the earlier one gets the
/// better rank). NaN scores rank last (in input order).
pub fn ordinal_ranks(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // A stable sort keeps input order among equal keys.
    order.sort_by(|&i, &j| match (scores[i].is_nan(), scores[j].is_nan()) {
        (false, false) => scores[j].total_cmp(&scores[i]),
        (a, b) => a.cmp(&b),
    });
    let mut ranks = vec![0; scores.len()];
    for (r, &i) in order.iter().enumerate() {
        ranks[i] = r + 1;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dominance_needs_a_strict_improvement() {
        assert!(pareto_dominates(&[1.0, 0.5, 0.5, 0.5], &[0.9, 0.5, 0.5, 0.5]));
        assert!(!pareto_dominates(&[0.5; 4], &[0.5; 4]));
        assert!(!pareto_dominates(&[1.0, 0.4, 0.5, 0.5], &[0.9, 0.5, 0.5, 0.5]));
    }

    #[test]
    fn n_k_excludes_the_candidate_only_when_it_is_a_panel_member() {
        // Exact by construction: the first member dominates the other two.
        let peers = [[1.0; 4], [0.5; 4], [0.0; 4]];
        assert_eq!(dominance(&peers[0], &peers, Some(0)), 1.0); // 2 of n_k = 2
        assert_eq!(dominance(&[1.0; 4], &peers, None), 2.0 / 3.0); // 2 of n_k = 3
        assert_eq!(dominance(&peers[0], &peers[..1], Some(0)), 0.0); // n_k = 0
    }

    #[test]
    fn ideal_and_worst_terms_are_exact_on_simple_profiles() {
        // Exact by construction: (1 − 0.5)² = 0.25 on every axis.
        assert_eq!(ideal_proximity(&[0.5; 4], &AxisWeights::uniform()), 0.75);
        assert_eq!(ideal_proximity(&[1.0; 4], &AxisWeights::uniform()), 1.0);
        assert_eq!(ideal_proximity(&[0.0; 4], &AxisWeights::uniform()), 0.0);
        assert_eq!(worst_axis(&[0.7, 0.2, 0.9, 0.3]), 0.2);
        let w = AxisWeights::new([1.0, 0.0, 0.0, 0.0]).unwrap();
        assert_eq!(ideal_proximity(&[0.5, 0.0, 0.0, 0.0], &w), 0.75);
    }

    #[test]
    fn weights_are_validated() {
        assert!(AxisWeights::new([0.3, 0.3, 0.15, 0.25]).is_ok());
        assert!(AxisWeights::new([0.5, 0.5, 0.5, -0.5]).is_err());
        assert!(AxisWeights::new([0.25, 0.25, 0.25, 0.26]).is_err());
        assert!(AxisWeights::new([0.25, 0.25, 0.25, f64::NAN]).is_err());
        assert!(ComponentWeights::new(0.6, 0.25, 0.15).is_ok());
        assert!(ComponentWeights::new(0.6, 0.25, 0.15 + 2e-9).is_err());
        assert!(ComponentWeights::new(0.6, 0.25, 0.15 + 5e-10).is_ok());
        assert!(ComponentWeights::new(1.2, -0.2, 0.0).is_err());
    }

    #[test]
    fn five_weights_add_the_selective_axis_and_other_counts_are_refused() {
        let five = AxisWeights::from_slice(&[0.2; 5]).unwrap();
        assert!(five.has_selective() && five.len() == 5);
        assert!(!AxisWeights::uniform().has_selective());
        assert_eq!(AxisWeights::from_slice(&[0.25; 4]).unwrap(), AxisWeights::uniform());
        for n in [3, 6] {
            let err = AxisWeights::from_slice(&vec![1.0 / n as f64; n]).unwrap_err().to_string();
            assert!(err.contains("expected 4 weights (or 5 with the selective axis)"), "{err}");
        }
        assert!(AxisWeights::from_slice(&[0.2, 0.2, 0.2, 0.2, 0.3]).is_err());
        // Exact by construction: (1 − 0.5)² = 0.25 on every axis.
        assert_eq!(ideal_proximity(&[0.5; 5], &five), 0.75);
    }

    #[test]
    fn ordinal_ranks_break_ties_by_input_order() {
        assert_eq!(ordinal_ranks(&[0.2, 0.9, 0.2, 0.5]), vec![3, 1, 4, 2]);
        assert_eq!(ordinal_ranks(&[f64::NAN, 0.1]), vec![2, 1]);
        assert!(ordinal_ranks(&[]).is_empty());
    }
}
