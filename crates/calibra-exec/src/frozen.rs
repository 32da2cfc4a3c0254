//! Frozen probes (`logistic`, `mlp`, `knn`) on cached encoder features.
//!
//! A frozen fit reads three feature passes of its (encoder, dataset, split, layer): train and
//! calibration (clean) and the test split of each condition. Each pass is a safetensors file under
//! the store's `features/` cache, keyed by a fingerprint, so every probe, label fraction and seed of
//! the grid shares one encoder pass per (encoder, dataset, condition, layer). A shift target is the
//! test split of another dataset with the same labels, passed through the same encoder.

use std::collections::HashMap;

use calibra_crs::Condition;
use calibra_data::{Dataset, RowTargets, Split};
use calibra_probe::{Features, FittedProbe, Probe, Targets};
use calibra_run::{ExecError, FitOutcome, FitSpec, Fitted, PredictRequest, RunContext, split_of};
use calibra_train::features::FeatureSet;

use crate::RunExecutor;
use crate::feature_pass::feature_pass;

/// A probe fitted on frozen features at one depth.
struct FrozenProbe<'a> {
    executor: &'a RunExecutor,
    fit: &'a FitSpec,
    name: &'a str,
    layer: f64,
    probe: FittedProbe,
}

impl Fitted for FrozenProbe<'_> {
    fn kind(&self) -> &str {
        self.name
    }

    fn predict(&self, request: &PredictRequest<'_>, ctx: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        let pass = (request.split, request.condition, request.data);
        let set = feature_pass(self.executor, self.fit, pass, self.layer, ctx)?;
        let ids_match = set.ids.len() == request.rows.len()
            && set.ids.iter().zip(request.rows).all(|(id, &i)| *id == request.dataset.samples[i].id);
        if !ids_match {
            return Err(format!(
                "the cached features of {} ({}) hold other samples than its {} rows; delete the store's \
                 features/ cache and run again",
                request.split.name(),
                request.condition,
                request.rows.len()
            )
            .into());
        }
        logits(&self.probe, &set)
    }
}

/// Fits the probe `name` on the train-split features at depth `layer` (the fit's label fraction).
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &'a FitSpec,
    name: &'a str,
    layer: f64,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let dataset = executor.datasets.get(&c.dataset.spec)?;
    let split = split_of(&dataset, &c.split)?;
    let train = (Split::Train, &Condition::Clean, c.dataset.spec.as_str());
    let train_features = feature_pass(executor, fit, train, layer, ctx)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let probe = fit_probe(name, &dataset, &train_features, &train_rows, &split.train)?;
    Ok(FitOutcome::Model(Box::new(FrozenProbe { executor, fit, name, layer, probe })))
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
