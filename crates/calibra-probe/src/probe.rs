//! The probe front end: choose a probe, fit it on standardised training features, predict.

use crate::error::ProbeError;
use crate::features::Features;
use crate::knn::{KnnClassifier, KnnOptions};
use crate::logistic::{LogisticOptions, LogisticRegression};
use crate::mlp::{MlpOptions, MlpProbe};
use crate::standardize::Standardizer;
use crate::targets::Targets;
use serde::{Deserialize, Serialize};

/// Which probe to fit, with its settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Probe {
    /// ℓ2 logistic regression (sklearn `LogisticRegression(C, lbfgs)`).
    Logistic(LogisticOptions),
    /// Two-layer ReLU MLP trained with Adam.
    Mlp(MlpOptions),
    /// k-nearest neighbours (uniform weights, Euclidean).
    Knn(KnnOptions),
}

/// A fitted probe's model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ProbeModel {
    Logistic(LogisticRegression),
    Mlp(MlpProbe),
    Knn(KnnClassifier),
}

/// A fitted probe: training-set standardisation followed by the model (plain data, serde).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedProbe {
    pub standardizer: Standardizer,
    pub model: ProbeModel,
}

impl Probe {
    /// Registry name: `logistic`, `mlp`, `knn`.
    pub fn name(&self) -> &'static str {
        match self {
            Probe::Logistic(_) => "logistic",
            Probe::Mlp(_) => "mlp",
            Probe::Knn(_) => "knn",
        }
    }

    /// The probe with default settings for a registry name.
    pub fn by_name(name: &str) -> Result<Probe, ProbeError> {
        match name {
            "logistic" => Ok(Probe::Logistic(LogisticOptions::default())),
            "mlp" => Ok(Probe::Mlp(MlpOptions::default())),
            "knn" => Ok(Probe::Knn(KnnOptions::default())),
            other => Err(ProbeError::InvalidOptions(format!(
                "unknown probe `{other}` (expected logistic, mlp or knn)"
            ))),
        }
    }

    /// Standardise the features with their own statistics, then fit the model. Errors: non-finite
    /// features (checked by [`Features::new`]), labels out of range, a class or label without
    /// samples, too few rows for k-NN (see [`Targets::validate`]).
    pub fn fit(&self, features: Features<'_>, targets: Targets<'_>) -> Result<FittedProbe, ProbeError> {
        targets.validate(features.rows())?;
        let standardizer = Standardizer::fit(features);
        let xs = standardizer.transform(features)?;
        let xs = Features::new(&xs, features.cols())?;
        let model = match self {
            Probe::Logistic(o) => ProbeModel::Logistic(LogisticRegression::fit(xs, targets, o)?),
            Probe::Mlp(o) => ProbeModel::Mlp(MlpProbe::fit(xs, targets, o)?),
            Probe::Knn(o) => ProbeModel::Knn(KnnClassifier::fit(xs, targets, o)?),
        };
        Ok(FittedProbe { standardizer, model })
    }

    /// [`Probe::fit`] for one class index per row.
    pub fn fit_classes(
        &self,
        features: Features<'_>,
        labels: &[usize],
        n_classes: usize,
    ) -> Result<FittedProbe, ProbeError> {
        self.fit(features, Targets::Classes { labels, n_classes })
    }
}

impl FittedProbe {
    /// Probabilities, row-major `rows × outputs` (K classes, or L independent labels).
    pub fn predict_proba(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        let xs = self.standardizer.transform(features)?;
        let xs = Features::new(&xs, features.cols())?;
        match &self.model {
            ProbeModel::Logistic(m) => m.predict_proba(xs),
            ProbeModel::Mlp(m) => m.predict_proba(xs),
            ProbeModel::Knn(m) => m.predict_proba(xs),
        }
    }

    /// Logits for the predictions file, row-major `rows × outputs`. Logistic: decision values
    /// (`z`, binary as `[0, z]`; see [`LogisticRegression::predict_logits`]); MLP: output logits;
    /// k-NN: floored log-probabilities / logits (see [`KnnClassifier::predict_logits`]).
    pub fn predict_logits(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        let xs = self.standardizer.transform(features)?;
        let xs = Features::new(&xs, features.cols())?;
        match &self.model {
            ProbeModel::Logistic(m) => m.predict_logits(xs),
            ProbeModel::Mlp(m) => m.predict_logits(xs),
            ProbeModel::Knn(m) => m.predict_logits(xs),
        }
    }

    /// Number of output columns.
    pub fn outputs(&self) -> usize {
        match &self.model {
            ProbeModel::Logistic(m) => m.outputs(),
            ProbeModel::Mlp(m) => m.params.outputs,
            ProbeModel::Knn(m) => m.outputs(),
        }
    }

    /// Serialise to JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a fitted probe is plain data")
    }

    /// Read back what [`FittedProbe::to_json`] wrote; `source` names the file in errors.
    pub fn from_json(text: &str, source: &str) -> Result<FittedProbe, ProbeError> {
        serde_json::from_str(text)
            .map_err(|e| ProbeError::BadFile { file: source.to_string(), message: e.to_string() })
    }
}
