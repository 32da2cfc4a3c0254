//! Split conformal prediction sets on a calibration split, as MAPIE 1.6 computes them
//! (`SplitConformalClassifier(prefit=True)`, `mapie/conformity_scores/sets/{lac,aps,raps,utils,naive}.py`,
//! `mapie/utils.py::_compute_classification_quantile`):
//!
//! - the quantile `q̂` of the `n` calibration scores is `np.quantile(s, ⌈(n+1)(1−α)⌉/n, method="lower")`,
//!   i.e. the `⌈(n+1)(1−α)⌉`-th smallest score (index `⌊(n−1)·level⌋` computed in f64 as numpy does);
//!   `α` must be in (0, 1) and a split with `n < 1/α − 1` (level above 1) is refused (MAPIE is stricter:
//!   it refuses `n < max(1/α, 1/(1−α))`);
//! - [`crate::lac`]: LAC / THR (Sadinle et al. 2019), score `1 − p̂_y`, set `{k : (1 − p̂_k) − q̂ ≤ 1e-8}`;
//! - [`crate::aps`]: APS (Romano et al. 2020), [`crate::raps`]: RAPS (Angelopoulos et al. 2021) with a
//!   given `λ` and `k_reg`. MAPIE always randomises the APS/RAPS calibration scores
//!   (`cumsum − u·p̂_y`, `u ~ U(0, 1)` per row); the set rule then follows `include_last_label`
//!   ([`LastLabel`]: `True` = include, `False` = exclude, `"randomized"`).
//!
//! The uniform draws are inputs (so the golden vectors can feed MAPIE's own draws); [`uniform_draws`]
//! makes them from a seed for the command line. Same seed, same sets, whatever the thread count.
//! Classes are ranked by descending probability with ties to the HIGHER class index (numpy
//! `fliplr(argsort(p))`, whose sort is stable insertion sort for rows of up to 16 classes).
//!
//! Multilabel: LAC per label (each label a two-class problem `[1 − p, p]` with its own quantile on its
//! observed rows); APS and RAPS have no multilabel form and are refused.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::CalibrateError;

/// MAPIE's numerical slack (`mapie/_machine_precision.py::EPSILON`).
pub const EPSILON: f64 = 1e-8;

/// MAPIE's `include_last_label` for APS and RAPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LastLabel {
    /// `True` (MAPIE's default): include the label whose cumulated score first reaches `q̂`.
    #[default]
    Include,
    /// `False`: stop before it (never an empty set).
    Exclude,
    /// `"randomized"`: keep it with the probability that makes coverage exact.
    Randomized,
}

/// A conformal method and its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum ConformalMethod {
    Lac,
    Aps { last_label: LastLabel },
    Raps { last_label: LastLabel, lambda: f64, k_reg: usize },
}

impl ConformalMethod {
    /// The short name (`lac`, `aps`, `raps`).
    pub fn name(self) -> &'static str {
        match self {
            ConformalMethod::Lac => "lac",
            ConformalMethod::Aps { .. } => "aps",
            ConformalMethod::Raps { .. } => "raps",
        }
    }
}

impl fmt::Display for ConformalMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The method names accepted by [`ConformalMethod::parse_name`].
pub const CONFORMAL_METHODS: [&str; 4] = ["lac", "thr", "aps", "raps"];

impl ConformalMethod {
    /// `lac` (or its torch-uncertainty name `thr`), `aps`, `raps`, with the given parameters.
    ///
    /// # Errors
    /// An unknown name, or `λ` negative / not finite.
    pub fn parse_name(
        name: &str,
        last_label: LastLabel,
        lambda: f64,
        k_reg: usize,
    ) -> Result<Self, CalibrateError> {
        match name {
            "lac" | "thr" => Ok(ConformalMethod::Lac),
            "aps" => Ok(ConformalMethod::Aps { last_label }),
            "raps" => {
                if !(lambda >= 0.0 && lambda.is_finite()) {
                    return Err(CalibrateError::InvalidInput(format!(
                        "RAPS λ must be a finite number ≥ 0, got {lambda}"
                    )));
                }
                Ok(ConformalMethod::Raps { last_label, lambda, k_reg })
            }
            other => Err(CalibrateError::InvalidInput(format!(
                "unknown conformal method {other:?}: expected one of {}",
                CONFORMAL_METHODS.join(", ")
            ))),
        }
    }
}

impl FromStr for LastLabel {
    type Err = CalibrateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "include" | "true" => Ok(LastLabel::Include),
            "exclude" | "false" => Ok(LastLabel::Exclude),
            "randomized" | "randomised" => Ok(LastLabel::Randomized),
            other => Err(CalibrateError::InvalidInput(format!(
                "unknown last-label rule {other:?}: expected include, exclude or randomized"
            ))),
        }
    }
}

/// A fitted split-conformal predictor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConformalPredictor {
    pub method: ConformalMethod,
    pub alpha: f64,
    /// Calibration rows the quantile was taken over.
    pub n: usize,
    /// `q̂`.
    pub quantile: f64,
}

/// Refuses `α` outside (0, 1) and calibration splits too small for it; returns the 0-based index of
/// the order statistic numpy's `quantile(..., ⌈(n+1)(1−α)⌉/n, method="lower")` reads.
///
/// # Errors
/// `α ∉ (0, 1)`, or `n < 1/α − 1` (the level would exceed 1).
pub fn quantile_index(n: usize, alpha: f64) -> Result<usize, CalibrateError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(CalibrateError::InvalidInput(format!("α (--alpha) must be in (0, 1), got {alpha}")));
    }
    if n == 0 {
        return Err(CalibrateError::InvalidInput("the calibration split is empty".into()));
    }
    let m = ((n + 1) as f64 * (1.0 - alpha)).ceil();
    if m > n as f64 {
        return Err(CalibrateError::InvalidInput(format!(
            "the calibration split is too small for α = {alpha}: split conformal needs n ≥ 1/α − 1 = {:.4} \
             calibration samples (the ⌈(n+1)(1−α)⌉ = {m}-th smallest score of n = {n} does not exist)",
            1.0 / alpha - 1.0
        )));
    }
    let level = m / n as f64;
    Ok((((n - 1) as f64 * level).floor().max(0.0) as usize).min(n - 1))
}

/// `q̂` of the calibration scores (MAPIE `_compute_classification_quantile`).
///
/// # Errors
/// As [`quantile_index`], or a non-finite score.
pub fn conformal_quantile(scores: &[f64], alpha: f64) -> Result<f64, CalibrateError> {
    let idx = quantile_index(scores.len(), alpha)?;
    if let Some(row) = scores.iter().position(|s| !s.is_finite()) {
        return Err(CalibrateError::InvalidInput(format!(
            "calibration row {row}: conformity score {} is not finite",
            scores[row]
        )));
    }
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(sorted[idx])
}

/// `n` uniform draws in [0, 1) from `seed` (SplitMix64, 53-bit mantissas): deterministic and
/// independent of threads.
pub fn uniform_draws(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
        })
        .collect()
}

/// Class indices of a row by descending probability, ties to the higher index (numpy
/// `fliplr(argsort(p))` with its stable small-array sort).
pub(crate) fn descending_classes(row: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|&a, &b| row[a].total_cmp(&row[b]));
    idx.reverse();
    idx
}

fn validate(probs: &[f64], k: usize, draws: Option<&[f64]>, what: &str) -> Result<usize, CalibrateError> {
    let n = calibra_metrics::input::validate_probabilities(probs, k)
        .map_err(|e| CalibrateError::InvalidInput(format!("{what}: {e}")))?;
    if let Some(u) = draws
        && u.len() != n
    {
        return Err(CalibrateError::InvalidInput(format!("{what}: {} uniform draws for {n} rows", u.len())));
    }
    Ok(n)
}

impl ConformalPredictor {
    /// Fits `method` at level `α` on calibration probabilities (`k` columns, rows summing to 1) and
    /// labels; `draws` (one per row, in [0, 1)) randomise the APS / RAPS scores and are ignored by LAC.
    ///
    /// # Errors
    /// Malformed probabilities or labels, a wrong number of draws, `α ∉ (0, 1)`, or a split with
    /// `n < 1/α − 1`.
    pub fn fit(
        method: ConformalMethod,
        probs: &[f64],
        k: usize,
        labels: &[usize],
        alpha: f64,
        draws: &[f64],
    ) -> Result<Self, CalibrateError> {
        let n = validate(probs, k, Some(draws), "calibration split")?;
        calibra_metrics::input::validate_labels(labels, n, k)
            .map_err(|e| CalibrateError::InvalidInput(format!("calibration split: {e}")))?;
        quantile_index(n, alpha)?;
        let scores: Vec<f64> = match method {
            ConformalMethod::Lac => crate::lac::scores(probs, k, labels),
            ConformalMethod::Aps { .. } => crate::aps::scores(probs, k, labels, draws),
            ConformalMethod::Raps { lambda, k_reg, .. } => {
                crate::raps::scores(probs, k, labels, draws, lambda, k_reg)
            }
        };
        Ok(ConformalPredictor { method, alpha, n, quantile: conformal_quantile(&scores, alpha)? })
    }

    /// The prediction set of every row (sorted class indices); `draws` (one per row) are read only by
    /// the randomised last-label rule.
    ///
    /// # Errors
    /// Malformed probabilities or a wrong number of draws.
    pub fn predict(&self, probs: &[f64], k: usize, draws: &[f64]) -> Result<Vec<Vec<usize>>, CalibrateError> {
        validate(probs, k, Some(draws), "predictions")?;
        Ok(match self.method {
            ConformalMethod::Lac => crate::lac::sets(probs, k, self.quantile),
            ConformalMethod::Aps { last_label } => {
                crate::aps::sets(probs, k, self.quantile, last_label, draws, None)
            }
            ConformalMethod::Raps { last_label, lambda, k_reg } => {
                crate::aps::sets(probs, k, self.quantile, last_label, draws, Some((lambda, k_reg)))
            }
        })
    }
}

/// Per-label LAC for a multilabel table: `probs` row-major `n × l` positive-class probabilities,
/// `targets` with `None` for blank cells. Returns one predictor per label (fitted on its observed
/// rows).
///
/// # Errors
/// A method other than LAC (no multilabel form), probabilities outside [0, 1], or a label whose
/// observed rows are too few for `α`.
pub fn fit_multilabel(
    method: ConformalMethod,
    probs: &[f64],
    l: usize,
    targets: &[Option<bool>],
    alpha: f64,
    label_names: &[String],
) -> Result<Vec<ConformalPredictor>, CalibrateError> {
    if method != ConformalMethod::Lac {
        return Err(CalibrateError::Unsupported {
            method: method.to_string(),
            why: "prediction sets for multilabel predictions are made per label with LAC (--method lac); \
                  APS and RAPS rank mutually exclusive classes and have no multilabel form"
                .into(),
        });
    }
    let n = calibra_metrics::input::validate_unit_interval(probs, l)
        .map_err(|e| CalibrateError::InvalidInput(format!("calibration split: {e}")))?;
    (0..l)
        .map(|j| {
            let (two, y): (Vec<[f64; 2]>, Vec<usize>) = (0..n)
                .filter_map(|i| {
                    targets[i * l + j].map(|t| ([1.0 - probs[i * l + j], probs[i * l + j]], usize::from(t)))
                })
                .unzip();
            let flat: Vec<f64> = two.into_iter().flatten().collect();
            let scores = crate::lac::scores(&flat, 2, &y);
            let name = label_names.get(j).map_or("?", String::as_str);
            let quantile = conformal_quantile(&scores, alpha)
                .map_err(|e| CalibrateError::InvalidInput(format!("label `{name}`: {e}")))?;
            Ok(ConformalPredictor { method, alpha, n: y.len(), quantile })
        })
        .collect()
}

/// Per-label LAC sets of a multilabel table: for each row and label, the subset of {0, 1}.
pub fn predict_multilabel(
    predictors: &[ConformalPredictor],
    probs: &[f64],
    l: usize,
) -> Vec<Vec<Vec<usize>>> {
    probs
        .chunks_exact(l)
        .map(|row| {
            row.iter()
                .zip(predictors)
                .map(|(&p, pred)| crate::lac::sets(&[1.0 - p, p], 2, pred.quantile).remove(0))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_is_the_order_statistic_and_small_splits_are_refused() {
        // n = 9, α = 0.1: ⌈10 · 0.9⌉ = 9 → the largest score.
        let s = [0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6];
        assert_eq!(conformal_quantile(&s, 0.1).unwrap(), 0.9);
        // α = 0.5: ⌈5⌉ = 5 → the 5th smallest.
        assert_eq!(conformal_quantile(&s, 0.5).unwrap(), 0.5);
        let err = conformal_quantile(&s[..8], 0.1).unwrap_err().to_string();
        assert!(err.contains("too small") && err.contains("1/α − 1"), "{err}");
        for bad in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(quantile_index(10, bad).unwrap_err().to_string().contains("(0, 1)"));
        }
    }

    #[test]
    fn draws_are_uniform_and_deterministic() {
        let u = uniform_draws(7, 10_000);
        assert_eq!(u, uniform_draws(7, 10_000));
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = u.iter().sum::<f64>() / u.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn multilabel_needs_lac() {
        let err = fit_multilabel(
            ConformalMethod::Aps { last_label: LastLabel::Include },
            &[0.5],
            1,
            &[Some(true)],
            0.1,
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no multilabel form"), "{err}");
    }

    #[test]
    fn ties_rank_the_higher_class_first() {
        assert_eq!(descending_classes(&[0.25, 0.5, 0.25]), vec![1, 2, 0]);
    }
}
