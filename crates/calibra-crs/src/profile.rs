//! An encoder's oriented four-axis reliability profile: every axis is "larger is better".

use crate::error::CrsError;
use serde::{Deserialize, Serialize};

/// The four reliability axes, in their canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Clean-test macro-AUROC.
    Discrimination,
    /// Oriented calibration error: `−ECE` (raw files give ECE, lower is better).
    Calibration,
    /// Mean AUROC retention over label fractions {1, 5, 10, 25} %.
    LabelEfficiency,
    /// `max(0, 1 − (δ̄ + δmax + 1_shift·δshift) / (2 + 1_shift))`.
    Robustness,
}

/// The axes in canonical order; `Profile::values` is indexed the same way.
pub const AXES: [Axis; 4] =
    [Axis::Discrimination, Axis::Calibration, Axis::LabelEfficiency, Axis::Robustness];

impl Axis {
    /// Index into [`AXES`] and [`Profile::values`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The snake_case name used in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Discrimination => "discrimination",
            Axis::Calibration => "calibration",
            Axis::LabelEfficiency => "label_efficiency",
            Axis::Robustness => "robustness",
        }
    }
}

/// One encoder's oriented axis values (larger is better on every axis). `None` = unobserved, never
/// imputed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The encoder (a unique name within a panel).
    pub encoder: String,
    /// Oriented axis values indexed as [`AXES`]; `None` where the axis was not observed.
    pub values: [Option<f64>; 4],
}

impl Profile {
    /// A profile from its encoder name and oriented axis values (indexed as [`AXES`]).
    pub fn new(encoder: impl Into<String>, values: [Option<f64>; 4]) -> Self {
        Profile { encoder: encoder.into(), values }
    }

    /// A profile observed on all four axes.
    pub fn complete(encoder: impl Into<String>, values: [f64; 4]) -> Self {
        Profile { encoder: encoder.into(), values: values.map(Some) }
    }

    /// The value on one axis (`None` if unobserved).
    pub fn get(&self, axis: Axis) -> Option<f64> {
        self.values[axis.index()]
    }

    /// The four values, requiring every axis to be observed and finite: the CRS is defined on complete
    /// profiles only (a missing axis is never imputed).
    ///
    /// # Errors
    /// [`CrsError::MissingAxis`] for the first unobserved axis, [`CrsError::NonFinite`] for NaN/±∞.
    pub fn require_complete(&self) -> Result<[f64; 4], CrsError> {
        let mut out = [0.0; 4];
        for axis in AXES {
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

/// Orient a raw expected calibration error so that larger is better: `−ECE`.
///
/// The spec allows `−ECE` or `1 − ECE`; they differ by a constant and are identical after min–max
/// normalisation, so calibra uses `−ECE` everywhere (anchors of a saved reference are in this scale).
pub fn oriented_calibration(ece: f64) -> f64 {
    -ece
}
