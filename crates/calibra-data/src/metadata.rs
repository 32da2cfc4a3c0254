//! Per-sample metadata ([`Metadata`], [`Sex`]) for subgroup and quality-stratum analyses.

use serde::Serialize;
use std::collections::BTreeMap;

/// Patient sex as recorded by the source (anything else is left in [`Metadata::extra`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sex {
    Female,
    Male,
}

impl Sex {
    /// Parses `female`, `f`, `male`, `m` (case-insensitive); anything else (blank, `Unknown`) is `None`.
    pub fn parse(value: &str) -> Option<Sex> {
        match value.trim().to_ascii_lowercase().as_str() {
            "female" | "f" => Some(Sex::Female),
            "male" | "m" => Some(Sex::Male),
            _ => None,
        }
    }
}

/// Optional per-sample metadata used by subgroup and quality-stratum analyses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metadata {
    /// Age in years.
    pub age: Option<f64>,
    pub sex: Option<Sex>,
    /// Image quality score (higher is better), when the source has one.
    pub quality: Option<f64>,
    /// Acquisition site / institution.
    pub site: Option<String>,
    /// Any other column of the manifest, by name.
    pub extra: BTreeMap<String, String>,
}
