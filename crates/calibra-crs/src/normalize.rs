//! Normalisation anchors: the frozen `(l_a, u_a)` per axis that map oriented values onto [0, 1].
//!
//! `s̃_a = clip((s_a − l_a) / (u_a − l_a), 0, 1)` (spec §4). Default anchors are the panel's minimum and
//! maximum oriented value on each axis, frozen when the reference is built.

use crate::error::CrsError;
use crate::profile::{Axis, axes_of};
use serde::{Deserialize, Serialize};

/// The anchors of one axis: `lower` maps to 0, `upper` to 1. Always finite with `lower < upper`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AxisAnchor {
    /// `l_a`: the oriented value normalised to 0 (values below are clipped to 0).
    pub lower: f64,
    /// `u_a`: the oriented value normalised to 1 (values above are clipped to 1).
    pub upper: f64,
}

/// Anchors for the four axes (or five with the selective axis), indexed as [`crate::ALL_AXES`].
/// Construct with [`Anchors::new`], [`Anchors::from_slice`], [`Anchors::from_panel`] or
/// [`Anchors::unit`]; every constructor guarantees finite `lower < upper`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchors {
    /// Entries from `len` on are unused.
    axes: [AxisAnchor; 5],
    len: usize,
}

const UNIT: AxisAnchor = AxisAnchor { lower: 0.0, upper: 1.0 };

impl Anchors {
    /// Anchors given explicitly.
    ///
    /// # Errors
    /// [`CrsError::DegenerateAnchor`] unless every axis has finite `lower < upper`.
    pub fn new(axes: [AxisAnchor; 4]) -> Result<Self, CrsError> {
        Anchors::from_slice(&axes)
    }

    /// Anchors of 4 axes, or of 5 with the selective axis.
    ///
    /// # Errors
    /// [`CrsError::DegenerateAnchor`] unless every axis has finite `lower < upper`.
    ///
    /// # Panics
    /// If there are not 4 or 5 anchors.
    pub fn from_slice(anchors: &[AxisAnchor]) -> Result<Self, CrsError> {
        for (&axis, a) in axes_of(anchors.len()).iter().zip(anchors) {
            if !(a.lower.is_finite() && a.upper.is_finite() && a.lower < a.upper) {
                return Err(CrsError::DegenerateAnchor { axis, lower: a.lower, upper: a.upper });
            }
        }
        let mut axes = [UNIT; 5];
        axes[..anchors.len()].copy_from_slice(anchors);
        Ok(Anchors { axes, len: anchors.len() })
    }

    /// The identity anchors `(0, 1)` on the four default axes, for profiles that are already
    /// normalised.
    pub fn unit() -> Self {
        Anchors::unit_of(4)
    }

    /// The identity anchors `(0, 1)` on `n` axes (4, or 5 with the selective axis).
    ///
    /// # Panics
    /// If `n` is not 4 or 5.
    pub fn unit_of(n: usize) -> Self {
        axes_of(n);
        Anchors { axes: [UNIT; 5], len: n }
    }

    /// The default anchors of a panel: `l_a = min_j s_a^(j)`, `u_a = max_j s_a^(j)` over the panel's
    /// oriented values.
    ///
    /// # Errors
    /// [`CrsError::EmptyPanel`] for no rows; [`CrsError::DegenerateAnchor`] when every panel member has
    /// the same value on an axis (no scale to normalise by) or a value is not finite.
    ///
    /// # Panics
    /// If the rows do not all have the same count of 4 or 5 values.
    pub fn from_panel<P: AsRef<[f64]>>(values: &[P]) -> Result<Self, CrsError> {
        if values.is_empty() {
            return Err(CrsError::EmptyPanel);
        }
        let n = values[0].as_ref().len();
        let mut axes = vec![AxisAnchor { lower: f64::INFINITY, upper: f64::NEG_INFINITY }; n];
        for row in values {
            let row = row.as_ref();
            assert_eq!(row.len(), n, "panel rows of different axis counts");
            for (anchor, &v) in axes.iter_mut().zip(row) {
                // `f64::min` would skip a NaN; poison the anchor instead so that `new` rejects it.
                anchor.lower =
                    if v.is_nan() || anchor.lower.is_nan() { f64::NAN } else { anchor.lower.min(v) };
                anchor.upper = anchor.upper.max(v);
            }
        }
        Anchors::from_slice(&axes)
    }

    /// The anchors of one axis.
    pub fn get(&self, axis: Axis) -> AxisAnchor {
        self.axes[axis.index()]
    }

    /// All anchors (4, or 5 with the selective axis), indexed as [`crate::ALL_AXES`].
    pub fn as_slice(&self) -> &[AxisAnchor] {
        &self.axes[..self.len]
    }

    /// The number of axes (4, or 5 with the selective axis).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty (4 or 5 anchors); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// `s̃_a = clip((s_a − l_a) / (u_a − l_a), 0, 1)` on every axis.
    ///
    /// # Panics
    /// If `values` does not have one value per anchor.
    pub fn normalize(&self, values: &[f64]) -> Vec<f64> {
        assert_eq!(values.len(), self.len, "{} values for {} anchors", values.len(), self.len);
        self.as_slice()
            .iter()
            .zip(values)
            .map(|(&AxisAnchor { lower, upper }, &v)| ((v - lower) / (upper - lower)).clamp(0.0, 1.0))
            .collect()
    }

    /// The axes on which `values` lies outside `[l_a, u_a]`, i.e. where normalisation saturates.
    /// Repeated saturation by new candidates signals that a successor reference is needed.
    pub fn saturated_axes(&self, values: &[f64]) -> Vec<Axis> {
        axes_of(self.len)
            .iter()
            .copied()
            .filter(|a| {
                let AxisAnchor { lower, upper } = self.axes[a.index()];
                let v = values[a.index()];
                v < lower || v > upper
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_extremes_map_to_zero_and_one() {
        let panel = [[0.8, -0.10, 0.9, 0.5], [0.9, -0.05, 0.95, 0.7], [0.85, -0.20, 1.01, 0.6]];
        let anchors = Anchors::from_panel(&panel).unwrap();
        assert_eq!(anchors.get(Axis::Calibration), AxisAnchor { lower: -0.20, upper: -0.05 });
        assert_eq!(anchors.normalize(&panel[1])[0], 1.0);
        assert_eq!(anchors.normalize(&panel[0])[0], 0.0);
        // -0.05 is the best (largest) oriented calibration.
        assert_eq!(anchors.normalize(&panel[1])[1], 1.0);
        assert_eq!(anchors.normalize(&panel[2])[1], 0.0);
        assert!(anchors.saturated_axes(&panel[2]).is_empty());
    }

    #[test]
    fn values_outside_the_anchors_are_clipped_and_reported() {
        let anchors = Anchors::unit();
        let v = [1.2, -0.1, 0.5, 1.0];
        assert_eq!(anchors.normalize(&v), [1.0, 0.0, 0.5, 1.0]);
        assert_eq!(anchors.saturated_axes(&v), vec![Axis::Discrimination, Axis::Calibration]);
    }

    #[test]
    fn a_panel_without_spread_has_no_anchors() {
        let err = Anchors::from_panel(&[[0.5, 0.1, 0.2, 0.3], [0.6, 0.1, 0.3, 0.4]]).unwrap_err();
        assert!(matches!(err, CrsError::DegenerateAnchor { axis: Axis::Calibration, .. }), "{err}");
        assert!(matches!(Anchors::from_panel::<[f64; 4]>(&[]), Err(CrsError::EmptyPanel)));
        let nan =
            Anchors::from_panel(&[[0.5, 0.1, 0.2, 0.3], [0.6, 0.2, f64::NAN, 0.4], [0.7, 0.3, 0.4, 0.5]]);
        assert!(matches!(nan, Err(CrsError::DegenerateAnchor { axis: Axis::LabelEfficiency, .. })));
    }
}
