//! The centred Gram matrix `ZᵀZ` (`Z = F − μ`), its eigen-decomposition, and optionally each class's
//! TransRate coding rate: one pass over the data that LogME, both H-scores, GBC's and NLEEP's PCA,
//! TransRate and the participation ratio all reuse.
//!
//! `ZᵀZ` is accumulated as `Σ_c Z_cᵀ Z_c` over the classes (rayon over fixed groups of classes,
//! summed in class order), so the per-class Grams that TransRate needs cost nothing extra and the
//! result is bit-identical at any thread count.

use faer::Mat;
use rayon::prelude::*;

use crate::linalg::{SymEig, gram, logdet_spd, row_gram, sym_eig};
use crate::{ClassStats, Features, TransferError};

/// Classes processed together (fixed, so the summation order never depends on the thread count).
const CLASS_GROUP: usize = 4;

/// One class's part of the within-class scatter: its centred Gram matrix and its coding rate
/// (`None` for a class without samples).
type ClassScatter = (Option<Mat<f64>>, Option<f64>);

/// Centred second moments of a feature matrix.
pub struct Covariance {
    /// `ZᵀZ` (not divided by anything).
    pub scatter: Mat<f64>,
    /// Eigen-decomposition of `scatter`, eigenvalues ascending.
    pub(crate) eig: SymEig,
    /// Per class, `½ ln det(I + Z_cᵀZ_c / (n_c ε))` (TransRate's coding rate); `None` for an absent
    /// class or when not requested.
    pub class_rates: Option<Vec<Option<f64>>>,
}

impl Covariance {
    /// `rate_eps`: compute each class's coding rate with this ε (TransRate) as well.
    pub fn new(
        features: &Features,
        stats: &ClassStats,
        rate_eps: Option<f64>,
    ) -> Result<Self, TransferError> {
        let d = stats.d;
        let mut scatter = Mat::<f64>::zeros(d, d);
        let mut rates = Vec::with_capacity(stats.num_classes);
        let classes: Vec<usize> = (0..stats.num_classes).collect();
        for group in classes.chunks(CLASS_GROUP) {
            let parts: Vec<Result<ClassScatter, TransferError>> = group
                .par_iter()
                .map(|&c| {
                    let idx = &stats.members[c];
                    if idx.is_empty() {
                        return Ok((None, None));
                    }
                    let z = stats.centred_rows(features, idx);
                    let g = gram(&z, idx.len(), d);
                    let rate = match rate_eps {
                        Some(eps) => Some(coding_rate(&z, idx.len(), d, Some(&g), eps)?),
                        None => None,
                    };
                    Ok((Some(g), rate))
                })
                .collect();
            for part in parts {
                let (g, rate) = part?;
                if let Some(g) = g {
                    scatter += &g;
                }
                rates.push(rate);
            }
        }
        let eig = sym_eig(&scatter, "covariance")?;
        Ok(Self { scatter, eig, class_rates: rate_eps.map(|_| rates) })
    }

    /// Eigenvalues of the scatter, clipped at 0, ascending.
    pub fn clipped_values(&self) -> Vec<f64> {
        self.eig.values.iter().map(|v| v.max(0.0)).collect()
    }
}

/// `½ ln det(I_d + ZᵀZ / (n ε))` for row-major `z` (`n × d`); uses the `n × n` form
/// `I_n + Z Zᵀ / (n ε)` (same determinant) when `n < d`. `g` is `ZᵀZ` when already computed.
pub(crate) fn coding_rate(
    z: &[f64],
    n: usize,
    d: usize,
    g: Option<&Mat<f64>>,
    eps: f64,
) -> Result<f64, TransferError> {
    let scale = 1.0 / (n as f64 * eps);
    let mut m = if n < d {
        row_gram(z, n, d)
    } else {
        match g {
            Some(g) => g.clone(),
            None => gram(z, n, d),
        }
    };
    let k = m.nrows();
    for j in 0..k {
        for i in 0..k {
            m[(i, j)] *= scale;
        }
        m[(j, j)] += 1.0;
    }
    Ok(0.5 * logdet_spd(&m, "TransRate coding rate")?)
}
