//! Nixon et al. (2019) Adaptive Calibration Error: class-conditional, equal-mass ranges (spec §C5, row 2).

use rayon::prelude::*;
use std::iter;

use crate::MetricsError;
use crate::binning::nonnegative_sort_key;
use crate::ece::validate_classification;

/// Default number of equal-mass ranges R for [`adaptive_calibration_error`].
pub const ACE_DEFAULT_RANGES: usize = 30;
/// Default threshold for ACE: probabilities must exceed it (0.0 drops exact zeros).
pub const ACE_DEFAULT_THRESHOLD: f64 = 0.0;
/// Threshold of the thresholded variant TACE (Nixon et al.).
pub const TACE_DEFAULT_THRESHOLD: f64 = 0.01;

/// Adaptive Calibration Error (Nixon et al. 2019, "Measuring Calibration in Deep Learning"), as the
/// reference code computes it (`google/uncertainty-metrics general_calibration_error.py`,
/// `GeneralCalibrationError(binning_scheme='adaptive', class_conditional=True, max_prob=False,
/// norm='l1', threshold)`):
///
/// For every class column k (ALL K columns, not top-label): keep the `n_k` rows with `p_ik > threshold`;
/// upper edges `sort(p_k)[min(round(linspace(0, n_k, R, endpoint=False)), n_k − 1)][1:]`
/// (round half to even, as `np.round`); bin with `np.digitize` (an edge value goes to the upper bin);
/// `error_k = Σ_b w_b · |acc_b − conf_b|` with the reference's code weighting `w_b = (n_b + ε)/n_k`,
/// means `· / (n_b + ε)`, `ε = f64::EPSILON` (≈ `n_b / n_k`; the paper's `1/(K·R)` unweighted form is
/// not what the code does); `ACE = (1/K) Σ_k error_k`. A class with no row above the threshold
/// contributes 0 but still counts in K. `threshold = 0.01` gives TACE.
///
/// Defaults: [`ACE_DEFAULT_RANGES`] (30), [`ACE_DEFAULT_THRESHOLD`] (0.0). O(K · N log N): one
/// integer-key sort per class, in one reused buffer. For K = 1 the column is used as is (the reference
/// would first expand it to `[1−p, p]`).
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, no rows, `n_ranges == 0`, or a non-finite
/// threshold.
pub fn adaptive_calibration_error(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    n_ranges: usize,
    threshold: f64,
) -> Result<f64, MetricsError> {
    validate_classification(probs, k, labels)?;
    if n_ranges == 0 {
        return Err(MetricsError::InvalidArgument("ACE needs at least 1 range".into()));
    }
    if !threshold.is_finite() {
        return Err(MetricsError::InvalidArgument(format!("ACE threshold {threshold} is not finite")));
    }
    // Classes are independent: computed in parallel, then summed in class order, so the result is
    // bit-identical whatever the number of threads.
    let errors: Vec<f64> = (0..k)
        .into_par_iter()
        .map(|class| class_error(probs, k, labels, class, n_ranges, threshold))
        .collect();
    let mut total = 0.0;
    for error in errors {
        total += error / k as f64;
    }
    Ok(total)
}

/// Calibration error of one class column over its equal-mass ranges (0 when no probability exceeds
/// the threshold).
fn class_error(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    class: usize,
    n_ranges: usize,
    threshold: f64,
) -> f64 {
    let mut keys: Vec<u64> = probs
        .iter()
        .skip(class)
        .step_by(k)
        .filter(|&&p| p > threshold)
        .map(|&p| nonnegative_sort_key(p))
        .collect();
    keys.sort_unstable();
    let sorted: Vec<f64> = keys.into_iter().map(f64::from_bits).collect();
    let positives =
        probs.chunks_exact(k).zip(labels).filter(|&(_, &y)| y == class).map(|(row, _)| row[class]);
    class_error_sorted(&sorted, positives.filter(|&p| p > threshold), n_ranges)
}

/// The ACE term of one class from its kept probabilities sorted increasingly (`sorted`) and the kept
/// probabilities of its positives (any order). Shared by [`adaptive_calibration_error`] and the metric
/// summary, which reuses the sort done for AUROC; both give bit-identical results.
pub(crate) fn class_error_sorted(
    sorted: &[f64],
    positives: impl Iterator<Item = f64>,
    n_ranges: usize,
) -> f64 {
    let n_k = sorted.len();
    if n_k == 0 {
        return 0.0;
    }
    // get_adaptive_bins: edge indices round(i · n/R), i < R, clipped to n − 1; drop the first.
    let step = n_k as f64 / n_ranges as f64;
    let edges: Vec<f64> =
        (1..n_ranges).map(|i| sorted[((i as f64 * step).round_ties_even() as usize).min(n_k - 1)]).collect();
    // np.digitize(p, edges): bin = number of edges ≤ p. Positives are counted per bin directly ...
    let mut positive_counts: Vec<f64> = vec![0.0; n_ranges];
    for p in positives {
        positive_counts[edges.partition_point(|&e| e <= p)] += 1.0;
    }
    // ... and on the sorted column each bin is a run: bin b ends at the first p ≥ edges[b].
    let ends = edges.iter().map(|&e| sorted.partition_point(|&v| v < e)).chain(iter::once(n_k));
    let mut error = 0.0;
    let mut start = 0;
    for (end, &sum_y) in ends.zip(&positive_counts) {
        let end = end.max(start);
        let count = (end - start) as f64 + f64::EPSILON;
        let sum_p: f64 = sorted[start..end].iter().sum();
        let gap = sum_y / count - sum_p / count;
        error += (gap * (count / n_k as f64)).abs();
        start = end;
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ece::tests::prob_matrix;
    use proptest::prelude::*;

    #[test]
    fn arguments_are_checked() {
        let p = [0.5, 0.5];
        assert!(matches!(
            adaptive_calibration_error(&p, 2, &[0], 0, 0.0),
            Err(MetricsError::InvalidArgument(_))
        ));
        assert!(matches!(
            adaptive_calibration_error(&p, 2, &[0], 30, f64::NAN),
            Err(MetricsError::InvalidArgument(_))
        ));
        assert_eq!(adaptive_calibration_error(&[], 2, &[], 30, 0.0), Err(MetricsError::Empty));
    }

    #[test]
    fn exact_zero_probabilities_are_dropped_and_classes_averaged() {
        // Exact by construction: one-hot correct predictions. With threshold 0 only the 1.0 entries stay,
        // each with outcome 1 → error 0 (up to the ε weighting, which is exact here: (1+ε)-scaled terms
        // cancel to 0). Class 2 has no entries above 0 and contributes 0.
        let probs = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        assert_eq!(adaptive_calibration_error(&probs, 3, &[0, 1], 30, 0.0).unwrap(), 0.0);
    }

    proptest! {
        #[test]
        fn bounded_and_permutation_invariant(
            (k, probs, labels) in prob_matrix(5, 150),
            n_ranges in 1usize..40,
            threshold in prop::sample::select(vec![0.0, 0.01, 0.3]),
        ) {
            let e = adaptive_calibration_error(&probs, k, &labels, n_ranges, threshold).unwrap();
            prop_assert!((0.0..=1.0 + 1e-12).contains(&e), "{}", e);
            let rev_probs: Vec<f64> = probs.chunks_exact(k).rev().flatten().copied().collect();
            let rev_labels: Vec<usize> = labels.iter().rev().copied().collect();
            let r = adaptive_calibration_error(&rev_probs, k, &rev_labels, n_ranges, threshold).unwrap();
            prop_assert!((e - r).abs() < 1e-12);
        }
    }
}
