//! calibra-crs: the reliability protocol of `shared/spec/crs-protocol.md`.
//!
//! Owns: oriented four-axis profiles (discrimination, calibration, label efficiency, robustness),
//! references (a frozen panel with anchors, saved as versioned JSON), the Clinical Reliability Score
//! (dominance D, ideal-point S, worst-axis W), run records → metric rows → axes, the paired-seed
//! bootstrap, stability analyses, and rank comparison of two orderings.
//!
//! Must not depend on: burn, models or training code. It consumes run records and predictions-derived
//! metrics from any framework; numerics come from calibra-metrics.
#![forbid(unsafe_code)]

pub mod dirichlet;
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
pub mod evaluation;
pub mod metric_rows;
pub mod rank_compare;
pub mod run_record;

pub use axes::{AxisConfig, AxisPlan, CellAxes, CellValues, LE_FRACTIONS, RobustnessVariant};
pub use bootstrap::{BootstrapConfig, BootstrapResult, EncoderBootstrap, paired_seed_bootstrap};
pub use error::CrsError;
pub use evaluation::{Evaluation, EvaluationOptions};
pub use metric_rows::{MetricRow, MetricRows, SeedTable};
pub use normalize::{Anchors, AxisAnchor};
pub use profile::{AXES, Axis, Profile, oriented_calibration};
pub use profile_table::{parse_profiles_csv, read_profiles_csv};
pub use rank_compare::{RankComparison, RankMove, compare_rankings};
pub use reference::{
    AxisEstimators, CrsScore, REFERENCE_FORMAT, REFERENCE_VERSION, Reference, ReferenceConfig, ValueScale,
    build_per_domain,
};
pub use run_record::{Condition, GroupKey, LabelFraction, Regime, RunKey, RunRecord, RunRecordSet};
pub use score::{
    AxisWeights, ComponentWeights, CrsComponents, ScoreWeights, crs_components, dominance, ideal_proximity,
    ordinal_ranks, pareto_dominates, worst_axis,
};
pub use stability::{
    Agreement, Displacement, Insertion, InsertionTrial, LeaveOneOut, RankAgreement, StabilityConfig,
    StabilityReport, SubpanelAgreement, insertion_trial, rank_agreement, stability, subpanel_agreement,
    weight_agreement,
};
