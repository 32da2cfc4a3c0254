//! calibra-calibrate: post-hoc calibrators, fitted once on a calibration split and applied anywhere.
//!
//! Owns: the [`Calibrator`] trait and its registry ([`calibrator_for`]), one file per method
//! (temperature, vector, matrix, isotonic, histogram binning, Dirichlet, Platt, per-label multilabel,
//! SaLS), the shared
//! affine-softmax model, the numerical optimisers they need ([`optim`]: bounded Brent search and
//! L-BFGS with a strong-Wolfe line search), and the versioned JSON form of a fitted calibrator
//! ([`FittedCalibrator`]). Also split conformal prediction sets ([`conformal`]: LAC/THR, APS, RAPS as
//! MAPIE 1.6 computes them) and their coverage and size ([`coverage`]). The two jobs of
//! `calibra calibrate`: fit or load a calibrator and apply it to a predictions file
//! ([`calibration_job`]), and conformal sets from one file for another ([`conformal_job`]); both
//! compute and leave the writing to the caller.
//!
//! Formulas and reference implementations: `shared/spec/calibration-metrics-transfer.md` §B (and §A5
//! for SaLS). Parity with sklearn / scipy / dirichletcal is proven by golden vectors in `tests/golden/`
//! produced by `scripts/golden/calibrate.py`.
//!
//! Must not depend on: burn, or calibra crates above it (crs, report, models, train). It reads and
//! writes predictions through calibra-predictions and uses calibra-metrics for softmax.
#![forbid(unsafe_code)]

pub mod affine;
pub mod aps;
mod blocks;
pub mod calibration_job;
mod calibrator;
pub mod conformal;
pub mod conformal_job;
pub mod coverage;
pub mod dirichlet;
mod error;
pub mod histogram;
mod input;
pub mod isotonic;
pub mod lac;
pub mod matrix;
pub mod optim;
pub mod per_label;
pub mod platt;
pub mod raps;
mod registry;
pub mod sals;
pub mod temperature;
pub mod vector;

pub use affine::{AffineForm, AffineInput, AffineModel, AffineParams, Regulariser};
pub use calibration_job::{
    CalibrationJob, CalibrationJobError, CalibrationOutcome, CalibratorSource, FitSettings, RegulariserFamily,
};
pub use calibrator::{
    Calibrator, FORMAT_VERSION, FitReport, FitWarning, FittedCalibrator, FittedParams, Method,
};
pub use conformal::{
    CONFORMAL_METHODS, ConformalMethod, ConformalPredictor, LastLabel, conformal_quantile, fit_multilabel,
    predict_multilabel, quantile_index, uniform_draws,
};
pub use conformal_job::{ConformalJob, ConformalJobError, ConformalOutcome, SetReport};
pub use coverage::{SetCoverage, multilabel_set_coverage, set_coverage};
pub use dirichlet::{DirichletCalibration, DirichletSelection};
pub use error::CalibrateError;
pub use histogram::{HISTOGRAM_DEFAULT_BINS, HistogramBinning, HistogramParams};
pub use input::MIN_SAMPLES;
pub use isotonic::{IsotonicCalibration, IsotonicFunction, IsotonicParams};
pub use matrix::MatrixScaling;
pub use per_label::{LabelCalibrator, LabelMethod, PerLabelCalibration, PerLabelParams};
pub use platt::{PlattParams, PlattScaling, PlattScore, Sigmoid};
pub use registry::{CalibratorOptions, calibrator_for};
pub use sals::{Sals, SalsParams};
pub use temperature::{TemperatureParams, TemperatureScaling};
pub use vector::VectorScaling;
