//! An encoder's oriented reliability profile: every axis is "larger is better". The CRS has four axes by
//! default; the optional fifth, [`Axis::Selective`] (`−AUGRC`, issue 24), takes part only when asked
//! for, and a profile then holds five values.

pub use crate::axis::{ALL_AXES, AXES, Axis, axes_of};
use crate::error::CrsError;
use serde::{Deserialize, Serialize};

/// One encoder's oriented axis values (larger is better on every axis). `None` = unobserved, never
/// imputed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The encoder (a unique name within a panel).
    pub encoder: String,
    /// Oriented axis values indexed as [`ALL_AXES`] (four, or five with the selective axis); `None` where
    /// the axis was not observed.
    pub values: Vec<Option<f64>>,
}

impl Profile {
    /// A profile from its encoder name and oriented axis values (indexed as [`AXES`]).
    pub fn new(encoder: impl Into<String>, values: [Option<f64>; 4]) -> Self {
        Profile { encoder: encoder.into(), values: values.to_vec() }
    }

    /// A profile from its encoder name and 4 or 5 oriented axis values (indexed as [`ALL_AXES`]).
    ///
    /// # Panics
    /// If there are not 4 or 5 values.
    pub fn with_values(encoder: impl Into<String>, values: Vec<Option<f64>>) -> Self {
        axes_of(values.len());
        Profile { encoder: encoder.into(), values }
    }

    /// A profile observed on all of its (4 or 5) axes.
    ///
    /// # Panics
    /// If there are not 4 or 5 values.
    pub fn complete(encoder: impl Into<String>, values: impl AsRef<[f64]>) -> Self {
        Profile::with_values(encoder, values.as_ref().iter().copied().map(Some).collect())
    }

    /// The axes of this profile (4, or 5 with the selective axis).
    pub fn axes(&self) -> &'static [Axis] {
        axes_of(self.values.len())
    }

    /// The value on one axis (`None` if unobserved or not one of this profile's axes).
    pub fn get(&self, axis: Axis) -> Option<f64> {
        self.values.get(axis.index()).copied().flatten()
    }

    /// The four values, requiring every axis to be observed and finite: the CRS is defined on complete
    /// profiles only (a missing axis is never imputed).
    ///
    /// # Errors
    /// [`CrsError::MissingAxis`] for the first unobserved axis, [`CrsError::NonFinite`] for NaN/±∞.
    pub fn require_complete(&self) -> Result<Vec<f64>, CrsError> {
        let mut out = vec![0.0; self.values.len()];
        for &axis in self.axes() {
            let value = self
                .get(axis)
                .ok_or_else(|| CrsError::MissingAxis { encoder: self.encoder.clone(), axis })?;
            if !value.is_finite() {
                return Err(CrsError::NonFinite { encoder: self.encoder.clone(), axis, value });
            }
            out[axis.index()] = value;
        }
        Ok(out)
    }
}

/// Orient a raw AUGRC (lower is better) so that larger is better: `−AUGRC`.
pub fn oriented_selective(augrc: f64) -> f64 {
    -augrc
}

/// Orient a raw expected calibration error so that larger is better: `−ECE`.
///
/// The spec allows `−ECE` or `1 − ECE`; they differ by a constant and are identical after min–max
/// normalisation, so calibra uses `−ECE` everywhere (anchors of a saved reference are in this scale).
pub fn oriented_calibration(ece: f64) -> f64 {
    -ece
}
