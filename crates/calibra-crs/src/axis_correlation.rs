//! Axis correlations (spec §5.6): Spearman ρ between every pair of axes over encoders and over cells
//! (pairs where both are observed), and label efficiency vs AULC vs full-label discrimination over
//! encoders.

use calibra_metrics::spearman_rho;
use serde::Serialize;

use crate::axes::{AxisConfig, CellAxes};
use crate::profile::{Axis, Profile, axes_of};

/// Spearman ρ between two quantities.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correlation {
    /// `encoder` or `cell`.
    pub level: &'static str,
    pub a: String,
    pub b: String,
    /// Pairs where both are observed.
    pub n: usize,
    /// NaN (JSON null) with fewer than 3 pairs or a constant series.
    pub spearman_rho: f64,
}

fn correlation(level: &'static str, a: &str, b: &str, pairs: &[(Option<f64>, Option<f64>)]) -> Correlation {
    let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().filter_map(|&(a, b)| Some((a?, b?))).unzip();
    let rho = if x.len() >= 3 { spearman_rho(&x, &y) } else { f64::NAN };
    Correlation { level, a: a.to_string(), b: b.to_string(), n: x.len(), spearman_rho: rho }
}

/// Every axis pair over encoders and over cells, then LE vs AULC and AULC vs full-label discrimination
/// over encoders (`aulc` per encoder of `profiles`).
pub(crate) fn axis_correlations(
    profiles: &[Profile],
    cells: &[CellAxes],
    config: &AxisConfig,
    aulc: &[Option<f64>],
) -> Vec<Correlation> {
    let mut correlations = Vec::new();
    let axes = axes_of(config.n_axes());
    for (i, &a) in axes.iter().enumerate() {
        for &b in &axes[i + 1..] {
            let enc: Vec<_> = profiles.iter().map(|p| (p.get(a), p.get(b))).collect();
            correlations.push(correlation("encoder", a.name(), b.name(), &enc));
            let cell: Vec<_> = cells
                .iter()
                .map(|c| (c.values.axis(a, config.robustness), c.values.axis(b, config.robustness)))
                .collect();
            correlations.push(correlation("cell", a.name(), b.name(), &cell));
        }
    }
    let le: Vec<Option<f64>> = profiles.iter().map(|p| p.get(Axis::LabelEfficiency)).collect();
    let full: Vec<Option<f64>> = profiles.iter().map(|p| p.get(Axis::Discrimination)).collect();
    let zip = |x: &[Option<f64>], y: &[Option<f64>]| -> Vec<(Option<f64>, Option<f64>)> {
        x.iter().copied().zip(y.iter().copied()).collect()
    };
    correlations.push(correlation("encoder", "label_efficiency", "aulc", &zip(&le, aulc)));
    correlations.push(correlation("encoder", "aulc", "full_label_discrimination", &zip(aulc, &full)));
    correlations
}
