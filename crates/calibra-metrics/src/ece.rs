//! Top-label ECE / MCE and binary positive-class ECE on equal-width bins (spec §C2, §C3).

use crate::binning::{BinAccumulator, Binning, expected_calibration_error, maximum_calibration_error};
use crate::input::{validate_labels, validate_probabilities};
use crate::{MetricsError, ReliabilityBin};

/// Validates a probability matrix, its labels and `n_bins`; returns the number of rows (≥ 1).
pub(crate) fn validate_classification(
    probs: &[f64],
    k: usize,
    labels: &[usize],
) -> Result<usize, MetricsError> {
    let n = validate_probabilities(probs, k)?;
    validate_labels(labels, n, k)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    Ok(n)
}

/// Index and value of the row maximum; ties go to the lowest index (numpy `argmax`). Written so the
/// compiler can use conditional moves (random rows make a branchy argmax mispredict).
#[inline]
pub(crate) fn argmax(row: &[f64]) -> (usize, f64) {
    let mut best = 0;
    let mut best_value = row[0];
    for (j, &v) in row.iter().enumerate().skip(1) {
        let better = v > best_value;
        best = if better { j } else { best };
        best_value = if better { v } else { best_value };
    }
    (best, best_value)
}

pub(crate) fn validate_n_bins(n_bins: usize) -> Result<(), MetricsError> {
    if n_bins == 0 {
        return Err(MetricsError::InvalidArgument("the number of bins must be at least 1".into()));
    }
    Ok(())
}

/// Reliability bins of the top-label confidence `conf_i = max_k p_ik` against
/// `correct_i = 1[argmax_k p_ik = y_i]` (argmax ties → lowest index), one pass, no allocation per row.
///
/// # Errors
/// Malformed probabilities or labels, no rows, or `n_bins == 0`.
pub fn top_label_reliability_bins(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    n_bins: usize,
    binning: Binning,
) -> Result<Vec<ReliabilityBin>, MetricsError> {
    validate_classification(probs, k, labels)?;
    validate_n_bins(n_bins)?;
    let mut acc = BinAccumulator::new(n_bins, binning);
    for (row, &y) in probs.chunks_exact(k).zip(labels) {
        let (best, conf) = argmax(row);
        acc.add(conf, if best == y { 1.0 } else { 0.0 });
    }
    Ok(acc.bins())
}

/// Top-label expected calibration error (Guo et al. 2017), equal-width bins:
///
/// `ECE = Σ_b (n_b / N) · |acc_b − conf_b|`, `conf_i = max_k p_ik`, `correct_i = 1[argmax p_i = y_i]`,
/// empty bins contribute 0. The literature default is `n_bins = 15`, `Binning::RightClosed`.
/// Parity: torchmetrics `multiclass_calibration_error(norm="l1")` with `Binning::Torchmetrics` (which
/// computes in float32 internally, ~1e-7), netcal `ECE` with `Binning::LeftClosed` (when netcal is in
/// multiclass mode, i.e. more than two distinct labels). For K = 2 this is NOT the positive-class ECE:
/// see [`ece_binary_positive`].
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, no rows, or `n_bins == 0`.
pub fn ece_top_label(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    n_bins: usize,
    binning: Binning,
) -> Result<f64, MetricsError> {
    let bins = top_label_reliability_bins(probs, k, labels, n_bins, binning)?;
    Ok(expected_calibration_error(&bins, labels.len()))
}

/// Top-label maximum calibration error: `MCE = max over non-empty bins of |acc_b − conf_b|`
/// (= torchmetrics `norm="max"`, netcal `MCE`), same bins as [`ece_top_label`].
///
/// # Errors
/// As [`ece_top_label`].
pub fn mce_top_label(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    n_bins: usize,
    binning: Binning,
) -> Result<f64, MetricsError> {
    let bins = top_label_reliability_bins(probs, k, labels, n_bins, binning)?;
    Ok(maximum_calibration_error(&bins))
}

/// Positive-class ECE of a binary problem: bins the positive-class probability `p_i` and compares its
/// bin mean with the bin's positive rate (torchmetrics `binary_calibration_error`, netcal binary mode):
/// `Σ_b (n_b / N) · |mean_b y − mean_b p|`.
///
/// Returns NaN for empty input or if any `p_i` is NaN. Values outside [0, 1] are not rejected; they
/// fall into the end bins (see [`Binning`]).
///
/// # Panics
/// If `pos_prob` and `targets` differ in length or `n_bins == 0`.
pub fn ece_binary_positive(pos_prob: &[f64], targets: &[bool], n_bins: usize, binning: Binning) -> f64 {
    assert_eq!(
        pos_prob.len(),
        targets.len(),
        "ece_binary_positive: {} probabilities but {} targets",
        pos_prob.len(),
        targets.len()
    );
    let mut acc = BinAccumulator::new(n_bins, binning);
    for (&p, &t) in pos_prob.iter().zip(targets) {
        acc.add(p, if t { 1.0 } else { 0.0 });
    }
    expected_calibration_error(&acc.bins(), pos_prob.len())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Rows of a K-column probability matrix (normalised positive weights) and labels.
    pub(crate) fn prob_matrix(
        max_k: usize,
        max_n: usize,
    ) -> impl Strategy<Value = (usize, Vec<f64>, Vec<usize>)> {
        (2..=max_k, 1..=max_n).prop_flat_map(|(k, n)| {
            (
                Just(k),
                prop::collection::vec(prop::collection::vec(0.0f64..1.0, k), n),
                prop::collection::vec(0..k, n),
            )
                .prop_map(|(k, rows, labels)| {
                    let mut probs = Vec::with_capacity(rows.len() * k);
                    for row in rows {
                        let s: f64 = row.iter().sum::<f64>() + 1e-3 * k as f64;
                        probs.extend(row.iter().map(|v| (v + 1e-3) / s));
                    }
                    (k, probs, labels)
                })
        })
    }

    #[test]
    fn errors_are_reported() {
        assert_eq!(ece_top_label(&[], 2, &[], 15, Binning::RightClosed), Err(MetricsError::Empty));
        assert!(matches!(
            ece_top_label(&[0.5, 0.5], 2, &[0], 0, Binning::RightClosed),
            Err(MetricsError::InvalidArgument(_))
        ));
        assert!(matches!(
            ece_top_label(&[0.5, 0.5], 2, &[2], 15, Binning::RightClosed),
            Err(MetricsError::LabelOutOfRange { row: 0, .. })
        ));
        assert!(ece_binary_positive(&[], &[], 15, Binning::RightClosed).is_nan());
        assert!(ece_binary_positive(&[f64::NAN], &[true], 15, Binning::RightClosed).is_nan());
    }

    #[test]
    fn top_label_and_positive_class_differ_for_k2() {
        // Exact by construction (dyadic values, B = 4, right-closed).
        // Rows p = [.75, .25] and [.25, .75]: top-label conf is .75 for both (bin 2); the positive-class
        // probabilities .25 and .75 fall in bins 0 and 2.
        let probs = [0.75, 0.25, 0.25, 0.75];
        // labels [0, 1]: both top-label predictions correct → |1 − .75| = .25; positive class: bin 0 has
        // p .25, y 0 (gap .25), bin 2 has p .75, y 1 (gap .25) → .25.
        assert_eq!(ece_top_label(&probs, 2, &[0, 1], 4, Binning::RightClosed).unwrap(), 0.25);
        assert_eq!(ece_binary_positive(&[0.25, 0.75], &[false, true], 4, Binning::RightClosed), 0.25);
        // labels [1, 1]: top-label acc .5 at conf .75 → .25; positive class: bin 0 p .25 vs y 1 (gap .75),
        // bin 2 p .75 vs y 1 (gap .25), each weight 1/2 → .5.
        assert_eq!(ece_top_label(&probs, 2, &[1, 1], 4, Binning::RightClosed).unwrap(), 0.25);
        assert_eq!(ece_binary_positive(&[0.25, 0.75], &[true, true], 4, Binning::RightClosed), 0.5);
    }

    proptest! {
        #[test]
        fn ece_mce_bounded_and_row_permutation_invariant(
            (k, probs, labels) in prob_matrix(6, 120),
            n_bins in 1usize..30,
            seed in any::<u64>(),
        ) {
            let n = labels.len();
            // A deterministic permutation from the seed (Fisher–Yates with a xorshift stream).
            let mut order: Vec<usize> = (0..n).collect();
            let mut s = seed | 1;
            for i in (1..n).rev() {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                order.swap(i, (s % (i as u64 + 1)) as usize);
            }
            let pprobs: Vec<f64> = order.iter().flat_map(|&i| probs[i * k..(i + 1) * k].to_vec()).collect();
            let plabels: Vec<usize> = order.iter().map(|&i| labels[i]).collect();
            for binning in Binning::ALL {
                let e = ece_top_label(&probs, k, &labels, n_bins, binning).unwrap();
                let m = mce_top_label(&probs, k, &labels, n_bins, binning).unwrap();
                prop_assert!((0.0..=1.0).contains(&e) && (0.0..=1.0).contains(&m));
                let pe = ece_top_label(&pprobs, k, &plabels, n_bins, binning).unwrap();
                let pm = mce_top_label(&pprobs, k, &plabels, n_bins, binning).unwrap();
                prop_assert!((e - pe).abs() < 1e-12 && (m - pm).abs() < 1e-12);
                let pos: Vec<f64> = probs.chunks_exact(k).map(|r| r[1]).collect();
                let t: Vec<bool> = labels.iter().map(|&y| y == 1).collect();
                let b = ece_binary_positive(&pos, &t, n_bins, binning);
                prop_assert!((0.0..=1.0).contains(&b));
            }
        }

        #[test]
        fn perfectly_calibrated_construction_has_zero_ece(
            groups in prop::collection::vec(4u32..=8, 1..20),
            n_bins in 1usize..25,
        ) {
            // Each group: 8 rows with p = [a/8, 1 − a/8], a ≥ 4, of which exactly a have label 0 — so
            // conf = a/8 and the group's accuracy is a/8. Dyadic values make every sum exact, and all
            // rows of a group share a bin, so every bin has acc = conf exactly.
            let mut probs = vec![];
            let mut labels = vec![];
            let mut pos = vec![];
            let mut targets = vec![];
            for &a in &groups {
                let c = f64::from(a) / 8.0;
                for r in 0..8 {
                    probs.extend([c, 1.0 - c]);
                    labels.push(usize::from(r >= a));
                    pos.push(c);
                    targets.push(r < a);
                }
            }
            for binning in Binning::ALL {
                prop_assert_eq!(ece_top_label(&probs, 2, &labels, n_bins, binning).unwrap(), 0.0);
                prop_assert_eq!(mce_top_label(&probs, 2, &labels, n_bins, binning).unwrap(), 0.0);
                prop_assert_eq!(ece_binary_positive(&pos, &targets, n_bins, binning), 0.0);
            }
        }
    }
}
