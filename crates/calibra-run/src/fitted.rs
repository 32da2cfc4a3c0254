//! What an executor's fit returns: a fitted model the runner predicts with, or scores that are the
//! record themselves. The runner (see [`crate::slot_outputs`]) does everything after the fit once for
//! every regime: the calibration split, shift targets, one prediction per condition, the post-hoc
//! calibrators, the metrics and the run records.

use std::collections::BTreeMap;

use calibra_crs::Condition;
use calibra_crs::run_record::TrainingCurve;
use calibra_data::{Dataset, Split};

use crate::executor::{ExecError, RunContext};
use crate::store::RunOutput;

/// The rows a fitted model is asked to predict: `rows` of `dataset` (whose spec is `data`), the
/// `split` they come from, under the record condition `condition`.
///
/// The runner resolves the condition: for [`Condition::Shift`] `dataset` is the shift target's
/// dataset and `rows` its test split (its images are clean); for a perturbation, `rows` are the fit's
/// test split and the model perturbs the images itself (or reads features of perturbed images).
pub struct PredictRequest<'a> {
    pub split: Split,
    pub condition: &'a Condition,
    pub data: &'a str,
    pub dataset: &'a Dataset,
    pub rows: &'a [usize],
}

/// A fitted model.
pub trait Fitted {
    /// A short tag for progress lines (`lora`, `coop`, `logistic`, ...).
    fn kind(&self) -> &str;

    /// The model's logits for `request.rows`, row-major `[rows, K]` in the rows' order (K = the
    /// dataset's classes or labels). The runner turns them into predictions: a non-finite logit is
    /// the fit's error, naming the sample.
    fn predict(&self, request: &PredictRequest<'_>, ctx: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError>;

    /// The training curve every record of the fit carries (`None`: nothing was trained by epochs).
    fn training(&self) -> Option<TrainingCurve> {
        None
    }
}

/// The result of one fit.
pub enum FitOutcome<'e> {
    /// A fitted model: the runner predicts every missing slot with it.
    Model(Box<dyn Fitted + 'e>),
    /// The metrics of the fit's one slot (clean, calibrator `none`) with no predictions: the
    /// transferability estimators' scores.
    Scores(BTreeMap<String, f64>),
    /// Finished outputs built by the executor itself (records imported from elsewhere, test
    /// doubles); the runner checks them against the fit before committing (see
    /// [`crate::runner::check_outputs`]).
    Records(Vec<RunOutput>),
}
