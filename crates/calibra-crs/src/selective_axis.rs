//! The optional fifth CRS axis, "selective" (issue 24): `−AUGRC` of each cell's clean full-label runs.
//!
//! Run records carry no AUGRC; the selective analyses ([`crate::selective_analyses`]) compute it per run
//! from the run's predictions file (MSP confidence). [`with_selective_metrics`] attaches those per-run
//! values to the records as the metrics [`SELECTIVE_METRIC`] (`augrc`), `aurc` and `eaurc`, so that the
//! selective axis goes through exactly the machinery of the other axes: seed means in the metric rows,
//! the cell value read from the same clean ρ = 1 group as discrimination and calibration (the configured
//! regime, probe and calibrator), the encoder mean over cells, and the paired-seed bootstrap resampling
//! its seeds like every other metric. `aurc` and `eaurc` feed the estimator substitutions
//! `selective=aurc` and `selective=eaurc`.
//!
//! This is only done when the axis is requested (five axis weights); the default four-axis evaluation
//! never sees these metrics.

use crate::axes::SELECTIVE_METRIC;
use crate::error::CrsError;
use crate::run_record::RunRecordSet;
use crate::selective_analyses::SelectiveReport;
use std::collections::HashMap;

/// The per-run selective metrics attached to the records: the axis's metric first, then its
/// substitutes.
pub const SUBSTITUTE_METRICS: [&str; 3] = [SELECTIVE_METRIC, "aurc", "eaurc"];

/// `set` with each run's AUGRC, AURC and E-AURC from `report` (the selective analyses of the same set)
/// attached as the metrics `augrc`, `aurc` and `eaurc`. A run without a predictions file, or whose value
/// is undefined, gets no such metric (unobserved, never imputed).
///
/// # Errors
/// [`CrsError::SelectiveAxisInput`] when a record already carries one of these metrics (a value from
/// elsewhere would be silently replaced), or when `report` names a run that is not in `set` (the report
/// is of another run set).
pub fn with_selective_metrics(
    set: &RunRecordSet,
    report: &SelectiveReport,
) -> Result<RunRecordSet, CrsError> {
    let mut by_record: HashMap<&str, [Option<f64>; 3]> = HashMap::new();
    for run in &report.runs {
        by_record.insert(run.run.record.as_str(), [run.augrc, run.aurc, run.eaurc]);
    }
    let mut records = set.records().to_vec();
    let mut found = 0;
    for located in &mut records {
        let location = located.location.to_string();
        if let Some(name) = SUBSTITUTE_METRICS.iter().find(|m| located.record.metrics.contains_key(**m)) {
            return Err(CrsError::SelectiveAxisInput {
                needs: format!(
                    "run records without a metric `{name}` of their own ({location} has one); the selective \
                     analyses attach it from the predictions files"
                ),
            });
        }
        let Some(values) = by_record.get(location.as_str()) else { continue };
        found += 1;
        for (name, value) in SUBSTITUTE_METRICS.iter().zip(values) {
            if let Some(v) = value {
                located.record.metrics.insert((*name).to_string(), *v);
            }
        }
    }
    if found != by_record.len() {
        return Err(CrsError::SelectiveAxisInput {
            needs: "the selective analyses of this run set (the report names runs that are not in it)".into(),
        });
    }
    Ok(RunRecordSet::from_located(records))
}
