//! `--weights D,S,W` and `--axis-weights a,b,c,d`: the CRS weights as command-line values, shared by
//! `calibra crs` and `calibra eval`.

use anyhow::bail;
use calibra_crs::{AxisWeights, ComponentWeights, Reference};
use std::path::Path;

fn parse_numbers(text: &str, count: usize) -> Result<Vec<f64>, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() != count {
        return Err(format!("expected {count} comma-separated numbers, found {} in `{text}`", parts.len()));
    }
    parts.iter().map(|p| p.parse::<f64>().map_err(|_| format!("`{p}` is not a number"))).collect()
}

/// Component weights α_D, α_S, α_W (validated: non-negative, summing to 1).
pub fn parse_component_weights(text: &str) -> Result<ComponentWeights, String> {
    let w = parse_numbers(text, 3)?;
    ComponentWeights::new(w[0], w[1], w[2]).map_err(|e| e.to_string())
}

/// Axis weights of the ideal-point term, in axis order (validated: non-negative, summing to 1).
pub fn parse_axis_weights(text: &str) -> Result<AxisWeights, String> {
    let w = parse_numbers(text, 4)?;
    AxisWeights::new([w[0], w[1], w[2], w[3]]).map_err(|e| e.to_string())
}

/// A saved reference freezes its weights: `--weights`/`--axis-weights`, when given, must equal them.
pub fn check_frozen(
    path: &Path,
    reference: &Reference,
    weights: Option<ComponentWeights>,
    axis_weights: Option<AxisWeights>,
) -> anyhow::Result<()> {
    let frozen = reference.weights();
    if weights.is_some_and(|w| w != frozen.component) || axis_weights.is_some_and(|w| w != frozen.axis) {
        bail!(
            "{}: the reference freezes its weights (components {:?}, axes {:?}); \
             --weights/--axis-weights differ: build a new reference instead",
            path.display(),
            frozen.component,
            frozen.axis.as_array()
        );
    }
    Ok(())
}
