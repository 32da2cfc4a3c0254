//! Transferability estimates (`[regimes.estimate]`): calibra-transfer's estimators on the frozen
//! features of the train split at one depth, written as one run record whose metrics are the scores
//! (higher = predicted better) and which has no predictions.
//!
//! The features come from the same cache file the frozen probes read (`train@<layer>.safetensors`
//! under the store's `features/`), so an estimate at a depth the frozen regime also uses costs no
//! encoder pass. Targets follow the dataset's task: classes, ordinal grades (LogME on the grade,
//! k-NN agreement by Spearman ρ) or multilabel (per label on the rows where it is known, then the
//! mean). An estimator undefined for the data (a class with one sample for GBC, constant features
//! for the participation ratio, ...) is left out of the record's metrics, and the reason is reported
//! as progress; the evaluator then has no score of that estimator for that encoder.

use std::collections::BTreeMap;

use calibra_crs::Condition;
use calibra_data::{Split, Target, TaskKind};
use calibra_run::{ExecError, FitOutcome, FitSpec, RunContext};
use calibra_train::features::FeatureSet;
use calibra_transfer::{Estimator, Features, ScoreOptions, Targets};

use crate::RunExecutor;
use crate::feature_pass::feature_pass;

/// Score `estimators` on the train-split features of `fit` at depth `layer`.
pub(crate) fn fit<'a>(
    executor: &RunExecutor,
    fit: &FitSpec,
    estimators: &[String],
    layer: f64,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let dataset = executor.datasets.get(&c.dataset.spec)?;
    let train = (Split::Train, &Condition::Clean, c.dataset.spec.as_str());
    let set = feature_pass(executor, fit, train, layer, ctx)?;
    let estimators: Vec<Estimator> =
        estimators.iter().map(|name| Estimator::parse(name)).collect::<Result<_, _>>()?;
    let (features, targets) = inputs(&set, dataset.labels.kind, dataset.labels.len())?;
    let started = std::time::Instant::now();
    let report = calibra_transfer::score(&features, &targets, &estimators, &ScoreOptions::default())
        .map_err(|e| {
            format!("transferability estimators on {} train features at depth {layer}: {e}", c.dataset.name)
        })?;
    ctx.report(&format!(
        "estimate: {} estimators on n = {}, d = {} in {:.1} s",
        estimators.len(),
        report.n,
        report.d,
        started.elapsed().as_secs_f64()
    ));
    for note in &report.notes {
        ctx.report(&format!("estimate: undefined, left out of the record: {note}"));
    }
    let metrics: BTreeMap<String, f64> = report
        .scores
        .iter()
        .filter_map(|(name, v)| v.filter(|x| x.is_finite()).map(|x| (name.clone(), x)))
        .collect();
    Ok(FitOutcome::Scores(metrics))
}

/// The estimators' inputs from a cached feature set: its single layer as an `[n, d]` matrix and its
/// targets in the dataset's task kind (`k` classes or labels).
fn inputs(set: &FeatureSet, kind: TaskKind, k: usize) -> Result<(Features, Targets), ExecError> {
    let (_, rows) = set.layers.first().ok_or("the feature cache holds no layer")?;
    let features = Features::from_f32(rows, set.ids.len(), set.dim)?;
    let classes = || -> Result<Vec<usize>, ExecError> {
        set.targets
            .iter()
            .zip(&set.ids)
            .map(|(t, id)| match t {
                Target::Class(c) => Ok(*c),
                Target::Labels(_) => {
                    Err(format!("sample `{id}` has a multilabel target in a {kind:?} dataset").into())
                }
            })
            .collect()
    };
    let targets = match kind {
        TaskKind::Multiclass => Targets::Classes(classes()?),
        TaskKind::Ordinal => Targets::Ordinal(classes()?),
        TaskKind::Multilabel => {
            let mut values = Vec::with_capacity(set.targets.len() * k);
            for (t, id) in set.targets.iter().zip(&set.ids) {
                match t {
                    Target::Labels(v) if v.len() == k => values.extend(v.iter().copied()),
                    Target::Labels(v) => {
                        return Err(format!("sample `{id}` has {} labels, the dataset {k}", v.len()).into());
                    }
                    Target::Class(_) => {
                        return Err(
                            format!("sample `{id}` has a single class in a multilabel dataset").into()
                        );
                    }
                }
            }
            Targets::Multilabel { labels: k, values }
        }
    };
    Ok((features, targets))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recipe's estimator names (calibra-run, which may not depend on calibra-transfer) are
    /// exactly the names calibra-transfer parses, in the same order.
    #[test]
    fn recipe_estimator_names_are_calibra_transfers() {
        let transfer: Vec<&str> = Estimator::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(calibra_run::names::ESTIMATORS, transfer.as_slice());
    }

    #[test]
    fn targets_follow_the_task_kind() {
        let set = FeatureSet {
            ids: vec!["a".into(), "b".into()],
            classes: vec!["x".into(), "y".into()],
            targets: vec![Target::Class(0), Target::Class(1)],
            layers: vec![(1.0, vec![0.0, 1.0, 2.0, 3.0])],
            dim: 2,
            fingerprint: String::new(),
            splits: None,
        };
        let (f, t) = inputs(&set, TaskKind::Ordinal, 2).unwrap();
        assert_eq!((f.n(), f.d()), (2, 2));
        assert_eq!(t, Targets::Ordinal(vec![0, 1]));
        let err = inputs(&set, TaskKind::Multilabel, 2).unwrap_err().to_string();
        assert!(err.contains("sample `a`"), "{err}");
    }
}
