//! Validation of score matrices and labels, and the numerically stable softmax / log-softmax.
//!
//! A score matrix is row-major: `scores[i * k + j]` is sample `i`, class `j`.

use crate::MetricsError;

/// Rows of probabilities must sum to 1 within this tolerance.
pub const ROW_SUM_TOLERANCE: f64 = 1e-6;

/// Number of rows of a row-major matrix with `k` columns, checking the length is a multiple of `k`.
pub fn num_rows(matrix: &[f64], k: usize) -> Result<usize, MetricsError> {
    if k == 0 {
        return Err(MetricsError::Shape { what: "a score matrix needs at least one column".into() });
    }
    if !matrix.len().is_multiple_of(k) {
        return Err(MetricsError::Shape {
            what: format!("{} values do not form rows of {k} columns", matrix.len()),
        });
    }
    Ok(matrix.len() / k)
}

/// Every value finite; returns the number of rows.
pub fn validate_finite(matrix: &[f64], k: usize) -> Result<usize, MetricsError> {
    let n = num_rows(matrix, k)?;
    if let Some(pos) = matrix.iter().position(|v| !v.is_finite()) {
        return Err(MetricsError::NonFinite { row: pos / k, col: pos % k, value: matrix[pos] });
    }
    Ok(n)
}

/// Every value finite and in [0, 1], every row summing to 1 within [`ROW_SUM_TOLERANCE`];
/// returns the number of rows. One pass; the error names the first offending row (within a row:
/// a non-finite value first, then a value outside [0, 1], then the row sum).
pub fn validate_probabilities(probs: &[f64], k: usize) -> Result<usize, MetricsError> {
    let n = num_rows(probs, k)?;
    for (row, r) in probs.chunks_exact(k).enumerate() {
        let mut sum = 0.0;
        let mut in_range = true;
        for &v in r {
            sum += v;
            in_range &= (0.0..=1.0).contains(&v);
        }
        // A NaN or infinity makes the sum non-finite, so a valid row costs no extra test.
        if !sum.is_finite() || !in_range {
            if let Some(col) = r.iter().position(|v| !v.is_finite()) {
                return Err(MetricsError::NonFinite { row, col, value: r[col] });
            }
            if let Some(col) = r.iter().position(|v| !(0.0..=1.0).contains(v)) {
                return Err(MetricsError::ProbabilityOutOfRange { row, col, value: r[col] });
            }
        }
        if (sum - 1.0).abs() > ROW_SUM_TOLERANCE {
            return Err(MetricsError::RowSum { row, sum, tolerance: ROW_SUM_TOLERANCE });
        }
    }
    Ok(n)
}

/// Every value finite and in [0, 1] (independent binary probabilities, e.g. multilabel outputs);
/// returns the number of rows.
pub fn validate_unit_interval(probs: &[f64], k: usize) -> Result<usize, MetricsError> {
    let n = validate_finite(probs, k)?;
    if let Some(pos) = probs.iter().position(|v| !(0.0..=1.0).contains(v)) {
        return Err(MetricsError::ProbabilityOutOfRange { row: pos / k, col: pos % k, value: probs[pos] });
    }
    Ok(n)
}

/// Labels: one per row, each in `0..k`.
pub fn validate_labels(labels: &[usize], n: usize, k: usize) -> Result<(), MetricsError> {
    if labels.len() != n {
        return Err(MetricsError::Shape { what: format!("{} labels for {n} rows", labels.len()) });
    }
    if let Some(row) = labels.iter().position(|&l| l >= k) {
        return Err(MetricsError::LabelOutOfRange { row, label: labels[row], num_classes: k });
    }
    Ok(())
}

/// Row-wise max-subtracted softmax of a logit matrix with `k` columns.
pub fn softmax_rows(logits: &[f64], k: usize) -> Vec<f64> {
    let mut out = logits.to_vec();
    for row in out.chunks_exact_mut(k) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for v in row.iter_mut() {
            *v = (*v - max).exp();
            sum += *v;
        }
        for v in row.iter_mut() {
            *v /= sum;
        }
    }
    out
}

/// Row-wise log-softmax (`z - max - ln Σ exp(z - max)`), exact for NLL from logits.
pub fn log_softmax_rows(logits: &[f64], k: usize) -> Vec<f64> {
    let mut out = logits.to_vec();
    for row in out.chunks_exact_mut(k) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = row.iter().map(|v| (v - max).exp()).sum::<f64>().ln() + max;
        for v in row.iter_mut() {
            *v -= lse;
        }
    }
    out
}

/// Top-label confidence and prediction per row; argmax ties go to the lowest index (numpy parity).
pub fn top_label(probs: &[f64], k: usize) -> (Vec<f64>, Vec<usize>) {
    probs
        .chunks_exact(k)
        .map(|row| {
            let mut best = 0;
            for j in 1..k {
                if row[j] > row[best] {
                    best = j;
                }
            }
            (row[best], best)
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_errors_name_the_row() {
        let p = [0.5, 0.5, 0.2, 0.7];
        assert_eq!(
            validate_probabilities(&p, 2),
            Err(MetricsError::RowSum { row: 1, sum: 0.2 + 0.7, tolerance: ROW_SUM_TOLERANCE })
        );
        let p = [0.5, 0.5, f64::NAN, 1.0];
        assert!(matches!(validate_probabilities(&p, 2), Err(MetricsError::NonFinite { row: 1, col: 0, .. })));
        assert!(matches!(validate_probabilities(&[0.5, 0.5, 0.5], 2), Err(MetricsError::Shape { .. })));
        assert!(matches!(
            validate_labels(&[0, 2], 2, 2),
            Err(MetricsError::LabelOutOfRange { row: 1, label: 2, num_classes: 2 })
        ));
    }

    #[test]
    fn softmax_is_stable_and_consistent_with_log_softmax() {
        let z = [1000.0, 1001.0, 999.0, -5.0, 0.0, 5.0];
        let p = softmax_rows(&z, 3);
        let lp = log_softmax_rows(&z, 3);
        for (a, b) in p.iter().zip(&lp) {
            assert!((a.ln() - b).abs() < 1e-12);
        }
        assert_eq!(validate_probabilities(&p, 3), Ok(2));
    }

    #[test]
    fn argmax_ties_take_the_lowest_index() {
        let (conf, pred) = top_label(&[0.4, 0.4, 0.2, 0.1, 0.45, 0.45], 3);
        assert_eq!(pred, vec![0, 1]);
        assert_eq!(conf, vec![0.4, 0.45]);
    }
}
