//! Reading a Hugging Face `config.json` with errors that name the file and field, and the checks
//! of the fields a forward pass depends on (sizes at least 1 and at most [`MAX_SIZE`], widths
//! divisible by the head count, an image of at least one patch, positive finite epsilons), so that a
//! bad config is an error naming its key instead of a division by zero, an overflow or an
//! allocation the machine cannot make.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::ModelError;

/// The largest size field (a width, a count, an image or patch side) a config may hold: 2^20. Far
/// above any real model (ViT-22B is 6144 wide, 48 layers), and small enough that the shape arithmetic
/// on such sizes cannot overflow.
pub const MAX_SIZE: usize = 1 << 20;

/// A parsed `config.json` with typed accessors. Unknown fields are ignored.
#[derive(Debug, Clone)]
pub struct HfConfig {
    /// The file it was read from (for error messages).
    pub path: PathBuf,
    /// The raw JSON object.
    pub json: Value,
    /// For a nested object ([`HfConfig::nested`]): its key path (`vision_config`), prefixed to the
    /// field names in messages.
    scope: Option<String>,
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
    Ok(HfConfig { path: path.into(), json, scope: None })
}

impl HfConfig {
    /// Wraps an in-memory JSON value (`path` is used only in messages).
    pub fn from_value(path: impl Into<PathBuf>, json: Value) -> Self {
        Self { path: path.into(), json, scope: None }
    }

    /// The object under `key` (e.g. `vision_config`), an empty object when absent or null (every
    /// field then takes its default); messages name its fields `key.field`. Another JSON type there
    /// is an error.
    pub fn nested(&self, key: &str) -> Result<HfConfig, ModelError> {
        let json = match self.json.get(key) {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(v) => {
                return Err(self.err(format!("field '{}' must be an object, found {v}", self.name(key))));
            }
        };
        Ok(HfConfig { path: self.path.clone(), json, scope: Some(self.name(key)) })
    }

    /// `key` as messages name it (with the nesting scope).
    fn name(&self, key: &str) -> String {
        match &self.scope {
            Some(scope) => format!("{scope}.{key}"),
            None => key.to_string(),
        }
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
            Some(v) => Err(self.err(format!("field '{}' must be a string, found {v}", self.name(key)))),
            None => Err(self.err(format!("missing field '{}'", self.name(key)))),
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
            Some(v) => v.as_u64().map(|x| x as usize).ok_or_else(|| {
                self.err(format!("field '{}' must be a non-negative integer, found {v}", self.name(key)))
            }),
            None => Err(self.err(format!("missing field '{}'", self.name(key)))),
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
            Some(v) => v
                .as_f64()
                .ok_or_else(|| self.err(format!("field '{}' must be a number, found {v}", self.name(key)))),
        }
    }

    /// A boolean field with a default when absent or null.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| self.err(format!("field '{}' must be a boolean, found {v}", self.name(key)))),
        }
    }

    /// An image/patch size that HF allows as an int or a `[h, w]` pair; only square sizes are
    /// supported here.
    pub fn square_size(&self, key: &str) -> Result<usize, ModelError> {
        match self.json.get(key) {
            Some(Value::Array(a)) if a.len() == 2 && a[0] == a[1] => self.req_usize_value(key, &a[0]),
            Some(Value::Array(_)) => {
                Err(self.err(format!("field '{}': only square sizes are supported", self.name(key))))
            }
            Some(_) => self.req_usize(key),
            None => Err(self.err(format!("missing field '{}'", self.name(key)))),
        }
    }

    fn req_usize_value(&self, key: &str, v: &Value) -> Result<usize, ModelError> {
        v.as_u64()
            .map(|x| x as usize)
            .ok_or_else(|| self.err(format!("field '{}' must hold integers", self.name(key))))
    }

    /// A required size field: an integer in `1..=MAX_SIZE`.
    pub fn req_size(&self, key: &str) -> Result<usize, ModelError> {
        let v = self.req_usize(key)?;
        self.check_size(key, v)
    }

    /// A size field (`1..=MAX_SIZE`) with a default when absent or null.
    pub fn size_or(&self, key: &str, default: usize) -> Result<usize, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(_) => self.req_size(key),
        }
    }

    /// A required square size ([`Self::square_size`]) in `1..=MAX_SIZE`.
    pub fn req_square_size(&self, key: &str) -> Result<usize, ModelError> {
        let v = self.square_size(key)?;
        self.check_size(key, v)
    }

    /// A square size ([`Self::square_size`]) in `1..=MAX_SIZE`, with a default when absent.
    pub fn square_size_or(&self, key: &str, default: usize) -> Result<usize, ModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(_) => {
                let v = self.square_size(key)?;
                self.check_size(key, v)
            }
        }
    }

    fn check_size(&self, key: &str, v: usize) -> Result<usize, ModelError> {
        if !(1..=MAX_SIZE).contains(&v) {
            return Err(self.err(format!(
                "field '{}' must be an integer from 1 to {MAX_SIZE}, found {v}",
                self.name(key)
            )));
        }
        Ok(v)
    }

    /// A number that must be finite and > 0 (a LayerNorm epsilon, an MLP ratio), with a default.
    pub fn positive_f64_or(&self, key: &str, default: f64) -> Result<f64, ModelError> {
        let v = self.f64_or(key, default)?;
        if !(v.is_finite() && v > 0.0) {
            return Err(
                self.err(format!("field '{}' must be a finite number > 0, found {v}", self.name(key)))
            );
        }
        Ok(v)
    }

    /// A number that must be finite, with a default.
    pub fn finite_f64_or(&self, key: &str, default: f64) -> Result<f64, ModelError> {
        let v = self.f64_or(key, default)?;
        if !v.is_finite() {
            return Err(self.err(format!("field '{}' must be a finite number, found {v}", self.name(key))));
        }
        Ok(v)
    }

    /// Attention needs `hidden_size` (read from `hidden_key`) to be a multiple of the head count
    /// (`heads_key`): the head width is their quotient.
    pub fn check_heads(
        &self,
        hidden_key: &str,
        hidden: usize,
        heads_key: &str,
        heads: usize,
    ) -> Result<(), ModelError> {
        if heads == 0 || !hidden.is_multiple_of(heads) {
            return Err(self.err(format!(
                "field '{}' = {hidden} is not a multiple of field '{}' = {heads}",
                self.name(hidden_key),
                self.name(heads_key)
            )));
        }
        Ok(())
    }

    /// The position embeddings cover an `image_size / patch_size` grid: the image must hold at least
    /// one patch.
    pub fn check_patch_grid(&self, image_size: usize, patch_size: usize) -> Result<(), ModelError> {
        if patch_size == 0 || image_size < patch_size {
            return Err(self.err(format!(
                "field '{}' = {image_size} is smaller than field '{}' = {patch_size}: the image must hold at \
                 least one patch",
                self.name("image_size"),
                self.name("patch_size")
            )));
        }
        Ok(())
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
