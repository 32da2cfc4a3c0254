//! Top-1 accuracy of a probability matrix.

use crate::MetricsError;
use crate::ece::{argmax, validate_classification};

/// Top-1 accuracy: `(1/N) Σ_i 1[argmax_k p_ik = y_i]`, argmax ties → lowest index (numpy parity).
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, or no rows.
pub fn accuracy(probs: &[f64], k: usize, labels: &[usize]) -> Result<f64, MetricsError> {
    let n = validate_classification(probs, k, labels)?;
    let correct = probs.chunks_exact(k).zip(labels).filter(|&(row, &y)| argmax(row).0 == y).count();
    Ok(correct as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_lowest_index() {
        // Exact: row 0 ties → class 0 (correct), row 1 → class 2 (wrong), row 2 argmax 1 (correct).
        let probs = [0.4, 0.4, 0.2, 0.1, 0.2, 0.7, 0.1, 0.8, 0.1];
        assert_eq!(accuracy(&probs, 3, &[0, 1, 1]).unwrap(), 2.0 / 3.0);
        assert_eq!(accuracy(&probs, 3, &[1, 2, 1]).unwrap(), 2.0 / 3.0);
        assert_eq!(accuracy(&[], 3, &[]), Err(MetricsError::Empty));
    }
}
