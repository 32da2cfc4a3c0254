//! Reading a Hugging Face `config.json` with errors that name the file and field.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::ModelError;

/// A parsed `config.json` with typed accessors. Unknown fields are ignored.
#[derive(Debug, Clone)]
pub struct HfConfig {
    /// The file it was read from (for error messages).
    pub path: PathBuf,
    /// The raw JSON object.
    pub json: Value,
}

/// Reads and parses `path` as a JSON object.
pub fn read_config(path: &Path) -> Result<HfConfig, ModelError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ModelError::Io { path: path.into(), source })?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| ModelError::Config { path: path.into(), message: e.to_string() })?;
    if !json.is_object() {
        return Err(ModelError::Config {
            path: path.into(),
            message: "top level is not a JSON object".into(),
        });
    }
    Ok(HfConfig { path: path.into(), json })
}

impl HfConfig {
    /// Wraps an in-memory JSON value (`path` is used only in messages).
    pub fn from_value(path: impl Into<PathBuf>, json: Value) -> Self {
        Self { path: path.into(), json }
    }

    fn err(&self, message: String) -> ModelError {
        ModelError::Config { path: self.path.clone(), message }
    }

    /// `model_type`, required.
    pub fn model_type(&self) -> Result<String, ModelError> {
        self.req_str("model_type")
    }

    /// A required string field.
    pub fn req_str(&self, key: &str) -> Result<String, ModelError> {
        match self.json.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.err(format!("field '{key}' must be a string, found {v}"))),
            None => Err(self.err(format!("missing field '{key}'"))),
        }
    }

    /// A string field with a default when absent.
    pub fn str_or(&self, key: &str, default: &str) -> Result<String, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default.to_string()),
            Some(_) => self.req_str(key),
        }
    }

    /// A required non-negative integer field.
    pub fn req_usize(&self, key: &str) -> Result<usize, ModelError> {
        match self.json.get(key) {
            Some(v) => v
                .as_u64()
                .map(|x| x as usize)
                .ok_or_else(|| self.err(format!("field '{key}' must be a non-negative integer, found {v}"))),
            None => Err(self.err(format!("missing field '{key}'"))),
        }
    }

    /// A non-negative integer field with a default when absent or null.
    pub fn usize_or(&self, key: &str, default: usize) -> Result<usize, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(_) => self.req_usize(key),
        }
    }

    /// A numeric field with a default when absent or null.
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => {
                v.as_f64().ok_or_else(|| self.err(format!("field '{key}' must be a number, found {v}")))
            }
        }
    }

    /// A boolean field with a default when absent or null.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => {
                v.as_bool().ok_or_else(|| self.err(format!("field '{key}' must be a boolean, found {v}")))
            }
        }
    }

    /// An image/patch size that HF allows as an int or a `[h, w]` pair; only square sizes are
    /// supported here.
    pub fn square_size(&self, key: &str) -> Result<usize, ModelError> {
        match self.json.get(key) {
            Some(Value::Array(a)) if a.len() == 2 && a[0] == a[1] => self.req_usize_value(key, &a[0]),
            Some(Value::Array(_)) => Err(self.err(format!("field '{key}': only square sizes are supported"))),
            Some(_) => self.req_usize(key),
            None => Err(self.err(format!("missing field '{key}'"))),
        }
    }

    fn req_usize_value(&self, key: &str, v: &Value) -> Result<usize, ModelError> {
        v.as_u64().map(|x| x as usize).ok_or_else(|| self.err(format!("field '{key}' must hold integers")))
    }

    /// An error about this config (for family-specific checks).
    pub fn invalid(&self, message: impl Into<String>) -> ModelError {
        self.err(message.into())
    }

    /// An "unsupported configuration" error about this config.
    pub fn unsupported(&self, message: impl Into<String>) -> ModelError {
        ModelError::UnsupportedConfig { path: self.path.clone(), message: message.into() }
    }
}
