//! Ledoit–Wolf shrinkage exactly as scikit-learn's `LedoitWolf` / `ledoit_wolf_shrinkage`
//! (scikit-learn 1.9.1, `covariance/_shrunk_covariance.py`): with `X` centred, `n` rows, `p` columns,
//! `S = XᵀX/n`, `μ = tr(S)/p`, `β̃ = Σ_{jk} (X²ᵀX²)_{jk} = Σ_i ‖x_i‖⁴`, `δ̃ = ‖XᵀX‖²_F / n²`:
//!
//! ```text
//! β = (β̃/n − δ̃) / (p n);   δ = (δ̃ − 2 μ tr(S) + p μ²) / p;   β ← min(β, δ);   s = β/δ (0 if β = 0)
//! shrunk covariance = (1 − s) S + s μ I
//! ```

use crate::{ClassStats, Covariance, Features};

/// The shrinkage `s` and the target `μ` of the Ledoit–Wolf estimate of `Cov(F)` (biased, `1/n`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LedoitWolf {
    pub shrinkage: f64,
    pub mu: f64,
}

impl LedoitWolf {
    pub fn new(features: &Features, stats: &ClassStats, cov: &Covariance) -> Self {
        let (n, p) = (stats.n as f64, stats.d as f64);
        let mut beta_t = 0.0;
        for i in 0..stats.n {
            let sq: f64 = features.row(i).iter().zip(&stats.mean).map(|(x, m)| (x - m) * (x - m)).sum();
            beta_t += sq * sq;
        }
        let trace_s = (0..stats.d).map(|j| cov.scatter[(j, j)]).sum::<f64>() / n;
        let mu = trace_s / p;
        let mut frob = 0.0;
        for j in 0..stats.d {
            for i in 0..stats.d {
                frob += cov.scatter[(i, j)] * cov.scatter[(i, j)];
            }
        }
        let delta_t = frob / (n * n);
        let beta = (beta_t / n - delta_t) / (p * n);
        let delta = (delta_t - 2.0 * mu * trace_s + p * mu * mu) / p;
        let beta = beta.min(delta);
        let shrinkage = if beta == 0.0 { 0.0 } else { beta / delta };
        Self { shrinkage, mu }
    }

    /// Eigenvalues of the shrunk covariance (same eigenvectors as `ZᵀZ`).
    pub fn shrunk_values(&self, cov: &Covariance, n: usize) -> Vec<f64> {
        cov.eig
            .values
            .iter()
            .map(|v| (1.0 - self.shrinkage) * v / n as f64 + self.shrinkage * self.mu)
            .collect()
    }
}
