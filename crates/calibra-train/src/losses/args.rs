//! `key=value` arguments of one loss term, with typed, range-checked accessors.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::error::TrainError;

/// The arguments given to one loss of a spec (keys already checked against the loss's
/// [`ParamInfo`](super::ParamInfo) list by the registry).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LossArgs {
    loss: String,
    values: BTreeMap<String, String>,
}

impl LossArgs {
    /// Arguments `values` for the loss named `loss`.
    pub fn new(loss: impl Into<String>, values: BTreeMap<String, String>) -> Self {
        Self { loss: loss.into(), values }
    }

    /// The loss name.
    pub fn loss(&self) -> &str {
        &self.loss
    }

    /// The raw values.
    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// A finite f64 argument, or `default` when absent.
    pub fn f64(&self, key: &str, default: f64) -> Result<f64, TrainError> {
        match self.values.get(key) {
            None => Ok(default),
            Some(raw) => match raw.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(self.bad(key, raw, "a finite number")),
            },
        }
    }

    /// A value parsed with `FromStr` (its error text says what was expected), or `default`.
    pub fn parsed<T: FromStr<Err = String>>(&self, key: &str, default: T) -> Result<T, TrainError> {
        match self.values.get(key) {
            None => Ok(default),
            Some(raw) => raw.trim().parse::<T>().map_err(|expected| self.bad(key, raw, &expected)),
        }
    }

    fn bad(&self, key: &str, raw: &str, expected: &str) -> TrainError {
        TrainError::BadValue {
            loss: self.loss.clone(),
            key: key.into(),
            value: raw.into(),
            expected: expected.into(),
        }
    }
}
