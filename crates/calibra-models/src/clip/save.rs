//! Writing a [`ClipModel`] as a Hugging Face `CLIPModel` checkpoint: `model.safetensors` under the
//! names transformers writes (the inverse of [`clip_model_keymap`], PyTorch tensor layout) plus the
//! 0-d `logit_scale` tensor, and the `config.json` it was built from.

use std::collections::HashMap;
use std::path::Path;

use super::keys::clip_model_keymap;
use super::model::ClipModel;
use crate::error::ModelError;
use crate::hf::floats::{F32View, decode_f32};
use crate::hf::load::save_safetensors;

fn store_err(path: &Path, message: impl std::fmt::Display) -> ModelError {
    ModelError::Store { path: path.into(), message: message.to_string() }
}

impl ClipModel {
    /// Writes `path` (a `model.safetensors`): every module tensor under its HF name, and
    /// `logit_scale` as a 0-d F32 tensor; metadata `format = "pt"`. Deterministic bytes.
    pub fn save_safetensors(&self, path: &Path) -> Result<(), ModelError> {
        save_safetensors(self, path, &clip_model_keymap()?)?;
        // burn's store cannot hold the 0-d scalar (it is not a module parameter): rewrite the file
        // with it added.
        let bytes = std::fs::read(path).map_err(|source| ModelError::Io { path: path.into(), source })?;
        let parsed = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| store_err(path, e))?;
        let mut views: Vec<(String, F32View)> = Vec::new();
        for (name, view) in parsed.tensors() {
            let values = decode_f32(view.dtype(), view.data())
                .map_err(|why| store_err(path, format!("tensor '{name}': {why}")))?;
            views.push((name, F32View::new(view.shape().to_vec(), &values)));
        }
        views.push(("logit_scale".to_string(), F32View::new(Vec::new(), &[self.logit_scale])));
        views.sort_by(|a, b| a.0.cmp(&b.0));
        let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
        let out = safetensors::serialize(views, Some(metadata)).map_err(|e| store_err(path, e))?;
        std::fs::write(path, out).map_err(|source| ModelError::Io { path: path.into(), source })
    }

    /// Writes `dir/config.json` (`config`, a `CLIPConfig` JSON object with `model_type` `clip`) and
    /// `dir/model.safetensors` ([`Self::save_safetensors`]). Creates `dir`. The config must describe
    /// this model: it is what [`ClipModel::load`] rebuilds the modules from.
    pub fn save_pretrained(&self, dir: &Path, config: &serde_json::Value) -> Result<(), ModelError> {
        std::fs::create_dir_all(dir).map_err(|source| ModelError::Io { path: dir.into(), source })?;
        let cfg_path = dir.join("config.json");
        if config.get("model_type").and_then(|v| v.as_str()) != Some("clip") {
            return Err(ModelError::UnsupportedModelType {
                path: cfg_path,
                model_type: config.get("model_type").map_or("(none)".into(), |v| v.to_string()),
                supported: "clip".into(),
            });
        }
        let text = serde_json::to_string_pretty(config).expect("a JSON value serialises") + "\n";
        std::fs::write(&cfg_path, text).map_err(|source| ModelError::Io { path: cfg_path, source })?;
        self.save_safetensors(&dir.join("model.safetensors"))
    }
}

#[cfg(test)]
mod tests {
    use burn::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::clip::ClipConfig;
    use crate::hf::read_config;

    fn max_abs_diff(a: Tensor<2>, b: Tensor<2>) -> f32 {
        (a - b).abs().max().into_data().as_slice::<f32>().unwrap()[0]
    }

    /// The committed transformers fixture survives load → save → load bit for bit: same tensor
    /// names, shapes and values (so the saver inverts the key map), same logit scale, same outputs.
    #[test]
    fn transformers_fixture_round_trips() {
        let device = Device::flex();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clip");
        let (model, _) = ClipModel::load(fixture.to_str().unwrap(), &device).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = read_config(&fixture.join("config.json")).unwrap().json;
        model.save_pretrained(dir.path(), &config).unwrap();

        let original = std::fs::read(fixture.join("model.safetensors")).unwrap();
        let saved = std::fs::read(dir.path().join("model.safetensors")).unwrap();
        let original = safetensors::SafeTensors::deserialize(&original).unwrap();
        let saved = safetensors::SafeTensors::deserialize(&saved).unwrap();
        let mut names: Vec<String> = original.names().into_iter().map(str::to_string).collect();
        names.retain(|n| !n.ends_with("position_ids"));
        names.sort();
        let mut saved_names: Vec<String> = saved.names().into_iter().map(str::to_string).collect();
        saved_names.sort();
        assert_eq!(names, saved_names);
        for name in &names {
            let (a, b) = (original.tensor(name).unwrap(), saved.tensor(name).unwrap());
            assert_eq!(a.shape(), b.shape(), "{name}");
            assert_eq!(
                decode_f32(a.dtype(), a.data()).unwrap(),
                decode_f32(b.dtype(), b.data()).unwrap(),
                "{name}"
            );
        }

        let (back, _) = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap();
        assert_eq!(back.logit_scale, model.logit_scale);
        let images = Tensor::<4>::random([2, 3, 30, 30], burn::tensor::Distribution::Default, &device);
        let ids = vec![vec![739, 5, 6, 7, 740], vec![739, 9, 740, 740, 740]];
        let a = model.forward(images.clone(), &ids, false).unwrap();
        let b = back.forward(images, &ids, false).unwrap();
        assert_eq!(max_abs_diff(a.logits_per_image, b.logits_per_image), 0.0);
    }

    #[test]
    fn a_config_of_another_family_is_refused() {
        let device = Device::flex();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clip");
        let config = ClipConfig::from_hf(&read_config(&fixture.join("config.json")).unwrap()).unwrap();
        let model = config.init(&device);
        let dir = tempfile::tempdir().unwrap();
        let err = model.save_pretrained(dir.path(), &json!({"model_type": "vit"})).unwrap_err().to_string();
        assert!(err.contains("vit") && err.contains("clip"), "{err}");
    }
}
