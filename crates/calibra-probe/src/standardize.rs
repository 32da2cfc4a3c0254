//! Feature standardisation with training statistics (sklearn `StandardScaler()`).

use crate::error::ProbeError;
use crate::features::Features;
use serde::{Deserialize, Serialize};

/// Per-column affine map `x ↦ (x − mean) / scale` fitted on training features.
///
/// `mean_j = (1/n) Σ_i x_ij`, `scale_j = sqrt((1/n) Σ_i (x_ij − mean_j)²)` (population standard
/// deviation, ddof = 0, two-pass), exactly as sklearn's `StandardScaler`. A column whose variance is
/// indistinguishable from zero keeps scale 1 (sklearn's `_is_constant_feature` rule:
/// `var ≤ n·ε·var + (n·mean·ε)²`, ε the f64 machine epsilon), so constant columns map to 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    pub mean: Vec<f64>,
    pub scale: Vec<f64>,
}

impl Standardizer {
    /// Fit the statistics on the training features.
    pub fn fit(features: Features<'_>) -> Standardizer {
        let (n, d) = (features.rows(), features.cols());
        let mut mean = vec![0.0; d];
        for i in 0..n {
            mean.iter_mut().zip(features.row(i)).for_each(|(m, x)| *m += x);
        }
        mean.iter_mut().for_each(|m| *m /= n as f64);
        let mut var = vec![0.0; d];
        for i in 0..n {
            var.iter_mut().zip(features.row(i).iter().zip(&mean)).for_each(|(v, (x, m))| {
                let c = x - m;
                *v += c * c;
            });
        }
        let eps = f64::EPSILON;
        let nf = n as f64;
        let scale = var
            .iter()
            .zip(&mean)
            .map(|(v, m)| {
                let v = v / nf;
                let upper = nf * eps * v + (nf * m * eps).powi(2);
                if v <= upper { 1.0 } else { v.sqrt() }
            })
            .collect();
        Standardizer { mean, scale }
    }

    /// Number of feature columns.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Standardise any split with the training statistics; returns a new row-major matrix.
    pub fn transform(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        features.expect_cols(self.dim())?;
        let mut out = features.values().to_vec();
        for row in out.chunks_exact_mut(self.dim()) {
            row.iter_mut().zip(self.mean.iter().zip(&self.scale)).for_each(|(x, (m, s))| *x = (*x - m) / s);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_column_keeps_scale_one() {
        // Column 0 is constant (exact by construction), column 1 is {0, 2} with mean 1 and std 1.
        let x = [5.0, 0.0, 5.0, 2.0];
        let s = Standardizer::fit(Features::new(&x, 2).unwrap());
        assert_eq!(s.mean, vec![5.0, 1.0]);
        assert_eq!(s.scale, vec![1.0, 1.0]);
        assert_eq!(s.transform(Features::new(&x, 2).unwrap()).unwrap(), vec![0.0, -1.0, 0.0, 1.0]);
    }

    #[test]
    fn wrong_width_is_an_error() {
        let s = Standardizer::fit(Features::new(&[1.0, 2.0], 2).unwrap());
        let e = s.transform(Features::new(&[1.0, 2.0, 3.0], 3).unwrap()).unwrap_err();
        assert_eq!(e, ProbeError::DimensionMismatch { expected: 2, found: 3 });
    }
}
