//! Checking run records against their predictions files: the metrics calibra computes from a
//! predictions file (`calibra_run::slot_outputs::record_metrics`) must agree with the record's values
//! of the same names. A disagreement is a warning, or an error under `--strict`.

use crate::EvalError;
use crate::run_records::predictions_file;
use calibra_crs::RunRecordSet;
use calibra_predictions::read_predictions;

/// Largest |record − recomputed| accepted, relative to max(1, |recomputed|): metrics are recomputed
/// from the exact numbers of the file, so anything beyond rounding means the record is not what its
/// predictions give.
const TOLERANCE: f64 = 1e-6;

/// Disagreements listed in a message before `… and N more`.
const SHOWN: usize = 10;

/// Every disagreement between a record and its predictions file, as `file:line: ...` messages.
pub fn check_against_predictions(set: &RunRecordSet) -> Vec<String> {
    let mut problems = Vec::new();
    for located in set.records() {
        let Some(rel) = located.record.paths.get("predictions") else { continue };
        let at = format!("{}:{}", located.location.source, located.location.line);
        let path = predictions_file(&located.location.source, rel);
        let recomputed = match read_predictions(&path)
            .map_err(|e| e.to_string())
            .and_then(|p| calibra_run::slot_outputs::record_metrics(&p).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("{at}: its predictions file `{rel}` cannot be checked: {e}"));
                continue;
            }
        };
        for (name, value) in &located.record.metrics {
            let Some(expected) = recomputed.get(name) else { continue };
            if (value - expected).abs() > TOLERANCE * expected.abs().max(1.0) {
                problems.push(format!(
                    "{at}: metric `{name}` is {value} but its predictions file `{rel}` gives {expected}"
                ));
            }
        }
    }
    problems
}

/// `problems` as a warning (through `log`), or as the error under `strict`; nothing when empty.
pub fn report_disagreements(
    problems: &[String],
    strict: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(), EvalError> {
    if problems.is_empty() {
        return Ok(());
    }
    let mut list: String =
        problems.iter().take(SHOWN).map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n");
    if problems.len() > SHOWN {
        list += &format!("\n  … and {} more", problems.len() - SHOWN);
    }
    if strict {
        return Err(EvalError::Disagreements { count: problems.len(), list });
    }
    log(&format!(
        "warning: {} run record(s) disagree with their predictions files (--strict makes this an error):\n{list}",
        problems.len()
    ));
    Ok(())
}
