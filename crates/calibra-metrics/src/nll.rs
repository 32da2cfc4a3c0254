//! Negative log-likelihood from logits (exact log-softmax) or from probabilities (sklearn clipping)
//! (spec §C7).

use crate::MetricsError;
use crate::input::{validate_finite, validate_labels};

/// Clipping constant of sklearn `log_loss` for f64 input: `finfo(float64).eps`.
pub const LOG_LOSS_EPS: f64 = f64::EPSILON;

/// Mean NLL from logits: `(1/N) Σ_i −log_softmax(z_i)_{y_i}`, with the max-subtracted log-sum-exp
/// (never `log(softmax)`), so arbitrarily large logits are exact. No allocation per row.
///
/// # Errors
/// Non-finite logits, malformed labels, or no rows.
pub fn nll_from_logits(logits: &[f64], k: usize, labels: &[usize]) -> Result<f64, MetricsError> {
    let n = validate_finite(logits, k)?;
    validate_labels(labels, n, k)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    let total: f64 = logits
        .chunks_exact(k)
        .zip(labels)
        .map(|(row, &y)| {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lse = row.iter().map(|v| (v - max).exp()).sum::<f64>().ln() + max;
            lse - row[y]
        })
        .sum();
    Ok(total / n as f64)
}

/// Mean NLL from probabilities as sklearn `log_loss(y, P, labels=range(K))`: every probability is
/// clipped to `[ε, 1 − ε]`, `ε = f64::EPSILON` ([`LOG_LOSS_EPS`]), before the log, so an exact 0 for
/// the true class costs `−ln ε ≈ 36.04` nats instead of infinity. Rows are not renormalised after
/// clipping (sklearn ≥ 1.5 behaviour).
///
/// # Errors
/// Malformed probabilities (rows must sum to 1) or labels, or no rows.
pub fn nll_from_probabilities(probs: &[f64], k: usize, labels: &[usize]) -> Result<f64, MetricsError> {
    let n = crate::ece::validate_classification(probs, k, labels)?;
    let total: f64 = probs.chunks_exact(k).zip(labels).map(|(row, &y)| -clip(row[y]).ln()).sum();
    Ok(total / n as f64)
}

#[inline]
fn clip(p: f64) -> f64 {
    p.clamp(LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
}

/// Binary NLL (log loss) of positive-class probabilities, with the same clipping as
/// [`nll_from_probabilities`]: `(1/N) Σ_i −[y_i ln clip(p_i) + (1 − y_i) ln(1 − clip(p_i))]`
/// (sklearn `log_loss(y, p)` with a 1-D `p`, which expands it to `[1 − p, p]` and clips both columns:
/// `clip(1 − p)` is used for negatives, identical to `1 − clip(p)` up to rounding).
///
/// NaN for empty input; NaN inputs propagate.
///
/// # Panics
/// If `pos_prob` and `targets` differ in length.
pub fn binary_nll(pos_prob: &[f64], targets: &[bool]) -> f64 {
    assert_eq!(
        pos_prob.len(),
        targets.len(),
        "binary_nll: {} probabilities but {} targets",
        pos_prob.len(),
        targets.len()
    );
    if pos_prob.is_empty() {
        return f64::NAN;
    }
    let total: f64 =
        pos_prob.iter().zip(targets).map(|(&p, &t)| -(if t { clip(p) } else { clip(1.0 - p) }).ln()).sum();
    total / pos_prob.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ece::tests::prob_matrix;
    use crate::input::{log_softmax_rows, softmax_rows};
    use proptest::prelude::*;

    #[test]
    fn clipping_and_exact_cases() {
        // An exact zero for the true class costs −ln(eps); an exact one costs −ln(1 − eps).
        assert_eq!(nll_from_probabilities(&[1.0, 0.0], 2, &[1]).unwrap(), -f64::EPSILON.ln());
        assert_eq!(nll_from_probabilities(&[1.0, 0.0], 2, &[0]).unwrap(), -(1.0 - f64::EPSILON).ln());
        assert_eq!(binary_nll(&[0.0], &[true]), -f64::EPSILON.ln());
        assert_eq!(binary_nll(&[0.0], &[false]), -(1.0 - f64::EPSILON).ln());
        assert!(binary_nll(&[], &[]).is_nan());
        // Equal logits: NLL = ln K exactly as computed by ln(K · e^0).
        assert_eq!(nll_from_logits(&[0.0, 0.0, 0.0, 0.0], 4, &[2]).unwrap(), 4.0f64.ln());
        // Huge logits stay finite and exact.
        assert_eq!(nll_from_logits(&[1000.0, 0.0], 2, &[0]).unwrap(), (1.0 + (-1000.0f64).exp()).ln());
        assert!(matches!(
            nll_from_logits(&[f64::INFINITY, 0.0], 2, &[0]),
            Err(MetricsError::NonFinite { .. })
        ));
        assert_eq!(nll_from_logits(&[], 2, &[]), Err(MetricsError::Empty));
    }

    proptest! {
        #[test]
        fn logits_agree_with_log_softmax_and_probabilities(
            (k, probs, labels) in prob_matrix(6, 60),
            scale in 0.1f64..3.0,
        ) {
            let logits: Vec<f64> = probs.iter().map(|p| p.ln() * scale).collect();
            let n = labels.len() as f64;
            let lp = log_softmax_rows(&logits, k);
            let direct: f64 = lp.chunks_exact(k).zip(&labels).map(|(r, &y)| -r[y]).sum::<f64>() / n;
            let from_logits = nll_from_logits(&logits, k, &labels).unwrap();
            prop_assert!((from_logits - direct).abs() < 1e-12 * (1.0 + direct));
            prop_assert!(from_logits >= 0.0);
            // Away from the clip, the probability path equals −mean ln p.
            let p = softmax_rows(&logits, k);
            let from_probs = nll_from_probabilities(&p, k, &labels).unwrap();
            prop_assert!((from_probs - from_logits).abs() < 1e-9 * (1.0 + from_logits));
        }
    }
}
