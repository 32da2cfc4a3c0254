//! [`EvalOptions`]: everything `calibra eval` is asked to do, typed — what its flags mean, and what
//! [`crate::evaluate`] reads. `Default` is `calibra eval` with no flag but its inputs.

use calibra_calibrate::ConformalMethod;
use calibra_crs::{AxisWeights, ComponentWeights, GroupColumn, Regime, RobustnessVariant};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Default paired-seed bootstrap replicates (`--bootstrap`).
pub const DEFAULT_BOOTSTRAP: usize = 10_000;
/// Default level of the percentile intervals (`--level`).
pub const DEFAULT_LEVEL: f64 = 0.95;
/// Default bins of the reliability diagrams (`--bins`).
pub const DEFAULT_BINS: usize = 15;
/// Default minimum group size of the subgroup and quality gaps (`--min-group-size`).
pub const DEFAULT_MIN_GROUP_SIZE: usize = 30;
/// Default paired bootstrap replicates of the adaptation deltas (`--delta-bootstrap`).
pub const DEFAULT_DELTA_BOOTSTRAP: usize = 2_000;
/// Default miscoverage level of the conformal sets (`--conformal-alpha`).
pub const DEFAULT_CONFORMAL_ALPHA: f64 = 0.1;

/// The regime whose record name is `name` (`frozen`, `lora`, `coop`, `full`, `zero-shot`, `estimate`:
/// the names run records use).
pub fn regime_named(name: &str) -> Option<Regime> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

/// The flag value of a robustness variant (`with-shift`, `corruption-only`).
pub fn robustness_name(variant: RobustnessVariant) -> &'static str {
    match variant {
        RobustnessVariant::WithShift => "with-shift",
        RobustnessVariant::CorruptionOnly => "corruption-only",
    }
}

/// The robustness variant named `name` (see [`robustness_name`]).
pub fn robustness_variant(name: &str) -> Option<RobustnessVariant> {
    [RobustnessVariant::WithShift, RobustnessVariant::CorruptionOnly]
        .into_iter()
        .find(|v| robustness_name(*v) == name)
}

/// The options of one evaluation. Field names follow `calibra eval`'s flags.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// Run-record files or directories (a directory contributes its `*.jsonl` files, sorted by name).
    pub inputs: Vec<PathBuf>,
    /// The output directory (complete or absent); `None` only evaluates.
    pub out: Option<PathBuf>,
    /// Replace an existing output directory (once the new one is complete).
    pub force: bool,
    /// A saved reference to score against instead of one built from the run set's panel.
    pub reference: Option<PathBuf>,
    /// Where to save the reference used.
    pub save_reference: Option<PathBuf>,
    /// Paired-seed bootstrap replicates (0 skips the bootstrap).
    pub bootstrap: usize,
    /// Seed of the bootstraps, the stability analyses and the conformal split.
    pub seed: u64,
    /// Level of the percentile intervals, in (0, 1).
    pub level: f64,
    /// Component weights (`None`: the default, or the saved reference's).
    pub weights: Option<ComponentWeights>,
    /// Axis weights (`None`: the default, or the saved reference's); five turn on the selective axis.
    pub axis_weights: Option<AxisWeights>,
    pub robustness: RobustnessVariant,
    /// Regime whose runs define the axes.
    pub regime: Regime,
    /// Probe of the runs that define the axes (`None`: any, one per cell).
    pub probe: Option<String>,
    /// Calibrator of the runs that define the axes (`none` = raw outputs).
    pub calibrator: String,
    pub discrimination_metric: String,
    pub calibration_metric: String,
    /// Run the stability analyses (`--no-stability` turns them off).
    pub stability: bool,
    /// Read predictions files for reliability diagrams (`--no-reliability` turns it off).
    pub reliability: bool,
    /// Bins of the reliability diagrams.
    pub bins: usize,
    /// A record that disagrees with its predictions file is an error (default: a warning).
    pub strict: bool,
    /// One reliability diagram per run record.
    pub all_diagrams: bool,
    /// Rasterise every figure to PNG too.
    pub png: bool,
    /// The FOCUS gap analyses and adaptation deltas (`--no-focus` turns them off).
    pub focus: bool,
    /// Group columns (subgroups first, then quality strata).
    pub group_columns: Vec<GroupColumn>,
    /// The group table (`None`: columns of each predictions file).
    pub groups: Option<PathBuf>,
    pub min_group_size: usize,
    /// Paired bootstrap replicates of the adaptation deltas.
    pub delta_bootstrap: usize,
    /// E1: specialist encoder → its matched datasets.
    pub specialists: BTreeMap<String, Vec<String>>,
    /// E6: the reference encoder of the label-fraction crossover.
    pub crossover_reference: Option<String>,
    /// The selective, conformal and shift-detection analyses (`None`: not run).
    pub selective: Option<ConformalSettings>,
}

/// The conformal sets of the selective analyses (`--conformal-alpha`, `--conformal-method`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConformalSettings {
    /// Miscoverage level α, in (0, 1).
    pub alpha: f64,
    pub method: ConformalMethod,
}

impl Default for ConformalSettings {
    fn default() -> Self {
        ConformalSettings { alpha: DEFAULT_CONFORMAL_ALPHA, method: ConformalMethod::Lac }
    }
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            inputs: Vec::new(),
            out: None,
            force: false,
            reference: None,
            save_reference: None,
            bootstrap: DEFAULT_BOOTSTRAP,
            seed: 0,
            level: DEFAULT_LEVEL,
            weights: None,
            axis_weights: None,
            robustness: RobustnessVariant::WithShift,
            regime: Regime::Frozen,
            probe: None,
            calibrator: "none".to_string(),
            discrimination_metric: "macro_auroc".to_string(),
            calibration_metric: "ece".to_string(),
            stability: true,
            reliability: true,
            bins: DEFAULT_BINS,
            strict: false,
            all_diagrams: false,
            png: false,
            focus: true,
            group_columns: Vec::new(),
            groups: None,
            min_group_size: DEFAULT_MIN_GROUP_SIZE,
            delta_bootstrap: DEFAULT_DELTA_BOOTSTRAP,
            specialists: BTreeMap::new(),
            crossover_reference: None,
            selective: None,
        }
    }
}
