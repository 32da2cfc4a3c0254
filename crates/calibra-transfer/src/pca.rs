//! PCA on the shared covariance, as scikit-learn's `PCA(svd_solver="full")`: components are the
//! eigenvectors of `ZᵀZ` by decreasing eigenvalue, scores are `(F − μ) · components`. Signs are
//! arbitrary (every estimator that uses PCA is invariant to them).

use faer::Mat;
use rayon::prelude::*;

use crate::linalg::mul_row_major;
use crate::{ClassStats, Covariance, Features};

/// Rows per block of the projection (fixed, so results never depend on the thread count).
const BLOCK: usize = 2048;

/// The `k` leading components as columns (`d × k`).
pub fn leading_components(cov: &Covariance, k: usize) -> Mat<f64> {
    let d = cov.eig.values.len();
    Mat::from_fn(d, k, |i, j| cov.eig.vectors[(i, d - 1 - j)])
}

/// Number of components scikit-learn keeps for `n_components = fraction` (0 < fraction < 1):
/// `searchsorted(cumsum(explained_variance_ratio), fraction, side="right") + 1`.
pub fn components_for_variance(cov: &Covariance, fraction: f64) -> usize {
    let values: Vec<f64> = cov.clipped_values().into_iter().rev().collect();
    let total: f64 = values.iter().sum();
    if total <= 0.0 {
        return 1;
    }
    let mut cum = 0.0;
    let mut below = 0;
    for v in &values {
        cum += v / total;
        if cum <= fraction {
            below += 1;
        } else {
            break;
        }
    }
    (below + 1).min(values.len())
}

/// PCA scores of every row on `components` (`d × k`), row-major `n × k`.
pub fn project_rows(features: &Features, stats: &ClassStats, components: &Mat<f64>) -> Vec<f64> {
    let (n, d, k) = (features.n(), features.d(), components.ncols());
    let starts: Vec<usize> = (0..n).step_by(BLOCK).collect();
    let blocks: Vec<Vec<f64>> = starts
        .par_iter()
        .map(|&s| {
            let idx: Vec<usize> = (s..(s + BLOCK).min(n)).collect();
            let z = stats.centred_rows(features, &idx);
            mul_row_major(&z, idx.len(), d, components.as_ref())
        })
        .collect();
    let mut out = Vec::with_capacity(n * k);
    for b in blocks {
        out.extend(b);
    }
    out
}
