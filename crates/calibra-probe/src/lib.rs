//! calibra-probe: probes fitted on frozen features — ℓ2-regularised logistic regression (sklearn's
//! `LogisticRegression(C=1, lbfgs)` objective, L-BFGS), a two-layer MLP trained with Adam, and k-NN
//! (k = 5) — with feature standardisation on training statistics. Pure f64 on row-major slices.
//!
//! Owns: the probe models, their fitting and `predict_proba` / `predict_logits`.
//! Must not depend on burn (or any deep-learning stack): it builds and tests in seconds, and
//! calibra-train calls it.
#![forbid(unsafe_code)]

pub mod error;
pub mod features;
pub mod knn;
mod linalg;
pub mod logistic;
pub mod mlp;
pub mod probe;
pub mod standardize;
pub mod targets;

pub use error::ProbeError;
pub use features::Features;
pub use knn::{KNN_PROBABILITY_FLOOR, KnnClassifier, KnnOptions, KnnTargets};
pub use logistic::{FitDiagnostics, LinearHead, LogisticModel, LogisticOptions, LogisticRegression};
pub use mlp::{MlpHead, MlpOptions, MlpParams, MlpProbe};
pub use probe::{FittedProbe, Probe, ProbeModel};
pub use standardize::Standardizer;
pub use targets::Targets;
