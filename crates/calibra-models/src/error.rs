//! The error type of calibra-models: every failure names the file, key or setting involved.

use std::path::PathBuf;

/// One tensor whose stored shape differs from the shape the module expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeMismatch {
    /// Module path (after key remapping) of the tensor.
    pub key: String,
    /// Shape the module expects (burn layout, after the PyTorch adapter).
    pub expected: Vec<usize>,
    /// Shape found in the file (after the adapter).
    pub found: Vec<usize>,
}

/// Everything that did not line up between a checkpoint and a module, collected in one pass so
/// that a single error lists every problem at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyReport {
    /// Module parameters for which the file has no tensor (module paths).
    pub missing: Vec<String>,
    /// File tensors that no parameter consumed and that the family's ignore list does not cover
    /// (file names as written in the checkpoint).
    pub unused: Vec<String>,
    /// Tensors present on both sides with different shapes.
    pub mis_shaped: Vec<ShapeMismatch>,
    /// Other per-tensor errors reported by burn-store (dtype, adapter, data).
    pub other: Vec<String>,
}

impl KeyReport {
    /// `true` when nothing is missing, unused, mis-shaped or otherwise wrong.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty()
            && self.unused.is_empty()
            && self.mis_shaped.is_empty()
            && self.other.is_empty()
    }
}

impl std::fmt::Display for KeyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.missing.is_empty() {
            writeln!(f, "  missing ({}; module parameters with no tensor in the file):", self.missing.len())?;
            for k in &self.missing {
                writeln!(f, "    - {k}")?;
            }
        }
        if !self.unused.is_empty() {
            writeln!(f, "  unused ({}; file tensors no parameter consumed):", self.unused.len())?;
            for k in &self.unused {
                writeln!(f, "    - {k}")?;
            }
        }
        if !self.mis_shaped.is_empty() {
            writeln!(f, "  mis-shaped ({}):", self.mis_shaped.len())?;
            for m in &self.mis_shaped {
                writeln!(f, "    - {}: expected {:?}, found {:?}", m.key, m.expected, m.found)?;
            }
        }
        if !self.other.is_empty() {
            writeln!(f, "  other errors ({}):", self.other.len())?;
            for e in &self.other {
                writeln!(f, "    - {e}")?;
            }
        }
        Ok(())
    }
}

/// Errors of checkpoint resolution, configuration parsing, weight loading and device selection.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `config.json` is not valid JSON or lacks/mistypes a field.
    #[error("{path}: invalid config: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What was wrong (field name and expected type/value).
        message: String,
    },
    /// A checkpoint spec (directory or `hf:org/name`) did not resolve to a directory holding
    /// `config.json`.
    #[error("checkpoint '{spec}' not found; looked in: {}", searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    CheckpointNotFound {
        /// The spec as given.
        spec: String,
        /// Every place that was tried.
        searched: Vec<PathBuf>,
    },
    /// `config.json` names a `model_type` this crate has no module for.
    #[error("{path}: unsupported model_type '{model_type}' (supported: {supported})")]
    UnsupportedModelType {
        /// The config file.
        path: PathBuf,
        /// The model type found.
        model_type: String,
        /// Comma-separated list of supported types.
        supported: String,
    },
    /// A configuration is understood but describes a variant this crate does not implement.
    #[error("{path}: unsupported configuration: {message}")]
    UnsupportedConfig {
        /// The config file.
        path: PathBuf,
        /// What is not supported.
        message: String,
    },
    /// A PyTorch checkpoint (`.pt`/`.pth`) could not be read, or does not hold what it should.
    #[error("{path}: {message}")]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// The safetensors file could not be opened or parsed by burn-store.
    #[error("{path}: cannot read/write safetensors: {message}")]
    Store {
        /// The weights file.
        path: PathBuf,
        /// The burn-store message.
        message: String,
    },
    /// The checkpoint's keys do not match the module: every problem is listed.
    #[error("{path}: checkpoint does not match the {family} module:\n{report}")]
    KeyMismatch {
        /// The weights file.
        path: PathBuf,
        /// The model family (`vit`, `dinov2`, ...).
        family: String,
        /// Every missing / unused / mis-shaped key.
        report: Box<KeyReport>,
    },
    /// Weights hold NaN or infinite values (a model loaded from them would compute NaN, or finite
    /// but wrong numbers: see `layers::attention`).
    #[error("{path}: the checkpoint holds non-finite weights (NaN or infinity):\n{}", tensors.iter().map(|t| format!("  - {t}")).collect::<Vec<_>>().join("\n"))]
    NonFiniteWeights {
        /// The weights file.
        path: PathBuf,
        /// One line per tensor: its file name and how many values are not finite.
        tensors: Vec<String>,
    },
    /// A key-remapping regex did not compile.
    #[error("invalid key-remapping pattern '{pattern}': {message}")]
    RemapPattern {
        /// The pattern.
        pattern: String,
        /// The regex error.
        message: String,
    },
    /// Input tensor does not fit the model (channels, size not divisible by the patch).
    #[error("invalid input: {0}")]
    Input(String),
    /// A device name was not recognised or its backend was not compiled in.
    #[error("device '{name}': {message}")]
    Device {
        /// The requested device.
        name: String,
        /// Why it cannot be used.
        message: String,
    },
}
