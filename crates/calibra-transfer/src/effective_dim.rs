//! Effective dimensionality as the participation ratio of the covariance spectrum (spec §D5; seed 001
//! §4.4 "C": covariance-proportional eigenvalues, no PCA reduction):
//! `PR = (Σ λ)² / Σ λ²` ∈ `[1, rank]`, eigenvalues clipped at 0. Scale-invariant.
//! Undefined (`None`) when every feature is constant.

use crate::Covariance;

pub fn participation_ratio(cov: &Covariance) -> Option<f64> {
    let values = cov.clipped_values();
    let s: f64 = values.iter().sum();
    let s2: f64 = values.iter().map(|v| v * v).sum();
    if s <= 0.0 || s2 <= 0.0 { None } else { Some(s * s / s2) }
}
