//! The reliability bins of every run whose record points to a predictions file: what the report's
//! reliability grids and diagrams draw.

use crate::run_records::predictions_file;
use crate::{EvalError, ReliabilityFigure};
use calibra_crs::RunRecordSet;
use calibra_metrics::{
    Binning, ReliabilityBin, expected_calibration_error, reliability_bins, top_label_reliability_bins,
};
use calibra_predictions::{Targets, read_predictions};

/// One figure per record with a predictions file, in record order: `n_bins` equal-width right-closed
/// bins, top-label (single-label) or positive-class pooled over labels (multilabel).
pub fn reliability_figures(set: &RunRecordSet, n_bins: usize) -> Result<Vec<ReliabilityFigure>, EvalError> {
    let mut out = Vec::new();
    for located in set.records() {
        let Some(rel) = located.record.paths.get("predictions") else { continue };
        let path = predictions_file(&located.location.source, rel);
        let at = || {
            format!(
                "{}:{}: predictions file `{rel}` of this run record (pass --no-reliability to skip diagrams)",
                located.location.source, located.location.line
            )
        };
        let predictions =
            read_predictions(&path).map_err(|source| EvalError::Predictions { at: at(), source })?;
        let probs = predictions.probabilities();
        let k = predictions.num_classes();
        let bins: Vec<ReliabilityBin> = match predictions.targets() {
            Targets::Classes(labels) => {
                top_label_reliability_bins(&probs, k, labels, n_bins, Binning::RightClosed)
                    .map_err(|source| EvalError::Bins { at: at(), source })?
            }
            Targets::Labels(values) => {
                let (conf, outcome): (Vec<f64>, Vec<f64>) = probs
                    .iter()
                    .zip(values)
                    .filter_map(|(&p, t)| t.map(|t| (p, if t { 1.0 } else { 0.0 })))
                    .unzip();
                reliability_bins(&conf, &outcome, n_bins, Binning::RightClosed)
            }
        };
        let n: usize = bins.iter().map(|b| b.count).sum();
        let r = &located.record;
        out.push(ReliabilityFigure {
            run: format!(
                "{} / {} / {} / {} / ρ={} / seed {}",
                r.encoder, r.dataset, r.regime, r.condition, r.label_fraction, r.seed
            ),
            encoder: r.encoder.clone(),
            dataset: r.dataset.clone(),
            regime: r.regime.to_string(),
            probe: r.probe.clone(),
            calibrator: r.calibrator.clone(),
            label_fraction: r.label_fraction,
            clean: r.condition == calibra_crs::Condition::Clean,
            seed: r.seed,
            source: rel.clone(),
            ece: expected_calibration_error(&bins, n),
            bins,
        });
    }
    Ok(out)
}
