//! H-score (Bao et al., ICIP 2019; spec §D2): `tr(pinv(Cov(F)) · Cov(G))` where row `i` of `G` is the
//! mean feature of its class and `Cov` is the unbiased (`N − 1`) covariance, with numpy's
//! `pinv(rcond = 1e-15)` (the paper-faithful form of TLlib `h_score`; NOT google-research's
//! elementwise-product variant, which is a bug relative to the paper). Higher is better.
//!
//! From the shared eigen-decomposition `ZᵀZ = V Λ Vᵀ`: `Cov(F) = ZᵀZ/(N−1)`, `Ḡ = μ`, so
//! `H = Σ_c n_c/(N−1) · Σ_j (v_jᵀ(m_c − μ))² · pinv(λ_j/(N−1))`.

use crate::linalg::{pinv_spectrum, project};
use crate::{ClassStats, Covariance};

/// numpy's default `rcond` in the H-score references.
pub const HSCORE_RCOND: f64 = 1e-15;

/// `tr(pinv(A) · Cov(G))` for `A` with eigenvalues `values` (eigenvectors of `cov`), Cov(G) from the
/// class means; `scale` multiplies Cov(G).
pub(crate) fn trace_pinv_between(stats: &ClassStats, cov: &Covariance, values: &[f64], rcond: f64) -> f64 {
    let inv = pinv_spectrum(values, rcond);
    let denom = (stats.n as f64 - 1.0).max(1.0);
    let mut h = 0.0;
    for c in stats.present() {
        let p = project(&cov.eig.vectors, &stats.centred_mean(c));
        let q: f64 = p.iter().zip(&inv).map(|(p, i)| p * p * i).sum();
        h += stats.counts[c] as f64 / denom * q;
    }
    h
}

/// H-score with `rcond` for the pseudo-inverse.
pub fn hscore(stats: &ClassStats, cov: &Covariance, rcond: f64) -> f64 {
    let denom = (stats.n as f64 - 1.0).max(1.0);
    let values: Vec<f64> = cov.eig.values.iter().map(|v| v / denom).collect();
    trace_pinv_between(stats, cov, &values, rcond)
}
