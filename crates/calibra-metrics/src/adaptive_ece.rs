//! Mukhoti et al. (2020) adaptive ECE (AdaECE): top-label ECE on equal-mass bins (spec §C5, row 1).

use crate::MetricsError;
use crate::binning::nonnegative_sort_key;
use crate::ece::{argmax, validate_classification, validate_n_bins};

/// `np.interp(x, arange(n), sorted)` exactly as numpy's compiled `arr_interp` evaluates it
/// (the `x == xp[j]` shortcut, clamping right of the last point, slope over a unit step).
fn interp_sorted(x: f64, sorted: &[f64]) -> f64 {
    let n = sorted.len();
    let last = (n - 1) as f64;
    if x >= last {
        return sorted[n - 1];
    }
    if x <= 0.0 {
        return sorted[0];
    }
    let j = x.floor() as usize;
    if j as f64 == x {
        return sorted[j];
    }
    let slope = sorted[j + 1] - sorted[j];
    slope * (x - j as f64) + sorted[j]
}

/// Adaptive ECE of Mukhoti et al. (`focal_calibration Metrics/metrics.py::AdaptiveECELoss`), the
/// recommended "adaptive ECE"; literature default `n_bins = 15`.
///
/// Top-label confidences `conf_i = max_k p_ik` (argmax ties → lowest index), `correct_i` as in ECE.
/// Edges `e = interp(linspace(0, N, B + 1), arange(N), sort(conf))` (numpy's linspace and interp
/// arithmetic replicated), bins `(e_b, e_{b+1}]`, `AdaECE = Σ_b (n_b / N) · |acc_b − conf_b|`.
///
/// Quirk kept for parity: membership is `lo < c ≤ hi`, so every sample equal to the minimum confidence
/// `e_0` falls in no bin, yet still counts in N. Bins whose edges coincide (many ties) are empty and
/// contribute 0. With a single row the result is therefore 0. O(N log N) (one sort), then O(N + B).
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, no rows, or `n_bins == 0`.
pub fn adaptive_ece(probs: &[f64], k: usize, labels: &[usize], n_bins: usize) -> Result<f64, MetricsError> {
    let n = validate_classification(probs, k, labels)?;
    validate_n_bins(n_bins)?;
    // Sorted confidences (integer keys sort fast), and the confidences of the correct rows.
    let mut keys: Vec<u64> = Vec::with_capacity(n);
    let mut correct_conf: Vec<f64> = Vec::new();
    for (row, &y) in probs.chunks_exact(k).zip(labels) {
        let (best, conf) = argmax(row);
        keys.push(nonnegative_sort_key(conf));
        if best == y {
            correct_conf.push(conf);
        }
    }
    keys.sort_unstable();
    let sorted: Vec<f64> = keys.into_iter().map(f64::from_bits).collect();

    // numpy linspace(0, N, B + 1): b · (N / B), last point exactly N; then np.interp.
    let step = n as f64 / n_bins as f64;
    let edges: Vec<f64> = (0..=n_bins)
        .map(|b| interp_sorted(if b == n_bins { n as f64 } else { b as f64 * step }, &sorted))
        .collect();

    // Bin of c is the b with e_b < c ≤ e_{b+1}, i.e. (number of edges < c) − 1; c ≤ e_0 is in no bin.
    let mut correct = vec![0.0; n_bins];
    for &c in &correct_conf {
        let below = edges.partition_point(|&e| e < c);
        if below > 0 {
            correct[below - 1] += 1.0;
        }
    }
    // On the sorted confidences each bin is a run: it ends after the last value ≤ e_{b+1}.
    let upper = |v: f64| sorted.partition_point(|&c| c <= v);
    let mut ece = 0.0;
    let mut start = upper(edges[0]);
    for (b, &sum_correct) in correct.iter().enumerate() {
        let end = upper(edges[b + 1]).max(start);
        let count = end - start;
        if count > 0 {
            let sum_conf: f64 = sorted[start..end].iter().sum();
            let gap = (sum_conf / count as f64 - sum_correct / count as f64).abs();
            ece += gap * (count as f64 / n as f64);
        }
        start = end;
    }
    Ok(ece)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ece::tests::prob_matrix;
    use proptest::prelude::*;

    #[test]
    fn interp_matches_numpy_rules() {
        // Definitional cases of np.interp on xp = arange(4): exact points, clamping, a dyadic midpoint.
        let fp = [0.0, 0.5, 0.75, 1.0];
        assert_eq!(interp_sorted(0.0, &fp), 0.0);
        assert_eq!(interp_sorted(2.0, &fp), 0.75);
        assert_eq!(interp_sorted(3.5, &fp), 1.0);
        assert_eq!(interp_sorted(1.5, &fp), 0.625);
        assert_eq!(interp_sorted(0.0, &[0.3]), 0.3);
    }

    #[test]
    fn minimum_sample_falls_in_no_bin() {
        // Exact by construction: row 0 is p = [.5, .5] (argmax tie → class 0), the minimum confidence,
        // and is wrong; it is dropped. The other rows are confident (1.0) and correct → AdaECE = 0.
        let probs = [0.5, 0.5, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        assert_eq!(adaptive_ece(&probs, 2, &[1, 0, 0, 0], 2).unwrap(), 0.0);
        // Same rows, row 0 now correct and row 3 wrong: the one non-empty bin holds three rows at conf 1
        // with acc 2/3 → gap 1/3, weight 3/4 → 1/4 up to rounding of 1/3.
        let e = adaptive_ece(&probs, 2, &[0, 0, 0, 1], 2).unwrap();
        assert!((e - 0.25).abs() < 1e-15);
        assert_eq!(adaptive_ece(&[0.25, 0.75], 2, &[0], 15).unwrap(), 0.0);
    }

    proptest! {
        #[test]
        fn bounded_and_permutation_invariant(
            (k, probs, labels) in prob_matrix(5, 150),
            n_bins in 1usize..30,
        ) {
            let e = adaptive_ece(&probs, k, &labels, n_bins).unwrap();
            prop_assert!((0.0..=1.0).contains(&e));
            let rev_probs: Vec<f64> = probs.chunks_exact(k).rev().flatten().copied().collect();
            let rev_labels: Vec<usize> = labels.iter().rev().copied().collect();
            let r = adaptive_ece(&rev_probs, k, &rev_labels, n_bins).unwrap();
            prop_assert!((e - r).abs() < 1e-12);
        }
    }
}
