//! Each panel encoder's profile as the evaluation reports it (`evaluation.json` `profiles`): raw and
//! oriented axis values with the contrasts (corruption-only robustness, AULC) and its cell count.

use serde::Serialize;

use crate::axes::{AxisPlan, CellAxes, CellValues};
use crate::profile::{Axis, Profile};

/// One encoder's profile: measured (raw) values, oriented values and contrasts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderProfile {
    pub encoder: String,
    /// Mean clean discrimination over the encoder's cells.
    pub discrimination: Option<f64>,
    /// Mean raw calibration error (ECE, lower is better); the oriented axis is its negation.
    pub calibration_error: Option<f64>,
    pub label_efficiency: Option<f64>,
    /// Robustness of the configured variant.
    pub robustness: Option<f64>,
    /// Robustness with `1_shift = 0` (contrast).
    pub robustness_corruption_only: Option<f64>,
    /// Mean AULC over cells (contrast, never an axis).
    pub aulc: Option<f64>,
    /// Cells (datasets) observed.
    pub cells: usize,
    /// Mean raw selective metric (AUGRC, lower is better) over the encoder's cells; only with the
    /// selective axis (absent from the JSON otherwise). The oriented axis is its negation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selective_error: Option<f64>,
    /// Oriented values (calibration = −ECE, selective = −AUGRC), indexed as [`crate::ALL_AXES`].
    pub oriented: Vec<Option<f64>>,
}

/// The reported profile of every encoder of `profiles` (the plan's profiles, in its encoder order), with
/// its mean AULC (`aulc`, per encoder), corruption-only robustness from the plan's cell `values`, and the
/// number of its `cells`.
pub(crate) fn encoder_profiles(
    plan: &AxisPlan,
    values: &[CellValues],
    aulc: &[Option<f64>],
    cells: &[CellAxes],
    profiles: &[Profile],
) -> Vec<EncoderProfile> {
    let corruption_only = plan.encoder_means(values, |c| c.robustness_corruption_only);
    let mut cell_count = vec![0usize; profiles.len()];
    for cell in cells {
        if let Some(e) = plan.encoders().iter().position(|n| *n == cell.encoder) {
            cell_count[e] += 1;
        }
    }
    profiles
        .iter()
        .enumerate()
        .map(|(e, p)| EncoderProfile {
            encoder: p.encoder.clone(),
            discrimination: p.get(Axis::Discrimination),
            calibration_error: p.get(Axis::Calibration).map(|c| -c),
            label_efficiency: p.get(Axis::LabelEfficiency),
            robustness: p.get(Axis::Robustness),
            robustness_corruption_only: corruption_only[e],
            aulc: aulc[e],
            cells: cell_count[e],
            selective_error: p.get(Axis::Selective).map(|c| -c),
            oriented: p.values.clone(),
        })
        .collect()
}
