//! From a fitted model to the fit's run outputs, the same way for every regime.
//!
//! For a [`Fitted`] model and the slots still missing from the store:
//! 1. the model predicts the fit's clean calibration split (the post-hoc calibrators' training data);
//! 2. for each distinct condition of the missing slots, in slot order, it predicts the test split
//!    under that condition; a shift target is resolved here, once for every regime: its dataset is
//!    loaded, checked to have the fit's labels, and its own test split (same `[split]`) predicted;
//! 3. each slot's calibrator (calibra-calibrate, default options) is fitted once per fit on the
//!    calibration predictions and applied to the condition's test predictions (`none`: raw);
//! 4. the record metrics are the calibra-metrics summary (15 equal-width bins, right-closed):
//!    `accuracy`, `macro_auroc`, `macro_auprc`, `ece`, `adaptive_ece`, `mce`, `brier`, `nll`,
//!    `macro_f1`, each omitted where undefined; records carry no timings, so a rerun writes
//!    byte-identical records, and the model's training curve when it has one.
//!
//! A non-finite logit is the fit's error, naming the sample, and nothing of the fit is written.

use std::collections::{BTreeMap, HashMap};

use calibra_calibrate::{CalibratorOptions, FittedCalibrator, Method, calibrator_for};
use calibra_crs::{Condition, RunRecord};
use calibra_data::{Dataset, RowTargets, Split};
use calibra_metrics::SummaryOptions;
use calibra_predictions::{Predictions, ScoreKind, Targets, summarize_predictions, write_predictions_to};

use crate::datasets::{DatasetCache, split_of};
use crate::executor::{ExecError, RunContext};
use crate::fitted::{Fitted, PredictRequest};
use crate::grid::{FitSpec, Slot};
use crate::store::{PredictionsData, RunOutput};

/// The outputs of every missing slot of `fit` for a fitted model (see the module docs).
pub fn model_outputs(
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
    datasets: &DatasetCache,
    model: &dyn Fitted,
) -> Result<Vec<RunOutput>, ExecError> {
    let c = &fit.config;
    let dataset = datasets.get(&c.dataset.spec)?;
    let split = split_of(&dataset, &c.split)?;
    let own = |split, condition, rows| (split, condition, c.dataset.spec.as_str(), dataset.as_ref(), rows);
    let calibration =
        predict(model, own(Split::Calibration, &Condition::Clean, split.calibration.as_slice()), ctx)?;
    let training = model.training();
    let mut calibrators = HashMap::new();
    let mut by_condition: HashMap<&Condition, Predictions> = HashMap::new();
    let missing = ctx.missing.clone();
    let mut outputs = Vec::with_capacity(missing.len());
    for slot in &missing {
        if !by_condition.contains_key(&slot.condition) {
            ctx.report(&format!("{}: predicting test ({})", model.kind(), slot.condition));
            let test = match &slot.condition {
                Condition::Shift { target } => {
                    let (spec, shifted) = datasets.shift_target(fit, target, &dataset)?;
                    let shifted_split = split_of(&shifted, &c.split)?;
                    predict(model, (Split::Test, &slot.condition, spec, &shifted, &shifted_split.test), ctx)?
                }
                condition => predict(model, own(Split::Test, condition, split.test.as_slice()), ctx)?,
            };
            by_condition.insert(&slot.condition, test);
        }
        let test = by_condition[&slot.condition].clone();
        let mut output = slot_output(fit, slot, &calibration, test, &mut calibrators)?;
        output.record.training = training.clone();
        outputs.push(output);
    }
    Ok(outputs)
}

/// The output of an estimate fit: its one slot (clean, `none`) with `metrics` and no predictions.
pub fn score_outputs(
    fit: &FitSpec,
    ctx: &RunContext<'_>,
    metrics: BTreeMap<String, f64>,
) -> Result<Vec<RunOutput>, ExecError> {
    let slot = Slot { condition: Condition::Clean, calibrator: "none".into() };
    if let Some(other) = ctx.missing.iter().find(|s| **s != slot) {
        return Err(format!(
            "scores fill only the (clean, none) slot; the fit also needs condition {} / calibrator {}",
            other.condition, other.calibrator
        )
        .into());
    }
    Ok(vec![RunOutput { record: record_of(fit, &slot, metrics), predictions: PredictionsData::None }])
}

/// The model's predictions of `(split, condition, data spec, dataset, rows)`, checked: one finite
/// logit per row and class.
fn predict(
    model: &dyn Fitted,
    (split, condition, data, dataset, rows): (Split, &Condition, &str, &Dataset, &[usize]),
    ctx: &mut RunContext<'_>,
) -> Result<Predictions, ExecError> {
    let scores = model.predict(&PredictRequest { split, condition, data, dataset, rows }, ctx)?;
    predictions_from_scores(dataset, rows, scores)
}

/// A predictions table of `rows` of `dataset` with their targets and row-major logits
/// (`rows.len() × K`); a non-finite logit is an error naming the sample.
pub fn predictions_from_scores(
    dataset: &Dataset,
    rows: &[usize],
    scores: Vec<f64>,
) -> Result<Predictions, ExecError> {
    // Targets first: they check every row is in range before the ids are read.
    let targets = match dataset.row_targets(rows)? {
        RowTargets::Labels(table) => Targets::Labels(table),
        RowTargets::Classes(classes) => Targets::Classes(classes),
    };
    let k = dataset.labels.len().max(1);
    if let Some(at) = scores.iter().position(|v| !v.is_finite()) {
        let sample = rows.get(at / k).map_or("?", |&i| dataset.samples[i].id.as_str());
        return Err(format!(
            "the model gave a non-finite logit ({}) for sample `{sample}` (class {}); no predictions written",
            scores[at],
            at % k
        )
        .into());
    }
    let ids = rows.iter().map(|&i| dataset.samples[i].id.clone()).collect();
    Ok(Predictions::new(ids, dataset.labels.names.clone(), ScoreKind::Logit, scores, targets)?)
}

/// Turns a fit's test predictions for one slot into its run output: applies the slot's post-hoc
/// calibrator (fitted once per fit on the calibration-split predictions, kept in `fitted`), computes
/// the record metrics and serialises the predictions.
pub fn slot_output(
    fit: &FitSpec,
    slot: &Slot,
    calibration: &Predictions,
    test: Predictions,
    fitted: &mut HashMap<String, FittedCalibrator>,
) -> Result<RunOutput, ExecError> {
    let calibrated = if slot.calibrator == "none" {
        test
    } else {
        if !fitted.contains_key(&slot.calibrator) {
            let method: Method = slot.calibrator.parse()?;
            let calibrator = calibrator_for(method, calibration.task(), &CalibratorOptions::default())?;
            fitted.insert(slot.calibrator.clone(), calibrator.fit(calibration)?);
        }
        fitted[&slot.calibrator].apply(&test)?
    };
    let mut bytes = Vec::new();
    write_predictions_to(&mut bytes, &calibrated)?;
    Ok(RunOutput {
        record: record_of(fit, slot, record_metrics(&calibrated)?),
        predictions: PredictionsData::Bytes(bytes),
    })
}

/// The run record of one slot of `fit` with `metrics` (no paths, timings or training curve).
fn record_of(fit: &FitSpec, slot: &Slot, metrics: BTreeMap<String, f64>) -> RunRecord {
    let c = &fit.config;
    RunRecord {
        encoder: c.encoder.name.clone(),
        dataset: c.dataset.name.clone(),
        regime: c.regime,
        probe: c.probe.clone(),
        calibrator: slot.calibrator.clone(),
        label_fraction: c.label_fraction,
        seed: c.seed,
        condition: slot.condition.clone(),
        metrics,
        paths: BTreeMap::new(),
        timings: BTreeMap::new(),
        versions: BTreeMap::from([("calibra".to_string(), env!("CARGO_PKG_VERSION").to_string())]),
        training: None,
    }
}

/// The metric set of a predictions table, as record metrics (undefined ones omitted).
pub fn record_metrics(p: &Predictions) -> Result<BTreeMap<String, f64>, ExecError> {
    let s = summarize_predictions(p, &SummaryOptions::default())?;
    Ok([
        ("accuracy", s.accuracy),
        ("macro_auroc", s.macro_auroc),
        ("macro_auprc", s.macro_auprc),
        ("ece", s.ece),
        ("adaptive_ece", s.adaptive_ece),
        ("mce", s.mce),
        ("brier", s.brier),
        ("nll", s.nll),
        ("macro_f1", s.macro_f1),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.filter(|x| x.is_finite()).map(|x| (name.to_string(), x)))
    .collect())
}
