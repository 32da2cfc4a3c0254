//! A CRS reference `(R, A)`: a frozen panel of dominance peers with normalisation anchors, weights and
//! the axis estimators the panel was measured with (spec §4).
//!
//! A reference is built once from a panel and saved as versioned JSON. Candidates are then normalised
//! with the same anchors and compared with the same peers, so scoring new encoders never changes the
//! panel's scores. Per-domain references are built the same way from one dataset's cells.

use crate::error::CrsError;
use crate::normalize::{Anchors, AxisAnchor};
use crate::profile::{Axis, Profile, axes_of};
use crate::score::{AxisWeights, ComponentWeights, CrsComponents, ScoreWeights, crs_components};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::Path;

/// The `format` field of a reference file.
pub const REFERENCE_FORMAT: &str = "calibra-crs-reference";
/// The reference file format version this build writes and reads.
pub const REFERENCE_VERSION: u32 = 1;
/// Stored panel scores must match a recomputation within this tolerance when a reference is loaded.
const STORED_SCORE_TOLERANCE: f64 = 1e-12;

/// What the profile values of a panel (and of its candidates) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueScale {
    /// Oriented measured values (calibration = −ECE); anchors come from the panel's min/max.
    Oriented,
    /// Values already oriented and normalised into [0, 1]; anchors are the identity `(0, 1)`.
    Normalized,
}

impl ValueScale {
    /// The name used in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            ValueScale::Oriented => "oriented",
            ValueScale::Normalized => "normalized",
        }
    }
}

/// The estimator behind each axis (spec §2). A candidate must be measured with the same estimators as
/// the reference it is scored against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisEstimators {
    /// Default [`AxisEstimators::MACRO_AUROC`].
    pub discrimination: String,
    /// Default [`AxisEstimators::ECE_15_EQUAL_WIDTH`].
    pub calibration: String,
    /// Default [`AxisEstimators::AUROC_RETENTION`].
    pub label_efficiency: String,
    /// Default [`AxisEstimators::DELTA_MEAN_MAX_SHIFT`].
    pub robustness: String,
    /// The optional fifth axis's estimator ([`AxisEstimators::AUGRC_MSP`]); `None` (and absent from
    /// the JSON, so four-axis references are unchanged) for the default four-axis CRS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selective: Option<String>,
}

impl AxisEstimators {
    /// Clean-test macro-AUROC (one-vs-rest; multilabel per label then mean).
    pub const MACRO_AUROC: &str = "macro_auroc";
    /// ECE, 15 equal-width bins, top-label confidence, oriented as −ECE.
    pub const ECE_15_EQUAL_WIDTH: &str = "ece_15_equal_width";
    /// Mean of A(ρ)/A(1) over ρ ∈ {0.01, 0.05, 0.10, 0.25}.
    pub const AUROC_RETENTION: &str = "auroc_retention_1_5_10_25";
    /// `max(0, 1 − (δ̄ + δmax + 1_shift δshift) / (2 + 1_shift))`.
    pub const DELTA_MEAN_MAX_SHIFT: &str = "delta_mean_max_shift";
    /// `−AUGRC` of the clean test predictions with the maximum softmax probability as confidence.
    pub const AUGRC_MSP: &str = "augrc_msp";

    /// The number of axes these estimators describe: 4, or 5 with the selective axis.
    pub fn n_axes(&self) -> usize {
        if self.selective.is_some() { 5 } else { 4 }
    }

    /// The estimator of one axis.
    /// `""` for the selective axis of four-axis estimators.
    pub fn get(&self, axis: Axis) -> &str {
        match axis {
            Axis::Discrimination => &self.discrimination,
            Axis::Calibration => &self.calibration,
            Axis::LabelEfficiency => &self.label_efficiency,
            Axis::Robustness => &self.robustness,
            Axis::Selective => self.selective.as_deref().unwrap_or(""),
        }
    }
}

impl Default for AxisEstimators {
    fn default() -> Self {
        AxisEstimators {
            discrimination: Self::MACRO_AUROC.into(),
            calibration: Self::ECE_15_EQUAL_WIDTH.into(),
            label_efficiency: Self::AUROC_RETENTION.into(),
            robustness: Self::DELTA_MEAN_MAX_SHIFT.into(),
            selective: None,
        }
    }
}

/// How to build a reference.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceConfig {
    /// The scale of the panel's values (and of every candidate scored later).
    pub scale: ValueScale,
    /// The estimators the panel was measured with.
    pub estimators: AxisEstimators,
    /// The CRS weights frozen with the reference.
    pub weights: ScoreWeights,
    /// `Some(dataset)` for a per-domain reference, `None` for the aggregate one.
    pub domain: Option<String>,
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            scale: ValueScale::Oriented,
            estimators: AxisEstimators::default(),
            weights: ScoreWeights::default(),
            domain: None,
        }
    }
}

/// One candidate's score against a reference.
#[derive(Debug, Clone, PartialEq)]
pub struct CrsScore {
    /// The encoder.
    pub encoder: String,
    /// Its values normalised with the reference's anchors (clipped to [0, 1]).
    pub normalized: Vec<f64>,
    /// D, S, W and CRS.
    pub components: CrsComponents,
    /// Axes on which the candidate lies outside the anchors (its normalised value was clipped).
    pub saturated: Vec<Axis>,
    /// Whether the candidate is a member of the reference panel (then `n_k = |R| − 1`).
    pub in_panel: bool,
}

/// A frozen reference: panel, anchors, weights, estimators. See the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    scale: ValueScale,
    estimators: AxisEstimators,
    weights: ScoreWeights,
    domain: Option<String>,
    anchors: Anchors,
    /// Panel encoders with their values on the reference's scale.
    panel: Vec<(String, Vec<f64>)>,
    /// The panel normalised with `anchors`, in panel order.
    panel_normalized: Vec<Vec<f64>>,
    /// Encoder name → panel index.
    index: HashMap<String, usize>,
}

/// Complete, finite values with unique names; on the normalised scale also within [0, 1].
/// The estimators, weights (and anchors, where given) of a reference must describe the same axes.
fn check_axis_counts(config: &ReferenceConfig, anchors: Option<&Anchors>) -> Result<(), CrsError> {
    let n = config.weights.axis.len();
    if config.estimators.n_axes() != n || anchors.is_some_and(|a| a.len() != n) {
        return Err(CrsError::InvalidParameter {
            name: "reference",
            message: format!(
                "{n} axis weights with estimators of {} axes{}",
                config.estimators.n_axes(),
                anchors.map(|a| format!(" and anchors of {} axes", a.len())).unwrap_or_default()
            ),
        });
    }
    Ok(())
}

fn checked_values(
    profiles: &[Profile],
    scale: ValueScale,
    n_axes: usize,
) -> Result<Vec<(String, Vec<f64>)>, CrsError> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(profiles.len());
    for p in profiles {
        if !seen.insert(p.encoder.as_str()) {
            return Err(CrsError::DuplicateEncoder { encoder: p.encoder.clone() });
        }
        if p.values.len() != n_axes {
            return Err(CrsError::ProfileAxisCount {
                encoder: p.encoder.clone(),
                found: p.values.len(),
                expected: n_axes,
            });
        }
        let values = p.require_complete()?;
        if scale == ValueScale::Normalized {
            for &axis in p.axes() {
                let value = values[axis.index()];
                if !(0.0..=1.0).contains(&value) {
                    return Err(CrsError::OutsideUnitInterval { encoder: p.encoder.clone(), axis, value });
                }
            }
        }
        out.push((p.encoder.clone(), values));
    }
    Ok(out)
}

impl Reference {
    /// Build a reference from a panel with the default anchors: the panel's min/max per axis on the
    /// oriented scale, the identity on the normalised scale.
    ///
    /// # Errors
    /// [`CrsError::EmptyPanel`], [`CrsError::DuplicateEncoder`], [`CrsError::MissingAxis`],
    /// [`CrsError::NonFinite`], [`CrsError::OutsideUnitInterval`] (normalised scale), and
    /// [`CrsError::DegenerateAnchor`] when the panel has no spread on an axis.
    pub fn build(panel: &[Profile], config: ReferenceConfig) -> Result<Self, CrsError> {
        check_axis_counts(&config, None)?;
        let members = checked_values(panel, config.scale, config.weights.axis.len())?;
        if members.is_empty() {
            return Err(CrsError::EmptyPanel);
        }
        let anchors = match config.scale {
            ValueScale::Oriented => {
                Anchors::from_panel(&members.iter().map(|(_, v)| v.as_slice()).collect::<Vec<_>>())?
            }
            ValueScale::Normalized => Anchors::unit_of(config.weights.axis.len()),
        };
        Ok(Reference::assemble(members, anchors, config))
    }

    /// Build a reference from a panel with explicitly given anchors (e.g. clinically fixed bounds).
    ///
    /// # Errors
    /// As [`Reference::build`], except that anchors are not derived from the panel.
    pub fn with_anchors(
        panel: &[Profile],
        anchors: Anchors,
        config: ReferenceConfig,
    ) -> Result<Self, CrsError> {
        check_axis_counts(&config, Some(&anchors))?;
        let members = checked_values(panel, config.scale, config.weights.axis.len())?;
        if members.is_empty() {
            return Err(CrsError::EmptyPanel);
        }
        Ok(Reference::assemble(members, anchors, config))
    }

    fn assemble(panel: Vec<(String, Vec<f64>)>, anchors: Anchors, config: ReferenceConfig) -> Self {
        let panel_normalized = panel.iter().map(|(_, v)| anchors.normalize(v)).collect();
        let index = panel.iter().enumerate().map(|(i, (name, _))| (name.clone(), i)).collect();
        Reference {
            scale: config.scale,
            estimators: config.estimators,
            weights: config.weights,
            domain: config.domain,
            anchors,
            panel,
            panel_normalized,
            index,
        }
    }

    /// The same panel and anchors with other weights (for weight-sensitivity analyses; a reference
    /// published with one set of weights keeps them).
    pub fn with_weights(&self, weights: ScoreWeights) -> Reference {
        Reference { weights, ..self.clone() }
    }

    /// The scale the panel's values (and candidates') are on.
    pub fn scale(&self) -> ValueScale {
        self.scale
    }

    /// The estimators the panel was measured with.
    pub fn estimators(&self) -> &AxisEstimators {
        &self.estimators
    }

    /// The frozen weights.
    pub fn weights(&self) -> &ScoreWeights {
        &self.weights
    }

    /// The dataset of a per-domain reference; `None` for the aggregate reference.
    pub fn domain(&self) -> Option<&str> {
        self.domain.as_deref()
    }

    /// The frozen anchors.
    pub fn anchors(&self) -> &Anchors {
        &self.anchors
    }

    /// The panel's encoder names, in panel order.
    pub fn panel_encoders(&self) -> impl Iterator<Item = &str> {
        self.panel.iter().map(|(name, _)| name.as_str())
    }

    /// The panel as profiles (values on the reference's scale), in panel order.
    pub fn panel_profiles(&self) -> Vec<Profile> {
        self.panel.iter().map(|(name, v)| Profile::complete(name.clone(), v)).collect()
    }

    /// The panel size `|R|`.
    pub fn panel_len(&self) -> usize {
        self.panel.len()
    }

    /// The panel's own scores, in panel order (each member is compared with the other `|R| − 1`).
    pub fn panel_scores(&self) -> Vec<CrsScore> {
        self.panel
            .iter()
            .enumerate()
            .map(|(i, (name, values))| self.score_values(name, values, Some(i)))
            .collect()
    }

    fn score_values(&self, encoder: &str, values: &[f64], own_index: Option<usize>) -> CrsScore {
        let normalized = self.anchors.normalize(values);
        let components = crs_components(&normalized, &self.panel_normalized, own_index, &self.weights);
        CrsScore {
            encoder: encoder.to_string(),
            normalized,
            components,
            saturated: self.anchors.saturated_axes(values),
            in_panel: own_index.is_some(),
        }
    }

    /// Score candidates against the frozen reference, in input order. A candidate whose name is a panel
    /// member must carry exactly that member's values (it is then that member: `n_k = |R| − 1`); any
    /// other candidate is compared with all `|R|` peers. Candidates never change the panel or each
    /// other's scores.
    ///
    /// # Errors
    /// [`CrsError::DuplicateEncoder`], [`CrsError::MissingAxis`], [`CrsError::NonFinite`],
    /// [`CrsError::OutsideUnitInterval`] (normalised scale), [`CrsError::PanelMemberChanged`].
    pub fn score(&self, candidates: &[Profile]) -> Result<Vec<CrsScore>, CrsError> {
        let checked = checked_values(candidates, self.scale, self.weights.axis.len())?;
        let mut out = Vec::with_capacity(checked.len());
        for (name, values) in &checked {
            let own_index = self.index.get(name).copied();
            if let Some(i) = own_index {
                let frozen = &self.panel[i].1;
                for &axis in axes_of(frozen.len()) {
                    let (panel, candidate) = (frozen[axis.index()], values[axis.index()]);
                    if panel.to_bits() != candidate.to_bits() {
                        return Err(CrsError::PanelMemberChanged {
                            encoder: name.clone(),
                            axis,
                            panel,
                            candidate,
                        });
                    }
                }
            }
            out.push(self.score_values(name, values, own_index));
        }
        Ok(out)
    }

    /// [`Reference::score`] after checking that the candidates were measured with this reference's
    /// estimators and scale.
    ///
    /// # Errors
    /// [`CrsError::EstimatorMismatch`] naming the first differing axis (or `scale`), then as
    /// [`Reference::score`].
    pub fn score_measured(
        &self,
        candidates: &[Profile],
        estimators: &AxisEstimators,
        scale: ValueScale,
    ) -> Result<Vec<CrsScore>, CrsError> {
        self.check_compatible(estimators, scale)?;
        self.score(candidates)
    }

    /// Check that values measured with `estimators` on `scale` may be scored against this reference.
    ///
    /// # Errors
    /// [`CrsError::EstimatorMismatch`] naming the first differing axis (or `scale`).
    pub fn check_compatible(&self, estimators: &AxisEstimators, scale: ValueScale) -> Result<(), CrsError> {
        if scale != self.scale {
            return Err(CrsError::EstimatorMismatch {
                axis: "scale".into(),
                reference: self.scale.name().into(),
                candidate: scale.name().into(),
            });
        }
        if estimators.n_axes() != self.estimators.n_axes() {
            return Err(CrsError::AxisCountMismatch {
                reference: self.estimators.n_axes(),
                candidate: estimators.n_axes(),
            });
        }
        for &axis in axes_of(self.estimators.n_axes()) {
            if estimators.get(axis) != self.estimators.get(axis) {
                return Err(CrsError::EstimatorMismatch {
                    axis: axis.name().into(),
                    reference: self.estimators.get(axis).into(),
                    candidate: estimators.get(axis).into(),
                });
            }
        }
        Ok(())
    }

    /// The reference as versioned JSON (pretty-printed). Floats are written in shortest round-trip
    /// form, so [`Reference::from_json`] restores every value bit for bit.
    pub fn to_json(&self) -> String {
        let scores = self.panel_scores();
        let file = ReferenceFile {
            format: REFERENCE_FORMAT.into(),
            version: REFERENCE_VERSION,
            domain: self.domain.clone(),
            scale: self.scale,
            estimators: self.estimators.clone(),
            anchors: AxesOf::from_slice(self.anchors.as_slice()),
            axis_weights: AxesOf::from_slice(self.weights.axis.as_slice()),
            component_weights: self.weights.component,
            panel: self
                .panel
                .iter()
                .zip(&scores)
                .map(|((encoder, values), s)| PanelEntry {
                    encoder: encoder.clone(),
                    values: AxesOf::from_slice(values),
                    scores: s.components,
                })
                .collect(),
        };
        serde_json::to_string_pretty(&file).expect("a reference always serialises")
    }

    /// Parse a reference written by [`Reference::to_json`]; `file` names the source in errors.
    ///
    /// The format name and version are checked first; anchors and weights are re-validated; the stored
    /// panel scores must equal a recomputation (within 1e-12), which catches hand-edited files.
    ///
    /// # Errors
    /// [`CrsError::ReferenceFormat`], [`CrsError::ReferenceVersion`], and the validation errors of
    /// [`Reference::with_anchors`] (duplicate or incomplete panel members, bad weights or anchors).
    pub fn from_json(text: &str, file: &Path) -> Result<Self, CrsError> {
        let format_error = |message: String| CrsError::ReferenceFormat { file: file.to_path_buf(), message };
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format_error(e.to_string()))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(REFERENCE_FORMAT) => {}
            Some(other) => {
                return Err(format_error(format!("`format` is `{other}`, expected `{REFERENCE_FORMAT}`")));
            }
            None => {
                return Err(format_error(format!(
                    "no string field `format` (expected `{REFERENCE_FORMAT}`)"
                )));
            }
        }
        let version = value
            .get("version")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| format_error("no unsigned integer field `version`".into()))?;
        if version != u64::from(REFERENCE_VERSION) {
            return Err(CrsError::ReferenceVersion {
                file: file.to_path_buf(),
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: REFERENCE_VERSION,
            });
        }
        let parsed: ReferenceFile = serde_json::from_value(value).map_err(|e| format_error(e.to_string()))?;
        let in_file = |e: CrsError| format_error(e.to_string());
        let weights = ScoreWeights {
            axis: AxisWeights::from_slice(&parsed.axis_weights.to_vec()).map_err(in_file)?,
            component: parsed.component_weights.validated().map_err(in_file)?,
        };
        let n_axes = parsed.estimators.n_axes();
        let counts = [("anchors", parsed.anchors.len()), ("axis_weights", parsed.axis_weights.len())]
            .into_iter()
            .chain(parsed.panel.iter().map(|m| ("panel values", m.values.len())));
        for (what, n) in counts {
            if n != n_axes {
                return Err(format_error(format!(
                    "`{what}` has {n} axes but the estimators describe {n_axes} (a `selective` entry \
                     is needed in every axis table exactly when the estimators name a selective axis)"
                )));
            }
        }
        let anchors = Anchors::from_slice(&parsed.anchors.to_vec()).map_err(in_file)?;
        let panel: Vec<Profile> =
            parsed.panel.iter().map(|m| Profile::complete(m.encoder.clone(), m.values.to_vec())).collect();
        let config = ReferenceConfig {
            scale: parsed.scale,
            estimators: parsed.estimators,
            weights,
            domain: parsed.domain,
        };
        let reference = Reference::with_anchors(&panel, anchors, config).map_err(in_file)?;
        for (entry, score) in parsed.panel.iter().zip(reference.panel_scores()) {
            let (stored, recomputed) = (entry.scores, score.components);
            let pairs = [
                ("dominance", stored.dominance, recomputed.dominance),
                ("ideal", stored.ideal, recomputed.ideal),
                ("worst", stored.worst, recomputed.worst),
                ("crs", stored.crs, recomputed.crs),
            ];
            for (name, s, r) in pairs {
                let agrees = (s - r).abs() <= STORED_SCORE_TOLERANCE; // false for NaN
                if !agrees {
                    return Err(format_error(format!(
                        "panel member `{}`: stored {name} {s} differs from the recomputed {r}; \
                         the file was edited or written by an incompatible formula",
                        entry.encoder
                    )));
                }
            }
        }
        Ok(reference)
    }

    /// Save as versioned JSON, atomically (temporary file in the same directory, then rename): a reader
    /// sees the old file or the complete new one, never a prefix.
    ///
    /// # Errors
    /// [`CrsError::Io`] naming `path`.
    pub fn save(&self, path: &Path) -> Result<(), CrsError> {
        let json = self.to_json();
        calibra_predictions::write_atomically(path, |w: &mut dyn Write| {
            w.write_all(json.as_bytes())?;
            w.write_all(b"\n")
        })
        .map_err(|e| match e {
            calibra_predictions::PredictionsError::Write { path, error } => {
                CrsError::Io { file: path, error }
            }
            other => {
                CrsError::Io { file: path.to_path_buf(), error: std::io::Error::other(other.to_string()) }
            }
        })
    }

    /// Load a reference saved by [`Reference::save`].
    ///
    /// # Errors
    /// [`CrsError::Io`] when the file cannot be read, then as [`Reference::from_json`].
    pub fn load(path: &Path) -> Result<Self, CrsError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| CrsError::Io { file: path.to_path_buf(), error })?;
        Reference::from_json(&text, path)
    }
}

/// Per-domain references (spec §4): one reference per dataset, each built from that dataset's cells
/// exactly as the aggregate one. `config.domain` is replaced by each dataset's name.
///
/// An encoder whose profile in a domain is entirely unobserved (no cell for that dataset, e.g. BioViL on
/// APTOS) is left out of that domain's panel; a partially observed profile is an error (never imputed).
///
/// # Errors
/// As [`Reference::build`], for the first failing domain.
pub fn build_per_domain(
    profiles_by_domain: &BTreeMap<String, Vec<Profile>>,
    config: &ReferenceConfig,
) -> Result<BTreeMap<String, Reference>, CrsError> {
    profiles_by_domain
        .iter()
        .map(|(domain, profiles)| {
            let observed: Vec<Profile> =
                profiles.iter().filter(|p| p.values.iter().any(Option::is_some)).cloned().collect();
            let config = ReferenceConfig { domain: Some(domain.clone()), ..config.clone() };
            Ok((domain.clone(), Reference::build(&observed, config)?))
        })
        .collect()
}

/// Four values keyed by axis name, as written in reference files.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AxesOf<T> {
    discrimination: T,
    calibration: T,
    label_efficiency: T,
    robustness: T,
    /// The optional fifth axis; absent from four-axis files.
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    selective: Option<T>,
}

impl<T: Copy> AxesOf<T> {
    /// # Panics
    /// If `a` does not hold 4 or 5 values.
    fn from_slice(a: &[T]) -> Self {
        axes_of(a.len());
        AxesOf {
            discrimination: a[0],
            calibration: a[1],
            label_efficiency: a[2],
            robustness: a[3],
            selective: a.get(4).copied(),
        }
    }

    fn to_vec(self) -> Vec<T> {
        [self.discrimination, self.calibration, self.label_efficiency, self.robustness]
            .into_iter()
            .chain(self.selective)
            .collect()
    }

    fn len(&self) -> usize {
        4 + usize::from(self.selective.is_some())
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PanelEntry {
    encoder: String,
    values: AxesOf<f64>,
    /// The member's published scores (checked against a recomputation on load).
    scores: CrsComponents,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReferenceFile {
    format: String,
    version: u32,
    domain: Option<String>,
    scale: ValueScale,
    estimators: AxisEstimators,
    anchors: AxesOf<AxisAnchor>,
    axis_weights: AxesOf<f64>,
    component_weights: ComponentWeights,
    panel: Vec<PanelEntry>,
}

/// `(encoder, CRS)` of complete profiles against a reference built on them with `config`.
pub(crate) fn panel_crs(
    profiles: &[Profile],
    config: &ReferenceConfig,
) -> Result<Vec<(String, f64)>, CrsError> {
    let reference = Reference::build(profiles, config.clone())?;
    Ok(reference.panel_scores().into_iter().map(|s| (s.encoder, s.components.crs)).collect())
}
