//! The errors of the reliability evaluator: bad profiles, bad weights, bad references.

use crate::axis::Axis;
use crate::duplicate_run::{DuplicateRun, describe_duplicates};
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong while building references, scoring encoders or reading their files.
///
/// `file` fields name the file (or a caller-given name for in-memory input); `line` is the 1-based
/// line in that file (a CSV header is line 1).
#[derive(Debug, Error)]
pub enum CrsError {
    /// An encoder has no value on an axis. Unobserved axes are never imputed, and the CRS is only
    /// defined on complete four-axis profiles.
    #[error("encoder `{encoder}` has no {axis} value (axes are never imputed; the CRS needs all {all})",
        axis = axis.name(), all = if *axis == Axis::Selective { "five" } else { "four" })]
    MissingAxis { encoder: String, axis: Axis },
    /// An axis value is NaN or infinite.
    #[error("encoder `{encoder}`: {axis} = {value} is not a finite number", axis = axis.name())]
    NonFinite { encoder: String, axis: Axis, value: f64 },
    /// A value declared as already normalised lies outside [0, 1].
    #[error("encoder `{encoder}`: normalised {axis} = {value} is outside [0, 1]", axis = axis.name())]
    OutsideUnitInterval { encoder: String, axis: Axis, value: f64 },
    /// The same encoder name appears twice in a panel or in one set of candidates.
    #[error("encoder `{encoder}` appears more than once")]
    DuplicateEncoder { encoder: String },
    /// A reference panel needs at least one encoder.
    #[error("the reference panel is empty")]
    EmptyPanel,
    /// Anchors need `lower < upper` (finite): a panel whose values on an axis are all equal gives no
    /// normalisation scale.
    #[error("{axis} anchors ({lower}, {upper}) are degenerate: need finite lower < upper (a panel needs spread on every axis)", axis = axis.name())]
    DegenerateAnchor { axis: Axis, lower: f64, upper: f64 },
    /// Axis or component weights that are negative, non-finite, of the wrong count, or do not sum to 1.
    #[error("invalid {what}: {message}")]
    InvalidWeights { what: &'static str, message: String },
    /// A candidate carries the name of a panel member but different values: the panel is frozen.
    #[error(
        "encoder `{encoder}` is in the reference panel with different {axis} ({panel} in the panel, {candidate} now); the panel is frozen: rename the candidate or build a new reference",
        axis = axis.name()
    )]
    PanelMemberChanged { encoder: String, axis: Axis, panel: f64, candidate: f64 },
    /// Candidates measured with other axis estimators (or on another scale) than the reference.
    #[error("{axis} was measured with `{candidate}` but the reference was built with `{reference}`")]
    EstimatorMismatch { axis: String, reference: String, candidate: String },
    /// A reference of four axes used with a five-axis request (the selective axis), or the reverse.
    #[error("the reference has {reference} axes but the request has {candidate}{hint}",
        hint = if *reference == 4 {
            ": a four-axis reference cannot score the selective axis; build a new reference with five axis weights"
        } else {
            ": this reference includes the selective axis; give five axis weights (and the selective analyses) to use it"
        })]
    AxisCountMismatch { reference: usize, candidate: usize },
    /// A profile whose axis count differs from the weights' (4, or 5 with the selective axis).
    #[error("encoder `{encoder}` has {found} axis values but the CRS has {expected} axes")]
    ProfileAxisCount { encoder: String, found: usize, expected: usize },
    /// The selective axis was requested without what it is computed from.
    #[error("the selective axis needs {needs}")]
    SelectiveAxisInput { needs: String },
    /// An analysis parameter out of its domain (a sub-panel size larger than the panel, zero draws...).
    #[error("invalid parameter {name}: {message}")]
    InvalidParameter { name: &'static str, message: String },
    /// A reference file that cannot be read or written.
    #[error("{file}: {error}")]
    Io { file: PathBuf, error: std::io::Error },
    /// A reference file that is not valid reference JSON.
    #[error("{file}: not a calibra CRS reference: {message}")]
    ReferenceFormat { file: PathBuf, message: String },
    /// A reference file written by an incompatible format version.
    #[error(
        "{file}: reference format version {found} is not supported (this build reads version {supported})"
    )]
    ReferenceVersion { file: PathBuf, found: u32, supported: u32 },
    /// A profiles table (CSV) with a malformed header.
    #[error("{file}: header: {message}")]
    TableHeader { file: String, message: String },
    /// A profiles table cell that is not what its column needs.
    #[error("{file}: line {line}, column `{column}`: {message}")]
    TableCell { file: String, line: u64, column: String, message: String },
    /// A profiles table row that is malformed as a whole.
    #[error("{file}: line {line}: {message}")]
    TableRow { file: String, line: u64, message: String },
    /// A run-record line that is not a valid record (bad JSON, unknown or missing key, bad value).
    #[error("{file}:{line}: invalid run record: {message}")]
    InvalidRecord { file: String, line: usize, message: String },
    /// Run keys that occur more than once (every duplicate with the line of its first occurrence).
    #[error("{} duplicate run key(s); a run is never counted twice: {}", duplicates.len(),
        describe_duplicates(duplicates))]
    DuplicateRuns { duplicates: Vec<DuplicateRun> },
    /// Metric rows that cannot define the axes (an ambiguous cell, a bad axis setting).
    #[error("axes: {message}")]
    AxisInput { message: String },
    /// Two orderings that cannot be compared (different encoders, duplicates, non-finite scores).
    #[error("rank comparison: {message}")]
    RankInput { message: String },
}
