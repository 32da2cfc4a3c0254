//! Per-domain CRS (spec §4): a reference per dataset from that dataset's cells, over the encoders
//! complete in that dataset; a domain that cannot be scored is skipped with a note.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::axes::{AxisConfig, CellAxes};
use crate::profile::{Profile, axes_of};
use crate::reference::{ReferenceConfig, panel_crs};
use crate::score::ordinal_ranks;

/// CRS per dataset against that dataset's own reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainCrs {
    pub dataset: String,
    /// `(encoder, CRS, rank)` over the encoders complete in this dataset, in encoder order.
    pub scores: Vec<(String, f64, usize)>,
}

/// The CRS of every dataset of `cells` whose complete encoders (at least 2) can be scored with
/// `panel_config` (its domain set to the dataset); the others are named in `notes`.
pub(crate) fn per_domain_crs(
    cells: &[CellAxes],
    config: &AxisConfig,
    panel_config: &ReferenceConfig,
    notes: &mut Vec<String>,
) -> Vec<DomainCrs> {
    let axes = axes_of(config.n_axes());
    let mut by_domain: BTreeMap<&str, Vec<Profile>> = BTreeMap::new();
    for cell in cells {
        let values = axes.iter().map(|&a| cell.values.axis(a, config.robustness)).collect();
        by_domain.entry(&cell.dataset).or_default().push(Profile::with_values(cell.encoder.clone(), values));
    }
    let mut per_domain = Vec::new();
    for (dataset, domain_profiles) in by_domain {
        let complete: Vec<Profile> =
            domain_profiles.into_iter().filter(|p| p.require_complete().is_ok()).collect();
        let config = ReferenceConfig { domain: Some(dataset.to_string()), ..panel_config.clone() };
        if complete.len() < 2 {
            notes.push(format!("per-domain CRS of {dataset} skipped: fewer than 2 complete encoders"));
            continue;
        }
        match panel_crs(&complete, &config) {
            Ok(scores) => {
                let values: Vec<f64> = scores.iter().map(|s| s.1).collect();
                let ranks = ordinal_ranks(&values);
                per_domain.push(DomainCrs {
                    dataset: dataset.to_string(),
                    scores: scores.into_iter().zip(ranks).map(|((e, c), r)| (e, c, r)).collect(),
                });
            }
            Err(e) => notes.push(format!("per-domain CRS of {dataset} skipped: {e}")),
        }
    }
    per_domain
}
