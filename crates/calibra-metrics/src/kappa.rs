//! Quadratic weighted Cohen's kappa and ordinal mean absolute error (spec §C12).

/// Quadratic weighted kappa as sklearn `cohen_kappa_score(labels, preds, weights="quadratic",
/// labels=range(k))`:
///
/// `O` = K×K confusion counts (rows = `labels`, columns = `preds`), `E_ij = colsum_i · rowsum_j / N`
/// (sklearn's `outer(sum0, sum1)` order), `W_ij = (i − j)²`, `κ = 1 − Σ W∘O / Σ W∘E`.
/// Absent grades still define the index spacing (all K classes are used). NaN when `Σ W∘E = 0`
/// (e.g. both raters constant on the same grade, sklearn's `replace_undefined_by=nan`) or for empty input.
/// O(N + K²).
///
/// # Panics
/// If the slices differ in length or a label / prediction is `≥ k`.
pub fn quadratic_weighted_kappa(labels: &[usize], preds: &[usize], k: usize) -> f64 {
    assert_eq!(
        labels.len(),
        preds.len(),
        "quadratic_weighted_kappa: {} labels but {} predictions",
        labels.len(),
        preds.len()
    );
    let mut confusion = vec![0u64; k * k];
    for (row, (&y, &p)) in labels.iter().zip(preds).enumerate() {
        assert!(
            y < k && p < k,
            "quadratic_weighted_kappa: row {row}: label {y} / prediction {p} out of range for {k} classes"
        );
        confusion[y * k + p] += 1;
    }
    let n = labels.len() as f64;
    let mut row_sum = vec![0u64; k]; // sklearn sum1 (axis=1)
    let mut col_sum = vec![0u64; k]; // sklearn sum0 (axis=0)
    for i in 0..k {
        for j in 0..k {
            row_sum[i] += confusion[i * k + j];
            col_sum[j] += confusion[i * k + j];
        }
    }
    let mut numerator = 0.0;
    let mut denominator = 0.0;
    for i in 0..k {
        for j in 0..k {
            let d = i.abs_diff(j) as f64;
            let w = d * d;
            numerator += w * confusion[i * k + j] as f64;
            denominator += w * (col_sum[i] as f64 * row_sum[j] as f64 / n);
        }
    }
    if denominator == 0.0 || denominator.is_nan() {
        return f64::NAN;
    }
    1.0 - numerator / denominator
}

/// Ordinal mean absolute error: `(1/N) Σ_i |y_i − ŷ_i|` on grade indices. NaN for empty input.
///
/// # Panics
/// If the slices differ in length.
pub fn ordinal_mae(labels: &[usize], preds: &[usize]) -> f64 {
    assert_eq!(
        labels.len(),
        preds.len(),
        "ordinal_mae: {} labels but {} predictions",
        labels.len(),
        preds.len()
    );
    if labels.is_empty() {
        return f64::NAN;
    }
    let total: u64 = labels.iter().zip(preds).map(|(&y, &p)| y.abs_diff(p) as u64).sum();
    total as f64 / labels.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn undefined_and_exact_cases() {
        // Both raters constant on one grade: Σ W∘E = 0 → NaN (sklearn replace_undefined_by=nan).
        assert!(quadratic_weighted_kappa(&[2, 2, 2], &[2, 2, 2], 5).is_nan());
        assert!(quadratic_weighted_kappa(&[], &[], 5).is_nan());
        // Exact: labels [0, 1], preds [1, 0], K = 2: O = [[0,1],[1,0]], E = [[.5,.5],[.5,.5]] →
        // Σ W∘O = 2, Σ W∘E = 1 → κ = −1.
        assert_eq!(quadratic_weighted_kappa(&[0, 1], &[1, 0], 2), -1.0);
        assert_eq!(ordinal_mae(&[0, 4, 2], &[1, 1, 2]), 4.0 / 3.0);
        assert!(ordinal_mae(&[], &[]).is_nan());
    }

    proptest! {
        #[test]
        fn perfect_agreement_is_one(labels in prop::collection::vec(0usize..6, 2..100)) {
            prop_assume!(labels.iter().any(|&l| l != labels[0]));
            prop_assert_eq!(quadratic_weighted_kappa(&labels, &labels, 6), 1.0);
            prop_assert_eq!(ordinal_mae(&labels, &labels), 0.0);
        }

        #[test]
        fn symmetric_and_at_most_one(pairs in prop::collection::vec((0usize..5, 0usize..5), 2..100)) {
            let (l, p): (Vec<usize>, Vec<usize>) = pairs.into_iter().unzip();
            let q = quadratic_weighted_kappa(&l, &p, 5);
            if !q.is_nan() {
                prop_assert!(q <= 1.0 + 1e-12);
                let r = quadratic_weighted_kappa(&p, &l, 5);
                prop_assert!((q - r).abs() < 1e-12);
            }
        }
    }
}
