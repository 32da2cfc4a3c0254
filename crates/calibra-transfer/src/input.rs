//! Validated inputs: a dense row-major f64 feature matrix and the target of the task.

use crate::TransferError;

/// Frozen features, `n` rows of `d` values each, row-major, all finite.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    n: usize,
    d: usize,
    data: Vec<f64>,
}

impl Features {
    /// Check shape and finiteness; a NaN or infinity is an error naming its row and column.
    pub fn new(data: Vec<f64>, n: usize, d: usize) -> Result<Self, TransferError> {
        if n == 0 || d == 0 {
            return Err(TransferError::Shape(format!(
                "shape [{n}, {d}]: need at least one row and one column"
            )));
        }
        if data.len() != n * d {
            return Err(TransferError::Shape(format!("{} values for shape [{n}, {d}]", data.len())));
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(TransferError::NonFiniteFeature { row: i / d, col: i % d, value: data[i] });
        }
        Ok(Self { n, d, data })
    }

    /// Build from f32 rows (what `calibra features` stores), widened to f64.
    pub fn from_f32(data: &[f32], n: usize, d: usize) -> Result<Self, TransferError> {
        Self::new(data.iter().map(|&v| f64::from(v)).collect(), n, d)
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn d(&self) -> usize {
        self.d
    }

    /// Row-major values.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.d..(i + 1) * self.d]
    }

    /// The rows at `idx`, in that order.
    pub fn select(&self, idx: &[usize]) -> Features {
        let mut data = Vec::with_capacity(idx.len() * self.d);
        for &i in idx {
            data.extend_from_slice(self.row(i));
        }
        Features { n: idx.len(), d: self.d, data }
    }
}

/// The target of the downstream task, one entry per feature row.
#[derive(Debug, Clone, PartialEq)]
pub enum Targets {
    /// Nominal classes `0..C` (`C` = largest label + 1, as every reference implementation does).
    Classes(Vec<usize>),
    /// Ordered grades `0..C`: class-based estimators treat the grades as classes; LogME scores the
    /// grade as one continuous target; k-NN agreement uses Spearman ρ (neighbour mean vs grade).
    Ordinal(Vec<usize>),
    /// A continuous outcome (regression): class-based estimators use outcome quintiles (seed 001 §4.6);
    /// LogME scores the outcome itself; k-NN agreement uses Spearman ρ.
    Continuous(Vec<f64>),
    /// `labels` binary labels per row (row-major `n × labels`): `Some(true)` positive, `Some(false)`
    /// negative, `None` missing. Every estimator is computed per label on the rows where that label
    /// is known, then averaged over the labels where it is defined.
    Multilabel { labels: usize, values: Vec<Option<bool>> },
}

impl Targets {
    /// Number of rows the target covers.
    pub fn rows(&self) -> usize {
        match self {
            Targets::Classes(y) | Targets::Ordinal(y) => y.len(),
            Targets::Continuous(y) => y.len(),
            Targets::Multilabel { labels, values } => values.len() / (*labels).max(1),
        }
    }

    /// Check the target against `n` feature rows.
    pub fn validate(&self, n: usize) -> Result<(), TransferError> {
        let rows = self.rows();
        if rows != n {
            return Err(TransferError::LengthMismatch { labels: rows, rows: n });
        }
        match self {
            Targets::Continuous(y) => {
                if let Some(i) = y.iter().position(|v| !v.is_finite()) {
                    return Err(TransferError::NonFiniteTarget { row: i, value: y[i] });
                }
            }
            Targets::Multilabel { labels, values } => {
                if *labels == 0 {
                    return Err(TransferError::BadLabel {
                        row: 0,
                        why: "multilabel target with 0 labels".into(),
                    });
                }
                if values.len() % labels != 0 {
                    return Err(TransferError::BadLabel {
                        row: values.len() / labels,
                        why: format!("{} values is not a multiple of {labels} labels", values.len()),
                    });
                }
            }
            Targets::Classes(_) | Targets::Ordinal(_) => {}
        }
        Ok(())
    }

    /// Number of classes reported for this target: largest label + 1 for classes and grades, the
    /// 5 quintiles for a continuous outcome, the label count for multilabel.
    pub fn num_classes(&self) -> usize {
        match self {
            Targets::Classes(y) | Targets::Ordinal(y) => y.iter().max().map_or(0, |m| m + 1),
            Targets::Continuous(_) => crate::quintile::QUINTILES,
            Targets::Multilabel { labels, .. } => *labels,
        }
    }
}
