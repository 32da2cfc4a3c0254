//! Class-wise ECE (static calibration error, SCE) on equal-width bins (spec §C4).

use crate::MetricsError;
use crate::binning::{BinAccumulator, Binning, expected_calibration_error};
use crate::ece::{validate_classification, validate_n_bins};

/// Class-wise expected calibration error:
///
/// `CWECE = (1/K) Σ_k Σ_b (n_kb / N) · |mean_{i∈b} 1[y_i = k] − mean_{i∈b} p_ik|`
///
/// where the k-th probability column of ALL N rows is binned (equal width, `binning`; the literature
/// uses `Binning::RightClosed` with 15 bins). K is the number of columns, so a class absent from the
/// labels still counts (focal-calibration's `ClasswiseECELoss` uses max(label)+1 — a bug we do not
/// copy). Equals Nixon et al.'s SCE (`binning='even', class_conditional=True, max_prob=False`).
/// One pass over the matrix, O(N·K).
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, no rows, or `n_bins == 0`.
pub fn classwise_ece(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    n_bins: usize,
    binning: Binning,
) -> Result<f64, MetricsError> {
    let n = validate_classification(probs, k, labels)?;
    validate_n_bins(n_bins)?;
    let mut accs: Vec<BinAccumulator> = (0..k).map(|_| BinAccumulator::new(n_bins, binning)).collect();
    for (row, &y) in probs.chunks_exact(k).zip(labels) {
        for (j, (acc, &p)) in accs.iter_mut().zip(row).enumerate() {
            acc.add(p, if j == y { 1.0 } else { 0.0 });
        }
    }
    let total: f64 = accs.iter().map(|acc| expected_calibration_error(&acc.bins(), n)).sum();
    Ok(total / k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ece::tests::prob_matrix;
    use proptest::prelude::*;

    #[test]
    fn tiny_exact_case() {
        // Exact by construction (dyadic): rows [0.75, 0.25] y=0 and [0.75, 0.25] y=1, B = 4, right-closed.
        // Class 0: bin (.5,.75] mean p .75, freq .5 → .25. Class 1: bin (0,.25] mean p .25, freq .5 → .25.
        let e = classwise_ece(&[0.75, 0.25, 0.75, 0.25], 2, &[0, 1], 4, Binning::RightClosed).unwrap();
        assert_eq!(e, 0.25);
        assert_eq!(classwise_ece(&[], 3, &[], 15, Binning::RightClosed), Err(MetricsError::Empty));
    }

    #[test]
    fn absent_class_counts_in_k() {
        // Exact: a third column that is always 0 and never the label is perfectly calibrated (gap 0) but
        // still divides by K = 3.
        let two = classwise_ece(&[0.75, 0.25, 0.75, 0.25], 2, &[0, 1], 4, Binning::RightClosed).unwrap();
        let three =
            classwise_ece(&[0.75, 0.25, 0.0, 0.75, 0.25, 0.0], 3, &[0, 1], 4, Binning::RightClosed).unwrap();
        assert_eq!(three, two * 2.0 / 3.0);
    }

    proptest! {
        #[test]
        fn bounded_and_permutation_invariant(
            (k, probs, labels) in prob_matrix(6, 100),
            n_bins in 1usize..30,
        ) {
            let n = labels.len();
            let rev_probs: Vec<f64> = probs.chunks_exact(k).rev().flatten().copied().collect();
            let rev_labels: Vec<usize> = labels.iter().rev().copied().collect();
            for binning in Binning::ALL {
                let e = classwise_ece(&probs, k, &labels, n_bins, binning).unwrap();
                prop_assert!((0.0..=1.0).contains(&e));
                let r = classwise_ece(&rev_probs, k, &rev_labels, n_bins, binning).unwrap();
                prop_assert!((e - r).abs() < 1e-12, "{} vs {} (n = {})", e, r, n);
            }
        }
    }
}
