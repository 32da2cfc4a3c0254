//! NLEEP (Li et al., CVPR 2021 "Ranking neural checkpoints"; spec §D4), as
//! `google-research stable_transfer/transferability/nleep.py::get_nleep_score` with its experiment
//! configuration: PCA keeping 80 % of the variance (scikit-learn `n_components = 0.8`), a
//! full-covariance [`GaussianMixture`] with `5 · C` components (`C` = largest label + 1) and seed 123,
//! its posteriors as θ, then [`leep`]. Higher is better.
//!
//! The mixture is our own seeded EM (scikit-learn's k-means initialisation draws from numpy's random
//! stream, which is not reproduced), so NLEEP agrees with scikit-learn only up to the EM optimum it
//! reaches; LEEP over supplied posteriors is exact.

use crate::gmm::{GaussianMixture, GmmOptions};
use crate::pca::{components_for_variance, leading_components, project_rows};
use crate::{ClassStats, Covariance, Features, TransferError, leep};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NleepOptions {
    /// Fraction of variance the PCA keeps.
    pub variance: f64,
    /// Mixture components per target class.
    pub components_per_class: usize,
    pub seed: u64,
}

impl Default for NleepOptions {
    fn default() -> Self {
        Self { variance: 0.8, components_per_class: 5, seed: 123 }
    }
}

/// NLEEP; `None` when the mixture would have more components than samples.
pub fn nleep(
    features: &Features,
    stats: &ClassStats,
    cov: &Covariance,
    y: &[usize],
    options: NleepOptions,
) -> Result<Option<f64>, TransferError> {
    let components = options.components_per_class * stats.num_classes;
    if components == 0 || components > stats.n {
        return Ok(None);
    }
    let k = components_for_variance(cov, options.variance);
    let comps = leading_components(cov, k);
    let scores = project_rows(features, stats, &comps);
    let gmm =
        GaussianMixture::fit(&scores, stats.n, k, GmmOptions::sklearn_defaults(components, options.seed))?;
    let theta = gmm.predict_proba(&scores, stats.n);
    leep(&theta, components, y).map(Some)
}
