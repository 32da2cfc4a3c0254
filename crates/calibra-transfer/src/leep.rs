//! LEEP (Nguyen et al., ICML 2020; spec §D4), as `google-research stable_transfer/transferability/
//! leep.py::get_leep_score`, over any posterior matrix θ (`N × Z`, rows of a source classifier's
//! probabilities, or NLEEP's Gaussian-mixture responsibilities):
//!
//! ```text
//! P(y, z) ∝ Σ_i θ_iz 1[y_i = y];   P(y | z) = P(y, z) / Σ_y P(y, z)   (0 when the column is empty)
//! EEP_i = Σ_z θ_iz P(y_i | z);     LEEP = mean_i ln EEP_i             (EEP_i = 0 → −ln C)
//! ```
//!
//! `C` = largest label + 1. Higher (closer to 0) is better.

use crate::TransferError;

/// LEEP of labels `y` under posteriors `theta` (row-major, `z` columns).
pub fn leep(theta: &[f64], z: usize, y: &[usize]) -> Result<f64, TransferError> {
    if z == 0 || theta.len() != y.len() * z {
        return Err(TransferError::BadPosterior {
            row: 0,
            why: format!("{} values for {} rows × {z} columns", theta.len(), y.len()),
        });
    }
    if let Some(i) = theta.iter().position(|v| !v.is_finite() || *v < 0.0) {
        return Err(TransferError::BadPosterior {
            row: i / z,
            why: format!("column {}: {} is not a finite non-negative probability", i % z, theta[i]),
        });
    }
    let c = y.iter().max().map_or(0, |m| m + 1);
    let n = y.len();
    // occ[z][y]
    let mut occ = vec![0.0; z * c];
    for (i, &yi) in y.iter().enumerate() {
        for k in 0..z {
            occ[k * c + yi] += theta[i * z + k];
        }
    }
    let mut cond = vec![0.0; z * c];
    for k in 0..z {
        let s: f64 = occ[k * c..(k + 1) * c].iter().sum();
        if s != 0.0 {
            for j in 0..c {
                cond[k * c + j] = occ[k * c + j] / s;
            }
        }
    }
    let mut total = 0.0;
    for (i, &yi) in y.iter().enumerate() {
        let eep: f64 = (0..z).map(|k| theta[i * z + k] * cond[k * c + yi]).sum();
        total += if eep > 0.0 { eep.ln() } else { -(c as f64).ln() };
    }
    Ok(total / n as f64)
}
