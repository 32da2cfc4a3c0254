//! The executor `calibra run` uses: frozen probes (`logistic`, `mlp`, `knn`) on cached encoder
//! features, and the `prior` baseline of calibra-run. Wiring only: features come from
//! calibra-train, probes from calibra-probe, calibration / metrics / records from calibra-run's
//! shared `slot_output`.
//!
//! A frozen fit reads three feature passes of its (encoder, dataset, split, layer): train and
//! calibration (clean) and the test split of each condition. Each pass is a safetensors file under
//! the store's `features/` cache, keyed by a fingerprint, so every probe, label fraction and seed of
//! the grid shares one encoder pass per (encoder, dataset, condition, layer).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use burn::tensor::Device;
use calibra_crs::{Condition, Regime};
use calibra_data::{Dataset, DatasetSpec, LoadOptions, Split, SplitConfig, Target, TaskKind};
use calibra_probe::{Features, FittedProbe, Probe, Targets};
use calibra_run::baseline::{BaselineExecutor, predictions_from_scores, slot_output, split_of};
use calibra_run::{ExecError, Executor, FeaturePass, FitMethod, FitSpec, RunContext, RunOutput};
use calibra_train::features::{FeatureCondition, FeatureRequest, FeatureSet, PreparedPass};

/// Probes this executor fits on frozen features (besides `prior`).
const LEARNED_PROBES: [&str; 3] = ["logistic", "mlp", "knn"];

/// Frozen probes on encoder features, plus the `prior` baseline.
pub struct RunExecutor {
    baseline: BaselineExecutor,
    device: Device,
    datasets: RefCell<HashMap<String, Rc<Dataset>>>,
}

impl RunExecutor {
    /// Features are computed on burn's CPU backend.
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
}

fn probe_of(fit: &FitSpec) -> Option<(&str, f64)> {
    match (&fit.config.method, fit.config.regime) {
        (FitMethod::Probe { probe, layer }, Regime::Frozen) => Some((probe.as_str(), *layer)),
        _ => None,
    }
}

impl Executor for RunExecutor {
    fn supports(&self, fit: &FitSpec) -> Result<(), String> {
        match probe_of(fit) {
            Some(("prior", _)) => self.baseline.supports(fit),
            Some((p, _)) if LEARNED_PROBES.contains(&p) => {
                if fit.shift_targets.is_empty() {
                    Ok(())
                } else {
                    Err("shift targets are not yet supported for learned probes (only for `prior`)".into())
                }
            }
            _ => Err(format!(
                "regime {} / {} is not wired into `calibra run` yet; this build runs frozen probes \
                 (logistic, mlp, knn, prior)",
                fit.config.regime, fit.config.probe
            )),
        }
    }

    fn execute(&self, fit: &FitSpec, ctx: &mut RunContext<'_>) -> Result<Vec<RunOutput>, ExecError> {
        let Some((probe_name, layer)) = probe_of(fit) else {
            return Err("not a frozen-probe fit".into());
        };
        if probe_name == "prior" {
            return self.baseline.execute(fit, ctx);
        }
        let c = &fit.config;
        let dataset = self.dataset(&c.dataset.spec)?;
        let split = split_of(&dataset, &c.split)?;
        let split_config = SplitConfig {
            train: c.split.train,
            calibration: c.split.calibration,
            test: c.split.test,
            seed: c.split.seed,
            use_official: true,
        };
        let pass = |split: Split,
                    condition: &Condition,
                    ctx: &mut RunContext<'_>|
         -> Result<FeatureSet, ExecError> {
            let feature_condition = match condition {
                Condition::Clean => FeatureCondition::Clean,
                Condition::Perturbation { perturbation, severity } => {
                    FeatureCondition::parse(&format!("{perturbation}:{severity}"))?
                }
                Condition::Shift { .. } => return Err("shift targets are not supported here".into()),
            };
            let dir = ctx.feature_dir(&FeaturePass {
                encoder: c.encoder.name.clone(),
                dataset: c.dataset.name.clone(),
                condition: condition.clone(),
            });
            let out = dir.join(format!("{}@{layer}.safetensors", split.name()));
            let prepared = PreparedPass::new(FeatureRequest {
                encoder: c.encoder.spec.clone(),
                data: c.dataset.spec.clone(),
                split,
                split_config,
                condition: feature_condition,
                layers: vec![layer],
                batch_size: 32,
            })?;
            ctx.report(&format!(
                "features: {} {} ({})",
                split.name(),
                condition_name(condition),
                out_name(&out)
            ));
            Ok(prepared.cached(&out, &self.device, &mut |_, _| {})?.0)
        };

        let train_features = pass(Split::Train, &Condition::Clean, ctx)?;
        let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
        let fitted = fit_probe(probe_name, &dataset, &train_features, &train_rows, &split.train)?;
        let calibration_features = pass(Split::Calibration, &Condition::Clean, ctx)?;
        let calibration =
            predictions_from_scores(&dataset, &split.calibration, logits(&fitted, &calibration_features)?)?;

        let mut calibrators = HashMap::new();
        let mut by_condition: HashMap<String, calibra_predictions::Predictions> = HashMap::new();
        let mut outputs = Vec::new();
        for slot in &ctx.missing.clone() {
            let key = condition_name(&slot.condition);
            if !by_condition.contains_key(&key) {
                let test_features = pass(Split::Test, &slot.condition, ctx)?;
                let p = predictions_from_scores(&dataset, &split.test, logits(&fitted, &test_features)?)?;
                by_condition.insert(key.clone(), p);
            }
            outputs.push(slot_output(fit, slot, &calibration, by_condition[&key].clone(), &mut calibrators)?);
        }
        Ok(outputs)
    }
}

fn condition_name(c: &Condition) -> String {
    match c {
        Condition::Clean => "clean".into(),
        Condition::Perturbation { perturbation, severity } => format!("{perturbation}:{severity}"),
        Condition::Shift { target } => format!("shift:{target}"),
    }
}

fn out_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Fit the probe on the rows `train_rows` (dataset indices) of the train-split features, whose rows
/// follow `train_split` (the split's dataset indices, in order).
fn fit_probe(
    name: &str,
    dataset: &Dataset,
    features: &FeatureSet,
    train_rows: &[usize],
    train_split: &[usize],
) -> Result<FittedProbe, ExecError> {
    let row_of: HashMap<usize, usize> = train_split.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    let rows = features.layers[0].1.as_slice();
    let d = features.dim;
    let mut x = Vec::with_capacity(train_rows.len() * d);
    for i in train_rows {
        let r = row_of[i];
        x.extend(rows[r * d..(r + 1) * d].iter().map(|&v| f64::from(v)));
    }
    let probe = Probe::by_name(name)?;
    let features = Features::new(&x, d)?;
    let k = dataset.labels.len();
    Ok(match dataset.labels.kind {
        TaskKind::Multilabel => {
            let labels: Vec<Option<bool>> = train_rows
                .iter()
                .flat_map(|&i| match &dataset.samples[i].target {
                    Target::Labels(v) => v.clone(),
                    Target::Class(_) => vec![None; k],
                })
                .collect();
            probe.fit(features, Targets::Labels { labels: &labels, n_labels: k })?
        }
        _ => {
            let labels: Vec<usize> = train_rows
                .iter()
                .map(|&i| match dataset.samples[i].target {
                    Target::Class(c) => c,
                    Target::Labels(_) => 0,
                })
                .collect();
            probe.fit_classes(features, &labels, k)?
        }
    })
}

/// The fitted probe's logits for every row of a feature set.
fn logits(fitted: &FittedProbe, set: &FeatureSet) -> Result<Vec<f64>, ExecError> {
    let x: Vec<f64> = set.layers[0].1.iter().map(|&v| f64::from(v)).collect();
    Ok(fitted.predict_logits(Features::new(&x, set.dim)?)?)
}
