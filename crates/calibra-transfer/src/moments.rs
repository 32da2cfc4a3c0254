//! First moments shared by the class-based estimators: class counts, the global mean and the
//! per-class sums of centred rows.

use crate::{Features, TransferError};

/// Class counts and first moments of `features` under class labels `y` (`C` = largest label + 1).
#[derive(Debug, Clone)]
pub struct ClassStats {
    pub n: usize,
    pub d: usize,
    pub num_classes: usize,
    pub counts: Vec<usize>,
    /// Global mean per column, computed as `x₀ + Σ(xᵢ − x₀)/n` so a constant column has its
    /// exact value as mean (and centred values exactly 0).
    pub mean: Vec<f64>,
    /// Per class, `Σ_{i∈c} (fᵢ − μ)` (zeros for an absent class).
    pub centred_sums: Vec<Vec<f64>>,
    /// Row indices of each class, ascending.
    pub members: Vec<Vec<usize>>,
}

impl ClassStats {
    pub fn new(features: &Features, y: &[usize]) -> Result<Self, TransferError> {
        let (n, d) = (features.n(), features.d());
        if y.len() != n {
            return Err(TransferError::LengthMismatch { labels: y.len(), rows: n });
        }
        let num_classes = y.iter().max().map_or(0, |m| m + 1);
        let mean = column_mean(features);
        let mut counts = vec![0usize; num_classes];
        let mut members = vec![Vec::new(); num_classes];
        let mut centred_sums = vec![vec![0.0; d]; num_classes];
        for (i, &c) in y.iter().enumerate() {
            counts[c] += 1;
            members[c].push(i);
            for ((s, &x), &m) in centred_sums[c].iter_mut().zip(features.row(i)).zip(&mean) {
                *s += x - m;
            }
        }
        Ok(Self { n, d, num_classes, counts, mean, centred_sums, members })
    }

    /// Classes with at least one sample, ascending.
    pub fn present(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.num_classes).filter(|&c| self.counts[c] > 0)
    }

    /// `m_c − μ` (class mean of the centred rows).
    pub fn centred_mean(&self, c: usize) -> Vec<f64> {
        let k = self.counts[c].max(1) as f64;
        self.centred_sums[c].iter().map(|s| s / k).collect()
    }

    /// The smallest class size among the classes present.
    pub fn min_present_count(&self) -> usize {
        self.present().map(|c| self.counts[c]).min().unwrap_or(0)
    }

    /// `features − μ`, row-major, for the rows `idx`.
    pub fn centred_rows(&self, features: &Features, idx: &[usize]) -> Vec<f64> {
        let mut out = Vec::with_capacity(idx.len() * self.d);
        for &i in idx {
            out.extend(features.row(i).iter().zip(&self.mean).map(|(x, m)| x - m));
        }
        out
    }
}

/// Column means with a shift by the first row (exact for constant columns).
pub(crate) fn column_mean(features: &Features) -> Vec<f64> {
    let (n, d) = (features.n(), features.d());
    let first = features.row(0).to_vec();
    let mut acc = vec![0.0; d];
    for i in 0..n {
        for ((a, &x), &f) in acc.iter_mut().zip(features.row(i)).zip(&first) {
            *a += x - f;
        }
    }
    first.iter().zip(&acc).map(|(f, a)| f + a / n as f64).collect()
}
