//! Per-sample confidence scores for selective prediction and shift detection. Higher always means
//! more confident (more in-distribution); torch-uncertainty's `ood_criteria.py` uses the negated
//! values as OOD scores (`MaxSoftmaxCriterion` = −MSP, `MaxLogitCriterion` = −max z,
//! `EnergyCriterion` = −logsumexp z, `EntropyCriterion` = H(p)).
//!
//! - `msp`: `max_k p_k` (Hendrycks & Gimpel 2017);
//! - `max-logit`: `max_k z_k` (needs logits);
//! - `energy`: the negative free energy `logsumexp_k z_k` at temperature 1 (Liu et al. 2020; needs
//!   logits), computed max-subtracted;
//! - `entropy`: the negative Shannon entropy `Σ_k p_k ln p_k` (`0 ln 0 = 0`, torch `special.entr`);
//! - `margin`: the gap between the two largest probabilities `p_(1) − p_(2)`.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::MetricsError;

/// A confidence score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfidenceScore {
    Msp,
    MaxLogit,
    Energy,
    Entropy,
    Margin,
}

impl ConfidenceScore {
    /// Every score, in a fixed order.
    pub const ALL: [ConfidenceScore; 5] = [
        ConfidenceScore::Msp,
        ConfidenceScore::MaxLogit,
        ConfidenceScore::Energy,
        ConfidenceScore::Entropy,
        ConfidenceScore::Margin,
    ];

    /// The name used by `FromStr`, `Display` and serde.
    pub fn name(self) -> &'static str {
        match self {
            ConfidenceScore::Msp => "msp",
            ConfidenceScore::MaxLogit => "max-logit",
            ConfidenceScore::Energy => "energy",
            ConfidenceScore::Entropy => "entropy",
            ConfidenceScore::Margin => "margin",
        }
    }

    /// Whether the score is a function of the logits (not of the probabilities alone).
    pub fn needs_logits(self) -> bool {
        matches!(self, ConfidenceScore::MaxLogit | ConfidenceScore::Energy)
    }

    /// The score of every row. `probs` is a validated probability matrix with `k` columns; `logits`
    /// (same shape) is required by `max-logit` and `energy`.
    ///
    /// # Errors
    /// A logit-based score without logits, a shape mismatch, or a non-finite logit.
    pub fn scores(self, probs: &[f64], logits: Option<&[f64]>, k: usize) -> Result<Vec<f64>, MetricsError> {
        if k == 0 || !probs.len().is_multiple_of(k) {
            return Err(MetricsError::Shape {
                what: format!("{} values do not form rows of {k} columns", probs.len()),
            });
        }
        let z = if self.needs_logits() {
            let z = logits.ok_or_else(|| {
                MetricsError::InvalidArgument(format!(
                    "the {self} confidence score needs logits; the predictions hold probabilities only"
                ))
            })?;
            if z.len() != probs.len() {
                return Err(MetricsError::Shape {
                    what: format!("{} logits for {} probabilities", z.len(), probs.len()),
                });
            }
            crate::input::validate_finite(z, k)?;
            z
        } else {
            probs
        };
        Ok(match self {
            ConfidenceScore::Msp => probs.chunks_exact(k).map(|r| crate::ece::argmax(r).1).collect(),
            ConfidenceScore::MaxLogit => z.chunks_exact(k).map(|r| crate::ece::argmax(r).1).collect(),
            ConfidenceScore::Energy => z
                .chunks_exact(k)
                .map(|r| {
                    let max = crate::ece::argmax(r).1;
                    max + r.iter().map(|v| (v - max).exp()).sum::<f64>().ln()
                })
                .collect(),
            ConfidenceScore::Entropy => probs
                .chunks_exact(k)
                .map(|r| r.iter().map(|&p| if p > 0.0 { p * p.ln() } else { 0.0 }).sum())
                .collect(),
            ConfidenceScore::Margin => probs
                .chunks_exact(k)
                .map(|r| {
                    let (mut first, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
                    for &p in r {
                        if p > first {
                            second = first;
                            first = p;
                        } else if p > second {
                            second = p;
                        }
                    }
                    if k == 1 { first } else { first - second }
                })
                .collect(),
        })
    }
}

impl fmt::Display for ConfidenceScore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ConfidenceScore {
    type Err = MetricsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ConfidenceScore::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
            MetricsError::InvalidArgument(format!(
                "unknown confidence score {s:?}: expected one of msp, max-logit, energy, entropy, margin"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_of_a_small_matrix() {
        let z = [2.0f64, 0.0, 0.0, 1.0, 1.0, -1.0];
        let p = crate::input::softmax_rows(&z, 3);
        let msp = ConfidenceScore::Msp.scores(&p, None, 3).unwrap();
        assert_eq!(msp, vec![p[0], p[3]]);
        let ml = ConfidenceScore::MaxLogit.scores(&p, Some(&z), 3).unwrap();
        assert_eq!(ml, vec![2.0, 1.0]);
        let e = ConfidenceScore::Energy.scores(&p, Some(&z), 3).unwrap();
        assert!((e[0] - (2f64.exp() + 2.0).ln()).abs() < 1e-14);
        let h = ConfidenceScore::Entropy.scores(&[1.0, 0.0, 0.5, 0.5], None, 2).unwrap();
        assert_eq!(h[0], 0.0);
        assert!((h[1] + 2f64.ln()).abs() < 1e-15);
        let m = ConfidenceScore::Margin.scores(&[0.5, 0.5, 0.0, 0.7, 0.2, 0.1], None, 3).unwrap();
        assert_eq!(m[0], 0.0);
        assert!((m[1] - 0.5).abs() < 1e-15);
        let err = ConfidenceScore::Energy.scores(&p, None, 3).unwrap_err();
        assert!(err.to_string().contains("needs logits"), "{err}");
        assert_eq!("max-logit".parse::<ConfidenceScore>().unwrap(), ConfidenceScore::MaxLogit);
        assert!("msp2".parse::<ConfidenceScore>().is_err());
    }
}
