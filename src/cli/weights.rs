//! `--weights D,S,W` and `--axis-weights a,b,c,d`: the CRS weights as command-line values, shared by
//! `calibra crs` and `calibra eval`.

use calibra_crs::{AxisWeights, ComponentWeights};

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
