//! TransRate (Huang et al., ICML 2022), as TLlib `tllib/ranking/transrate.py::transrate` with
//! `ε = 1e-4`: with `Z = F − μ`,
//!
//! ```text
//! R(Z) = ½ ln det(I + ZᵀZ / (n ε));   TransRate = R(Z) − (1/C) Σ_{c<C} R(Z_c)
//! ```
//!
//! where `Z_c` are the centred rows of class `c` (not re-centred) and `C` = largest label + 1.
//! Undefined (the reference divides by zero) when a class in `0..C` has no sample. Higher is better.

use crate::{ClassStats, Covariance};

/// TLlib's default distortion.
pub const TRANSRATE_EPS: f64 = 1e-4;

/// TransRate from a covariance built with `rate_eps = Some(eps)`; `None` if a class is absent.
pub fn transrate(stats: &ClassStats, cov: &Covariance, eps: f64) -> Option<f64> {
    let rates = cov.class_rates.as_ref()?;
    let scale = 1.0 / (stats.n as f64 * eps);
    let rz = 0.5 * cov.clipped_values().iter().map(|v| (v * scale).ln_1p()).sum::<f64>();
    let mut rzy = 0.0;
    for r in rates {
        rzy += (*r)?;
    }
    Some(rz - rzy / stats.num_classes as f64)
}
