//! calibra-metrics: the pure-f64 numerics every calibra ranking is built from.
//!
//! Owns: input validation (probabilities, logits, labels), softmax, equal-width binning with the three
//! named bin-edge conventions, the ECE family (top-label ECE, binary positive-class ECE, MCE, class-wise
//! ECE, Mukhoti's adaptive ECE, Nixon's ACE), reliability-diagram bins, Brier, NLL, accuracy, macro F1,
//! quadratic weighted kappa, ordinal MAE, AUROC / average precision / sensitivity at fixed specificity,
//! and rank statistics (Kendall τ-a/τ-b, Spearman ρ, weighted τ). Selective prediction: the
//! risk–coverage curve, AURC / E-AURC / AUGRC, risk at coverage and coverage at risk, the confidence
//! scores (MSP, max-logit, energy, entropy, margin), smooth ECE (relplot), the debiased L2 ECE of
//! Kumar et al. 2019, and shift detection (AUROC, FPR at 95 % TPR) with a confidence score.
//!
//! Every formula and its reference implementation is in `shared/spec/calibration-metrics-transfer.md` §C;
//! parity is proven by golden vectors in `tests/golden/` produced by `scripts/golden/metrics.py`.
//!
//! Must not depend on: burn, any file format, or any other calibra crate. Inputs are plain slices:
//! a score matrix is row-major `&[f64]` with `k` columns (`n = len / k` rows) and labels are `&[usize]`.
//! Metrics that are mathematically undefined for an input return `f64::NAN` (sklearn/scipy parity);
//! malformed input (wrong shape, non-finite value, rows not summing to 1, label out of range) is an
//! [`MetricsError`] naming the row.
#![forbid(unsafe_code)]

pub mod accuracy;
pub mod ace;
pub mod adaptive_ece;
pub mod auroc;
pub mod average_precision;
pub mod binning;
pub mod brier;
pub mod classwise_ece;
pub mod confidence;
pub mod debiased_ece;
pub mod ece;
pub mod error;
pub mod f1;
pub mod input;
pub mod kappa;
pub mod nll;
pub mod rank;
mod score_groups;
pub mod selective;
pub mod selective_summary;
pub mod sensitivity;
pub mod shift_detection;
pub mod smooth_ece;
pub mod summary;

pub use accuracy::accuracy;
pub use ace::{
    ACE_DEFAULT_RANGES, ACE_DEFAULT_THRESHOLD, TACE_DEFAULT_THRESHOLD, adaptive_calibration_error,
};
pub use adaptive_ece::adaptive_ece;
pub use auroc::{MacroAverage, UndefinedPolicy, binary_auroc, macro_auroc_ovr, multilabel_macro_auroc};
pub use average_precision::{
    average_precision, macro_average_precision_ovr, multilabel_macro_average_precision,
};
pub use binning::{
    Binning, ReliabilityBin, bin_index, expected_calibration_error, maximum_calibration_error,
    reliability_bins,
};
pub use brier::{brier_binary, brier_multiclass};
pub use classwise_ece::classwise_ece;
pub use confidence::ConfidenceScore;
pub use debiased_ece::{DEBIASED_ECE_DEFAULT_BINS, debiased_ece, debiased_ece_top_label};
pub use ece::{ece_binary_positive, ece_top_label, mce_top_label, top_label_reliability_bins};
pub use error::MetricsError;
pub use f1::macro_f1;
pub use kappa::{ordinal_mae, quadratic_weighted_kappa};
pub use nll::{LOG_LOSS_EPS, binary_nll, nll_from_logits, nll_from_probabilities};
pub use rank::{average_ranks, kendall_tau_a, kendall_tau_b, spearman_rho, weighted_tau};
pub use selective::{
    RiskCoveragePoint, SelectiveAreas, augrc, aurc, coverage_at_risk, eaurc, optimal_aurc, risk_at_coverage,
    risk_coverage_curve, selective_areas, selective_risks, top_label_errors,
};
pub use selective_summary::{
    ScoreAreas, SelectiveSummary, summarize_selective_multilabel, summarize_selective_single_label,
};
pub use sensitivity::{
    SensitivityAtSpecificity, sensitivity_at_specificity, sensitivity_at_specificity_interp,
};
pub use shift_detection::{ShiftDetection, fpr_at_tpr, shift_detection};
pub use smooth_ece::{smooth_ece, smooth_ece_sigma, smooth_ece_top_label, smooth_ece_with_bandwidth};
pub use summary::{
    MetricSummary, OrdinalMetrics, SummaryOptions, SummaryTask, summarize_multilabel, summarize_single_label,
};
