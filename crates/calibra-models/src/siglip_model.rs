//! The joint SigLIP model (Hugging Face `SiglipModel`, `model_type` `siglip`, transformers 5.24):
//! the vision tower ([`SiglipVisionTransformer`]), the text tower ([`SiglipTextTransformer`]) and the
//! two scalars `logit_scale`, `logit_bias`, with SigLIP's *sigmoid* image–text logits:
//!
//! ```text
//! image_features = vision.pooled            (attention-pool head; no extra projection)
//! text_features  = text.pooled              (head(last position))
//! logits_per_image = exp(logit_scale) · l2n(image) · l2n(text)ᵀ + logit_bias
//! P(text j matches image i) = sigmoid(logits_per_image[i, j])   — independently per pair
//! ```
//!
//! Zero-shot classification ([`SiglipZeroShot`]) keeps these logits as the class scores. calibra's
//! single-label evaluator turns logits into probabilities with a softmax over the K classes; for
//! SigLIP that softmax is `softmax(exp(logit_scale) · cos)`: the bias cancels, the argmax (and so
//! accuracy and the ranking metrics) is the argmax of the per-class sigmoids, but the confidences
//! are the softmax's, not the sigmoids' (which need not sum to one). [`SiglipZeroShot::sigmoid_rows`]
//! gives the sigmoids for whoever wants SigLIP's own per-class probabilities.

use burn::module::Module;
use burn::prelude::*;

use crate::clip::model::read_scalar;
use crate::clip::{ZeroShotClassifier, l2_normalize};
use crate::error::ModelError;
use crate::hf::{
    Checkpoint, HfConfig, KeyMap, LoadOptions, load_safetensors, read_config, resolve_checkpoint,
};
use crate::siglip::{SiglipVisionConfig, SiglipVisionTransformer, siglip_vision_rules};
use crate::siglip_text::{SiglipTextConfig, SiglipTextTransformer, siglip_text_rules};
use crate::siglip_tokenizer::SiglipTokenizer;

/// Configuration of [`SiglipModel`] (HF `SiglipConfig`).
#[derive(Config, Debug)]
pub struct SiglipModelConfig {
    /// Vision tower [`vision_config`].
    pub vision: SiglipVisionConfig,
    /// Text tower [`text_config`].
    pub text: SiglipTextConfig,
}

impl SiglipModelConfig {
    /// Reads a `SiglipConfig` (`model_type` `siglip`, with `vision_config` and `text_config`).
    /// The text head's width must equal the image feature width (they are compared by cosine).
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let model_type = cfg.model_type()?;
        if model_type != "siglip" {
            return Err(ModelError::UnsupportedModelType {
                path: cfg.path.clone(),
                model_type,
                supported: "siglip (SiglipModel: image and text towers)".into(),
            });
        }
        let vision = SiglipVisionConfig::from_hf(&cfg.nested("vision_config")?)?;
        let text = SiglipTextConfig::from_hf(&cfg.nested("text_config")?)?;
        if !vision.use_head {
            return Err(cfg.unsupported(
                "vision_config.vision_use_head = false: SiglipModel's image features are the \
                 attention-pooling head's output",
            ));
        }
        if text.projection_size != vision.d_model {
            return Err(cfg.invalid(format!(
                "text_config.projection_size {} differs from vision_config.hidden_size {}: image and \
                 text features must have one width",
                text.projection_size, vision.d_model
            )));
        }
        Ok(Self { vision, text })
    }

    /// Builds the model with random weights (to be overwritten by a checkpoint).
    pub fn init(&self, device: &Device) -> SiglipModel {
        SiglipModel {
            vision_model: self.vision.init(device),
            text_model: self.text.init(device),
            logit_scale: 0.0,
            logit_bias: 0.0,
        }
    }
}

/// Key table of `SiglipModel` checkpoints (transformers 4.x and 5.x share these names).
pub fn siglip_model_keymap() -> Result<KeyMap, ModelError> {
    let map = siglip_vision_rules(KeyMap::new("siglip"), "vision_model.", "vision_model.")?;
    siglip_text_rules(map, "text_model.", "text_model.")?
        .ignore(r"^logit_(scale|bias)$")?
        .ignore(r"position_ids$")
}

/// SigLIP: both towers and the sigmoid logit's scale and bias (see the module documentation).
#[derive(Module, Debug)]
pub struct SiglipModel {
    /// Vision tower (HF `vision_model`).
    pub vision_model: SiglipVisionTransformer,
    /// Text tower (HF `text_model`).
    pub text_model: SiglipTextTransformer,
    /// Log scale (HF `logit_scale`, one value), frozen.
    #[module(skip)]
    pub logit_scale: f32,
    /// Bias (HF `logit_bias`, one value), frozen.
    #[module(skip)]
    pub logit_bias: f32,
}

impl SiglipModel {
    /// Loads a `SiglipModel` checkpoint (`config.json` with `model_type` `siglip` +
    /// `model.safetensors`) from a directory, an HF cache snapshot or `hf:org/name`.
    pub fn load(spec: &str, device: &Device) -> Result<(Self, SiglipModelConfig), ModelError> {
        Self::load_checkpoint(&resolve_checkpoint(spec)?, device)
    }

    /// [`Self::load`] from a resolved checkpoint.
    pub fn load_checkpoint(
        ckpt: &Checkpoint,
        device: &Device,
    ) -> Result<(Self, SiglipModelConfig), ModelError> {
        let hf = read_config(&ckpt.config_path())?;
        let config = SiglipModelConfig::from_hf(&hf)?;
        let weights = ckpt.weights_path();
        crate::hf::load::check_fits_file(
            &hf,
            &weights,
            config.vision.min_weights() + config.text.min_weights(),
        )?;
        let mut model = config.init(device);
        load_safetensors(&mut model, &weights, &siglip_model_keymap()?, &LoadOptions::default())?;
        model.logit_scale = read_scalar(&weights, "logit_scale")?;
        model.logit_bias = read_scalar(&weights, "logit_bias")?;
        Ok((model, config))
    }

    /// HF `get_image_features().pooler_output`: the attention-pooled image feature, `[b, d]`.
    pub fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.vision_model.forward(images)?.pooled)
    }

    /// HF `get_text_features().pooler_output`: `head(last position)`, `[b, d]`.
    pub fn text_features(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError> {
        Ok(self.text_model.forward_ids(ids, device, false)?.pooled)
    }

    /// `exp(logit_scale) · l2n(image_features) · l2n(text_features)ᵀ + logit_bias`
    /// (`logits_per_image`, `[n_images, n_texts]`).
    pub fn logits(&self, image_features: Tensor<2>, text_features: Tensor<2>) -> Tensor<2> {
        sigmoid_logits(
            l2_normalize(image_features),
            l2_normalize(text_features),
            self.logit_scale,
            self.logit_bias,
        )
    }
}

/// `exp(scale) · img · txtᵀ + bias` for unit-norm rows.
fn sigmoid_logits(img: Tensor<2>, txt: Tensor<2>, log_scale: f32, bias: f32) -> Tensor<2> {
    img.matmul(txt.transpose()).mul_scalar(log_scale.exp()).add_scalar(bias)
}

/// A SigLIP zero-shot head: one unit-norm text embedding per class and the sigmoid logit's scale
/// and bias. With several templates per class the embeddings follow CLIP's prompt ensemble
/// (normalise each prompt's feature, average per class, renormalise), as calibra's CLIP zero-shot.
#[derive(Debug, Clone)]
pub struct SiglipZeroShot {
    /// Class names, in logit-column order.
    pub classnames: Vec<String>,
    /// Templates used (each with one `{}`).
    pub templates: Vec<String>,
    /// `[K, d]`, rows of unit L2 norm.
    pub class_embeddings: Tensor<2>,
    /// `logit_scale` (log).
    pub logit_scale: f32,
    /// `logit_bias`.
    pub logit_bias: f32,
}

impl SiglipZeroShot {
    /// Builds the class embeddings; every prompt is tokenised as SigLIP was trained
    /// ([`SiglipTokenizer::encode_padded`]: `</s>` appended, padded with the pad id to the context
    /// length). Errors: no class names or templates, a template without exactly one `{}`, a prompt
    /// the tokenizer or the text tower rejects (named).
    pub fn new(
        model: &SiglipModel,
        tokenizer: &SiglipTokenizer,
        classnames: &[String],
        templates: &[String],
        device: &Device,
    ) -> Result<Self, ModelError> {
        if classnames.is_empty() || templates.is_empty() {
            return Err(ModelError::Input(format!(
                "SigLIP zero-shot: need at least one class and one template (got {} and {})",
                classnames.len(),
                templates.len()
            )));
        }
        let head = ZeroShotClassifier::for_prompt_tower(model, tokenizer, classnames, templates, device)?;
        Ok(Self {
            classnames: head.classnames,
            templates: head.templates,
            class_embeddings: head.class_embeddings,
            logit_scale: model.logit_scale,
            logit_bias: model.logit_bias,
        })
    }

    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.classnames.len()
    }

    /// Sigmoid logits from (unnormalised) image features `[b, d]`: `[b, K]`.
    pub fn logits_from_features(&self, image_features: Tensor<2>) -> Tensor<2> {
        sigmoid_logits(
            l2_normalize(image_features),
            self.class_embeddings.clone(),
            self.logit_scale,
            self.logit_bias,
        )
    }

    /// Sigmoid logits of a batch of images `[b, c, H, W]`: `[b, K]`.
    pub fn logits(&self, model: &SiglipModel, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.logits_from_features(model.image_features(images)?))
    }

    /// SigLIP's own per-class probabilities, `sigmoid(logit)` (each in (0, 1), not summing to one),
    /// row-major `[b, K]`.
    pub fn sigmoid_rows(&self, image_features: Tensor<2>) -> Vec<f64> {
        let logits = self.logits_from_features(image_features);
        logits.to_data().iter::<f64>().map(|z| 1.0 / (1.0 + (-z).exp())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joint_names_map_to_module_paths_and_back() {
        let map = siglip_model_keymap().unwrap();
        for (hf, burn) in [
            ("text_model.embeddings.token_embedding.weight", "text_model.token_embedding.weight"),
            ("text_model.encoder.layers.1.mlp.fc2.bias", "text_model.blocks.1.mlp.fc2.base.bias"),
            ("text_model.head.weight", "text_model.head.weight"),
            ("vision_model.head.attention.in_proj_weight", "vision_model.head.in_proj.weight"),
            ("vision_model.post_layernorm.bias", "vision_model.post_layernorm.bias"),
        ] {
            assert_eq!(map.to_burn(hf), burn, "{hf}");
        }
        assert!(map.is_ignored("logit_bias"));
        assert!(map.is_ignored("logit_scale"));
    }

    #[test]
    fn sigmoid_logits_add_the_bias_after_scaling() {
        let device = Device::flex();
        let img = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, 0.0], [1, 2]), &device);
        let txt = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, 0.0, 0.0, 1.0], [2, 2]), &device);
        let z: Vec<f32> = sigmoid_logits(img, txt, 2f32.ln(), -1.0).to_data().iter::<f32>().collect();
        assert_eq!(z, vec![1.0, -1.0]);
    }
}
