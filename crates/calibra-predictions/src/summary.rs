//! The metric sets of a predictions table, whatever its task: the one dispatch from a table's targets
//! (class labels or per-label values) to calibra-metrics' single-label or multilabel summary, shared
//! by the run records (calibra-run) and the terminal outputs (calibra-report).

use crate::{Predictions, Targets};
use calibra_metrics::{
    MetricSummary, MetricsError, SelectiveSummary, SummaryOptions, summarize_multilabel,
    summarize_selective_multilabel, summarize_selective_single_label, summarize_single_label,
};

/// The discrimination and calibration metric set of a predictions table.
pub fn summarize_predictions(
    predictions: &Predictions,
    options: &SummaryOptions,
) -> Result<MetricSummary, MetricsError> {
    let probs = predictions.probabilities();
    let k = predictions.num_classes();
    match predictions.targets() {
        Targets::Classes(labels) => summarize_single_label(&probs, predictions.logits(), k, labels, options),
        Targets::Labels(values) => summarize_multilabel(&probs, k, values, options),
    }
}

/// The selective-prediction metric set of a predictions table.
pub fn summarize_selective_predictions(predictions: &Predictions) -> Result<SelectiveSummary, MetricsError> {
    let probs = predictions.probabilities();
    let k = predictions.num_classes();
    match predictions.targets() {
        Targets::Classes(labels) => summarize_selective_single_label(&probs, predictions.logits(), k, labels),
        Targets::Labels(values) => summarize_selective_multilabel(&probs, k, values),
    }
}
