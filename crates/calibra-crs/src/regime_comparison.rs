//! Frozen vs each adapted regime, per method, never skipped for want of a choice (spec §5.4, §7).
//!
//! A regime other than the axis regime can hold several methods in one cell: CoOp with two losses
//! (probes `ce`, `mcm`), zero-shot with one probe per prompt template (`zero-shot:P1` … `P7`). Each is
//! compared with the axis regime on its own, by default:
//!
//! - every probe without a template id is its own method (`coop` / `ce`, `coop` / `mcm`, `lora` / `ce`);
//! - probes that differ only by template id (`<method>:<template>`, see
//!   [`crate::calibration_stability::split_template`]) give two methods: **mean over templates** (each
//!   cell's axis values averaged over the templates observed in it) and **best template** (per encoder,
//!   the template with the highest mean clean discrimination over its cells; the choice is named).
//!
//! For each method the comparison is made on the cells (encoder × dataset) observed in both regimes:
//! per encoder, the mean over those matched cells of the clean full-label discrimination metric and of
//! the calibration metric (raw ECE, lower is better), in both regimes. With at least two encoders the
//! two orderings are also rank-compared ([`compare_rankings`], by discrimination and by `−ECE`); with one
//! the per-encoder values still answer the question and a note says why there is no rank comparison.
//! To compare one chosen probe instead, evaluate with that regime as the axis regime and `--probe`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::axes::{AxisConfig, AxisPlan, CellAxes};
use crate::calibration_stability::split_template;
use crate::error::CrsError;
use crate::metric_rows::SeedTable;
use crate::rank_compare::{NamedComparison, compare_rankings};
use crate::run_record::Regime;

/// One encoder's matched-cell values in the axis regime (`base`) and the adapted method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeDelta {
    pub encoder: String,
    /// The datasets observed in both regimes (the values are means over these cells).
    pub datasets: Vec<String>,
    pub base_discrimination: Option<f64>,
    pub adapted_discrimination: Option<f64>,
    /// Raw calibration metric (e.g. ECE; lower is better).
    pub base_calibration_error: Option<f64>,
    pub adapted_calibration_error: Option<f64>,
    /// The template chosen for this encoder (best-template methods only).
    pub template: Option<String>,
}

/// The axis regime vs one method of another regime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeComparison {
    pub base: Regime,
    pub regime: Regime,
    /// e.g. `ce`, `mcm`, `zero-shot (mean over templates)`, `zero-shot (best template)`.
    pub method: String,
    /// Which runs the method stands for, in words (e.g. `probe `mcm``, `mean over P1, P2, P3`).
    pub selection: String,
    /// Names of the rank comparisons of this method (empty below two encoders).
    pub rank_comparisons: Vec<String>,
    pub encoders: Vec<RegimeDelta>,
}

/// How one method's cell values are obtained from the per-probe cell values.
enum Pick {
    Probe(String),
    MeanOver(String, Vec<String>),
    BestOf(String, Vec<String>),
}

fn cells_of(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
    regime: Regime,
    probe: &str,
) -> Result<Vec<CellAxes>, CrsError> {
    let config = AxisConfig { regime, probe: Some(probe.to_string()), ..axes.clone() };
    Ok(AxisPlan::new(table.groups(), table.metrics(), &config)?.evaluate(means))
}

fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.collect::<Option<Vec<f64>>>()?;
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The methods of `regime`, in probe order (see the module docs).
fn methods(table: &SeedTable, axes: &AxisConfig, regime: Regime) -> Vec<Pick> {
    let mut by_method: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut plain: Vec<String> = Vec::new();
    for key in table.groups() {
        if key.regime != regime || axes.calibrator.as_ref().is_some_and(|c| *c != key.calibrator) {
            continue;
        }
        match split_template(&key.probe) {
            (method, Some(_)) => {
                let list = by_method.entry(method.to_string()).or_default();
                if !list.contains(&key.probe) {
                    list.push(key.probe.clone());
                }
            }
            (_, None) => {
                if !plain.contains(&key.probe) {
                    plain.push(key.probe.clone());
                }
            }
        }
    }
    plain.sort();
    let mut out: Vec<Pick> = plain.into_iter().map(Pick::Probe).collect();
    for (method, mut probes) in by_method {
        probes.sort();
        if probes.len() == 1 {
            out.push(Pick::Probe(probes.remove(0)));
        } else {
            out.push(Pick::MeanOver(method.clone(), probes.clone()));
            out.push(Pick::BestOf(method, probes));
        }
    }
    out
}

type CellKey = (String, String);
/// A cell's (discrimination, −ECE).
type CellPair = (Option<f64>, Option<f64>);

/// One method's cell values: `(method, selection, slug, cells, chosen templates)`.
type MethodCells = (String, String, String, BTreeMap<CellKey, CellPair>, BTreeMap<String, String>);

/// The cell values of one method of `regime` (see the module docs for how each pick is evaluated).
fn method_cells(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
    regime: Regime,
    pick: &Pick,
) -> Result<MethodCells, CrsError> {
    // (encoder, dataset) → (discrimination, −ECE) and, per encoder, the chosen template.
    let mut cells: BTreeMap<CellKey, CellPair> = BTreeMap::new();
    let mut chosen: BTreeMap<String, String> = BTreeMap::new();
    let (method, selection, slug) = match pick {
        Pick::Probe(p) => {
            for c in cells_of(table, means, axes, regime, p)? {
                cells.insert((c.encoder, c.dataset), (c.values.discrimination, c.values.calibration));
            }
            (p.clone(), format!("probe `{p}`"), p.replace([':', '/', ' '], "-"))
        }
        Pick::MeanOver(m, probes) => {
            let mut per: BTreeMap<CellKey, Vec<CellPair>> = BTreeMap::new();
            for p in probes {
                for c in cells_of(table, means, axes, regime, p)? {
                    per.entry((c.encoder, c.dataset))
                        .or_default()
                        .push((c.values.discrimination, c.values.calibration));
                }
            }
            for (k, v) in per {
                cells.insert(k, (mean(v.iter().map(|x| x.0)), mean(v.iter().map(|x| x.1))));
            }
            let ids: Vec<&str> =
                probes.iter().map(|p| p.rsplit_once(':').map_or(p.as_str(), |x| x.1)).collect();
            (
                format!("{m} (mean over templates)"),
                format!("each cell's mean over templates {}", ids.join(", ")),
                format!("{}-mean", m.replace([':', '/', ' '], "-")),
            )
        }
        Pick::BestOf(m, probes) => {
            let mut per_probe: Vec<(String, Vec<CellAxes>)> = Vec::new();
            for p in probes {
                per_probe.push((p.clone(), cells_of(table, means, axes, regime, p)?));
            }
            let mut encoders: Vec<String> =
                per_probe.iter().flat_map(|(_, cs)| cs.iter().map(|c| c.encoder.clone())).collect();
            encoders.sort();
            encoders.dedup();
            for enc in encoders {
                let best = per_probe
                    .iter()
                    .filter_map(|(p, cs)| {
                        let d =
                            mean(cs.iter().filter(|c| c.encoder == enc).map(|c| c.values.discrimination))?;
                        Some((p, d, cs))
                    })
                    .fold(None::<(&String, f64, &Vec<CellAxes>)>, |acc, x| match acc {
                        Some(a) if a.1 >= x.1 => Some(a),
                        _ => Some(x),
                    });
                if let Some((p, _, cs)) = best {
                    chosen.insert(enc.clone(), p.rsplit_once(':').map_or(p.as_str(), |x| x.1).to_string());
                    for c in cs.iter().filter(|c| c.encoder == enc) {
                        cells.insert(
                            (c.encoder.clone(), c.dataset.clone()),
                            (c.values.discrimination, c.values.calibration),
                        );
                    }
                }
            }
            (
                format!("{m} (best template)"),
                format!(
                    "per encoder, the template of highest mean clean {} (chosen on the test data: optimistic)",
                    axes.discrimination_metric
                ),
                format!("{}-best", m.replace([':', '/', ' '], "-")),
            )
        }
    };
    Ok((method, selection, slug, cells, chosen))
}

/// One method of a regime other than the axis regime, with its per-cell values: a prediction target
/// of [`crate::transfer_prediction`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MethodTarget {
    pub regime: Regime,
    /// As in [`RegimeComparison::method`].
    pub method: String,
    /// The probes whose runs the method needs (every template of a template method).
    pub probes: Vec<String>,
    /// (encoder, dataset) → (clean full-label discrimination, −calibration error), seed means.
    pub cells: BTreeMap<(String, String), (Option<f64>, Option<f64>)>,
}

/// Every method of every regime in `regimes` other than the axis regime, exactly as
/// [`regime_comparisons`] evaluates them, with their cells (not matched to the axis regime's).
pub(crate) fn method_targets(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
    regimes: &[Regime],
) -> Result<Vec<MethodTarget>, CrsError> {
    let mut out = Vec::new();
    for &regime in regimes.iter().filter(|&&r| r != axes.regime && r != Regime::Estimate) {
        for pick in methods(table, axes, regime) {
            let probes = match &pick {
                Pick::Probe(p) => vec![p.clone()],
                Pick::MeanOver(_, probes) | Pick::BestOf(_, probes) => probes.clone(),
            };
            let (method, _, _, cells, _) = method_cells(table, means, axes, regime, &pick)?;
            out.push(MethodTarget { regime, method, probes, cells });
        }
    }
    Ok(out)
}

/// The axis regime vs every method of every other regime of the run set; rank comparisons (≥ 2
/// encoders) and notes are appended to the given vectors.
pub(crate) fn regime_comparisons(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
    base_cells: &[CellAxes],
    regimes: &[Regime],
    rank_comparisons: &mut Vec<NamedComparison>,
    notes: &mut Vec<String>,
) -> Result<Vec<RegimeComparison>, CrsError> {
    let base_by_cell: BTreeMap<CellKey, &CellAxes> =
        base_cells.iter().map(|c| ((c.encoder.clone(), c.dataset.clone()), c)).collect();
    let mut out = Vec::new();
    for &regime in regimes.iter().filter(|&&r| r != axes.regime && r != Regime::Estimate) {
        let picks = methods(table, axes, regime);
        let single = picks.len() == 1;
        for pick in picks {
            let (method, selection, slug, cells, chosen) = method_cells(table, means, axes, regime, &pick)?;
            // Per encoder, matched cells.
            let mut per_encoder: BTreeMap<String, Vec<(String, &CellAxes, CellPair)>> = BTreeMap::new();
            for ((enc, ds), v) in &cells {
                if let Some(base) = base_by_cell.get(&(enc.clone(), ds.clone())) {
                    per_encoder.entry(enc.clone()).or_default().push((ds.clone(), base, *v));
                }
            }
            let neg = |x: Option<f64>| x.map(|v| -v);
            let encoders: Vec<RegimeDelta> = per_encoder
                .into_iter()
                .map(|(encoder, matched)| RegimeDelta {
                    datasets: matched.iter().map(|m| m.0.clone()).collect(),
                    base_discrimination: mean(matched.iter().map(|m| m.1.values.discrimination)),
                    adapted_discrimination: mean(matched.iter().map(|m| m.2.0)),
                    base_calibration_error: neg(mean(matched.iter().map(|m| m.1.values.calibration))),
                    adapted_calibration_error: neg(mean(matched.iter().map(|m| m.2.1))),
                    template: chosen.get(&encoder).cloned(),
                    encoder,
                })
                .collect();
            let mut names = Vec::new();
            let prefix = if single {
                format!("{}_vs_{regime}", axes.regime)
            } else {
                format!("{}_vs_{regime}_{slug}", axes.regime)
            };
            for (axis, label, a_of, b_of) in [
                (
                    "discrimination",
                    axes.discrimination_metric.clone(),
                    (|d: &RegimeDelta| d.base_discrimination) as fn(&RegimeDelta) -> Option<f64>,
                    (|d: &RegimeDelta| d.adapted_discrimination) as fn(&RegimeDelta) -> Option<f64>,
                ),
                (
                    "calibration",
                    format!("-{}", axes.calibration_metric),
                    |d: &RegimeDelta| d.base_calibration_error.map(|v| -v),
                    |d: &RegimeDelta| d.adapted_calibration_error.map(|v| -v),
                ),
            ] {
                let pairs: Vec<(String, f64, f64)> =
                    encoders.iter().filter_map(|d| Some((d.encoder.clone(), a_of(d)?, b_of(d)?))).collect();
                if pairs.len() < 2 {
                    notes.push(format!(
                        "{} vs {regime} {method} by {axis}: {} encoder(s) observed in both regimes, no rank \
                         comparison (the per-encoder values are in the summary)",
                        axes.regime,
                        pairs.len()
                    ));
                    continue;
                }
                let a: Vec<(String, f64)> = pairs.iter().map(|p| (p.0.clone(), p.1)).collect();
                let b: Vec<(String, f64)> = pairs.iter().map(|p| (p.0.clone(), p.2)).collect();
                let name = format!("{prefix}_{axis}");
                rank_comparisons.push(NamedComparison {
                    name: name.clone(),
                    a: format!("{label} ({})", axes.regime),
                    b: format!("{label} ({regime} {method})"),
                    comparison: compare_rankings(&a, &b)?,
                });
                names.push(name);
            }
            out.push(RegimeComparison {
                base: axes.regime,
                regime,
                method,
                selection,
                rank_comparisons: names,
                encoders,
            });
        }
    }
    Ok(out)
}
