//! Each encoder's CRS as the evaluation reports it (`evaluation.json` `crs`): normalised values,
//! components, ordinal rank, and the bootstrap interval and rank probabilities when the bootstrap ran.

use serde::Serialize;

use crate::bootstrap::BootstrapResult;
use crate::profile::Axis;
use crate::reference::CrsScore;
use crate::score::ordinal_ranks;

/// One encoder's CRS.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderCrs {
    pub encoder: String,
    /// Values normalised with the reference's anchors (clipped to [0, 1]), indexed as
    /// [`crate::ALL_AXES`].
    pub normalized: Vec<f64>,
    pub dominance: f64,
    pub ideal: f64,
    pub worst: f64,
    pub crs: f64,
    /// Ordinal rank, 1 = best.
    pub rank: usize,
    pub in_panel: bool,
    /// Axes clipped by the anchors.
    pub saturated: Vec<Axis>,
    /// Bootstrap percentile interval and rank probabilities (when the bootstrap ran).
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    pub p_rank1: Option<f64>,
    pub p_top3: Option<f64>,
}

/// The reported CRS of every scored encoder, ranked by CRS (1 = best; ties by encoder name order), with
/// the bootstrap's interval and rank probabilities attached by encoder name.
pub(crate) fn encoder_crs(scores: &[CrsScore], bootstrap: Option<&BootstrapResult>) -> Vec<EncoderCrs> {
    let crs_values: Vec<f64> = scores.iter().map(|s| s.components.crs).collect();
    let ranks = ordinal_ranks(&crs_values);
    scores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let boot = bootstrap.and_then(|b| b.encoders.iter().find(|e| e.encoder == s.encoder));
            EncoderCrs {
                encoder: s.encoder.clone(),
                normalized: s.normalized.clone(),
                dominance: s.components.dominance,
                ideal: s.components.ideal,
                worst: s.components.worst,
                crs: s.components.crs,
                rank: ranks[i],
                in_panel: s.in_panel,
                saturated: s.saturated.clone(),
                lower: boot.map(|b| b.lower),
                upper: boot.map(|b| b.upper),
                p_rank1: boot.map(|b| b.p_rank1),
                p_top3: boot.map(|b| b.p_top3),
            }
        })
        .collect()
}
