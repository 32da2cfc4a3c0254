//! `calibra transfer score`: calibra-transfer's estimators on one frozen-feature file — a
//! `calibra features` safetensors (its labels used unless others are given; one depth and,
//! for a file of every split, one split picked) or a `.npy` `[N, D]` with `.npy` or safetensors
//! labels.

use std::path::{Path, PathBuf};

use calibra_data::{Split, Target};
use calibra_train::features::{FeatureError, FeatureSet};
use calibra_transfer::{
    Estimator, Features, NpyInputError, ScoreOptions, ScoreReport, TargetKind, Targets, TransferError,
    features_from_npy, labels_from_npy, score, targets_from_classes,
};
use thiserror::Error;

/// Why a feature file could not be scored; names the file, flag or row.
#[derive(Debug, Error)]
pub enum TransferScoreError {
    #[error("--estimators")]
    Estimators(#[source] TransferError),
    #[error("--estimators: no estimator named")]
    NoEstimator,
    /// A request that cannot be served (the message names the file and flag).
    #[error("{0}")]
    Invalid(String),
    #[error("{file}: --split {name}: no row of this file is in the {split} split")]
    EmptySplit { file: String, name: String, split: &'static str },
    #[error("{file}")]
    Features { file: String, source: TransferError },
    #[error("{file} with labels {labels}")]
    Score { file: String, labels: String, source: TransferError },
    #[error(transparent)]
    FeatureFile(#[from] FeatureError),
    #[error(transparent)]
    Npy(#[from] NpyInputError),
}

/// One `calibra transfer score`.
#[derive(Debug, Clone)]
pub struct TransferScoreRequest {
    /// A `calibra features` `.safetensors`, or a `.npy` `[N, D]`.
    pub features: PathBuf,
    /// `.npy` `[N]` / `[N, L]` labels, or a `calibra features` safetensors.
    pub labels: Option<PathBuf>,
    /// Depth fraction of a multi-layer safetensors (default: the deepest stored).
    pub layer: Option<f64>,
    /// Only the rows of this split of a file of every split.
    pub split: Option<String>,
    pub target: TargetKind,
    /// Comma-separated estimator names (default: all).
    pub estimators: Option<String>,
    pub knn_k: usize,
}

/// The scores, and the estimators in the order asked for (the table's rows).
#[derive(Debug, Clone)]
pub struct TransferScores {
    pub report: ScoreReport,
    pub estimators: Vec<Estimator>,
}

fn is_safetensors(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
}

/// Read the features and labels of `request` and score them.
pub fn score_feature_file(request: &TransferScoreRequest) -> Result<TransferScores, TransferScoreError> {
    let estimators = match &request.estimators {
        Some(s) => Estimator::parse_list(s).map_err(TransferScoreError::Estimators)?,
        None => Estimator::ALL.to_vec(),
    };
    if estimators.is_empty() {
        return Err(TransferScoreError::NoEstimator);
    }
    let file = request.features.display().to_string();
    let (features, embedded) = if is_safetensors(&request.features) {
        let set = FeatureSet::read(&request.features)?;
        let set = match &request.split {
            Some(name) => one_split(set, name, &file, request.labels.is_some())?,
            None => set,
        };
        let features = layer_of(&set, request.layer, &file)?;
        (features, Some(targets_from_set(&set.targets, request.target)?))
    } else {
        if request.split.is_some() {
            return Err(TransferScoreError::Invalid(format!(
                "{file}: --split needs a `calibra features` .safetensors file (a .npy has no splits)"
            )));
        }
        (features_from_npy(&request.features)?, None)
    };
    let targets = match (&request.labels, embedded) {
        (Some(path), _) if is_safetensors(path) => {
            targets_from_set(&FeatureSet::read(path)?.targets, request.target)?
        }
        (Some(path), _) => labels_from_npy(path, request.target)?,
        (None, Some(t)) => t,
        (None, None) => {
            return Err(TransferScoreError::Invalid(format!(
                "{file}: a .npy feature file carries no labels: pass --labels FILE"
            )));
        }
    };
    let options = ScoreOptions { knn_k: request.knn_k, ..ScoreOptions::default() };
    let report = score(&features, &targets, &estimators, &options).map_err(|source| {
        let labels = request.labels.as_ref().map_or(file.clone(), |p| p.display().to_string());
        TransferScoreError::Score { file: file.clone(), labels, source }
    })?;
    Ok(TransferScores { report, estimators })
}

/// The rows of split `name` of a file written by `calibra features --split all`.
fn one_split(
    set: FeatureSet,
    name: &str,
    file: &str,
    labels_given: bool,
) -> Result<FeatureSet, TransferScoreError> {
    let invalid = |message: String| Err(TransferScoreError::Invalid(message));
    if labels_given {
        return invalid("--split selects rows with the features file's own labels; drop --labels".into());
    }
    let Some(split) = Split::parse(name) else {
        return invalid(format!("--split `{name}`: expected train, calibration or test"));
    };
    let Some(set) = set.only(split) else {
        return invalid(format!(
            "{file}: --split {name}: this file holds one split and records no split per row \
             (write it with `calibra features --split all`)"
        ));
    };
    if set.ids.is_empty() {
        let (file, name) = (file.to_string(), name.to_string());
        return Err(TransferScoreError::EmptySplit { file, name, split: split.name() });
    }
    Ok(set)
}

/// The features at depth `layer` (default: the deepest stored).
fn layer_of(set: &FeatureSet, layer: Option<f64>, file: &str) -> Result<Features, TransferScoreError> {
    let rows = match layer {
        Some(f) => set.layers.iter().find(|(g, _)| *g == f).ok_or_else(|| {
            let have: Vec<f64> = set.layers.iter().map(|l| l.0).collect();
            TransferScoreError::Invalid(format!("{file}: --layer {f}: not stored (layers: {have:?})"))
        })?,
        None => set
            .layers
            .iter()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .ok_or_else(|| TransferScoreError::Invalid(format!("{file}: no feature layer stored")))?,
    };
    Features::from_f32(&rows.1, set.ids.len(), set.dim)
        .map_err(|source| TransferScoreError::Features { file: file.to_string(), source })
}

/// The targets of a `calibra features` file: multilabel as stored, classes read as `kind` says.
fn targets_from_set(targets: &[Target], kind: TargetKind) -> Result<Targets, TransferScoreError> {
    let mixed =
        || TransferScoreError::Invalid("feature file mixes single-label and multilabel targets".into());
    match targets.first() {
        Some(Target::Labels(first)) => {
            let labels = first.len();
            let mut values = Vec::with_capacity(targets.len() * labels);
            for t in targets {
                match t {
                    Target::Labels(l) => values.extend(l.iter().copied()),
                    Target::Class(_) => return Err(mixed()),
                }
            }
            Ok(Targets::Multilabel { labels, values })
        }
        _ => {
            let y = targets
                .iter()
                .map(|t| match t {
                    Target::Class(c) => Ok(*c),
                    Target::Labels(_) => Err(mixed()),
                })
                .collect::<Result<Vec<usize>, _>>()?;
            Ok(targets_from_classes(y, kind))
        }
    }
}
