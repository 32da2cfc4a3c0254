//! Frozen probes (`logistic`, `mlp`, `knn`) on cached encoder features.
//!
//! A frozen fit reads three feature passes of its (encoder, dataset, split, layer): train and
//! calibration (clean) and the test split of each condition. Each pass is a safetensors file under
//! the store's `features/` cache, keyed by a fingerprint, so every probe, label fraction and seed of
//! the grid shares one encoder pass per (encoder, dataset, condition, layer). A shift target is the
//! test split of another dataset with the same labels, passed through the same encoder.

use std::collections::HashMap;
use std::path::Path;

use calibra_crs::Condition;
use calibra_data::{Dataset, RowTargets, Split};
use calibra_probe::{Features, FittedProbe, Probe, Targets};
use calibra_run::baseline::split_of;
use calibra_run::{ExecError, FeaturePass, FitSpec, RunContext, RunOutput};
use calibra_train::features::{FeatureRequest, FeatureSet, PreparedPass};

use super::{
    RunExecutor, condition_name, feature_condition, fill_slots, predictions_from_scores, shift_spec,
};

/// Fit the probe `probe_name` on features at depth `layer` and predict every missing slot.
pub(super) fn execute_probe(
    executor: &RunExecutor,
    fit: &FitSpec,
    probe_name: &str,
    layer: f64,
    ctx: &mut RunContext<'_>,
) -> Result<Vec<RunOutput>, ExecError> {
    let c = &fit.config;
    let dataset = executor.dataset(&c.dataset.spec)?;
    let split = split_of(&dataset, &c.split)?;
    let pass = |split: Split, condition: &Condition, ctx: &mut RunContext<'_>| {
        feature_pass(executor, fit, split, condition, layer, ctx)
    };

    let train_features = pass(Split::Train, &Condition::Clean, ctx)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let fitted = fit_probe(probe_name, &dataset, &train_features, &train_rows, &split.train)?;
    let calibration_features = pass(Split::Calibration, &Condition::Clean, ctx)?;
    let calibration =
        predictions_from_scores(&dataset, &split.calibration, logits(&fitted, &calibration_features)?)?;

    fill_slots(fit, ctx, &calibration, &mut |condition, ctx| {
        let scores = logits(&fitted, &pass(Split::Test, condition, ctx)?)?;
        match condition {
            Condition::Shift { target } => {
                let shifted = executor.shift_dataset(fit, target, &dataset)?;
                let shifted_split = split_of(&shifted, &c.split)?;
                predictions_from_scores(&shifted, &shifted_split.test, scores)
            }
            _ => predictions_from_scores(&dataset, &split.test, scores),
        }
    })
}

/// The cached features of `fit`'s encoder on one split under one condition at depth `layer`: a
/// safetensors file `<split>@<layer>.safetensors` in the store's feature cache, computed (and written
/// atomically) on first use and read by every later fit of the same (encoder, dataset, split,
/// condition, layer), whatever its regime.
pub(super) fn feature_pass(
    executor: &RunExecutor,
    fit: &FitSpec,
    split: Split,
    condition: &Condition,
    layer: f64,
    ctx: &mut RunContext<'_>,
) -> Result<FeatureSet, ExecError> {
    let c = &fit.config;
    let feature_condition = feature_condition(condition)?;
    // A shift target is another dataset's test split, through the same encoder.
    let data = match condition {
        Condition::Shift { target } => shift_spec(fit, target)?.to_string(),
        _ => c.dataset.spec.clone(),
    };
    let dir = ctx.feature_dir(&FeaturePass {
        encoder: c.encoder.name.clone(),
        dataset: c.dataset.name.clone(),
        condition: condition.clone(),
    });
    let out = dir.join(format!("{}@{layer}.safetensors", split.name()));
    let prepared = PreparedPass::new(FeatureRequest {
        encoder: c.encoder.spec.clone(),
        data,
        split: split.into(),
        split_config: c.split.config(),
        condition: feature_condition,
        layers: vec![layer],
        batch_size: 32,
    })?;
    ctx.report(&format!("features: {} {} ({})", split.name(), condition_name(condition), out_name(&out)));
    Ok(prepared.cached(&out, &executor.device, &mut |_, _| {})?.0)
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
    Ok(match dataset.row_targets(train_rows)? {
        RowTargets::Labels(labels) => {
            probe.fit(features, Targets::Labels { labels: &labels, n_labels: k })?
        }
        RowTargets::Classes(labels) => probe.fit_classes(features, &labels, k)?,
    })
}

/// The fitted probe's logits for every row of a feature set.
fn logits(fitted: &FittedProbe, set: &FeatureSet) -> Result<Vec<f64>, ExecError> {
    let x: Vec<f64> = set.layers[0].1.iter().map(|&v| f64::from(v)).collect();
    Ok(fitted.predict_logits(Features::new(&x, set.dim)?)?)
}
