//! A run as the per-sample analyses report it (its key, flattened for tables, and its record's
//! `file:line`), and where its predictions file is.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::run_record::{Condition, LocatedRecord, Regime};

/// The key of a run, flattened for tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunLabel {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub seed: u64,
    pub condition: Condition,
    /// `file:line` of the run record.
    pub record: String,
}

impl RunLabel {
    pub(crate) fn of(r: &LocatedRecord) -> Self {
        let x = &r.record;
        RunLabel {
            encoder: x.encoder.clone(),
            dataset: x.dataset.clone(),
            regime: x.regime,
            probe: x.probe.clone(),
            calibrator: x.calibrator.clone(),
            label_fraction: x.label_fraction,
            seed: x.seed,
            condition: x.condition.clone(),
            record: r.location.to_string(),
        }
    }
}

/// The predictions path of a record (relative paths are relative to the record file's directory).
pub fn predictions_path(r: &LocatedRecord) -> Option<PathBuf> {
    let rel = r.record.paths.get("predictions")?;
    let base = Path::new(&r.location.source).parent().unwrap_or(Path::new(""));
    Some(if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { base.join(rel) })
}
