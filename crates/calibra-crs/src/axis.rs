//! The reliability axes: their canonical order, names and the 4- or 5-axis sets of a CRS. A leaf of the
//! crate (errors name axes, so this file depends on nothing of the crate).

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
    /// Optional fifth axis: `−AUGRC` (area under the generalized risk–coverage curve, MSP confidence)
    /// of the clean test predictions, only when requested (`--axis-weights` with five weights).
    Selective,
}

/// The four default axes in canonical order; `Profile::values` is indexed the same way.
pub const AXES: [Axis; 4] =
    [Axis::Discrimination, Axis::Calibration, Axis::LabelEfficiency, Axis::Robustness];

/// Every axis, the optional [`Axis::Selective`] last.
pub const ALL_AXES: [Axis; 5] =
    [Axis::Discrimination, Axis::Calibration, Axis::LabelEfficiency, Axis::Robustness, Axis::Selective];

/// The axes of a CRS with `n` axes (4, or 5 with the selective axis), in canonical order.
///
/// # Panics
/// If `n` is not 4 or 5.
pub fn axes_of(n: usize) -> &'static [Axis] {
    assert!(n == 4 || n == 5, "a CRS has 4 or 5 axes, not {n}");
    &ALL_AXES[..n]
}

impl Axis {
    /// Index into [`AXES`] and [`crate::Profile::values`].
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
            Axis::Selective => "selective",
        }
    }
}
