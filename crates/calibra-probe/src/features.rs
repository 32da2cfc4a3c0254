//! A validated, borrowed row-major feature matrix.

use crate::error::ProbeError;

/// A row-major `rows × cols` matrix of finite features, borrowed from the caller.
///
/// Construction checks that the length is a multiple of `cols`, that there is at least one row and
/// one column, and that every value is finite (sklearn rejects NaN/inf with `ValueError: Input X
/// contains NaN`; we name the first offending row and column).
#[derive(Debug, Clone, Copy)]
pub struct Features<'a> {
    values: &'a [f64],
    rows: usize,
    cols: usize,
}

impl<'a> Features<'a> {
    /// Wrap `values` (row-major) as a matrix with `cols` columns.
    pub fn new(values: &'a [f64], cols: usize) -> Result<Self, ProbeError> {
        if cols == 0 {
            return Err(ProbeError::InvalidFeatures("a feature matrix needs at least one column".into()));
        }
        if !values.len().is_multiple_of(cols) {
            return Err(ProbeError::InvalidFeatures(format!(
                "{} values is not a whole number of rows of {cols} columns",
                values.len()
            )));
        }
        let rows = values.len() / cols;
        if rows == 0 {
            return Err(ProbeError::InvalidFeatures("the feature matrix has no rows".into()));
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(ProbeError::InvalidFeatures(format!(
                "row {}, column {} is {} (features must be finite)",
                i / cols,
                i % cols,
                values[i]
            )));
        }
        Ok(Features { values, rows, cols })
    }

    /// Number of rows (samples).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns (feature dimension).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The row-major values.
    pub fn values(&self) -> &'a [f64] {
        self.values
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &'a [f64] {
        &self.values[i * self.cols..(i + 1) * self.cols]
    }

    /// Error unless the matrix has `expected` columns.
    pub fn expect_cols(&self, expected: usize) -> Result<(), ProbeError> {
        if self.cols == expected {
            Ok(())
        } else {
            Err(ProbeError::DimensionMismatch { expected, found: self.cols })
        }
    }
}
