//! GBC, the Gaussian Bhattacharyya Coefficient (Pándy et al., CVPR 2022; spec §D3), as
//! `google-research stable_transfer/transferability/gbc.py::get_gbc_score`: per present class the
//! mean and population variance per dimension (floored at 1e-4), the Bhattacharyya distance of every
//! ordered pair of distinct classes, `GBC = −Σ_{c1≠c2} exp(−BD(c1, c2))` (≤ 0, higher is better).
//!
//! Spherical (the reference default): each class's variance is the mean of its floored per-dimension
//! variances, and the log terms of BD enter once (the reference's `sum(log(scalar))`), not `D` times.
//! Diagonal: per-dimension variances. Optional PCA (the reference config reduces to 64 components
//! with scikit-learn PCA) is applied when `k ≤ min(N, D)`; otherwise the raw features are used.

use crate::pca::{leading_components, project_rows};
use crate::{ClassStats, Covariance, Features};

/// Variance floor of the reference.
pub const VARIANCE_FLOOR: f64 = 1e-4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GaussianType {
    Spherical,
    Diagonal,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GbcOptions {
    pub gaussian: GaussianType,
    /// Reduce to this many principal components first (the reference configuration uses 64).
    pub pca: Option<usize>,
}

impl Default for GbcOptions {
    fn default() -> Self {
        Self { gaussian: GaussianType::Spherical, pca: Some(64) }
    }
}

/// GBC of `features` under the classes of `stats`; `cov` is needed only when PCA applies.
pub fn gbc(features: &Features, stats: &ClassStats, cov: Option<&Covariance>, options: GbcOptions) -> f64 {
    let (n, d) = (features.n(), features.d());
    let projected = match (options.pca, cov) {
        (Some(k), Some(cov)) if k <= n.min(d) => {
            let comps = leading_components(cov, k);
            Some((project_rows(features, stats, &comps), k))
        }
        _ => None,
    };
    let (rows, dim): (&[f64], usize) = match &projected {
        Some((p, k)) => (p, *k),
        None => (features.data(), d),
    };
    let classes: Vec<usize> = stats.present().collect();
    let gauss: Vec<(Vec<f64>, Vec<f64>)> =
        classes.iter().map(|&c| mean_variance(rows, dim, &stats.members[c], options.gaussian)).collect();
    let mut total = 0.0;
    for (a, (m1, v1)) in gauss.iter().enumerate() {
        for (b, (m2, v2)) in gauss.iter().enumerate() {
            if a != b {
                total += (-bhattacharyya(m1, v1, m2, v2, options.gaussian)).exp();
            }
        }
    }
    -total
}

/// Mean and floored population variance of the rows `idx`; spherical returns one variance.
fn mean_variance(rows: &[f64], dim: usize, idx: &[usize], gaussian: GaussianType) -> (Vec<f64>, Vec<f64>) {
    let k = idx.len() as f64;
    let mut mean = vec![0.0; dim];
    for &i in idx {
        for (m, x) in mean.iter_mut().zip(&rows[i * dim..(i + 1) * dim]) {
            *m += x;
        }
    }
    mean.iter_mut().for_each(|m| *m /= k);
    let mut var = vec![0.0; dim];
    for &i in idx {
        for ((v, x), m) in var.iter_mut().zip(&rows[i * dim..(i + 1) * dim]).zip(&mean) {
            *v += (x - m) * (x - m);
        }
    }
    var.iter_mut().for_each(|v| *v = (*v / k).max(VARIANCE_FLOOR));
    match gaussian {
        GaussianType::Diagonal => (mean, var),
        GaussianType::Spherical => {
            let s = var.iter().sum::<f64>() / dim as f64;
            (mean, vec![s])
        }
    }
}

/// Bhattacharyya distance between two diagonal (or spherical: one-element variance) Gaussians.
fn bhattacharyya(m1: &[f64], v1: &[f64], m2: &[f64], v2: &[f64], gaussian: GaussianType) -> f64 {
    let avg = |j: usize| (v1[j] + v2[j]) / 2.0;
    let first: f64 = match gaussian {
        GaussianType::Spherical => m1.iter().zip(m2).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / avg(0),
        GaussianType::Diagonal => {
            m1.iter().zip(m2).enumerate().map(|(j, (a, b))| (a - b) * (a - b) / avg(j)).sum()
        }
    } / 8.0;
    let mut second = 0.0;
    for j in 0..v1.len() {
        second += avg(j).ln() - 0.5 * v1[j].ln() - 0.5 * v2[j].ln();
    }
    first + 0.5 * second
}
