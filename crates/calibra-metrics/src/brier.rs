//! Brier score, multiclass sum form and binary positive-class form (spec §C6).

use crate::MetricsError;
use crate::ece::validate_classification;

/// Multiclass Brier score, sum form: `BS = (1/N) Σ_i Σ_k (p_ik − 1[y_i = k])²`, in [0, 2].
///
/// Equals sklearn `brier_score_loss(y, P, labels=range(K))` for K > 2. For K = 2 sklearn reports the
/// one-column form, which is half of this: use [`brier_binary`] on column 1 for that. The "normalised"
/// BS/K of some papers is not this function.
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, or no rows.
pub fn brier_multiclass(probs: &[f64], k: usize, labels: &[usize]) -> Result<f64, MetricsError> {
    let n = validate_classification(probs, k, labels)?;
    let total: f64 = probs
        .chunks_exact(k)
        .zip(labels)
        .map(|(row, &y)| {
            row.iter()
                .enumerate()
                .map(|(j, &p)| {
                    let d = if j == y { p - 1.0 } else { p };
                    d * d
                })
                .sum::<f64>()
        })
        .sum();
    Ok(total / n as f64)
}

/// Binary Brier score: `BS = (1/N) Σ_i (p_i − y_i)²` with `p_i` the positive-class probability, in
/// [0, 1] for probabilities (sklearn `brier_score_loss` on a binary target).
///
/// NaN for empty input; NaN inputs propagate. Values are not range-checked.
///
/// # Panics
/// If `pos_prob` and `targets` differ in length.
pub fn brier_binary(pos_prob: &[f64], targets: &[bool]) -> f64 {
    assert_eq!(
        pos_prob.len(),
        targets.len(),
        "brier_binary: {} probabilities but {} targets",
        pos_prob.len(),
        targets.len()
    );
    if pos_prob.is_empty() {
        return f64::NAN;
    }
    let total: f64 = pos_prob
        .iter()
        .zip(targets)
        .map(|(&p, &t)| {
            let d = p - if t { 1.0 } else { 0.0 };
            d * d
        })
        .sum();
    total / pos_prob.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ece::tests::prob_matrix;
    use proptest::prelude::*;

    #[test]
    fn exact_cases() {
        // Exact by construction: a perfect one-hot prediction scores 0; a confidently wrong one 2.
        assert_eq!(brier_multiclass(&[1.0, 0.0, 0.0], 3, &[0]).unwrap(), 0.0);
        assert_eq!(brier_multiclass(&[0.0, 1.0, 0.0], 3, &[0]).unwrap(), 2.0);
        // Dyadic: (0.25 − 1)² + 0.75² = 0.5625 · 2 = 1.125.
        assert_eq!(brier_multiclass(&[0.25, 0.75], 2, &[0]).unwrap(), 1.125);
        // Binary form is half the 2-column sum form.
        assert_eq!(brier_binary(&[0.75], &[false]), 0.5625);
        assert!(brier_binary(&[], &[]).is_nan());
        assert_eq!(brier_multiclass(&[], 2, &[]), Err(MetricsError::Empty));
    }

    proptest! {
        #[test]
        fn bounded_and_binary_is_half_of_two_column((k, probs, labels) in prob_matrix(6, 100)) {
            let b = brier_multiclass(&probs, k, &labels).unwrap();
            prop_assert!((0.0..=2.0).contains(&b));
            let pos: Vec<f64> = probs.chunks_exact(k).map(|r| r[1]).collect();
            let two: Vec<f64> = pos.iter().flat_map(|&p| [1.0 - p, p]).collect();
            let t: Vec<bool> = labels.iter().map(|&y| y == 1).collect();
            let y2: Vec<usize> = t.iter().map(|&t| usize::from(t)).collect();
            let bb = brier_binary(&pos, &t);
            prop_assert!((0.0..=1.0).contains(&bb));
            prop_assert!((brier_multiclass(&two, 2, &y2).unwrap() - 2.0 * bb).abs() < 1e-12);
        }
    }
}
