//! The joint CLIP model (Hugging Face `CLIPModel` numerics): both towers, projections, logit scale.

use std::path::Path;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::prelude::*;

use super::keys::{clip_model_keymap, clip_vision_keymap};
use super::text::{ClipTextConfig, ClipTextTransformer};
use super::vision::{ClipVisionConfig, ClipVisionTransformer, TowerOutput};
use crate::error::ModelError;
use crate::hf::{Checkpoint, HfConfig, LoadOptions, load_safetensors, read_config, resolve_checkpoint};

/// Configuration of [`ClipModel`] (HF `CLIPConfig`).
#[derive(Config, Debug)]
pub struct ClipConfig {
    /// Vision tower [`vision_config`].
    pub vision: ClipVisionConfig,
    /// Text tower [`text_config`].
    pub text: ClipTextConfig,
    /// Joint embedding width [`projection_dim`].
    pub projection_dim: usize,
    /// Initial `logit_scale` (log of the temperature) [`logit_scale_init_value`, 2.6592].
    #[config(default = 2.6592)]
    pub logit_scale_init: f64,
}

/// The `vision_config` / `text_config` object of a `CLIPConfig` (messages name its fields
/// `vision_config.hidden_size`...).
fn sub_config(cfg: &HfConfig, key: &str) -> Result<HfConfig, ModelError> {
    cfg.nested(key)
}

impl ClipConfig {
    /// Reads a `CLIPConfig` (`model_type` `clip`, with `vision_config` and `text_config` objects).
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let model_type = cfg.model_type()?;
        if model_type != "clip" {
            return Err(ModelError::UnsupportedModelType {
                path: cfg.path.clone(),
                model_type,
                supported: "clip".into(),
            });
        }
        Ok(Self {
            vision: ClipVisionConfig::from_hf(&sub_config(cfg, "vision_config")?)?,
            text: ClipTextConfig::from_hf(&sub_config(cfg, "text_config")?)?,
            projection_dim: cfg.size_or("projection_dim", 512)?,
            logit_scale_init: cfg.finite_f64_or("logit_scale_init_value", 2.6592)?,
        })
    }

    /// Builds the model with random weights (to be overwritten by a checkpoint).
    pub fn init(&self, device: &Device) -> ClipModel {
        let proj = |d_in| LinearConfig::new(d_in, self.projection_dim).with_bias(false).init(device);
        ClipModel {
            vision_model: self.vision.init(device),
            text_model: self.text.init(device),
            visual_projection: proj(self.vision.d_model),
            text_projection: proj(self.text.d_model),
            logit_scale: self.logit_scale_init as f32,
        }
    }
}

/// Outputs of [`ClipModel::forward`].
#[derive(Debug, Clone)]
pub struct ClipOutput {
    /// `image_embeds`: projected image features divided by their L2 norm, `[n_images, p]`.
    pub image_embeds: Tensor<2>,
    /// `text_embeds`: projected text features divided by their L2 norm, `[n_texts, p]`.
    pub text_embeds: Tensor<2>,
    /// `exp(logit_scale) · image_embeds · text_embedsᵀ`, `[n_images, n_texts]`.
    pub logits_per_image: Tensor<2>,
    /// The vision tower's outputs.
    pub vision: TowerOutput,
    /// The text tower's outputs.
    pub text: TowerOutput,
}

/// CLIP: `image_features = visual_projection(vision.pooled)`,
/// `text_features = text_projection(text.pooled)` (no bias), and
/// `logits_per_image = exp(logit_scale) · (img/‖img‖) (txt/‖txt‖)ᵀ`.
#[derive(Module, Debug)]
pub struct ClipModel {
    /// Vision tower (HF `vision_model`).
    pub vision_model: ClipVisionTransformer,
    /// Text tower (HF `text_model`).
    pub text_model: ClipTextTransformer,
    /// `[d_vision, p]`, no bias (HF `visual_projection`).
    pub visual_projection: Linear,
    /// `[d_text, p]`, no bias (HF `text_projection`).
    pub text_projection: Linear,
    /// Log temperature (HF `logit_scale`, a 0-d tensor in the file, read by [`read_scalar`]). A frozen
    /// constant here: neither zero-shot nor CoOp trains it, so it is not a burn parameter.
    #[module(skip)]
    pub logit_scale: f32,
}

/// Row-wise `x / ‖x‖₂` (HF `_get_vector_norm`: no epsilon, so a zero row gives NaN as in transformers).
pub fn l2_normalize(x: Tensor<2>) -> Tensor<2> {
    let norm = x.clone().powf_scalar(2.0).sum_dim(1).sqrt();
    x / norm
}

/// Reads a scalar (0-d or one-element) tensor `key` from a safetensors file as f32
/// (F32, F64, BF16 and F16 storage).
pub fn read_scalar(path: &Path, key: &str) -> Result<f32, ModelError> {
    let bytes = std::fs::read(path).map_err(|source| ModelError::Io { path: path.into(), source })?;
    read_scalar_bytes(&bytes, path, key)
}

/// [`read_scalar`] on an in-memory safetensors file (`path` names it in messages).
pub fn read_scalar_bytes(bytes: &[u8], path: &Path, key: &str) -> Result<f32, ModelError> {
    let st = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| ModelError::Store { path: path.into(), message: e.to_string() })?;
    let view = st
        .tensor(key)
        .map_err(|e| ModelError::Store { path: path.into(), message: format!("tensor '{key}': {e}") })?;
    let n: usize = view.shape().iter().product();
    if n != 1 {
        return Err(ModelError::Store {
            path: path.into(),
            message: format!("tensor '{key}' must hold one value, has shape {:?}", view.shape()),
        });
    }
    let values = crate::hf::floats::decode_f32(view.dtype(), view.data())
        .map_err(|why| ModelError::Store { path: path.into(), message: format!("tensor '{key}': {why}") })?;
    let value = values.first().copied().ok_or_else(|| ModelError::Store {
        path: path.into(),
        message: format!("tensor '{key}' holds no data"),
    })?;
    if !value.is_finite() {
        return Err(ModelError::NonFiniteWeights {
            path: path.into(),
            tensors: vec![format!("tensor '{key}': its value {value} is not finite")],
        });
    }
    Ok(value)
}

impl ClipModel {
    /// Loads a `CLIPModel` checkpoint (`config.json` with `model_type` `clip` + `model.safetensors`,
    /// or a native OpenCLIP `open_clip_config.json` + `open_clip_model.safetensors`) from a directory, an HF cache snapshot or `hf:org/name` (see [`resolve_checkpoint`]).
    pub fn load(spec: &str, device: &Device) -> Result<(Self, ClipConfig), ModelError> {
        Self::load_checkpoint(&resolve_checkpoint(spec)?, device)
    }

    /// [`Self::load`] from a resolved checkpoint; an OpenCLIP directory (`open_clip_config.json`, no
    /// `config.json`) is converted at load (see [`super::open_clip`]).
    pub fn load_checkpoint(ckpt: &Checkpoint, device: &Device) -> Result<(Self, ClipConfig), ModelError> {
        if super::open_clip::is_open_clip_dir(&ckpt.dir) {
            let (model, config) = super::open_clip::load_open_clip(&ckpt.dir, device)?;
            return Ok((model, config.clip));
        }
        let hf = read_config(&ckpt.config_path())?;
        let config = ClipConfig::from_hf(&hf)?;
        let weights = ckpt.weights_path();
        let projections =
            config.projection_dim as u128 * (config.vision.d_model + config.text.d_model) as u128;
        let min_weights = config.vision.min_weights() + config.text.min_weights() + projections;
        crate::hf::load::check_fits_file(&hf, &weights, min_weights)?;
        let mut model = config.init(device);
        load_safetensors(&mut model, &weights, &clip_model_keymap()?, &LoadOptions::default())?;
        model.logit_scale = read_scalar(&weights, "logit_scale")?;
        Ok((model, config))
    }

    /// `exp(logit_scale)` as a host value.
    pub fn logit_scale_exp(&self) -> f32 {
        self.logit_scale.exp()
    }

    /// HF `get_image_features`: `visual_projection(post_LN(CLS))`, not normalised, `[b, p]`.
    pub fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.visual_projection.forward(self.vision_model.forward(images)?.pooled))
    }

    /// HF `get_text_features`: `text_projection(EOT row)`, not normalised, `[b, p]`.
    pub fn text_features(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError> {
        Ok(self.text_projection.forward(self.text_model.forward_ids(ids, device, false)?.pooled))
    }

    /// Text features from input embeddings (CoOp prompts) and their pooling positions.
    pub fn text_features_from_embeddings(
        &self,
        embeds: Tensor<3>,
        pool_positions: &[usize],
    ) -> Result<Tensor<2>, ModelError> {
        Ok(self
            .text_projection
            .forward(self.text_model.forward_embeddings(embeds, pool_positions, false)?.pooled))
    }

    /// `exp(logit_scale) · l2n(image_features) · l2n(text_features)ᵀ` (`[n_images, n_texts]`).
    pub fn logits(&self, image_features: Tensor<2>, text_features: Tensor<2>) -> Tensor<2> {
        l2_normalize(image_features).matmul(l2_normalize(text_features).transpose()) * self.logit_scale_exp()
    }

    /// Full forward pass (HF `CLIPModel.forward`), with every block output of both towers when
    /// `with_hidden_states`.
    pub fn forward(
        &self,
        images: Tensor<4>,
        ids: &[Vec<u32>],
        with_hidden_states: bool,
    ) -> Result<ClipOutput, ModelError> {
        let device = images.device();
        let vision = self.vision_model.forward_full(images, with_hidden_states)?;
        let text = self.text_model.forward_ids(ids, &device, with_hidden_states)?;
        let image_embeds = l2_normalize(self.visual_projection.forward(vision.pooled.clone()));
        let text_embeds = l2_normalize(self.text_projection.forward(text.pooled.clone()));
        let logits_per_image =
            image_embeds.clone().matmul(text_embeds.clone().transpose()) * self.logit_scale_exp();
        Ok(ClipOutput { image_embeds, text_embeds, logits_per_image, vision, text })
    }
}

impl ClipVisionTransformer {
    /// Loads the vision tower alone from a `CLIPModel` (`model_type` `clip`: `vision_config`),
    /// `CLIPVisionModel` or `CLIPVisionModelWithProjection` (`clip_vision_model`) checkpoint, or a
    /// native OpenCLIP one.
    pub fn load(spec: &str, device: &Device) -> Result<(Self, ClipVisionConfig), ModelError> {
        let ckpt = resolve_checkpoint(spec)?;
        if ckpt.is_open_clip() {
            let (tower, config, _) = super::open_clip::load_open_clip_vision(&ckpt.dir, device)?;
            return Ok((tower, config.clip.vision));
        }
        Self::load_with(&read_config(&ckpt.config_path())?, &ckpt.weights_path(), device)
    }

    /// Loads weights `weights` described by the already-read `config.json` `cfg`.
    pub fn load_with(
        cfg: &HfConfig,
        weights: &Path,
        device: &Device,
    ) -> Result<(Self, ClipVisionConfig), ModelError> {
        let model_type = cfg.model_type()?;
        let config = match model_type.as_str() {
            "clip" => ClipVisionConfig::from_hf(&sub_config(cfg, "vision_config")?)?,
            "clip_vision_model" => ClipVisionConfig::from_hf(cfg)?,
            _ => {
                return Err(ModelError::UnsupportedModelType {
                    path: cfg.path.clone(),
                    model_type,
                    supported: "clip, clip_vision_model".into(),
                });
            }
        };
        crate::hf::load::check_fits_file(cfg, weights, config.min_weights())?;
        let mut tower = config.init(device);
        load_safetensors(&mut tower, weights, &clip_vision_keymap()?, &LoadOptions::default())?;
        Ok((tower, config))
    }
}

#[cfg(test)]
mod tests {
    use crate::hf::floats::f16_to_f32;

    #[test]
    fn half_precision_scalars_decode_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x4dc0), 23.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert!(f16_to_f32(0x7e00).is_nan());
    }
}
