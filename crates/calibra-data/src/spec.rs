//! Dataset SPEC strings: `FORMAT:LOCATION[?key=value&key=value...]` (see the crate docs for the table).

use crate::dataset::TaskKind;
use crate::error::DataError;
use crate::synth::SynthSuite;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The dataset formats calibra reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DatasetFormat {
    Csv,
    ImageFolder,
    Isic2019,
    Aptos2019,
    CheXpert,
    MimicCxr,
    MedMnist,
    Synth,
}

impl DatasetFormat {
    /// All formats, in documentation order.
    pub const ALL: [DatasetFormat; 8] = [
        DatasetFormat::Csv,
        DatasetFormat::ImageFolder,
        DatasetFormat::Isic2019,
        DatasetFormat::Aptos2019,
        DatasetFormat::CheXpert,
        DatasetFormat::MimicCxr,
        DatasetFormat::MedMnist,
        DatasetFormat::Synth,
    ];

    /// The spec prefix.
    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::Csv => "csv",
            DatasetFormat::ImageFolder => "imagefolder",
            DatasetFormat::Isic2019 => "isic2019",
            DatasetFormat::Aptos2019 => "aptos2019",
            DatasetFormat::CheXpert => "chexpert",
            DatasetFormat::MimicCxr => "mimic-cxr",
            DatasetFormat::MedMnist => "medmnist",
            DatasetFormat::Synth => "synth",
        }
    }

    /// The option keys the format understands (anything else is an error, so typos are caught).
    pub fn allowed_options(self) -> &'static [&'static str] {
        match self {
            DatasetFormat::Csv => &["task", "classes", "images", "policy", "blank", "on_bad_image"],
            DatasetFormat::ImageFolder => &["on_bad_image"],
            DatasetFormat::Isic2019 => &["images", "on_bad_image"],
            DatasetFormat::Aptos2019 => &["images", "on_bad_image"],
            DatasetFormat::CheXpert => &["policy", "blank", "root", "on_bad_image"],
            DatasetFormat::MimicCxr => {
                &["policy", "blank", "images", "labels", "split", "patients", "on_bad_image"]
            }
            DatasetFormat::MedMnist => &["task"],
            DatasetFormat::Synth => &["n", "seed", "size"],
        }
    }
}

/// A parsed dataset spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSpec {
    /// The original string, for messages and dataset names.
    pub raw: String,
    pub format: DatasetFormat,
    /// The path (or, for `synth:`, the suite name).
    pub location: String,
    pub options: BTreeMap<String, String>,
}

impl DatasetSpec {
    /// Parses `FORMAT:LOCATION[?k=v&k=v]`. Errors name the spec and what was expected: an unknown
    /// format, an empty location, a malformed or unknown option, a repeated key.
    pub fn parse(raw: &str) -> Result<DatasetSpec, DataError> {
        let err = |message: String| DataError::Spec { spec: raw.to_string(), message };
        let known = |name: &str| {
            DatasetFormat::ALL.into_iter().find(|f| f.name() == name.trim().to_ascii_lowercase())
        };
        let explicit = raw.split_once(':').and_then(|(name, rest)| Some((known(name)?, rest)));
        let (format, rest) = match explicit {
            Some(found) => found,
            None => {
                // A bare path (no known FORMAT: prefix): detect its format from what is on disk.
                let (path, query) = match raw.split_once('?') {
                    Some((p, q)) => (p, Some(q)),
                    None => (raw, None),
                };
                let prefix = raw.split_once(':').map(|(name, _)| name);
                if let Some(name) = prefix.filter(|_| !std::path::Path::new(path).exists()) {
                    return Err(err(format!(
                        "unknown format `{name}`; expected one of {}, or an existing path whose format is detected",
                        DatasetFormat::ALL.map(|f| f.name()).join(", ")
                    )));
                }
                let found = crate::detect::detect(path)?;
                eprintln!(
                    "calibra: dataset `{path}`: detected {} ({}); write `{}:{}` to choose a format explicitly",
                    found.format.name(),
                    found.reason,
                    found.format.name(),
                    found.location.display()
                );
                let location = found.location.display().to_string();
                let spec = match query {
                    Some(q) => format!("{}:{location}?{q}", found.format.name()),
                    None => format!("{}:{location}", found.format.name()),
                };
                let mut parsed = DatasetSpec::parse(&spec)?;
                parsed.raw = raw.to_string();
                return Ok(parsed);
            }
        };
        let (location, query) = match rest.split_once('?') {
            Some((l, q)) => (l, Some(q)),
            None => (rest, None),
        };
        if location.trim().is_empty() {
            return Err(err("the location (path or suite name) is empty".into()));
        }
        let mut options = BTreeMap::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) =
                pair.split_once('=').ok_or_else(|| err(format!("option `{pair}` is not key=value")))?;
            if !format.allowed_options().contains(&k) {
                return Err(err(format!(
                    "unknown option `{k}` for {}; allowed: {}",
                    format.name(),
                    if format.allowed_options().is_empty() {
                        "none".into()
                    } else {
                        format.allowed_options().join(", ")
                    }
                )));
            }
            if options.insert(k.to_string(), v.to_string()).is_some() {
                return Err(err(format!("option `{k}` is given twice")));
            }
        }
        Ok(DatasetSpec { raw: raw.to_string(), format, location: location.to_string(), options })
    }

    /// The task kind when the spec alone fixes it, without reading any file: the synthetic suites,
    /// ISIC 2019 (multiclass), APTOS 2019 (ordinal), CheXpert and MIMIC-CXR (multilabel). `None` for
    /// formats whose kind depends on the data (CSV, ImageFolder, MedMNIST) and for unknown suites.
    pub fn known_task_kind(&self) -> Option<TaskKind> {
        match self.format {
            DatasetFormat::Synth => SynthSuite::parse(&self.location).map(|s| s.label_space().kind),
            DatasetFormat::Isic2019 => Some(TaskKind::Multiclass),
            DatasetFormat::Aptos2019 => Some(TaskKind::Ordinal),
            DatasetFormat::CheXpert | DatasetFormat::MimicCxr => Some(TaskKind::Multilabel),
            DatasetFormat::Csv | DatasetFormat::ImageFolder | DatasetFormat::MedMnist => None,
        }
    }

    /// The location as a path.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(&self.location)
    }

    /// An option's value, if given.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// An option parsed as `T`, or `default`; a value that does not parse is an error naming the key.
    pub fn parsed_option<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, DataError> {
        match self.option(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| DataError::Spec {
                spec: self.raw.clone(),
                message: format!("option `{key}={v}` is not a valid {}", std::any::type_name::<T>()),
            }),
        }
    }

    /// An error about this spec.
    pub fn error(&self, message: impl Into<String>) -> DataError {
        DataError::Spec { spec: self.raw.clone(), message: message.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_task_kind_from_the_spec_alone() {
        let kind = |s: &str| DatasetSpec::parse(s).unwrap().known_task_kind();
        assert_eq!(kind("synth:derm?n=50"), Some(TaskKind::Multiclass));
        assert_eq!(kind("synth:fundus"), Some(TaskKind::Ordinal));
        assert_eq!(kind("synth:chest-site-b"), Some(TaskKind::Multilabel));
        assert_eq!(kind("chexpert:/data/CheXpert-v1.0-small/train.csv"), Some(TaskKind::Multilabel));
        assert_eq!(kind("aptos2019:/data/aptos/train.csv"), Some(TaskKind::Ordinal));
        assert_eq!(kind("csv:/data/labels.csv"), None);
        assert_eq!(kind("synth:nope"), None);
    }

    #[test]
    fn parses_format_location_and_options() {
        let s = DatasetSpec::parse("chexpert:/data/CheXpert-v1.0-small/train.csv?policy=ones&blank=ignore")
            .unwrap();
        assert_eq!(s.format, DatasetFormat::CheXpert);
        assert_eq!(s.location, "/data/CheXpert-v1.0-small/train.csv");
        assert_eq!(s.option("policy"), Some("ones"));
        assert_eq!(s.option("blank"), Some("ignore"));
        let s = DatasetSpec::parse("synth:chest-site-b?n=50&size=32").unwrap();
        assert_eq!(s.parsed_option("n", 0usize).unwrap(), 50);
        assert_eq!(s.parsed_option("seed", 7u64).unwrap(), 7);
    }

    #[test]
    fn rejects_bad_specs_with_a_reason() {
        for (raw, needle) in [
            ("nocolon", "FORMAT:LOCATION"),
            ("tiff:/x", "unknown format `tiff`"),
            ("csv:", "empty"),
            ("csv:/x?task", "not key=value"),
            ("csv:/x?polcy=ones", "unknown option `polcy`"),
            ("synth:derm?n=1&n=2", "twice"),
        ] {
            let e = DatasetSpec::parse(raw).unwrap_err().to_string();
            assert!(e.contains(needle), "{raw}: {e}");
        }
        let s = DatasetSpec::parse("synth:derm?n=abc").unwrap();
        assert!(s.parsed_option("n", 1usize).unwrap_err().to_string().contains("n=abc"));
    }
}
