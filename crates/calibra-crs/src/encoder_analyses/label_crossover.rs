//! E6 label-fraction crossover against a declared reference encoder (see `crate::encoder_analyses`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::analysis::Analysis;
use super::regime_rows::RegimeRows;
use crate::run_record::Condition;

/// E6 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelCrossover {
    pub encoder: String,
    pub dataset: String,
    pub reference: String,
    pub auroc_at_1pct: Option<f64>,
    pub auroc_at_10pct: Option<f64>,
    /// First fraction where AUROC ≥ the reference's AUROC at that fraction.
    pub crossover_fraction: Option<f64>,
    /// Fractions observed for both.
    pub shared_fractions: Vec<f64>,
}

/// E6 for every cell of another encoder that shares a label fraction with the reference encoder.
pub(crate) fn label_crossover(rows: &RegimeRows, reference: Option<&str>) -> Analysis<LabelCrossover> {
    let (regime, disc) = (rows.regime, rows.disc);
    let clean = Condition::Clean;
    let mut e6 = Vec::new();
    if let Some(reference) = reference {
        let curve = |e: &str, d: &str| -> BTreeMap<u64, f64> {
            let Some(probe) = rows.primary.get(&(e, d)) else { return BTreeMap::new() };
            rows.rows
                .iter()
                .filter(|r| {
                    r.encoder == e
                        && r.dataset == d
                        && r.regime == regime
                        && r.probe == *probe
                        && r.calibrator == "none"
                        && r.condition == clean
                        && r.metric == disc
                })
                .map(|r| (r.label_fraction.to_bits(), r.mean))
                .collect()
        };
        for &(e, d) in rows.primary.keys() {
            if e == reference {
                continue;
            }
            let reference_curve = curve(reference, d);
            if reference_curve.is_empty() {
                continue;
            }
            let own = curve(e, d);
            // f64 bits of positive numbers sort like the numbers.
            let shared: Vec<(f64, f64, f64)> = own
                .iter()
                .filter_map(|(bits, &a)| Some((f64::from_bits(*bits), a, *reference_curve.get(bits)?)))
                .collect();
            if shared.is_empty() {
                continue;
            }
            let at = |f: f64| own.get(&f.to_bits()).copied();
            e6.push(LabelCrossover {
                encoder: e.to_string(),
                dataset: d.to_string(),
                reference: reference.to_string(),
                auroc_at_1pct: at(0.01),
                auroc_at_10pct: at(0.1),
                crossover_fraction: shared.iter().find(|(_, a, r)| a >= r).map(|s| s.0),
                shared_fractions: shared.iter().map(|s| s.0).collect(),
            });
        }
    }
    Analysis::new(
        e6,
        || match reference {
            None => "no crossover reference encoder declared".into(),
            Some(r) => format!("no cell shares a label fraction with the reference encoder `{r}`"),
        },
        Vec::new(),
    )
}
