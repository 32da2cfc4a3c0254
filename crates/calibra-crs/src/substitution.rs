//! Estimator substitution (spec §5.5): the CRS recomputed with one axis estimator substituted
//! (corruption-only robustness; `adaptive_ece` / `brier` calibration; AURC / E-AURC for the selective
//! axis) on a reference rebuilt on the panel, each compared with the primary CRS ranking.

use serde::Serialize;

use crate::axes::{AxisConfig, RobustnessVariant, plan_profiles};
use crate::error::CrsError;
use crate::metric_rows::SeedTable;
use crate::rank_compare::{RankComparison, compare_rankings};
use crate::reference::{ReferenceConfig, panel_crs};

/// The CRS ranking with one estimator substituted, compared with the primary ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Substitution {
    /// e.g. `robustness=corruption-only`, `calibration=brier`.
    pub estimator: String,
    /// Primary CRS (A) vs substituted CRS (B); `None` when skipped.
    pub comparison: Option<RankComparison>,
    /// Why it was skipped.
    pub skipped: Option<String>,
}

/// The substitutions the axis configuration and the run set's `metrics` allow, in order: robustness,
/// calibration, selective. `primary` is the primary CRS on a panel-built reference (or why it cannot be
/// had); a substitution that cannot be computed is reported as skipped with the reason.
pub(crate) fn substitutions(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
    metrics: &[String],
    primary: &Result<Vec<(String, f64)>, CrsError>,
    panel_config: &ReferenceConfig,
) -> Vec<Substitution> {
    substitute_configs(axes, metrics)
        .into_iter()
        .map(|(estimator, axes)| {
            let result = primary.as_ref().map_err(|e| e.to_string()).and_then(|primary| {
                let (_, _, subst) = plan_profiles(table, means, &axes).map_err(|e| e.to_string())?;
                let b = panel_crs(&subst, panel_config).map_err(|e| e.to_string())?;
                compare_rankings(primary, &b).map_err(|e| e.to_string())
            });
            match result {
                Ok(c) => Substitution { estimator, comparison: Some(c), skipped: None },
                Err(reason) => Substitution { estimator, comparison: None, skipped: Some(reason) },
            }
        })
        .collect()
}

/// `(estimator, axis configuration)` of every substitution to try.
fn substitute_configs(axes: &AxisConfig, metrics: &[String]) -> Vec<(String, AxisConfig)> {
    let mut candidates: Vec<(String, AxisConfig)> = Vec::new();
    if axes.robustness == RobustnessVariant::WithShift {
        candidates.push((
            "robustness=corruption-only".into(),
            AxisConfig { robustness: RobustnessVariant::CorruptionOnly, ..axes.clone() },
        ));
    }
    for metric in ["adaptive_ece", "brier"] {
        if metric != axes.calibration_metric && metrics.iter().any(|m| m == metric) {
            candidates.push((
                format!("calibration={metric}"),
                AxisConfig { calibration_metric: metric.to_string(), ..axes.clone() },
            ));
        }
    }
    // The selective axis's estimator substitutions: AURC and E-AURC for AUGRC, where the records
    // carry them (the selective analyses attach all three, see `crate::selective_axis`).
    if let Some(selective) = &axes.selective_metric {
        for metric in crate::selective_axis::SUBSTITUTE_METRICS {
            if metric != selective && metrics.iter().any(|m| m == metric) {
                candidates.push((
                    format!("selective={metric}"),
                    AxisConfig { selective_metric: Some(metric.to_string()), ..axes.clone() },
                ));
            }
        }
    }
    candidates
}
