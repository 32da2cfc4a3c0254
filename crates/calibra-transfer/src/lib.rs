//! calibra-transfer: transferability estimators that predict, from frozen features alone, how well an
//! encoder will do after adaptation — LogME, H-score, shrinkage H-score, GBC, LEEP / NLEEP, TransRate,
//! effective dimensionality (participation ratio) and k-NN neighbour-outcome agreement — plus an
//! InsightRank-style pairwise ranker (seed 001) and the comparison of a predicted ranking with the
//! adapted one.
//!
//! Formulas and their reference implementations: `shared/spec/calibration-metrics-transfer.md` §D;
//! parity with numpy / scikit-learn references is proven by golden vectors in `tests/golden/`
//! produced by `scripts/golden/transfer.py`.
//!
//! Owns: input validation for features and targets (NaN/inf named by row), the estimators, their
//! shared covariance pass, the ranker, and the one file format its inputs come in outside calibra
//! ([`npy`]: numpy `.npy` features and labels, read into [`Features`] / [`Targets`] by
//! [`npy_input`]). Must not depend on: burn, calibra's own files (callers read the safetensors of
//! `calibra features`), or any calibra crate other than calibra-metrics (rank statistics).
//! All numerics are f64; faer runs sequentially and rayon only over fixed work units combined in a
//! fixed order, so results are bit-identical at any thread count.
#![forbid(unsafe_code)]

pub mod covariance;
pub mod effective_dim;
pub mod error;
pub mod estimator;
pub mod evaluate;
pub mod gbc;
pub mod gmm;
pub mod hscore;
pub mod hscore_shrinkage;
pub mod input;
pub mod kmeans;
pub mod knn;
pub mod ledoit_wolf;
pub mod leep;
mod linalg;
pub mod logme;
pub mod moments;
pub mod nleep;
pub mod npy;
pub mod npy_input;
pub mod pca;
pub mod quintile;
pub mod ranker;
pub mod score;
pub mod transrate;

pub use covariance::Covariance;
pub use effective_dim::participation_ratio;
pub use error::TransferError;
pub use estimator::Estimator;
pub use evaluate::{RankingAgreement, ranking_agreement};
pub use gbc::{GaussianType, GbcOptions, gbc};
pub use hscore::{HSCORE_RCOND, hscore};
pub use hscore_shrinkage::hscore_shrinkage;
pub use input::{Features, Targets};
pub use ledoit_wolf::LedoitWolf;
pub use leep::leep;
pub use logme::{LogmeBasis, logme_classes, logme_regression};
pub use moments::ClassStats;
pub use nleep::{NleepOptions, nleep};
pub use npy::{NpyArray, NpyError, read_npy};
pub use npy_input::{NpyInputError, TargetKind, features_from_npy, labels_from_npy, targets_from_classes};
pub use ranker::{ArchGroup, Candidate, Family, PairRule, RankedCandidate, Ranker, estimator_ranks};
pub use score::{ScoreOptions, ScoreReport, score};
pub use transrate::{TRANSRATE_EPS, transrate};
