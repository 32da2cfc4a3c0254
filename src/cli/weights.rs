//! `--weights D,S,W` and `--axis-weights a,b,c,d[,e]`: the CRS weights as command-line values, shared by
//! `calibra crs` and `calibra eval`. A fifth axis weight turns on the optional selective axis (−AUGRC,
//! issue 24).

use calibra_crs::{AxisWeights, ComponentWeights};

fn parse_numbers(text: &str, count: usize, alternative: &str) -> Result<Vec<f64>, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() != count {
        return Err(format!(
            "expected {count} comma-separated numbers{alternative}, found {} in `{text}`",
            parts.len()
        ));
    }
    parts.iter().map(|p| p.parse::<f64>().map_err(|_| format!("`{p}` is not a number"))).collect()
}

/// Component weights α_D, α_S, α_W (validated: non-negative, summing to 1).
pub fn parse_component_weights(text: &str) -> Result<ComponentWeights, String> {
    let w = parse_numbers(text, 3, "")?;
    ComponentWeights::new(w[0], w[1], w[2]).map_err(|e| e.to_string())
}

/// Axis weights of the ideal-point term, in axis order (validated: non-negative, summing to 1): four, or
/// five where the fifth is the weight of the selective axis.
pub fn parse_axis_weights(text: &str) -> Result<AxisWeights, String> {
    let count = if text.split(',').count() == 5 { 5 } else { 4 };
    let w = parse_numbers(text, count, " (or 5 to add the selective axis)")?;
    AxisWeights::from_slice(&w).map_err(|e| e.to_string())
}
