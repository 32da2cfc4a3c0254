//! calibra-crs: the reliability protocol of `shared/spec/crs-protocol.md`.
//!
//! Owns: oriented four-axis profiles (discrimination, calibration, label efficiency, robustness; an
//! optional fifth, selective = −AUGRC, on request: [`selective_axis`]),
//! references (a frozen panel with anchors, saved as versioned JSON), the Clinical Reliability Score
//! (dominance D, ideal-point S, worst-axis W), run records → metric rows → axes, the paired-seed
//! bootstrap, stability analyses, calibration stability across seeds and prompt templates, and rank
//! comparison of two orderings; the encoder analyses E1–E6 and the FOCUS additions (subgroup and
//! quality-stratum gaps from declared group columns, adapted − base deltas with paired bootstrap
//! intervals and Benjamini–Hochberg correction); and the predicted-versus-adapted comparison of
//! transferability-estimator records (regime `estimate`) with the adapted runs
//! ([`transfer_prediction`]); selective prediction (AURC, E-AURC, AUGRC, risk–coverage curves),
//! split conformal coverage and set size under perturbation and shift, and shift detection from the
//! runs' predictions ([`selective_analyses`]).
//!
//! Must not depend on: burn, models or training code. It consumes run records and predictions-derived
//! metrics from any framework; numerics come from calibra-metrics.
#![forbid(unsafe_code)]

mod axis;
pub mod dirichlet;
mod duplicate_run;
pub mod error;
pub mod normalize;
pub mod profile;
pub mod profile_table;
pub mod reference;
pub mod score;
pub mod stability;
// Run records → metric rows → axes, the paired-seed bootstrap and rank comparison (helper crs-records).
pub mod axes;
pub mod bootstrap;
// One evaluation of a run set (helper eval).
mod axis_correlation;
mod encoder_crs;
mod encoder_profile;
pub mod evaluation;
pub mod evaluation_file;
mod input_summary;
mod metric_row_record;
pub mod metric_rows;
mod panel_profiles;
mod per_domain;
pub mod rank_compare;
pub mod regime_comparison;
pub mod run_record;
mod substitution;
// FOCUS additions and encoder analyses (helper focus).
pub mod adaptation_deltas;
pub mod encoder_analyses;
pub mod focus_analyses;
pub mod focus_error;
pub mod group_columns;
pub mod multiple_testing;
mod predictions_cache;
mod run_label;
pub mod sample_metrics;
pub mod subgroup_gaps;
// Calibration stability across seeds and prompt templates (helper stability).
pub mod calibration_stability;
pub mod convergence;
// Estimators' predicted rankings vs the adapted runs (issue 18 item 5).
pub mod transfer_prediction;
// Selective prediction, conformal sets and shift detection from predictions (issue 24 item 4).
pub mod conformal_split;
pub mod selective_analyses;
pub mod selective_axis;
pub mod selective_error;

pub use adaptation_deltas::{DeltaEstimate, PairedBootstrapConfig};
pub use axes::{
    AxisConfig, AxisPlan, CellAxes, CellValues, LE_FRACTIONS, RobustnessVariant, SELECTIVE_METRIC,
};
pub use bootstrap::{BootstrapConfig, BootstrapResult, EncoderBootstrap, paired_seed_bootstrap};
pub use calibration_stability::{
    CalibrationStability, MetricSpread, STABILITY_METRICS, StabilityAxis, StabilityRow, TemplateId,
    calibration_stability, split_template,
};
pub use encoder_analyses::{EncoderAnalyses, EncoderAnalysisOptions};
pub use error::CrsError;
pub use evaluation::{Evaluation, EvaluationOptions};
pub use focus_analyses::{FocusOptions, FocusReport, focus_analyses};
pub use focus_error::FocusError;
pub use group_columns::{GapKind, GroupColumn, GroupSplit};
pub use metric_rows::{MetricRow, MetricRows, SeedTable};
pub use normalize::{Anchors, AxisAnchor};
pub use profile::{ALL_AXES, AXES, Axis, Profile, axes_of, oriented_calibration, oriented_selective};
pub use profile_table::{parse_profiles_csv, read_profiles_csv};
pub use rank_compare::{RankComparison, RankMove, compare_rankings};
pub use reference::{
    AxisEstimators, CrsScore, REFERENCE_FORMAT, REFERENCE_VERSION, Reference, ReferenceConfig, ValueScale,
    build_per_domain,
};
pub use regime_comparison::{RegimeComparison, RegimeDelta};
pub use run_record::{
    Condition, ESTIMATE_PROBE, GroupKey, LabelFraction, Regime, RunKey, RunRecord, RunRecordSet,
    estimate_layer,
};
pub use sample_metrics::{SampleMetric, SampleTable};
pub use score::{
    AxisWeights, ComponentWeights, CrsComponents, ScoreWeights, crs_components, dominance, ideal_proximity,
    ordinal_ranks, pareto_dominates, worst_axis,
};
pub use selective_analyses::{SelectiveOptions, SelectiveReport, selective_analyses};
pub use selective_axis::with_selective_metrics;
pub use selective_error::SelectiveError;
pub use stability::{
    Agreement, Displacement, Insertion, InsertionTrial, LeaveOneOut, RankAgreement, StabilityConfig,
    StabilityReport, SubpanelAgreement, insertion_trial, rank_agreement, stability, subpanel_agreement,
    weight_agreement,
};
pub use transfer_prediction::{Outcome, PredictionRow, TransferPrediction, Verdict};
