//! The executor `calibra run` (and `calibra train`) uses: frozen probes on cached encoder features
//! ([`frozen`]), LoRA and full fine-tuning of an encoder with a linear head ([`adapted`]), CoOp
//! prompt tuning of a CLIP-style encoder ([`coop`]), zero-shot prompting of a CLIP-style encoder
//! ([`zero_shot`], one fit per template), transferability estimates on cached frozen features
//! ([`estimate`]), and the
//! `prior` baseline of calibra-run. Wiring only: features, training and models come from
//! calibra-train / calibra-models, probes from calibra-probe, calibration / metrics / records from
//! calibra-run's shared `slot_output`.

mod adapted;
mod coop;
mod estimate;
mod frozen;
mod zero_shot;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use burn::tensor::Device;
use calibra_crs::{Condition, Regime};
use calibra_data::{Dataset, DatasetSpec, LoadOptions, SplitAssignment};
use calibra_predictions::Predictions;
use calibra_run::baseline::{BaselineExecutor, slot_output, split_of};
use calibra_run::{ExecError, Executor, FitMethod, FitSpec, RunContext, RunOutput};
use calibra_train::features::FeatureCondition;
use calibra_train::trainer::StepReport;

/// Probes this executor fits on frozen features (besides `prior`).
const LEARNED_PROBES: [&str; 3] = ["logistic", "mlp", "knn"];

/// Frozen probes, LoRA and full fine-tuning, plus the `prior` baseline.
pub struct RunExecutor {
    baseline: BaselineExecutor,
    device: Device,
    datasets: RefCell<HashMap<String, Rc<Dataset>>>,
}

impl RunExecutor {
    /// Everything runs on burn's CPU backend.
    pub fn new() -> Self {
        RunExecutor {
            baseline: BaselineExecutor::default(),
            device: Device::flex(),
            datasets: RefCell::default(),
        }
    }

    fn dataset(&self, spec: &str) -> Result<Rc<Dataset>, ExecError> {
        if let Some(d) = self.datasets.borrow().get(spec) {
            return Ok(d.clone());
        }
        let d = Rc::new(calibra_data::load_dataset(&DatasetSpec::parse(spec)?, &LoadOptions::default())?);
        self.datasets.borrow_mut().insert(spec.to_string(), d.clone());
        Ok(d)
    }

    /// The dataset of shift target `target`, checked to have `dataset`'s labels.
    fn shift_dataset(
        &self,
        fit: &FitSpec,
        target: &str,
        dataset: &Dataset,
    ) -> Result<Rc<Dataset>, ExecError> {
        let shifted = self.dataset(shift_spec(fit, target)?)?;
        if shifted.labels.names != dataset.labels.names {
            return Err(format!(
                "shift target `{target}` has labels {:?}, the dataset {:?}",
                shifted.labels.names, dataset.labels.names
            )
            .into());
        }
        Ok(shifted)
    }
}

/// The dataset spec behind shift target `target` of `fit`.
fn shift_spec<'a>(fit: &'a FitSpec, target: &str) -> Result<&'a str, ExecError> {
    fit.shift_targets
        .iter()
        .find(|t| t.name == target)
        .map(|t| t.spec.as_str())
        .ok_or_else(|| format!("unknown shift target `{target}`").into())
}

/// `clean`, `<perturbation>:<severity>` or `shift:<target>`.
fn condition_name(c: &Condition) -> String {
    match c {
        Condition::Clean => "clean".into(),
        Condition::Perturbation { perturbation, severity } => format!("{perturbation}:{severity}"),
        Condition::Shift { target } => format!("shift:{target}"),
    }
}

/// Reports one progress line per epoch (and the last step) of a training run, tagged `kind`:
/// loss, learning rate, images/s and the time left at the current pace.
struct EpochLog {
    kind: &'static str,
    last_epoch: usize,
    started: std::time::Instant,
    images: usize,
    steps: usize,
}

impl EpochLog {
    fn new(kind: &'static str) -> Self {
        EpochLog { kind, last_epoch: usize::MAX, started: std::time::Instant::now(), images: 0, steps: 0 }
    }

    fn step(&mut self, s: &StepReport, ctx: &mut RunContext<'_>) {
        self.images += s.images;
        self.steps += 1;
        if s.epoch != self.last_epoch || s.step == s.total_steps {
            self.last_epoch = s.epoch;
            let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
            let left = seconds / self.steps as f64 * (s.total_steps - s.step) as f64;
            ctx.report(&format!(
                "{}: epoch {} step {}/{} loss {:.4} lr {:.2e} · {:.0} img/s · {:.0} s left",
                self.kind,
                s.epoch + 1,
                s.step,
                s.total_steps,
                s.loss,
                s.lr,
                self.images as f64 / seconds,
                left
            ));
        }
    }

    /// Report the resume point if there was one.
    fn resumed(&self, ctx: &mut RunContext<'_>, resumed_from: Option<usize>) {
        if let Some(step) = resumed_from {
            ctx.report(&format!("{}: resumed from the checkpoint at step {step}", self.kind));
        }
    }
}

/// A fitted model's scores (row-major `[rows, K]`) for `rows` of a dataset under a condition.
type ScoreRows<'a> = dyn FnMut(&Dataset, &[usize], FeatureCondition) -> Result<Vec<f64>, ExecError> + 'a;

/// A fitted model's predictions for `rows` of `dataset` from its row-major `[rows, K]` logits; a
/// non-finite logit is an error naming the sample (and nothing of the fit is written).
fn predictions_from_scores(
    dataset: &Dataset,
    rows: &[usize],
    scores: Vec<f64>,
) -> Result<Predictions, ExecError> {
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
    calibra_run::baseline::predictions_from_scores(dataset, rows, scores)
}

/// The test-split feature condition of a record condition: a perturbation's, or clean (a shift target
/// is another dataset's clean test split).
fn feature_condition(condition: &Condition) -> Result<FeatureCondition, ExecError> {
    Ok(match condition {
        Condition::Perturbation { perturbation, severity } => {
            FeatureCondition::parse(&format!("{perturbation}:{severity}"))?
        }
        Condition::Clean | Condition::Shift { .. } => FeatureCondition::Clean,
    })
}

/// Every missing slot's output for a fitted model: `calibration` (the clean calibration-split
/// predictions) fits the calibrators, and `predict_test(condition, ctx)` gives a condition's test
/// predictions (a shift target: the other dataset's test split), asked once per distinct condition and
/// shared by that condition's calibrator slots.
fn fill_slots(
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
    calibration: &Predictions,
    predict_test: &mut dyn FnMut(&Condition, &mut RunContext<'_>) -> Result<Predictions, ExecError>,
) -> Result<Vec<RunOutput>, ExecError> {
    let mut calibrators = HashMap::new();
    let mut by_condition: HashMap<String, Predictions> = HashMap::new();
    let mut outputs = Vec::new();
    for slot in &ctx.missing.clone() {
        let key = condition_name(&slot.condition);
        if !by_condition.contains_key(&key) {
            let p = predict_test(&slot.condition, ctx)?;
            by_condition.insert(key.clone(), p);
        }
        outputs.push(slot_output(fit, slot, calibration, by_condition[&key].clone(), &mut calibrators)?);
    }
    Ok(outputs)
}

/// [`fill_slots`] for a model scored on rows: `scores(dataset, rows, condition)` gives its scores
/// (row-major `[rows, K]`) for those rows of a dataset under a feature condition.
fn predict_slots(
    executor: &RunExecutor,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
    dataset: &Dataset,
    split: &SplitAssignment,
    kind: &str,
    scores: &mut ScoreRows<'_>,
) -> Result<Vec<RunOutput>, ExecError> {
    let calibration = predictions_from_scores(
        dataset,
        &split.calibration,
        scores(dataset, &split.calibration, FeatureCondition::Clean)?,
    )?;
    fill_slots(fit, ctx, &calibration, &mut |condition, ctx| {
        ctx.report(&format!("{kind}: predicting test ({})", condition_name(condition)));
        match condition {
            Condition::Shift { target } => {
                let shifted = executor.shift_dataset(fit, target, dataset)?;
                let shifted_split = split_of(&shifted, &fit.config.split)?;
                let s = scores(&shifted, &shifted_split.test, FeatureCondition::Clean)?;
                predictions_from_scores(&shifted, &shifted_split.test, s)
            }
            _ => predictions_from_scores(
                dataset,
                &split.test,
                scores(dataset, &split.test, feature_condition(condition)?)?,
            ),
        }
    })
}

impl Executor for RunExecutor {
    fn supports(&self, fit: &FitSpec) -> Result<(), String> {
        match (&fit.config.method, fit.config.regime) {
            (FitMethod::Probe { probe, .. }, Regime::Frozen) if probe == "prior" => {
                self.baseline.supports(fit)
            }
            (FitMethod::Probe { probe, .. }, Regime::Frozen) if LEARNED_PROBES.contains(&probe.as_str()) => {
                Ok(())
            }
            (FitMethod::Lora { .. } | FitMethod::Full { .. }, _) => adapted::supports(fit),
            (FitMethod::Coop { .. }, _) => coop::supports(fit),
            (FitMethod::ZeroShot { .. }, _) => zero_shot::supports(self, fit),
            (FitMethod::Estimate { .. }, Regime::Estimate) => Ok(()),
            _ => Err(format!(
                "regime {} / {} is not wired into `calibra run` yet; this build runs frozen probes \
                 (logistic, mlp, knn, prior), LoRA, full fine-tuning, CoOp and zero-shot",
                fit.config.regime, fit.config.probe
            )),
        }
    }

    fn execute(&self, fit: &FitSpec, ctx: &mut RunContext<'_>) -> Result<Vec<RunOutput>, ExecError> {
        match &fit.config.method {
            FitMethod::Probe { probe, .. } if probe == "prior" => self.baseline.execute(fit, ctx),
            FitMethod::Probe { probe, layer } => frozen::execute_probe(self, fit, probe, *layer, ctx),
            FitMethod::Lora { .. } | FitMethod::Full { .. } => adapted::execute(self, fit, ctx),
            FitMethod::Coop { .. } => coop::execute(self, fit, ctx),
            FitMethod::ZeroShot { .. } => zero_shot::execute(self, fit, ctx),
            FitMethod::Estimate { estimators, layer } => {
                estimate::execute(self, fit, estimators, *layer, ctx)
            }
        }
    }
}
