//! The shape of the tiny CLIP, its Hugging Face `config.json` / `preprocessor_config.json`, and its
//! initial weights as transformers' `CLIPPreTrainedModel._init_weights` draws them.

use std::fs;
use std::path::Path;

use burn::tensor::Device;
use calibra_models::clip::ClipConfig;
use calibra_models::hf::floats::F32View;
use calibra_models::hf::{HfConfig, read_config};
use calibra_models::tokenizer_train::LearnedBpe;
use serde_json::{Value, json};

use crate::pretrain::{PretrainError, io, seeded_normal};

/// CLIP's `logit_scale_init_value` (ln(1/0.07)).
pub const LOGIT_SCALE_INIT: f64 = 2.6592;
/// `initializer_range` of both towers (the std of embeddings and the patch projection).
pub const CLIP_INITIALIZER_RANGE: f64 = 0.02;

/// The shape of a tiny `CLIPModel`. The default is the shipped `tiny-clip`: vision hidden 64, 4 layers,
/// 4 heads, MLP 128, patch 8 on 32×32 images; text hidden 64, 3 layers, 4 heads, MLP 128, 77
/// positions; joint projection 64. QuickGELU (CLIP's activation) in both towers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClipArchitecture {
    pub vision_hidden: usize,
    pub vision_layers: usize,
    pub vision_heads: usize,
    pub vision_mlp: usize,
    pub patch_size: usize,
    pub image_size: usize,
    pub text_hidden: usize,
    pub text_layers: usize,
    pub text_heads: usize,
    pub text_mlp: usize,
    /// Text context length (`max_position_embeddings`; also the tokenizer's `model_max_length`).
    pub max_positions: usize,
    pub projection_dim: usize,
}

impl Default for ClipArchitecture {
    fn default() -> Self {
        ClipArchitecture {
            vision_hidden: 64,
            vision_layers: 4,
            vision_heads: 4,
            vision_mlp: 128,
            patch_size: 8,
            image_size: 32,
            text_hidden: 64,
            text_layers: 3,
            text_heads: 4,
            text_mlp: 128,
            max_positions: 77,
            projection_dim: 64,
        }
    }
}

impl ClipArchitecture {
    pub(crate) fn validate(&self) -> Result<(), PretrainError> {
        let ok = [
            self.vision_hidden,
            self.vision_layers,
            self.vision_heads,
            self.vision_mlp,
            self.patch_size,
            self.text_hidden,
            self.text_layers,
            self.text_heads,
            self.text_mlp,
            self.projection_dim,
        ]
        .iter()
        .all(|&v| v > 0)
            && self.vision_hidden.is_multiple_of(self.vision_heads)
            && self.text_hidden.is_multiple_of(self.text_heads)
            && self.image_size >= self.patch_size
            && self.image_size.is_multiple_of(self.patch_size)
            && self.max_positions >= 3;
        if ok {
            Ok(())
        } else {
            Err(PretrainError::Invalid(format!(
                "invalid CLIP shape {self:?}: hidden sizes must be multiples of their head counts, \
                 image_size a multiple of patch_size, max_positions >= 3, all >= 1"
            )))
        }
    }

    /// The `config.json` of a `CLIPModel` with this shape and the vocabulary `bpe` (its
    /// `<|startoftext|>` / `<|endoftext|>` ids as bos / eos / pad, so the text tower pools the first
    /// EOT): dropout off, QuickGELU, LayerNorm ε 1e-5.
    pub fn hf_config(&self, bpe: &LearnedBpe) -> Value {
        json!({
            "architectures": ["CLIPModel"],
            "initializer_factor": 1.0,
            "logit_scale_init_value": LOGIT_SCALE_INIT,
            "model_type": "clip",
            "projection_dim": self.projection_dim,
            "text_config": {
                "attention_dropout": 0.0,
                "bos_token_id": bpe.bos_id(),
                "eos_token_id": bpe.eos_id(),
                "hidden_act": "quick_gelu",
                "hidden_size": self.text_hidden,
                "initializer_factor": 1.0,
                "initializer_range": CLIP_INITIALIZER_RANGE,
                "intermediate_size": self.text_mlp,
                "layer_norm_eps": 1e-5,
                "max_position_embeddings": self.max_positions,
                "model_type": "clip_text_model",
                "num_attention_heads": self.text_heads,
                "num_hidden_layers": self.text_layers,
                "pad_token_id": bpe.eos_id(),
                "projection_dim": self.projection_dim,
                "vocab_size": bpe.vocab_size(),
            },
            "vision_config": {
                "attention_dropout": 0.0,
                "hidden_act": "quick_gelu",
                "hidden_size": self.vision_hidden,
                "image_size": self.image_size,
                "initializer_factor": 1.0,
                "initializer_range": CLIP_INITIALIZER_RANGE,
                "intermediate_size": self.vision_mlp,
                "layer_norm_eps": 1e-5,
                "model_type": "clip_vision_model",
                "num_attention_heads": self.vision_heads,
                "num_channels": 3,
                "num_hidden_layers": self.vision_layers,
                "patch_size": self.patch_size,
                "projection_dim": self.projection_dim,
            },
        })
    }

    /// The `preprocessor_config.json` (HF `CLIPImageProcessor`): bicubic resize of the shortest edge
    /// to `image_size`, centre crop `image_size`, rescale by 1/255, CLIP's mean / std.
    pub fn preprocessor_config(&self) -> Value {
        json!({
            "crop_size": {"height": self.image_size, "width": self.image_size},
            "do_center_crop": true,
            "do_convert_rgb": true,
            "do_normalize": true,
            "do_rescale": true,
            "do_resize": true,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_processor_type": "CLIPImageProcessor",
            "image_std": [0.26862954, 0.26130258, 0.27577711],
            "resample": 3,
            "rescale_factor": 1.0 / 255.0,
            "size": {"shortest_edge": self.image_size},
        })
    }
}

/// The standard deviation transformers draws HF tensor `name` with (`None`: a constant — biases 0,
/// LayerNorm weights 1), for a CLIP with `arch` (`initializer_factor` 1):
///
/// | tensor | std |
/// |---|---|
/// | token / position embeddings, patch projection | 0.02 |
/// | `class_embedding` | d_v^−½ |
/// | `q_proj`, `k_proj`, `v_proj` | d^−½ (2L)^−½ |
/// | `out_proj` | d^−½ |
/// | `fc1` | (2d)^−½ |
/// | `fc2` | d^−½ (2L)^−½ |
/// | `visual_projection` / `text_projection` | d_v^−½ / d_t^−½ |
///
/// with `d`, `L` the width and depth of the tensor's tower.
pub fn init_std(name: &str, arch: &ClipArchitecture) -> Result<Option<f64>, PretrainError> {
    if name.ends_with(".bias")
        || name.contains("layer_norm")
        || name.contains("layrnorm")
        || name.contains("layernorm")
    {
        return Ok(None);
    }
    let (d, layers) = if name.starts_with("vision_model.") {
        (arch.vision_hidden as f64, arch.vision_layers as f64)
    } else {
        (arch.text_hidden as f64, arch.text_layers as f64)
    };
    let in_proj = d.powf(-0.5) * (2.0 * layers).powf(-0.5);
    let std = if name.ends_with("embeddings.class_embedding") {
        arch.vision_hidden as f64
    } else if name.ends_with("_embedding.weight") {
        return Ok(Some(CLIP_INITIALIZER_RANGE));
    } else if name.contains(".q_proj.") || name.contains(".k_proj.") || name.contains(".v_proj.") {
        return Ok(Some(in_proj));
    } else if name.contains(".out_proj.") {
        d
    } else if name.contains(".fc1.") {
        2.0 * d
    } else if name.contains(".fc2.") {
        return Ok(Some(in_proj));
    } else if name == "visual_projection.weight" {
        arch.vision_hidden as f64
    } else if name == "text_projection.weight" {
        arch.text_hidden as f64
    } else {
        return Err(PretrainError::Invalid(format!("no CLIP initialisation rule for tensor `{name}`")));
    };
    Ok(Some(std.powf(-0.5)))
}

/// The initial values of HF tensor `name`: constants per [`init_std`], else N(0, std²) (not truncated,
/// as `torch.nn.init.normal_`) from the ChaCha20 stream seeded by SHA-256(`calibra-clip-init-v1`, seed,
/// name).
pub fn initial_values(
    name: &str,
    len: usize,
    arch: &ClipArchitecture,
    seed: u64,
) -> Result<Vec<f32>, PretrainError> {
    Ok(match init_std(name, arch)? {
        Some(std) => seeded_normal(b"calibra-clip-init-v1", seed, name, len, std, false),
        None if name.ends_with(".bias") => vec![0.0; len],
        None => vec![1.0; len],
    })
}

/// Writes `config.json`, `preprocessor_config.json` and the initial `model.safetensors`
/// ([`initial_values`], `logit_scale` = [`LOGIT_SCALE_INIT`]) of a tiny CLIP to `dir`.
pub fn write_initial_clip(
    arch: &ClipArchitecture,
    bpe: &LearnedBpe,
    seed: u64,
    dir: &Path,
) -> Result<Value, PretrainError> {
    arch.validate()?;
    fs::create_dir_all(dir).map_err(io(dir))?;
    let config_json = arch.hf_config(bpe);
    let pre_path = dir.join("preprocessor_config.json");
    let text = serde_json::to_string_pretty(&arch.preprocessor_config()).expect("JSON serialises") + "\n";
    fs::write(&pre_path, text).map_err(io(&pre_path))?;
    // The module's own saver gives the exact HF names and shapes; its placeholder values are then
    // replaced by the seeded initial values.
    let config = ClipConfig::from_hf(&HfConfig::from_value(dir.join("config.json"), config_json.clone()))?;
    let model = config.init(&Device::flex());
    model.save_pretrained(dir, &config_json)?;
    let config_path = dir.join("config.json");
    read_config(&config_path)?;
    let weights = dir.join("model.safetensors");
    let bytes = fs::read(&weights).map_err(io(&weights))?;
    let parsed = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", weights.display())))?;
    let mut tensors: Vec<(String, Vec<usize>)> =
        parsed.tensors().into_iter().map(|(name, view)| (name, view.shape().to_vec())).collect();
    tensors.sort();
    let mut views = Vec::with_capacity(tensors.len());
    for (name, shape) in tensors {
        let values = if name == "logit_scale" {
            vec![LOGIT_SCALE_INIT as f32]
        } else {
            initial_values(&name, shape.iter().product(), arch, seed)?
        };
        views.push((name, F32View::new(shape, &values)));
    }
    let metadata = std::collections::HashMap::from([("format".to_string(), "pt".to_string())]);
    let out = safetensors::serialize(views, Some(metadata))
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", weights.display())))?;
    fs::write(&weights, out).map_err(io(&weights))?;
    Ok(config_json)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules of `CLIPPreTrainedModel._init_weights` on the names of the default shape.
    #[test]
    fn init_rules_follow_transformers() {
        let a = ClipArchitecture::default();
        let std = |n: &str| init_std(n, &a).unwrap();
        assert_eq!(std("vision_model.pre_layrnorm.weight"), None);
        assert_eq!(std("text_model.encoder.layers.0.layer_norm1.bias"), None);
        assert_eq!(std("text_model.encoder.layers.0.mlp.fc1.bias"), None);
        assert_eq!(std("text_model.embeddings.token_embedding.weight"), Some(0.02));
        assert_eq!(std("vision_model.embeddings.patch_embedding.weight"), Some(0.02));
        assert_eq!(std("vision_model.embeddings.class_embedding"), Some(1.0 / 8.0));
        // d = 64, L = 4 (vision) / 3 (text)
        assert_eq!(
            std("vision_model.encoder.layers.1.self_attn.q_proj.weight"),
            Some(64f64.powf(-0.5) * 8f64.powf(-0.5)) // transformers' expression, same float ops
        );
        assert_eq!(
            std("text_model.encoder.layers.1.mlp.fc2.weight"),
            Some(64f64.powf(-0.5) * 6f64.powf(-0.5))
        );
        assert_eq!(std("text_model.encoder.layers.1.self_attn.out_proj.weight"), Some(1.0 / 8.0));
        assert_eq!(std("vision_model.encoder.layers.1.mlp.fc1.weight"), Some(128f64.powf(-0.5)));
        assert_eq!(std("visual_projection.weight"), Some(1.0 / 8.0));
        assert!(init_std("something.else", &a).is_err());
        let w = initial_values("text_projection.weight", 4096, &a, 0).unwrap();
        let sd = (w.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
        assert!((sd * 8.0 - 1.0).abs() < 0.05, "sd {sd}");
        assert_eq!(w, initial_values("text_projection.weight", 4096, &a, 0).unwrap());
        assert_ne!(w, initial_values("text_projection.weight", 4096, &a, 1).unwrap());
    }
}
