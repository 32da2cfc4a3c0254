//! The profiles of an evaluation's configured regime, or why its run set as a whole cannot give a CRS
//! (the `crs_not_computed` reason of `crate::evaluation`, "A run set without a CRS").

use crate::axes::{AxisConfig, AxisPlan, CellAxes, SELECTIVE_METRIC, plan_profiles};
use crate::error::CrsError;
use crate::metric_rows::SeedTable;
use crate::profile::{Axis, Profile, axes_of};
use crate::run_record::Regime;

/// An axis plan with its cells and per-encoder profiles.
pub(crate) type PanelPlan = (AxisPlan, Vec<CellAxes>, Vec<Profile>);

/// The profiles of the configured regime (`Ok(Ok(..))`), or why the run set as a whole cannot give a
/// CRS (`Ok(Err(reason))`, see `crate::evaluation`, "A run set without a CRS"); `Err` for an invalid axis
/// configuration or a gap in the data (an axis some encoders have and others lack).
pub(crate) fn profiles_or_why_not(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
    saved_reference: bool,
    regimes: &[Regime],
) -> Result<Result<PanelPlan, String>, CrsError> {
    const NOT_COMPUTED: &str = "CRS not computed";
    // Fractions outside (0, 1) are a configuration error, reported by the plan as an axis-input error.
    let fractions_valid = axes.le_fractions.iter().all(|&rho| rho > 0.0 && rho < 1.0);
    let (plan, cells, profiles) = match plan_profiles(table, means, axes) {
        Ok(found) => found,
        Err(CrsError::AxisInput { message }) if fractions_valid => {
            return Ok(Err(format!("{NOT_COMPUTED}: {message}")));
        }
        Err(e) => return Err(e),
    };
    if profiles.is_empty() {
        let held: Vec<&str> = regimes.iter().map(|r| r.name()).collect();
        return Ok(Err(format!(
            "{NOT_COMPUTED}: no runs of regime `{}`{} to build profiles from (the run set holds regimes: {})",
            axes.regime,
            axes.calibrator.as_ref().map(|c| format!(" with calibrator `{c}`")).unwrap_or_default(),
            held.join(", ")
        )));
    }
    let needs = |axis: Axis| match axis {
        Axis::Discrimination => {
            format!("clean runs at label fraction 1 with the metric `{}`", axes.discrimination_metric)
        }
        Axis::Calibration => {
            format!("clean runs at label fraction 1 with the metric `{}`", axes.calibration_metric)
        }
        Axis::LabelEfficiency => {
            let fractions: Vec<String> = axes.le_fractions.iter().map(f64::to_string).collect();
            format!("clean runs of one probe at the label fractions {} and 1", fractions.join(", "))
        }
        Axis::Robustness => "perturbation runs at label fraction 1".to_string(),
        Axis::Selective => format!(
            "the per-run `{}` of clean runs at label fraction 1 (from their predictions files: \
             `calibra eval --selective`)",
            axes.selective_metric.as_deref().unwrap_or(SELECTIVE_METRIC)
        ),
    };
    let missing: Vec<String> = axes_of(axes.n_axes())
        .iter()
        .filter(|&&axis| profiles.iter().all(|p| p.get(axis).is_none()))
        .map(|&axis| format!("the {} axis needs {}", axis.name(), needs(axis)))
        .collect();
    if !missing.is_empty() {
        return Ok(Err(format!(
            "{NOT_COMPUTED}: no encoder of regime `{}` has all {} axes: {}",
            axes.regime,
            if axes.n_axes() == 5 { "five" } else { "four" },
            missing.join("; ")
        )));
    }
    if profiles.len() < 2 && !saved_reference {
        return Ok(Err(format!(
            "{NOT_COMPUTED}: a reference built from the run set needs at least 2 encoders, regime `{}` has {} \
             (a single encoder can be scored against a saved reference)",
            axes.regime,
            profiles.len()
        )));
    }
    Ok(Ok((plan, cells, profiles)))
}
