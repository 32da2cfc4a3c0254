//! E1 specialist matched-domain gain (see `crate::encoder_analyses`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::analysis::{Analysis, mean};
use super::regime_rows::RegimeRows;
use crate::per_domain::DomainCrs;

/// E1 row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecialistGain {
    pub encoder: String,
    pub matched: Vec<String>,
    pub auroc_in: Option<f64>,
    pub auroc_out: Option<f64>,
    pub delta_spec: Option<f64>,
    pub crs_in: Option<f64>,
    pub crs_out: Option<f64>,
    pub delta_ood: Option<f64>,
    pub margin_in: Option<f64>,
}

/// E1 for every declared specialist (encoder → matched datasets) with a cell in the regime.
pub(crate) fn specialist(
    rows: &RegimeRows,
    per_domain: &[DomainCrs],
    specialists: &BTreeMap<String, Vec<String>>,
) -> Analysis<SpecialistGain> {
    let (primary, disc, regime) = (&rows.primary, rows.disc, rows.regime);
    let mut e1 = Vec::new();
    for (enc, matched) in specialists {
        let datasets: Vec<&str> = primary.keys().filter(|(e, _)| e == enc).map(|&(_, d)| d).collect();
        let split = |f: &dyn Fn(&str) -> Option<f64>| -> (Option<f64>, Option<f64>) {
            let (mut inn, mut out) = (Vec::new(), Vec::new());
            for &d in &datasets {
                if let Some(v) = f(d) {
                    if matched.iter().any(|m| m == d) { inn.push(v) } else { out.push(v) }
                }
            }
            (mean(&inn), mean(&out))
        };
        let (auroc_in, auroc_out) = split(&|d| rows.clean_full(enc, d, disc));
        let crs_of = |d: &str| {
            per_domain.iter().find(|c| c.dataset == d)?.scores.iter().find(|s| s.0 == *enc).map(|s| s.1)
        };
        let (crs_in, crs_out) = split(&crs_of);
        let others: Vec<f64> = primary
            .keys()
            .filter(|(e, d)| e != enc && matched.iter().any(|m| m == d))
            .filter_map(|&(e, d)| rows.clean_full(e, d, disc))
            .collect();
        if datasets.is_empty() {
            continue;
        }
        e1.push(SpecialistGain {
            encoder: enc.clone(),
            matched: matched.clone(),
            auroc_in,
            auroc_out,
            delta_spec: auroc_in.zip(auroc_out).map(|(a, b)| a - b),
            crs_in,
            crs_out,
            delta_ood: crs_in.zip(crs_out).map(|(a, b)| a - b),
            margin_in: auroc_in.zip(mean(&others)).map(|(a, b)| a - b),
        });
    }
    Analysis::new(
        e1,
        || {
            if specialists.is_empty() {
                "no specialist encoder declared (encoder → matched datasets)".into()
            } else {
                format!("no {regime} run of a declared specialist encoder")
            }
        },
        Vec::new(),
    )
}
