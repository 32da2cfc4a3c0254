//! The `prior` baseline executor: the frozen-regime probe that ignores the image and predicts the
//! class frequencies of its training subset. It needs no encoder and no burn, so `calibra run` can run
//! (and a test can kill and resume) a real grid today; it is also the floor every probe must beat.
//!
//! # Model
//!
//! For a fit (dataset, split, label fraction ρ, seed): the split comes from
//! `calibra_data::split_dataset` with the recipe's `[split]`, the training subset from
//! `calibra_data::label_fraction(ρ, seed)` (stratified, nested, every class kept). Then
//! - single-label tasks: `p_k = (n_k + 1) / (n + K)` (add-one smoothing, so no class has probability
//!   0), written as logits `ln p_k`;
//! - multilabel tasks: per label `p_l = (pos_l + 1) / (obs_l + 2)` over the rows where label l is
//!   observed, written as logits `ln(p_l / (1 − p_l))`.
//!
//! Every test row gets the same prediction, so AUROC is 0.5 wherever defined (all scores tie). The
//! predictions do not depend on the pixels, so a perturbed test split gets exactly the clean split's
//! predictions (honestly: this model is perfectly robust and uninformative). A shift target is
//! predicted on its own test split (same `[split]`); its label names must equal the dataset's.
//!
//! Each calibrator other than `none` is fitted (calibra-calibrate, default options) on the
//! calibration-split predictions and applied to the condition's test predictions. Metrics are the
//! calibra-metrics summary (15 equal-width bins, right-closed): `accuracy`, `macro_auroc`,
//! `macro_auprc`, `ece`, `adaptive_ece`, `mce`, `brier`, `nll`, `macro_f1`, each omitted where
//! undefined. Records carry no timings, so a rerun writes byte-identical records.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use calibra_calibrate::{CalibratorOptions, FittedCalibrator, Method, calibrator_for};
use calibra_crs::{Condition, Regime, RunRecord};
use calibra_data::{Dataset, DatasetSpec, LoadOptions, RowTargets, SplitAssignment};
use calibra_metrics::{SummaryOptions, summarize_multilabel, summarize_single_label};
use calibra_predictions::{Predictions, ScoreKind, Targets, write_predictions_to};

use crate::executor::{ExecError, Executor, RunContext};
use crate::grid::{FitMethod, FitSpec, Slot};
use crate::recipe::SplitSettings;
use crate::store::{PredictionsData, RunOutput};

/// The `prior` probe's executor (see the module docs). Datasets are loaded once per spec and kept.
#[derive(Default)]
pub struct BaselineExecutor {
    datasets: RefCell<HashMap<String, Rc<Dataset>>>,
}

impl BaselineExecutor {
    fn dataset(&self, spec: &str) -> Result<Rc<Dataset>, ExecError> {
        if let Some(d) = self.datasets.borrow().get(spec) {
            return Ok(d.clone());
        }
        let parsed = DatasetSpec::parse(spec)?;
        let d = Rc::new(calibra_data::load_dataset(&parsed, &LoadOptions::default())?);
        self.datasets.borrow_mut().insert(spec.to_string(), d.clone());
        Ok(d)
    }
}

/// The train / calibration / test split of `dataset` under a recipe's `[split]`.
pub fn split_of(dataset: &Dataset, s: &SplitSettings) -> Result<SplitAssignment, ExecError> {
    Ok(calibra_data::split_dataset(dataset, &s.config())?)
}

/// The prior's logits (one row, K columns) from the training rows: Laplace-smoothed log class
/// frequencies, or per label the log-odds of the smoothed positive rate over the observed rows.
fn prior_logits(dataset: &Dataset, rows: &[usize]) -> Result<Vec<f64>, ExecError> {
    let k = dataset.labels.len();
    Ok(match dataset.row_targets(rows)? {
        RowTargets::Classes(classes) => {
            let mut counts = vec![0usize; k];
            for c in classes {
                counts[c] += 1;
            }
            let n = rows.len() as f64;
            counts.iter().map(|&c| ((c as f64 + 1.0) / (n + k as f64)).ln()).collect()
        }
        RowTargets::Labels(table) => (0..k)
            .map(|l| {
                let observed = table.chunks_exact(k).filter_map(|row| row[l]);
                let (pos, obs) = observed.fold((0usize, 0usize), |(p, o), t| (p + usize::from(t), o + 1));
                let p = (pos as f64 + 1.0) / (obs as f64 + 2.0);
                (p / (1.0 - p)).ln()
            })
            .collect(),
    })
}

/// The prior's predictions on `rows` of `dataset`: the same logits row for every sample.
fn predictions(dataset: &Dataset, rows: &[usize], logits: &[f64]) -> Result<Predictions, ExecError> {
    let scores = rows.iter().flat_map(|_| logits.iter().copied()).collect();
    predictions_from_scores(dataset, rows, scores)
}

/// A predictions table of `rows` of `dataset` with their targets and row-major logits
/// (`rows.len() × K`).
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
    let ids = rows.iter().map(|&i| dataset.samples[i].id.clone()).collect();
    Ok(Predictions::new(ids, dataset.labels.names.clone(), ScoreKind::Logit, scores, targets)?)
}

/// Turns a fit's test predictions for one slot into its run output: applies the slot's post-hoc
/// calibrator (fitted once per fit on the calibration-split predictions, kept in `fitted`), computes
/// the record metrics and serialises the predictions. Shared by every executor.
pub fn slot_output(
    fit: &FitSpec,
    slot: &Slot,
    calibration: &Predictions,
    test: Predictions,
    fitted: &mut HashMap<String, FittedCalibrator>,
) -> Result<RunOutput, ExecError> {
    let c = &fit.config;
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
        record: RunRecord {
            encoder: c.encoder.name.clone(),
            dataset: c.dataset.name.clone(),
            regime: c.regime,
            probe: c.probe.clone(),
            calibrator: slot.calibrator.clone(),
            label_fraction: c.label_fraction,
            seed: c.seed,
            condition: slot.condition.clone(),
            metrics: record_metrics(&calibrated)?,
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::from([("calibra".to_string(), env!("CARGO_PKG_VERSION").to_string())]),
            training: None,
        },
        predictions: PredictionsData::Bytes(bytes),
    })
}

/// The metric set of a predictions table, as record metrics (undefined ones omitted).
pub fn record_metrics(p: &Predictions) -> Result<BTreeMap<String, f64>, ExecError> {
    let probs = p.probabilities();
    let k = p.num_classes();
    let options = SummaryOptions::default();
    let s = match p.targets() {
        Targets::Classes(labels) => summarize_single_label(&probs, p.logits(), k, labels, &options)?,
        Targets::Labels(values) => summarize_multilabel(&probs, k, values, &options)?,
    };
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

impl Executor for BaselineExecutor {
    fn supports(&self, fit: &FitSpec) -> Result<(), String> {
        match (&fit.config.method, fit.config.regime) {
            (FitMethod::Probe { probe, .. }, Regime::Frozen) if probe == "prior" => Ok(()),
            (_, regime) => Err(format!(
                "regime {regime} / {} needs the burn executors, which are not wired into `calibra run` yet; \
                 this build runs the `prior` probe only",
                fit.config.probe
            )),
        }
    }

    fn execute(&self, fit: &FitSpec, ctx: &mut RunContext<'_>) -> Result<Vec<RunOutput>, ExecError> {
        let c = &fit.config;
        let dataset = self.dataset(&c.dataset.spec)?;
        let split = split_of(&dataset, &c.split)?;
        let train = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
        let logits = prior_logits(&dataset, &train)?;
        let calibration = predictions(&dataset, &split.calibration, &logits)?;
        let mut fitted = HashMap::new();
        let mut outputs = Vec::new();
        for slot in &ctx.missing {
            let test = match &slot.condition {
                Condition::Clean | Condition::Perturbation { .. } => {
                    predictions(&dataset, &split.test, &logits)?
                }
                Condition::Shift { target } => {
                    let spec = &fit
                        .shift_targets
                        .iter()
                        .find(|t| &t.name == target)
                        .ok_or("unknown shift target")?
                        .spec;
                    let shifted = self.dataset(spec)?;
                    if shifted.labels.names != dataset.labels.names {
                        return Err(format!(
                            "shift target `{target}` has labels {:?}, the dataset {:?}",
                            shifted.labels.names, dataset.labels.names
                        )
                        .into());
                    }
                    let shifted_split = split_of(&shifted, &c.split)?;
                    predictions(&shifted, &shifted_split.test, &logits)?
                }
            };
            outputs.push(slot_output(fit, slot, &calibration, test, &mut fitted)?);
        }
        Ok(outputs)
    }
}
