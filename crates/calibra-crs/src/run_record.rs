//! Run records: one JSON object per line (JSON Lines), one line per run (spec §1).
//!
//! A run is one fit + prediction of an (encoder, dataset, regime, probe/loss, calibrator, label fraction,
//! seed) evaluated under one test condition (the clean split, one perturbation at one severity, or a shift
//! target dataset). Its record carries that **run key** and the metrics the run produced.
//!
//! # Schema (exact; parsing is strict)
//!
//! ```json
//! {
//!   "encoder": "PanDerm",                  // string, non-empty
//!   "dataset": "isic2019",                 // string, non-empty
//!   "regime": "frozen",                    // "frozen" | "lora" | "coop" | "full" | "zero-shot" | "estimate"
//!   "probe": "linear-ce",                  // probe / loss, string, non-empty
//!   "calibrator": "none",                  // post-hoc calibrator ("none" = raw outputs), non-empty
//!   "label_fraction": 0.25,                // number in (0, 1]; 1 = the full training split
//!   "seed": 3,                             // non-negative integer
//!   "condition": {"kind": "clean"},        // or {"kind": "perturbation", "perturbation": "gaussian_blur",
//!                                          //     "severity": 2}   (severity: integer >= 1)
//!                                          // or {"kind": "shift", "target": "mimic-cxr"}
//!   "metrics": {"macro_auroc": 0.91, "ece": 0.043},   // metric name -> finite number
//!   "paths": {"predictions": "runs/0001.csv"},        // optional: name -> path string
//!   "timings": {"fit_s": 12.5},                       // optional: name -> finite number (seconds)
//!   "versions": {"calibra": "0.1.0"},                 // optional: name -> version string
//!   "training": {                                     // optional: the fit's training curve (lora, full)
//!     "epochs": [                                     //   epoch 0 = the initial weights, then each epoch
//!       {"epoch": 0, "train_loss": 1.10, "calibration_loss": 1.09, "calibration_auroc": 0.55},
//!       {"epoch": 1, "train_loss": 0.71, "calibration_loss": 0.64, "calibration_auroc": 0.90}
//!     ],                                              //   losses: the training loss (mean); AUROC: macro
//!     "selected_epoch": 1,                            //   the epoch whose weights predicted
//!     "stopped_early": false,                         //   optional, default false
//!     "head_init": "probe"                            //   optional: "probe" (LP-FT) or "random"
//!   }
//! }
//! ```
//!
//! (The comments above are documentation only; a record line is plain JSON on a single line.)
//!
//! Rules, each violation an error naming the file and the 1-based line:
//! - unknown keys are rejected at every level (the record, the condition object);
//! - every field except `paths`, `timings`, `versions` and `training` is required (inside `training`,
//!   `stopped_early`, `head_init` and an epoch's `calibration_auroc` are optional);
//! - metric values must be finite numbers (a metric that is undefined for a run is omitted, not `null`);
//! - metrics with a known range ([`KNOWN_METRIC_RANGES`]: `macro_auroc`, `ece`, … in [0, 1], `brier` in
//!   [0, 2], `nll` ≥ 0) must lie in it, so that an impossible value can never be ranked on;
//! - a UTF-8 byte-order mark at the start of a file is ignored (as the CSV readers do);
//! - blank lines are skipped; any other line must be one JSON object;
//! - records of regime `estimate` follow their own contract (see [`Regime::Estimate`]); their metrics are
//!   estimator scores, which have no known range;
//! - two records with the same run key (every field of the key above, across all files read together)
//!   are an error listing every duplicate with the line of its first occurrence; a duplicate is never
//!   silently averaged, so no run is counted twice.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::duplicate_run::{DUPLICATES_LISTED, DuplicateRun, Location, describe_duplicates};
use crate::error::CrsError;

/// Metrics whose value range is known, as (name, lowest, highest): a record outside it is rejected at
/// load. Probabilities and rates of calibra-metrics lie in [0, 1]; the multiclass Brier score (sum
/// form) in [0, 2]; NLL in [0, ∞). Other metric names are accepted with any finite value.
pub const KNOWN_METRIC_RANGES: &[(&str, f64, f64)] = &[
    ("accuracy", 0.0, 1.0),
    ("macro_auroc", 0.0, 1.0),
    ("macro_auprc", 0.0, 1.0),
    ("macro_f1", 0.0, 1.0),
    ("ece", 0.0, 1.0),
    ("adaptive_ece", 0.0, 1.0),
    ("classwise_ece", 0.0, 1.0),
    ("mce", 0.0, 1.0),
    ("brier", 0.0, 2.0),
    ("nll", 0.0, f64::INFINITY),
];

/// The known range of metric `name`, if any ([`KNOWN_METRIC_RANGES`]).
pub fn metric_range(name: &str) -> Option<(f64, f64)> {
    KNOWN_METRIC_RANGES.iter().find(|(n, _, _)| *n == name).map(|&(_, lo, hi)| (lo, hi))
}

/// How the encoder was used for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Regime {
    /// A probe on frozen features.
    #[serde(rename = "frozen")]
    Frozen,
    /// Low-rank adaptation of the encoder.
    #[serde(rename = "lora")]
    Lora,
    /// Context optimisation (learned prompts).
    #[serde(rename = "coop")]
    Coop,
    /// Full fine-tuning.
    #[serde(rename = "full")]
    Full,
    /// Zero-shot (prompted) prediction, no training.
    #[serde(rename = "zero-shot")]
    ZeroShot,
    /// Transferability estimators on cached frozen train-split features: a prediction of how well the
    /// encoder will do after adaptation, not a fit that is evaluated (issue 18). The record contract:
    ///
    /// - `probe`: `estimators` for features at full depth (layer 1), `estimators@<layer>` (e.g.
    ///   `estimators@0.25`, `@0.5`, `@0.75`) for shallower layers, the `probe@layer` convention of
    ///   frozen probes ([`ESTIMATE_PROBE`], [`estimate_layer`]);
    /// - `calibrator` `none`, `label_fraction` 1, `condition` clean, `seed` the recipe's first seed;
    /// - `metrics`: estimator name → score, higher = predicted better (`logme`, `hscore`,
    ///   `hscore_shrinkage`, `gbc`, `nleep`, `transrate`, `effective_dimensionality`,
    ///   `knn_agreement`); an estimator undefined for the data is absent. Scores are unbounded: none of
    ///   these names is in [`KNOWN_METRIC_RANGES`];
    /// - no predictions file; `paths` and `timings` may be empty.
    ///
    /// The evaluator keeps these records out of every analysis of fits (axes, CRS, metric rows, regime
    /// comparisons, stability, encoder analyses, FOCUS, convergence) and compares them with the adapted
    /// runs in [`crate::transfer_prediction`].
    #[serde(rename = "estimate")]
    Estimate,
}

/// The probe name of estimate records at full depth; shallower layers are `estimators@<layer>`.
pub const ESTIMATE_PROBE: &str = "estimators";

/// The layer (depth fraction in (0, 1]) of an estimate record's probe: `estimators` → 1,
/// `estimators@0.25` → 0.25; `None` for any other probe name or a layer outside (0, 1].
pub fn estimate_layer(probe: &str) -> Option<f64> {
    if probe == ESTIMATE_PROBE {
        return Some(1.0);
    }
    let layer: f64 = probe.strip_prefix(ESTIMATE_PROBE)?.strip_prefix('@')?.parse().ok()?;
    (layer.is_finite() && layer > 0.0 && layer <= 1.0).then_some(layer)
}

impl Regime {
    /// The name used in run records.
    pub fn name(self) -> &'static str {
        match self {
            Regime::Frozen => "frozen",
            Regime::Lora => "lora",
            Regime::Coop => "coop",
            Regime::Full => "full",
            Regime::ZeroShot => "zero-shot",
            Regime::Estimate => "estimate",
        }
    }
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The test condition of a run.
///
/// JSON: `{"kind": "clean"}`, `{"kind": "perturbation", "perturbation": NAME, "severity": N}` or
/// `{"kind": "shift", "target": DATASET}`; a key that does not belong to the kind is rejected (serde's
/// `deny_unknown_fields` does not reach into internally tagged variants, hence [`RawCondition`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "RawCondition")]
pub enum Condition {
    /// The clean test split.
    Clean,
    /// The test split under one perturbation at one severity (1 = mildest).
    Perturbation { perturbation: String, severity: u32 },
    /// A shift target dataset, predicted by the probe trained on the run's dataset without retraining.
    Shift { target: String },
}

/// The wire form of [`Condition`] before the per-kind key check.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCondition {
    kind: String,
    perturbation: Option<String>,
    severity: Option<u32>,
    target: Option<String>,
}

impl TryFrom<RawCondition> for Condition {
    type Error = String;

    fn try_from(raw: RawCondition) -> Result<Self, Self::Error> {
        let extra = |allowed: &[&str]| -> Result<(), String> {
            let present = [
                ("perturbation", raw.perturbation.is_some()),
                ("severity", raw.severity.is_some()),
                ("target", raw.target.is_some()),
            ];
            match present.iter().find(|(name, is)| *is && !allowed.contains(name)) {
                Some((name, _)) => {
                    Err(format!("condition of kind `{}` does not take the key `{name}`", raw.kind))
                }
                None => Ok(()),
            }
        };
        let missing = |name: &str| format!("condition of kind `{}` needs the key `{name}`", raw.kind);
        match raw.kind.as_str() {
            "clean" => {
                extra(&[])?;
                Ok(Condition::Clean)
            }
            "perturbation" => {
                extra(&["perturbation", "severity"])?;
                Ok(Condition::Perturbation {
                    perturbation: raw.perturbation.clone().ok_or_else(|| missing("perturbation"))?,
                    severity: raw.severity.ok_or_else(|| missing("severity"))?,
                })
            }
            "shift" => {
                extra(&["target"])?;
                Ok(Condition::Shift { target: raw.target.clone().ok_or_else(|| missing("target"))? })
            }
            other => {
                Err(format!("unknown condition kind `{other}`, expected `clean`, `perturbation` or `shift`"))
            }
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Clean => f.write_str("clean"),
            Condition::Perturbation { perturbation, severity } => write!(f, "{perturbation}@{severity}"),
            Condition::Shift { target } => write!(f, "shift→{target}"),
        }
    }
}

/// A label fraction in (0, 1], with total equality, hashing and ordering (by value).
///
/// Construct with [`LabelFraction::new`], which rejects values outside (0, 1] and non-finite values.
#[derive(Debug, Clone, Copy)]
pub struct LabelFraction(f64);

impl LabelFraction {
    /// The full training split.
    pub const FULL: LabelFraction = LabelFraction(1.0);

    /// `Some` for a finite value in (0, 1], else `None`.
    pub fn new(value: f64) -> Option<Self> {
        (value.is_finite() && value > 0.0 && value <= 1.0).then_some(LabelFraction(value))
    }

    /// The fraction as a number.
    pub fn get(self) -> f64 {
        self.0
    }

    /// Whether this fraction equals `value` within 1e-9 (label fractions are written with few digits;
    /// the tolerance absorbs decimal round-trips such as `0.1` vs `0.1000000000000000055`).
    pub fn matches(self, value: f64) -> bool {
        (self.0 - value).abs() <= 1e-9
    }
}

impl PartialEq for LabelFraction {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for LabelFraction {}

impl std::hash::Hash for LabelFraction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl PartialOrd for LabelFraction {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LabelFraction {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Serialize for LabelFraction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl fmt::Display for LabelFraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One run as written in a run-record line (see the module docs for the schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    /// Probe / loss of the fit.
    pub probe: String,
    /// Post-hoc calibrator applied to the outputs (`"none"` = raw).
    pub calibrator: String,
    pub label_fraction: f64,
    pub seed: u64,
    pub condition: Condition,
    /// Metric name → value (finite).
    pub metrics: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paths: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub timings: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, String>,
    /// The fit's training curve (adapted regimes: lora, full); absent for fits that train nothing
    /// by gradient descent and in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingCurve>,
}

/// A fit's training curve as a run record stores it (`training`; see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingCurve {
    /// One entry per evaluation, epoch 0 (the initial weights) first.
    pub epochs: Vec<TrainingEpoch>,
    /// The epoch whose weights made the record's predictions (the last one, or early stopping's best).
    pub selected_epoch: usize,
    /// Whether early stopping ended training before its last epoch.
    #[serde(default)]
    pub stopped_early: bool,
    /// Where the head started: `probe` (LP-FT) or `random`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_init: Option<String>,
}

/// One point of a [`TrainingCurve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingEpoch {
    /// 0 = the initial weights; `e >= 1` = after epoch `e`.
    pub epoch: usize,
    /// Epoch `e >= 1`: the mean of its step losses; epoch 0: the training-set loss of the initial
    /// weights.
    pub train_loss: f64,
    /// Mean loss over the calibration split.
    pub calibration_loss: f64,
    /// Macro AUROC over the calibration split (absent where undefined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_auroc: Option<f64>,
}

/// The seed-free part of a run key: what a metric row aggregates over seeds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupKey {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub condition: Condition,
    pub label_fraction: LabelFraction,
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "encoder={} dataset={} regime={} probe={} calibrator={} condition={} label_fraction={}",
            self.encoder,
            self.dataset,
            self.regime,
            self.probe,
            self.calibrator,
            self.condition,
            self.label_fraction
        )
    }
}

/// The full run key: the group key plus the seed. Two records with equal run keys are duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunKey {
    pub group: GroupKey,
    pub seed: u64,
}

impl fmt::Display for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} seed={}", self.group, self.seed)
    }
}

impl RunRecord {
    /// The seed-free group key. Call after [`RunRecord::validate`] (the label fraction must be valid).
    fn group_key(&self, fraction: LabelFraction) -> GroupKey {
        GroupKey {
            encoder: self.encoder.clone(),
            dataset: self.dataset.clone(),
            regime: self.regime,
            probe: self.probe.clone(),
            calibrator: self.calibrator.clone(),
            condition: self.condition.clone(),
            label_fraction: fraction,
        }
    }

    /// Checks the value rules serde cannot express; returns the validated label fraction.
    ///
    /// Errors (as plain messages; the caller adds the location): an empty encoder/dataset/probe/
    /// calibrator/metric name or perturbation/shift name, a severity of 0, a label fraction outside
    /// (0, 1], a non-finite metric or timing value.
    pub fn validate(&self) -> Result<LabelFraction, String> {
        for (field, value) in [
            ("encoder", &self.encoder),
            ("dataset", &self.dataset),
            ("probe", &self.probe),
            ("calibrator", &self.calibrator),
        ] {
            if value.trim().is_empty() {
                return Err(format!("field `{field}` is empty"));
            }
        }
        match &self.condition {
            Condition::Clean => {}
            Condition::Perturbation { perturbation, severity } => {
                if perturbation.trim().is_empty() {
                    return Err("condition field `perturbation` is empty".to_string());
                }
                if *severity == 0 {
                    return Err("condition field `severity` must be >= 1".to_string());
                }
            }
            Condition::Shift { target } => {
                if target.trim().is_empty() {
                    return Err("condition field `target` is empty".to_string());
                }
            }
        }
        let fraction = LabelFraction::new(self.label_fraction).ok_or_else(|| {
            format!("field `label_fraction` is {}, expected a number in (0, 1]", self.label_fraction)
        })?;
        for (name, value) in &self.metrics {
            if name.trim().is_empty() {
                return Err("`metrics` has an empty metric name".to_string());
            }
            if !value.is_finite() {
                return Err(format!("metric `{name}` is {value}, expected a finite number"));
            }
        }
        for (name, value) in &self.timings {
            if !value.is_finite() {
                return Err(format!("timing `{name}` is {value}, expected a finite number"));
            }
        }
        Ok(fraction)
    }

    /// Checks every metric with a known range ([`KNOWN_METRIC_RANGES`]) against it: a record read from
    /// a file with `macro_auroc` 5.0 or `ece` −0.2 is refused rather than ranked.
    pub fn check_metric_ranges(&self) -> Result<(), String> {
        for (name, value) in &self.metrics {
            if let Some((lo, hi)) = metric_range(name)
                && !(lo..=hi).contains(value)
            {
                let range = if hi.is_finite() { format!("[{lo}, {hi}]") } else { format!(">= {lo}") };
                return Err(format!("metric `{name}` is {value}, outside its range {range}"));
            }
        }
        Ok(())
    }
}

/// A validated record with its run key and origin.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedRecord {
    pub key: RunKey,
    pub location: Location,
    pub record: RunRecord,
}

/// A set of run records read from one or more files, with unique run keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRecordSet {
    records: Vec<LocatedRecord>,
}

impl RunRecordSet {
    /// Parses JSON Lines from `reader`; `source` names the stream in errors (usually the file path).
    pub fn from_reader(reader: impl BufRead, source: &str) -> Result<Self, CrsError> {
        let mut set = RunRecordSet::default();
        set.extend_from_reader(reader, source)?;
        Ok(set)
    }

    /// Reads one JSON Lines file.
    pub fn from_path(path: &Path) -> Result<Self, CrsError> {
        Self::from_paths(&[path])
    }

    /// Reads several JSON Lines files as one set; duplicate run keys across files are errors too.
    pub fn from_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Self, CrsError> {
        let mut set = RunRecordSet::default();
        for path in paths {
            let path = path.as_ref();
            let file = std::fs::File::open(path)
                .map_err(|error| CrsError::Io { file: path.to_path_buf(), error })?;
            set.extend_from_reader(std::io::BufReader::new(file), &path.display().to_string())?;
        }
        Ok(set)
    }

    /// Builds a set from records already in memory (line = position + 1 in `records`), applying the
    /// same validation and duplicate checks as parsing, except the known-range check of metric values
    /// ([`RunRecord::check_metric_ranges`]), which guards records read from files: in-memory sets are
    /// built by analyses and by property tests whose synthetic metrics may leave those ranges.
    pub fn from_records(records: Vec<RunRecord>, source: &str) -> Result<Self, CrsError> {
        let mut located = Vec::with_capacity(records.len());
        for (i, record) in records.into_iter().enumerate() {
            let location = Location { source: source.to_string(), line: i + 1 };
            located.push(Self::locate(record, location)?);
        }
        let mut set = RunRecordSet::default();
        set.append_checked(located)?;
        Ok(set)
    }

    fn locate(record: RunRecord, location: Location) -> Result<LocatedRecord, CrsError> {
        let fraction = record.validate().map_err(|message| CrsError::InvalidRecord {
            file: location.source.clone(),
            line: location.line,
            message,
        })?;
        let key = RunKey { group: record.group_key(fraction), seed: record.seed };
        Ok(LocatedRecord { key, location, record })
    }

    /// Parses JSON Lines from `reader` into this set (`source` names it in errors); a run key already in
    /// the set is a duplicate, as across the files of [`RunRecordSet::from_paths`].
    pub fn extend_from_reader(&mut self, reader: impl BufRead, source: &str) -> Result<(), CrsError> {
        let mut parsed = Vec::new();
        for (i, line) in reader.lines().enumerate() {
            let line_no = i + 1;
            let text = line.map_err(|e| CrsError::InvalidRecord {
                file: source.to_string(),
                line: line_no,
                message: format!("cannot read the line: {e}"),
            })?;
            let text = if line_no == 1 { text.strip_prefix('\u{feff}').unwrap_or(&text) } else { &text };
            if text.trim().is_empty() {
                continue;
            }
            let record: RunRecord = serde_json::from_str(text).map_err(|e| CrsError::InvalidRecord {
                file: source.to_string(),
                line: line_no,
                message: e.to_string(),
            })?;
            record.check_metric_ranges().map_err(|message| CrsError::InvalidRecord {
                file: source.to_string(),
                line: line_no,
                message,
            })?;
            parsed.push(Self::locate(record, Location { source: source.to_string(), line: line_no })?);
        }
        self.append_checked(parsed)
    }

    /// Appends records after checking that no run key occurs twice (within `new` or against `self`).
    fn append_checked(&mut self, new: Vec<LocatedRecord>) -> Result<(), CrsError> {
        let mut seen: HashMap<&RunKey, &Location> = HashMap::with_capacity(self.records.len() + new.len());
        let mut duplicates = Vec::new();
        for record in self.records.iter().chain(new.iter()) {
            if let Some(first) = seen.get(&record.key) {
                duplicates.push(DuplicateRun {
                    key: record.key.to_string(),
                    first: (*first).clone(),
                    duplicate: record.location.clone(),
                });
            } else {
                seen.insert(&record.key, &record.location);
            }
        }
        if !duplicates.is_empty() {
            return Err(CrsError::DuplicateRuns { duplicates });
        }
        self.records.extend(new);
        Ok(())
    }

    /// The records, in reading order.
    pub fn records(&self) -> &[LocatedRecord] {
        &self.records
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// A set of already-located records with unique keys (records of a set, amended).
    pub(crate) fn from_located(records: Vec<LocatedRecord>) -> Self {
        RunRecordSet { records }
    }

    /// The set split into its fits (every regime but [`Regime::Estimate`]) and its estimate records,
    /// each in reading order with its original locations.
    pub fn split_estimates(&self) -> (RunRecordSet, RunRecordSet) {
        let (estimates, fits): (Vec<LocatedRecord>, Vec<LocatedRecord>) =
            self.records.iter().cloned().partition(|r| r.record.regime == Regime::Estimate);
        (RunRecordSet { records: fits }, RunRecordSet { records: estimates })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(extra: &str) -> String {
        format!(
            r#"{{"encoder":"E","dataset":"D","regime":"frozen","probe":"linear","calibrator":"none","label_fraction":1.0,"seed":0,"condition":{{"kind":"clean"}},"metrics":{{"macro_auroc":0.9}}{extra}}}"#
        )
    }

    fn parse(text: &str) -> Result<RunRecordSet, CrsError> {
        RunRecordSet::from_reader(text.as_bytes(), "runs.jsonl")
    }

    #[test]
    fn parses_a_valid_record_with_optional_fields() {
        let text =
            line(r#","paths":{"predictions":"p.csv"},"timings":{"fit_s":1.5},"versions":{"calibra":"0.1"}"#);
        let set = parse(&text).unwrap();
        assert_eq!(set.len(), 1);
        let r = &set.records()[0];
        assert_eq!(r.record.paths["predictions"], "p.csv");
        assert_eq!(r.location, Location { source: "runs.jsonl".into(), line: 1 });
        assert_eq!(r.key.group.condition, Condition::Clean);
    }

    #[test]
    fn record_round_trips_through_json() {
        let text = line(r#","condition":{"kind":"perturbation","perturbation":"blur","severity":2}"#)
            .replace(r#""condition":{"kind":"clean"},"#, "");
        let set = parse(&text).unwrap();
        let record = &set.records()[0].record;
        let back: RunRecord = serde_json::from_str(&serde_json::to_string(record).unwrap()).unwrap();
        assert_eq!(&back, record);
        assert_eq!(record.condition, Condition::Perturbation { perturbation: "blur".into(), severity: 2 });
    }

    #[test]
    fn unknown_key_is_rejected_with_file_and_line() {
        let text =
            format!("{}\n\n{}\n", line(""), line(r#","colour":"red""#).replace("\"seed\":0", "\"seed\":1"));
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("runs.jsonl:3"), "{err}");
        assert!(err.contains("unknown field `colour`"), "{err}");
    }

    #[test]
    fn unknown_key_inside_condition_is_rejected() {
        let text = line("").replace(r#"{"kind":"clean"}"#, r#"{"kind":"clean","severity":1}"#);
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("runs.jsonl:1"), "{err}");
        assert!(err.contains("severity"), "{err}");
    }

    #[test]
    fn condition_keys_are_checked_per_kind() {
        for (cond, needle) in [
            (r#"{"kind":"shift"}"#, "needs the key `target`"),
            (r#"{"kind":"perturbation","perturbation":"blur"}"#, "needs the key `severity`"),
            (r#"{"kind":"shift","target":"m","severity":1}"#, "does not take the key `severity`"),
            (r#"{"kind":"blurry"}"#, "unknown condition kind `blurry`"),
            (r#"{"kind":"clean","colour":1}"#, "unknown field `colour`"),
        ] {
            let text = line("").replace(r#"{"kind":"clean"}"#, cond);
            let err = parse(&text).unwrap_err().to_string();
            assert!(err.contains("runs.jsonl:1") && err.contains(needle), "{cond}: {err}");
        }
    }

    #[test]
    fn missing_field_is_rejected() {
        let text = line("").replace(r#""seed":0,"#, "");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("runs.jsonl:1") && err.contains("missing field `seed`"), "{err}");
    }

    #[test]
    fn invalid_values_are_rejected() {
        for (from, to, needle) in [
            (r#""label_fraction":1.0"#, r#""label_fraction":1.5"#, "label_fraction"),
            (r#""label_fraction":1.0"#, r#""label_fraction":0"#, "label_fraction"),
            (r#""encoder":"E""#, r#""encoder":"""#, "encoder"),
            (r#""regime":"frozen""#, r#""regime":"frozzen""#, "frozzen"),
            (r#""macro_auroc":0.9"#, r#""macro_auroc":null"#, "null"),
        ] {
            let text = line("").replace(from, to);
            let err = parse(&text).unwrap_err().to_string();
            assert!(err.contains("runs.jsonl:1") && err.contains(needle), "{to}: {err}");
        }
    }

    /// Issue 20 defect 6: `macro_auroc` 5.0 moved an encoder to rank 1 and `ece` −0.2 was accepted.
    #[test]
    fn known_metrics_out_of_range_are_rejected_with_file_and_line() {
        for (value, needle) in [
            (r#""macro_auroc":5.0"#, "metric `macro_auroc` is 5, outside its range [0, 1]"),
            (r#""macro_auroc":0.9,"ece":-0.2"#, "metric `ece` is -0.2, outside its range [0, 1]"),
            (r#""macro_auroc":0.9,"brier":2.5"#, "`brier` is 2.5, outside its range [0, 2]"),
            (r#""macro_auroc":0.9,"nll":-1"#, "`nll` is -1, outside its range >= 0"),
        ] {
            let text = format!(
                "{}\n{}\n",
                line("").replace("\"seed\":0", "\"seed\":1"),
                line("").replace(r#""macro_auroc":0.9"#, value)
            );
            let err = parse(&text).unwrap_err().to_string();
            assert!(err.contains("runs.jsonl:2") && err.contains(needle), "{value}: {err}");
        }
        // Edges and unknown metrics are accepted.
        let ok =
            line("").replace(r#""macro_auroc":0.9"#, r#""macro_auroc":1.0,"ece":0.0,"delta_auroc":-3.0"#);
        assert_eq!(parse(&ok).unwrap().len(), 1);
    }

    #[test]
    fn a_byte_order_mark_is_accepted_like_csv() {
        let text = format!("\u{feff}{}\n", line(""));
        assert_eq!(parse(&text).unwrap().len(), 1);
        // Only at the start of the file.
        let text = format!("{}\n\u{feff}{}\n", line(""), line("").replace("\"seed\":0", "\"seed\":1"));
        assert!(parse(&text).unwrap_err().to_string().contains("runs.jsonl:2"));
    }

    #[test]
    fn duplicate_run_keys_are_all_reported_with_both_lines() {
        let a = line("");
        let b = line("").replace("\"seed\":0", "\"seed\":1");
        let text = format!("{a}\n{b}\n{a}\n{b}\n");
        let err = parse(&text).unwrap_err();
        match &err {
            CrsError::DuplicateRuns { duplicates } => {
                assert_eq!(duplicates.len(), 2);
                assert_eq!(duplicates[0].first.line, 1);
                assert_eq!(duplicates[0].duplicate.line, 3);
                assert_eq!(duplicates[1].first.line, 2);
                assert_eq!(duplicates[1].duplicate.line, 4);
            }
            other => panic!("unexpected error {other}"),
        }
        let msg = err.to_string();
        assert!(msg.contains("runs.jsonl:3") && msg.contains("runs.jsonl:1"), "{msg}");
    }

    #[test]
    fn long_duplicate_lists_are_summarised() {
        let text: String = (0..15).map(|_| line("") + "\n").collect();
        let err = parse(&text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("14 duplicate run key(s)") && msg.ends_with("… and 4 more"), "{msg}");
        assert!(matches!(err, CrsError::DuplicateRuns { duplicates } if duplicates.len() == 14));
    }

    #[test]
    fn duplicates_across_files_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, line("")).unwrap();
        std::fs::write(&b, line("")).unwrap();
        let err = RunRecordSet::from_paths(&[&a, &b]).unwrap_err().to_string();
        assert!(err.contains("a.jsonl:1") && err.contains("b.jsonl:1"), "{err}");
    }

    #[test]
    fn estimate_records_parse_with_unbounded_scores_and_split_off() {
        let estimate = line("")
            .replace(r#""regime":"frozen""#, r#""regime":"estimate""#)
            .replace(r#""probe":"linear""#, r#""probe":"estimators@0.25""#)
            .replace(r#""macro_auroc":0.9"#, r#""logme":-1234.5,"gbc":-7.0,"hscore":250.0"#);
        let set = parse(&format!("{}\n{estimate}\n", line(""))).unwrap();
        assert_eq!(set.records()[1].record.regime, Regime::Estimate);
        assert_eq!(Regime::Estimate.name(), "estimate");
        assert_eq!(serde_json::to_string(&Regime::Estimate).unwrap(), r#""estimate""#);
        for name in crate::transfer_prediction::ESTIMATORS {
            assert!(metric_range(name).is_none(), "{name} must not be range-checked");
        }
        let (fits, estimates) = set.split_estimates();
        assert_eq!((fits.len(), estimates.len()), (1, 1));
        assert_eq!(estimates.records()[0].location.line, 2);
        assert_eq!(fits.records()[0], set.records()[0]);
    }

    #[test]
    fn estimate_layers_follow_the_probe_at_layer_convention() {
        assert_eq!(estimate_layer("estimators"), Some(1.0));
        for layer in [0.25, 0.5, 0.75] {
            assert_eq!(estimate_layer(&format!("estimators@{layer}")), Some(layer));
        }
        for bad in
            ["estimators@", "estimators@0", "estimators@1.5", "estimators0.5", "linear", "estimators@x"]
        {
            assert_eq!(estimate_layer(bad), None, "{bad}");
        }
    }

    #[test]
    fn different_conditions_are_different_runs() {
        let a = line("");
        let b = line("").replace(r#"{"kind":"clean"}"#, r#"{"kind":"shift","target":"mimic"}"#);
        assert_eq!(parse(&format!("{a}\n{b}")).unwrap().len(), 2);
    }
}
