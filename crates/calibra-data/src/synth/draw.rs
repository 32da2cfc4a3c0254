//! The random draws every suite shares: a categorical index, a clamped normal, and the case metadata.

use crate::metadata::{Metadata, Sex};

/// Draws an index from unnormalised weights.
pub(super) fn categorical<R: rand::Rng>(rng: &mut R, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}

/// A normal draw with mean and standard deviation, clamped to `[lo, hi]`.
pub(super) fn normal_clamped<R: rand::Rng>(rng: &mut R, mean: f64, sd: f64, lo: f64, hi: f64) -> f64 {
    (mean + sd * crate::rng::standard_normal(rng)).clamp(lo, hi)
}

/// The metadata every synthetic case carries: age, sex, acquisition quality (rounded to 3 decimals,
/// as written to manifests) and the acquisition site.
pub(super) fn case_metadata(age: f64, sex: Sex, quality: f64, site: &str) -> Metadata {
    Metadata {
        age: Some(age),
        sex: Some(sex),
        quality: Some((quality * 1000.0).round() / 1000.0),
        site: Some(site.into()),
        ..Metadata::default()
    }
}
