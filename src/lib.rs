//! calibra: choose and adapt medical image encoders by their reliability, not by AUROC alone.
//!
//! This is the thin facade over the workspace crates, so that a Rust user can depend on one crate:
//! - [`metrics`]: discrimination and calibration metrics, rank statistics (no burn);
//! - [`predictions`]: the predictions file every stage exchanges;
//! - [`calibrate`]: post-hoc calibrators;
//! - [`crs`]: the reliability evaluator (axes, references, CRS, bootstrap, rank comparison);
//! - [`report`]: Markdown tables and SVG figures;
//! - [`data`]: dataset manifests, splits, label fractions, perturbations and synthetic suites.
//!
//! The `calibra` binary (src/main.rs and src/cli/) only wires these together; no numerics live here.
#![forbid(unsafe_code)]

pub use calibra_calibrate as calibrate;
pub use calibra_crs as crs;
pub use calibra_data as data;
pub use calibra_metrics as metrics;
pub use calibra_predictions as predictions;
pub use calibra_report as report;
