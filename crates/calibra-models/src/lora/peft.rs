//! PEFT adapter directories: `adapter_config.json` + `adapter_model.safetensors`.
//!
//! Key names are PEFT's on-disk names (the adapter name `default` stripped):
//!
//! ```text
//! base_model.model.<module>.lora_A.weight   [r, in]
//! base_model.model.<module>.lora_B.weight   [out, r]
//! base_model.model.<module_to_save>.<param> (full tensors, e.g. classifier.weight)
//! ```
//!
//! `<module>` is the Hugging Face module name of the wrapped `Linear` in the transformers version the
//! adapter was made with (5.x `vit.layers.0.attention.q_proj`, 4.x
//! `vit.encoder.layer.0.attention.attention.query`). Mapping those names onto a burn model is the
//! encoder family's job; this file only reads and writes the directory, checking that every LoRA
//! module has both factors with consistent shapes. The in-memory form (`lora_A.default.weight`,
//! `modules_to_save.default.`) is accepted on read.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use safetensors::SafeTensors;

use crate::hf::floats::{F32View, decode_f32};

use super::{LoraConfig, LoraError};

/// The adapter configuration file name.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";
/// The adapter weights file name.
pub const ADAPTER_WEIGHTS: &str = "adapter_model.safetensors";
/// The prefix PEFT puts on every key.
pub const KEY_PREFIX: &str = "base_model.model.";

/// One float tensor, row-major, as f32.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// The factors of one wrapped module.
#[derive(Debug, Clone, PartialEq)]
pub struct LoraFactors {
    /// A: `[r, in]`.
    pub a: AdapterTensor,
    /// B: `[out, r]`.
    pub b: AdapterTensor,
}

impl LoraFactors {
    /// The rank r.
    pub fn rank(&self) -> usize {
        self.a.shape[0]
    }
}

/// A whole adapter: its config, the factors per wrapped module, and the fully saved tensors of
/// `modules_to_save` (keyed by parameter name, e.g. `classifier.weight`, PyTorch layout).
#[derive(Debug, Clone, PartialEq)]
pub struct PeftAdapter {
    pub config: LoraConfig,
    pub factors: BTreeMap<String, LoraFactors>,
    pub saved: BTreeMap<String, AdapterTensor>,
}

impl PeftAdapter {
    /// Read an adapter directory, checking it: every module has A and B, A is `[r, in]`, B is
    /// `[out, r]`, r agrees with the config (`r` or its `rank_pattern`), and every value is finite.
    /// All problems are listed.
    pub fn read(dir: &Path) -> Result<Self, LoraError> {
        let config_path = dir.join(ADAPTER_CONFIG);
        let text = fs::read_to_string(&config_path)
            .map_err(|source| LoraError::Io { path: config_path.clone(), source })?;
        let mut config: LoraConfig = serde_json::from_str(&text)
            .map_err(|e| LoraError::Format { path: config_path.clone(), why: e.to_string() })?;
        // Which PEFT wrote the file describes the file, not the adapter; `write` puts its own.
        config.other_options.remove("peft_version");
        config.validate().map_err(|e| LoraError::Format { path: config_path.clone(), why: e.to_string() })?;

        let weights_path = dir.join(ADAPTER_WEIGHTS);
        let bytes =
            fs::read(&weights_path).map_err(|source| LoraError::Io { path: weights_path.clone(), source })?;
        let file = SafeTensors::deserialize(&bytes)
            .map_err(|e| LoraError::Format { path: weights_path.clone(), why: e.to_string() })?;

        let mut a_parts: BTreeMap<String, AdapterTensor> = BTreeMap::new();
        let mut b_parts: BTreeMap<String, AdapterTensor> = BTreeMap::new();
        let mut saved = BTreeMap::new();
        let mut problems = Vec::new();
        let mut names: Vec<&str> = file.names().into_iter().collect();
        names.sort_unstable();
        for name in names {
            let view = file.tensor(name).expect("name listed by the file");
            let tensor = match decode_f32(view.dtype(), view.data()) {
                Ok(data) if data.iter().any(|v| !v.is_finite()) => {
                    let bad = data.iter().filter(|v| !v.is_finite()).count();
                    problems.push(format!("`{name}`: {bad} of {} values are not finite", data.len()));
                    continue;
                }
                Ok(data) => AdapterTensor { shape: view.shape().to_vec(), data },
                Err(why) => {
                    problems.push(format!("`{name}`: {why}"));
                    continue;
                }
            };
            let Some(key) = name.strip_prefix(KEY_PREFIX) else {
                problems.push(format!("`{name}`: expected a key starting with `{KEY_PREFIX}`"));
                continue;
            };
            let key = key.replace(".lora_A.default.", ".lora_A.").replace(".lora_B.default.", ".lora_B.");
            let key = key.replace(".modules_to_save.default.", ".");
            if let Some(module) = key.strip_suffix(".lora_A.weight") {
                a_parts.insert(module.to_string(), tensor);
            } else if let Some(module) = key.strip_suffix(".lora_B.weight") {
                b_parts.insert(module.to_string(), tensor);
            } else if key.contains(".lora_") {
                problems.push(format!("`{name}`: unsupported LoRA tensor (only lora_A / lora_B weights)"));
            } else {
                saved.insert(key, tensor);
            }
        }

        let mut factors = BTreeMap::new();
        let modules: std::collections::BTreeSet<String> =
            a_parts.keys().chain(b_parts.keys()).cloned().collect();
        for module in modules {
            match (a_parts.remove(&module), b_parts.remove(&module)) {
                (Some(a), Some(b)) => {
                    let (want_r, _) = config.rank_and_alpha(&module);
                    if a.shape.len() != 2 || b.shape.len() != 2 {
                        problems.push(format!(
                            "`{module}`: lora_A {:?} / lora_B {:?} must be 2-D",
                            a.shape, b.shape
                        ));
                    } else if a.shape[0] != b.shape[1] {
                        problems.push(format!(
                            "`{module}`: lora_A is {:?} and lora_B is {:?}: expected [r, in] and [out, r]",
                            a.shape, b.shape
                        ));
                    } else if a.shape[0] != want_r {
                        problems.push(format!(
                            "`{module}`: rank {} in the weights but {want_r} in {ADAPTER_CONFIG}",
                            a.shape[0]
                        ));
                    } else {
                        factors.insert(module, LoraFactors { a, b });
                    }
                }
                (Some(_), None) => problems.push(format!("`{module}`: lora_A without lora_B")),
                (None, Some(_)) => problems.push(format!("`{module}`: lora_B without lora_A")),
                (None, None) => unreachable!("module came from one of the maps"),
            }
        }
        if factors.is_empty() && problems.is_empty() {
            problems.push("no lora_A / lora_B tensors".to_string());
        }
        if !problems.is_empty() {
            return Err(LoraError::Mismatch { path: weights_path, problems });
        }
        Ok(PeftAdapter { config, factors, saved })
    }

    /// Write the adapter directory (created if needed). Each file is written to a temporary name,
    /// synced, then renamed, so a crash never leaves a half-written file under the real name.
    pub fn write(&self, dir: &Path) -> Result<(), LoraError> {
        fs::create_dir_all(dir).map_err(|source| LoraError::Io { path: dir.to_path_buf(), source })?;
        let mut tensors: Vec<(String, F32View)> = Vec::new();
        for (module, f) in &self.factors {
            tensors.push((
                format!("{KEY_PREFIX}{module}.lora_A.weight"),
                F32View::new(f.a.shape.clone(), &f.a.data),
            ));
            tensors.push((
                format!("{KEY_PREFIX}{module}.lora_B.weight"),
                F32View::new(f.b.shape.clone(), &f.b.data),
            ));
        }
        for (name, t) in &self.saved {
            tensors.push((format!("{KEY_PREFIX}{name}"), F32View::new(t.shape.clone(), &t.data)));
        }
        let metadata = std::collections::HashMap::from([("format".to_string(), "pt".to_string())]);
        let weights_path = dir.join(ADAPTER_WEIGHTS);
        let bytes = safetensors::serialize(tensors, Some(metadata))
            .map_err(|e| LoraError::Format { path: weights_path.clone(), why: e.to_string() })?;
        write_atomically(&weights_path, &bytes)?;

        let mut json = serde_json::to_value(&self.config).expect("config serialises");
        // PEFT reads these; keep the file self-describing.
        json["peft_version"] = serde_json::Value::String("0.21.2".into());
        let text = serde_json::to_string_pretty(&json).expect("json serialises");
        write_atomically(&dir.join(ADAPTER_CONFIG), text.as_bytes())
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), LoraError> {
    calibra_core::write_bytes_atomically(path, bytes)
        .map_err(|source| LoraError::Io { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lora::TargetModules;
    use std::path::PathBuf;

    fn tensor(shape: &[usize], seed: f32) -> AdapterTensor {
        let n: usize = shape.iter().product();
        AdapterTensor { shape: shape.to_vec(), data: (0..n).map(|i| seed + i as f32 / 8.0).collect() }
    }

    fn adapter() -> PeftAdapter {
        let mut config = LoraConfig::vit_default();
        config.r = 2;
        config.target_modules = Some(TargetModules::Names(vec!["q_proj".into()]));
        config.modules_to_save = Some(vec!["classifier".into()]);
        let mut factors = BTreeMap::new();
        factors.insert(
            "vit.layers.0.attention.q_proj".to_string(),
            LoraFactors { a: tensor(&[2, 6], 0.5), b: tensor(&[6, 2], -1.0) },
        );
        let saved = BTreeMap::from([("classifier.weight".to_string(), tensor(&[3, 6], 2.0))]);
        PeftAdapter { config, factors, saved }
    }

    #[test]
    fn write_then_read_round_trips_with_peft_key_names() {
        let dir = tempfile::tempdir().unwrap();
        let a = adapter();
        a.write(dir.path()).unwrap();
        let bytes = fs::read(dir.path().join(ADAPTER_WEIGHTS)).unwrap();
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let mut names = file.names();
        names.sort_unstable();
        assert_eq!(
            names,
            vec![
                "base_model.model.classifier.weight",
                "base_model.model.vit.layers.0.attention.q_proj.lora_A.weight",
                "base_model.model.vit.layers.0.attention.q_proj.lora_B.weight",
            ]
        );
        assert_eq!(PeftAdapter::read(dir.path()).unwrap(), a);
    }

    #[test]
    fn inconsistent_factors_are_all_listed() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = adapter();
        a.factors.insert(
            "vit.layers.1.attention.q_proj".into(),
            LoraFactors { a: tensor(&[3, 6], 0.0), b: tensor(&[6, 3], 0.0) },
        );
        a.factors.insert(
            "vit.layers.2.attention.q_proj".into(),
            LoraFactors { a: tensor(&[2, 6], 0.0), b: tensor(&[6, 4], 0.0) },
        );
        a.write(dir.path()).unwrap();
        let err = PeftAdapter::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("layers.1.attention.q_proj`: rank 3 in the weights but 2"), "{err}");
        assert!(err.contains("layers.2.attention.q_proj`: lora_A is [2, 6] and lora_B is [6, 4]"), "{err}");
    }

    fn peft_fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lora/adapter")
    }

    #[test]
    fn reads_an_adapter_written_by_peft_and_writes_the_same_keys_back() {
        // Made by scripts/golden/lora_peft.py with peft 0.21.2 on transformers 5.24.0's ViT.
        let a = PeftAdapter::read(&peft_fixture()).unwrap();
        assert_eq!(a.config.r, 4);
        assert_eq!(a.config.lora_alpha, 8.0);
        assert_eq!(a.factors.len(), 6);
        let f = &a.factors["vit.layers.2.attention.v_proj"];
        assert_eq!((f.a.shape.as_slice(), f.b.shape.as_slice()), (&[4, 48][..], &[48, 4][..]));
        assert_eq!(a.saved.keys().collect::<Vec<_>>(), vec!["classifier.bias", "classifier.weight"]);

        let dir = tempfile::tempdir().unwrap();
        a.write(dir.path()).unwrap();
        let ours = fs::read(dir.path().join(ADAPTER_WEIGHTS)).unwrap();
        let theirs = fs::read(peft_fixture().join(ADAPTER_WEIGHTS)).unwrap();
        let (ours, theirs) =
            (SafeTensors::deserialize(&ours).unwrap(), SafeTensors::deserialize(&theirs).unwrap());
        let mut ours_names = ours.names();
        let mut theirs_names = theirs.names();
        ours_names.sort_unstable();
        theirs_names.sort_unstable();
        assert_eq!(ours_names, theirs_names);
        for name in theirs_names {
            let (o, t) = (ours.tensor(name).unwrap(), theirs.tensor(name).unwrap());
            assert_eq!((o.dtype(), o.shape(), o.data()), (t.dtype(), t.shape(), t.data()), "{name}");
        }
        assert_eq!(PeftAdapter::read(dir.path()).unwrap(), a);
    }
}
