//! HiCroPL's teacher descriptions (`[regimes.coop] hicropl_descriptions`, `calibra train
//! --hicropl-descriptions`): a JSON file in the format of the reference's
//! `gpt_file/<dataset>_prompt.json` (zzeoZheng/HiCroPL, read by its `gpt_clip_classifier`), an
//! object from class name to a non-empty list of non-empty sentences:
//!
//! ```json
//! { "melanoma": ["A dark, irregular skin lesion.", "..."], "nevus": ["..."] }
//! ```
//!
//! Without it HiCroPL's teacher is the frozen model's features of 60 templates.
//!
//! # One file, or one per dataset
//!
//! The recipe key is either one file for every dataset of the recipe (`hicropl_descriptions =
//! "gpt/derm.json"`) or, as the reference keeps one file per dataset, a table from dataset name to
//! file (`hicropl_descriptions = { isic2019 = "gpt/isic.json", aptos2019 = "gpt/aptos.json" }`): see
//! [`DescriptionsSetting`]. With the table, a HiCroPL fit of dataset D holds D's file only, so
//! adding or changing another dataset's file leaves D's fit keys as they were; validation refuses a
//! HiCroPL dataset the table does not name, and an entry for a dataset HiCroPL does not train on.
//!
//! # In the fit key
//!
//! A fit holds the file as a [`DescriptionsFile`]: its path (where the executor reads it; not in the
//! key, so two copies of a file give one key) and the SHA-256 of the descriptions' canonical JSON
//! when the recipe was loaded ([`descriptions_sha256`]; in the key, so changing a sentence or a class
//! re-keys the fit, while re-indenting the file or reordering its classes does not). The executor
//! reads the file again and refuses it when its digest is no longer the key's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run_key::{canonical_json, sha256_hex};

/// Class name → sentences.
pub type ClassDescriptions = BTreeMap<String, Vec<String>>;

/// HiCroPL's descriptions as a fit carries them (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DescriptionsFile {
    /// The path as the recipe (or `--hicropl-descriptions`) gives it; a relative path is resolved
    /// against the working directory. Not in the fit key.
    #[serde(skip)]
    pub path: String,
    /// [`descriptions_sha256`] of the file when the recipe was loaded; `None` when it could not be
    /// read then (`--no-check-paths`), and the executor refuses the fit.
    pub sha256: Option<String>,
}

/// The recipe's `hicropl_descriptions`: one file for every dataset, or a file per dataset name. In
/// TOML a string or a table; written back the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DescriptionsSetting {
    /// `hicropl_descriptions = "FILE"`: one file for every dataset of the recipe.
    OneFile(String),
    /// `hicropl_descriptions = { dataset = "FILE", … }`: each dataset's own file, by dataset name
    /// (the `[[datasets]]` entry's name).
    PerDataset(BTreeMap<String, String>),
}

impl DescriptionsSetting {
    /// The file of `dataset`'s HiCroPL fits: the one file, or the table's entry (`None` when the
    /// table does not name the dataset, which validation refuses for a dataset HiCroPL trains on).
    pub fn path_for(&self, dataset: &str) -> Option<&str> {
        match self {
            DescriptionsSetting::OneFile(path) => Some(path),
            DescriptionsSetting::PerDataset(table) => table.get(dataset).map(String::as_str),
        }
    }

    /// Every file the setting names (a file named for two datasets: once).
    pub fn paths(&self) -> Vec<&str> {
        match self {
            DescriptionsSetting::OneFile(path) => vec![path.as_str()],
            DescriptionsSetting::PerDataset(table) => {
                let mut paths: Vec<&str> = table.values().map(String::as_str).collect();
                paths.sort_unstable();
                paths.dedup();
                paths
            }
        }
    }
}

impl<'de> Deserialize<'de> for DescriptionsSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = DescriptionsSetting;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a descriptions file (\"FILE\") or a table from dataset name to descriptions file \
                     ({ dataset = \"FILE\", … })",
                )
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(DescriptionsSetting::OneFile(v.to_string()))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut table = BTreeMap::new();
                while let Some((dataset, path)) = map.next_entry::<String, String>()? {
                    table.insert(dataset, path);
                }
                Ok(DescriptionsSetting::PerDataset(table))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// What a JSON value is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Parses descriptions text (see the module docs); the message says what is wrong, without the file.
pub fn parse_descriptions(text: &str) -> Result<ClassDescriptions, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err(format!(
            "expected a JSON object from class name to a list of sentences (the format of HiCroPL's \
             gpt_file/<dataset>_prompt.json), got {}",
            kind(&value)
        ));
    };
    if map.is_empty() {
        return Err("the object names no class".into());
    }
    let mut out = ClassDescriptions::new();
    for (class, v) in map {
        if class.trim().is_empty() {
            return Err("a class name is empty".into());
        }
        let Value::Array(items) = v else {
            return Err(format!("class {class:?}: expected a list of sentences, got {}", kind(&v)));
        };
        if items.is_empty() {
            return Err(format!("class {class:?} has no sentences"));
        }
        let mut sentences = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            match item {
                Value::String(s) if !s.trim().is_empty() => sentences.push(s),
                Value::String(_) => return Err(format!("class {class:?}: sentence {} is empty", i + 1)),
                other => {
                    return Err(format!(
                        "class {class:?}: sentence {} is {}, not a string",
                        i + 1,
                        kind(&other)
                    ));
                }
            }
        }
        out.insert(class, sentences);
    }
    Ok(out)
}

/// Reads and parses the descriptions file at `path`; the message names the file.
pub fn read_descriptions(path: &Path) -> Result<ClassDescriptions, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "HiCroPL descriptions file `{shown}` does not exist (relative paths are resolved against the \
             working directory)"
        ),
        _ => format!("HiCroPL descriptions file `{shown}` cannot be read: {e}"),
    })?;
    parse_descriptions(&text).map_err(|why| format!("HiCroPL descriptions file `{shown}`: {why}"))
}

/// SHA-256 (lowercase hex) of the descriptions' canonical JSON ([`crate::run_key::canonical_json`]):
/// the same for any file with these classes and sentences, wherever it lives and however it is
/// laid out.
pub fn descriptions_sha256(descriptions: &ClassDescriptions) -> String {
    let value = serde_json::to_value(descriptions).expect("a map of strings serialises to JSON");
    sha256_hex(canonical_json(&value).as_bytes())
}

/// The descriptions at `file.path`, checked against the digest the fit key holds (the file may have
/// changed since the recipe was loaded); errors name the file.
pub fn load_checked(file: &DescriptionsFile) -> Result<ClassDescriptions, String> {
    let descriptions = read_descriptions(Path::new(&file.path))?;
    match &file.sha256 {
        Some(planned) if *planned == descriptions_sha256(&descriptions) => Ok(descriptions),
        Some(_) => Err(format!(
            "HiCroPL descriptions file `{}` changed after the recipe was loaded (the fit key holds the \
             descriptions it had then); run again to plan the fit with its new content",
            file.path
        )),
        None => Err(format!(
            "HiCroPL descriptions file `{}` could not be read when the recipe was loaded, so the fit key \
             does not hold its content; run again with the file in place",
            file.path
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_of_the_content_not_the_layout() {
        let a = parse_descriptions(r#"{"b": ["x"], "a": ["y", "z"]}"#).unwrap();
        let b = parse_descriptions("{\n  \"a\": [\"y\", \"z\"],\n  \"b\": [\"x\"]\n}\n").unwrap();
        assert_eq!(descriptions_sha256(&a), descriptions_sha256(&b));
        let c = parse_descriptions(r#"{"a": ["y", "z."], "b": ["x"]}"#).unwrap();
        assert_ne!(descriptions_sha256(&a), descriptions_sha256(&c));
        let d = parse_descriptions(r#"{"a": ["z", "y"], "b": ["x"]}"#).unwrap();
        assert_ne!(descriptions_sha256(&a), descriptions_sha256(&d), "sentence order is content");
    }

    #[test]
    fn malformed_descriptions_are_named() {
        for (text, expected) in [
            ("[1]", "expected a JSON object from class name to a list of sentences"),
            ("{", "not valid JSON"),
            ("{}", "names no class"),
            (r#"{"a": "x"}"#, r#"class "a": expected a list of sentences, got a string"#),
            (r#"{"a": []}"#, r#"class "a" has no sentences"#),
            (r#"{"a": ["x", " "]}"#, r#"class "a": sentence 2 is empty"#),
            (r#"{"a": ["x", 3]}"#, r#"class "a": sentence 2 is a number, not a string"#),
            (r#"{"": ["x"]}"#, "a class name is empty"),
        ] {
            let e = parse_descriptions(text).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }

    #[test]
    fn a_changed_or_missing_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.json");
        std::fs::write(&path, r#"{"a": ["x"]}"#).unwrap();
        let sha256 = Some(descriptions_sha256(&read_descriptions(&path).unwrap()));
        let file = DescriptionsFile { path: path.display().to_string(), sha256 };
        assert_eq!(load_checked(&file).unwrap()["a"], vec!["x".to_string()]);
        std::fs::write(&path, r#"{"a": ["y"]}"#).unwrap();
        let e = load_checked(&file).unwrap_err();
        assert!(e.contains(&file.path) && e.contains("changed after the recipe was loaded"), "{e}");
        std::fs::remove_file(&path).unwrap();
        let e = load_checked(&file).unwrap_err();
        assert!(e.contains(&file.path) && e.contains("does not exist"), "{e}");
    }
}
