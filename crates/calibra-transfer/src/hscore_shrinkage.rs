//! Shrinkage ("regularised") H-score (Ibrahim et al., NeurIPS 2021 "Newer is not always better"):
//! `tr(pinv(Cov_α(F)) · (1 − α) Cov(G))` with `Cov_α` scikit-learn's Ledoit–Wolf estimate of the
//! centred features (shrinkage α, biased `1/n`) and `Cov(G)` the unbiased covariance of the class-mean
//! matrix, pseudo-inverse with `rcond = 1e-15` — as TLlib's `regularized_h_score`. Higher is better.

use crate::hscore::trace_pinv_between;
use crate::{ClassStats, Covariance, Features, LedoitWolf};

pub fn hscore_shrinkage(features: &Features, stats: &ClassStats, cov: &Covariance, rcond: f64) -> f64 {
    let lw = LedoitWolf::new(features, stats, cov);
    let values = lw.shrunk_values(cov, stats.n);
    (1.0 - lw.shrinkage) * trace_pinv_between(stats, cov, &values, rcond)
}
