//! Macro-averaged F1 over the classes present in labels ∪ predictions (sklearn default).

/// Macro F1 as sklearn `f1_score(labels, preds, average="macro")` with its default `labels=None`:
/// the average runs over the classes that occur in `labels ∪ preds` (not over all `k`), and per class
/// `F1_c = 2·TP_c / (2·TP_c + FP_c + FN_c)` (sklearn's confusion-count form). A present class always has
/// a non-zero denominator, so sklearn's `zero_division` (→ 0) never applies. `k` only sizes the counts.
///
/// Returns NaN for empty input (no class present).
///
/// # Panics
/// If the slices differ in length or a label / prediction is `≥ k`.
pub fn macro_f1(labels: &[usize], preds: &[usize], k: usize) -> f64 {
    assert_eq!(
        labels.len(),
        preds.len(),
        "macro_f1: {} labels but {} predictions",
        labels.len(),
        preds.len()
    );
    let mut tp = vec![0usize; k];
    let mut true_count = vec![0usize; k];
    let mut pred_count = vec![0usize; k];
    for (row, (&y, &p)) in labels.iter().zip(preds).enumerate() {
        assert!(
            y < k && p < k,
            "macro_f1: row {row}: label {y} / prediction {p} out of range for {k} classes"
        );
        true_count[y] += 1;
        pred_count[p] += 1;
        if y == p {
            tp[y] += 1;
        }
    }
    let (sum, present) = (0..k)
        .filter(|&c| true_count[c] + pred_count[c] > 0)
        .map(|c| 2.0 * tp[c] as f64 / (true_count[c] + pred_count[c]) as f64)
        .fold((0.0, 0usize), |(s, n), f| (s + f, n + 1));
    if present == 0 { f64::NAN } else { sum / present as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_cases() {
        // Exact by construction: perfect predictions → 1; class 3 never occurs and is not averaged.
        assert_eq!(macro_f1(&[0, 1, 2, 1], &[0, 1, 2, 1], 4), 1.0);
        // labels [0,0,1,1], preds [0,1,1,1]: F1_0 = 2/3, F1_1 = 4/5 → mean 11/15 (dyadic-free: tolerance).
        assert!((macro_f1(&[0, 0, 1, 1], &[0, 1, 1, 1], 2) - 11.0 / 15.0).abs() < 1e-15);
        // A class only predicted (never a label) is present with F1 0: labels [0,0], preds [0,1] →
        // F1_0 = 2/3, F1_1 = 0 → 1/3.
        assert!((macro_f1(&[0, 0], &[0, 1], 3) - 1.0 / 3.0).abs() < 1e-15);
        assert!(macro_f1(&[], &[], 3).is_nan());
    }

    proptest! {
        #[test]
        fn in_unit_interval_and_symmetric(pairs in prop::collection::vec((0usize..5, 0usize..5), 1..100)) {
            let (l, p): (Vec<usize>, Vec<usize>) = pairs.into_iter().unzip();
            let f = macro_f1(&l, &p, 5);
            prop_assert!((0.0..=1.0).contains(&f));
            // F1 per class is symmetric in (labels, preds), and so is the set of present classes.
            prop_assert!((f - macro_f1(&p, &l, 5)).abs() < 1e-15);
        }
    }
}
