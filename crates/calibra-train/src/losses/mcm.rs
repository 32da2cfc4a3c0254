//! MCM — multi-class margin regularisation (spec §A6; MVC-Bench
//! `trainers/regularizers.py::margin_mean_var_allclass_loss_explicit`), added to cross-entropy.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Tensor;

use super::cross_entropy::cross_entropy;
use super::{Loss, LossBatch};
use crate::error::TrainError;

/// Which dispersion of the true-vs-rest margins the variance term measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VarianceMode {
    /// Population variance over all `B(K−1)` margins `m_ik`:
    /// `(1/(B(K−1))) Σ_i Σ_{k≠y_i} m_ik² − μ²` (every call site of the reference passes this).
    #[default]
    AllPairs,
    /// Population variance ACROSS the batch of the per-sample mean margins `m̄_i`:
    /// `(1/B) Σ_i (m̄_i − μ)²` (the reference function's own default; NOT a within-sample variance).
    PerSample,
}

impl VarianceMode {
    /// `all_pairs` or `per_sample`.
    pub fn as_str(self) -> &'static str {
        match self {
            VarianceMode::AllPairs => "all_pairs",
            VarianceMode::PerSample => "per_sample",
        }
    }
}

impl fmt::Display for VarianceMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for VarianceMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "all_pairs" => Ok(VarianceMode::AllPairs),
            "per_sample" => Ok(VarianceMode::PerSample),
            other => Err(format!("`all_pairs` or `per_sample`, not `{other}`")),
        }
    }
}

/// Which terms of `R_MCM` are active (the paper's ablations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McmTerms {
    /// `−α·μ + β·Var` (registry name `mcm`).
    Both,
    /// `−α·μ` only (registry name `mcm_mean`).
    MeanOnly,
    /// `β·Var` only (registry name `mcm_var`).
    VarianceOnly,
}

/// `L = CE(z, y) + R_MCM`, `R_MCM = −α·μ + β·Var` with
///
/// ```text
/// m_ik = z_{i,y_i} − z_ik   (k ≠ y_i)          m̄_i = mean_{k≠y_i} m_ik          μ = mean_i m̄_i
/// Var  = all_pairs:  mean_{i,k≠y_i} (m_ik − μ)²   |   per_sample:  mean_i (m̄_i − μ)²
/// ```
///
/// Defaults α = 0.1, β = 0.01, `all_pairs` (spec §A6; §I lists which mode the paper's tables use as
/// open). The all-pairs variance is computed in the two-pass form `mean (m − μ)²`, which equals the
/// reference's `E[m²] − μ²` exactly in real arithmetic and avoids its cancellation. Identity (law of
/// total variance): `all_pairs = per_sample + mean_i Var_k(m_ik)`. Needs `K >= 2`; B = 1 gives
/// `per_sample` variance 0. With unbounded (non-cosine) logits `−α·μ` is unbounded below: the
/// reference applies it to CLIP logits (|m| ≤ 200).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mcm {
    alpha: f64,
    beta: f64,
    variance: VarianceMode,
    terms: McmTerms,
}

impl Mcm {
    /// α and β finite (α, β of inactive terms are ignored and reported as 0).
    pub fn new(alpha: f64, beta: f64, variance: VarianceMode, terms: McmTerms) -> Result<Self, TrainError> {
        let name = Self::name_of(terms);
        for (key, value) in [("alpha", alpha), ("beta", beta)] {
            if !value.is_finite() {
                return Err(TrainError::BadValue {
                    loss: name.into(),
                    key: key.into(),
                    value: value.to_string(),
                    expected: "a finite number".into(),
                });
            }
        }
        let (alpha, beta) = match terms {
            McmTerms::Both => (alpha, beta),
            McmTerms::MeanOnly => (alpha, 0.0),
            McmTerms::VarianceOnly => (0.0, beta),
        };
        Ok(Self { alpha, beta, variance, terms })
    }

    fn name_of(terms: McmTerms) -> &'static str {
        match terms {
            McmTerms::Both => "mcm",
            McmTerms::MeanOnly => "mcm_mean",
            McmTerms::VarianceOnly => "mcm_var",
        }
    }

    /// α (0 for `mcm_var`).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// β (0 for `mcm_mean`).
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The variance mode.
    pub fn variance(&self) -> VarianceMode {
        self.variance
    }

    /// The regulariser `R_MCM` alone (without the cross-entropy), as a `[1]` tensor.
    pub fn regulariser(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let name = Self::name_of(self.terms);
        batch.require_classes(name, 2)?;
        let (n, k) = (batch.n(), batch.k());
        let one_hot = batch.one_hot(name)?;
        let off = one_hot.clone().neg().add_scalar(1.0);
        let logits = batch.logits().clone();
        let z_true = logits.clone().mul(one_hot).sum_dim(1); // [N, 1]
        // m_ik for k ≠ y_i, 0 at the target entry.
        let margins = z_true.sub(logits).mul(off.clone()); // [N, K]
        let mbar = margins.clone().sum_dim(1).mul_scalar(1.0 / (k - 1) as f64); // [N, 1]
        let mu = mbar.clone().mean(); // [1]
        let mu2: Tensor<2> = mu.clone().unsqueeze(); // [1, 1]
        let var = match self.variance {
            VarianceMode::PerSample => mbar.sub(mu2).square().mean(),
            VarianceMode::AllPairs => {
                let centred = margins.sub(mu2).mul(off);
                centred.square().sum().mul_scalar(1.0 / (n * (k - 1)) as f64)
            }
        };
        Ok(mu.mul_scalar(-self.alpha).add(var.mul_scalar(self.beta)))
    }
}

impl Loss for Mcm {
    fn name(&self) -> String {
        Self::name_of(self.terms).into()
    }

    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError> {
        let reg = self.regulariser(batch)?;
        let ce = cross_entropy(batch.logits().clone(), batch.one_hot(Self::name_of(self.terms))?);
        Ok(ce.add(reg))
    }
}
