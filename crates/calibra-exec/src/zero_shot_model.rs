//! The image–text models zero-shot classification runs on (`calibra zero-shot` and the zero-shot
//! regime): a CLIP model (`config.json` `model_type` `clip`, or a native OpenCLIP checkpoint;
//! softmax-trained logits
//! `exp(logit_scale)·cos`) or a SigLIP model (`siglip`, sigmoid-trained logits
//! `exp(logit_scale)·cos + logit_bias`), each with its own tokenizer.
//!
//! Both kinds' logits go into the predictions files as `ScoreKind::Logit`, so the evaluator reads
//! single-label class probabilities as their softmax. For SigLIP that is `softmax(exp(logit_scale)·
//! cos)` over the K classes (the bias cancels): argmax and ranking equal those of SigLIP's own
//! per-class sigmoids; the confidences are the softmax's. A BiomedCLIP-style OpenCLIP checkpoint (timm
//! trunk + BERT text tower, [`OpenClipTimmBert`]) is a CLIP here: softmax-trained logits
//! `exp(logit_scale)·cos`, its own WordPiece tokenizer. CoOp, KgCoOp and ProGrad run on every kind
//! ([`ZeroShotModel::prompt_tower`]).

use std::path::Path;

use burn::tensor::{Device, Tensor};
use calibra_models::ModelError;
use calibra_models::clip::open_clip::{OpenClipTimmBert, is_open_clip_dir, is_timm_bert_dir};
use calibra_models::clip::{
    ClipModel, OpenClipBertTokenizer, PromptTextEncoder, PromptTokenizer, ZeroShotClassifier,
};
use calibra_models::hf::read_config;
use calibra_models::siglip_model::{SiglipModel, SiglipZeroShot};
use calibra_models::siglip_tokenizer::SiglipTokenizer;
use calibra_models::tokenizer::ClipTokenizer;
use calibra_models::tokenizer::wordpiece::WordPieceTokenizer;
use calibra_run::ExecError;

use crate::clip_fit::FeatureHead;

pub use calibra_run::names::ZERO_SHOT_MODEL_TYPES;

/// Something with an image tower whose pooled, not normalised, features zero-shot heads score.
pub trait ImageTower {
    /// Image features `[b, d]` of images `[b, c, H, W]`.
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError>;
}

impl ImageTower for ClipModel {
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        ClipModel::image_features(self, images)
    }
}

impl ImageTower for OpenClipTimmBert {
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        OpenClipTimmBert::image_features(self, images)
    }
}

impl ImageTower for SiglipModel {
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        SiglipModel::image_features(self, images)
    }
}

/// Something that turns image features `[n, d]` into class logits `[n, K]`.
pub trait FeatureLogits {
    /// Logits of (unnormalised) image features.
    fn logits_from_features(&self, image_features: Tensor<2>) -> Tensor<2>;
}

impl FeatureLogits for ZeroShotClassifier {
    fn logits_from_features(&self, image_features: Tensor<2>) -> Tensor<2> {
        ZeroShotClassifier::logits_from_features(self, image_features)
    }
}

impl FeatureLogits for SiglipZeroShot {
    fn logits_from_features(&self, image_features: Tensor<2>) -> Tensor<2> {
        SiglipZeroShot::logits_from_features(self, image_features)
    }
}

/// A zero-shot model and its tokenizer.
pub enum ZeroShotModel {
    /// HF `CLIPModel` with the CLIP BPE tokenizer.
    Clip(Box<ClipModel>, Box<ClipTokenizer>),
    /// HF `SiglipModel` with SigLIP's SentencePiece tokenizer.
    Siglip(Box<SiglipModel>, Box<SiglipTokenizer>),
    /// A BiomedCLIP-style OpenCLIP model with its WordPiece tokenizer at its context length.
    TimmBert(Box<OpenClipTimmBert>, Box<OpenClipBertTokenizer>),
}

/// One template set's class embeddings for either kind.
pub enum ZeroShotHead {
    /// CLIP: `exp(logit_scale)·cos`.
    Clip(ZeroShotClassifier),
    /// SigLIP: `exp(logit_scale)·cos + logit_bias`.
    Siglip(SiglipZeroShot),
}

/// The `model_type` zero-shot dispatches on: `config.json`'s, or `clip` for a native OpenCLIP directory
/// (no `config.json`; `ClipModel::load` converts it to a CLIP).
pub(crate) fn model_type_of(dir: &Path) -> Result<String, calibra_models::ModelError> {
    if is_open_clip_dir(dir) {
        return Ok("clip".to_string());
    }
    read_config(&dir.join("config.json"))?.model_type()
}

impl ZeroShotModel {
    /// Loads the checkpoint in `dir` by its `config.json` `model_type` (`clip` or `siglip`; a native
    /// OpenCLIP directory is a CLIP), and the tokenizer from `tokenizer_dir` (default: `dir`).
    pub fn load(dir: &Path, tokenizer_dir: Option<&Path>, device: &Device) -> Result<Self, ExecError> {
        let model_type = model_type_of(dir)?;
        let spec = dir.to_str().ok_or_else(|| format!("{}: not a UTF-8 path", dir.display()))?;
        let tok_dir = tokenizer_dir.unwrap_or(dir);
        match model_type.as_str() {
            "clip" if is_timm_bert_dir(dir) => {
                let (model, config, tokenizer) = OpenClipTimmBert::load(dir, device).map_err(|e| {
                    format!("{}: cannot load a BiomedCLIP-style OpenCLIP model: {e}", dir.display())
                })?;
                let tokenizer = match tokenizer_dir {
                    Some(t) => WordPieceTokenizer::from_dir(t).map_err(|e| {
                        format!("{}: cannot load the BERT WordPiece tokenizer: {e}", t.display())
                    })?,
                    None => tokenizer,
                };
                let tokenizer =
                    OpenClipBertTokenizer { wordpiece: tokenizer, context_length: config.context_length };
                Ok(Self::TimmBert(Box::new(model), Box::new(tokenizer)))
            }
            "clip" => {
                let (model, _) = ClipModel::load(spec, device)
                    .map_err(|e| format!("{}: cannot load a CLIP model: {e}", dir.display()))?;
                // The checkpoint's own tokenizer files, or open_clip's SimpleTokenizer for OpenCLIP.
                let tokenizer = ClipTokenizer::for_checkpoint(tok_dir).map_err(|e| {
                    format!(
                        "{}: cannot load the CLIP tokenizer (use --tokenizer DIR): {e}",
                        tok_dir.display()
                    )
                })?;
                Ok(Self::Clip(Box::new(model), Box::new(tokenizer)))
            }
            "siglip" => {
                let (model, _) = SiglipModel::load(spec, device)
                    .map_err(|e| format!("{}: cannot load a SigLIP model: {e}", dir.display()))?;
                let tokenizer = SiglipTokenizer::from_dir(tok_dir).map_err(|e| {
                    format!(
                        "{}: cannot load the SigLIP tokenizer (use --tokenizer DIR): {e}",
                        tok_dir.display()
                    )
                })?;
                Ok(Self::Siglip(Box::new(model), Box::new(tokenizer)))
            }
            other => Err(format!(
                "{}: zero-shot needs an image-text checkpoint (config.json model_type {}), this one has \
                 model_type `{other}`",
                dir.display(),
                ZERO_SHOT_MODEL_TYPES.join(" or ")
            )
            .into()),
        }
    }

    /// The class embeddings of `templates` × `classnames`.
    pub fn head(
        &self,
        classnames: &[String],
        templates: &[String],
        device: &Device,
    ) -> Result<ZeroShotHead, ModelError> {
        Ok(match self {
            Self::Clip(m, t) => {
                ZeroShotHead::Clip(ZeroShotClassifier::new(m, t, classnames, templates, device)?)
            }
            Self::Siglip(m, t) => {
                ZeroShotHead::Siglip(SiglipZeroShot::new(m, t, classnames, templates, device)?)
            }
            Self::TimmBert(m, t) => ZeroShotHead::Clip(ZeroShotClassifier::for_prompt_tower(
                m.as_ref(),
                t.as_ref(),
                classnames,
                templates,
                device,
            )?),
        })
    }
}

impl ZeroShotModel {
    /// The text tower and tokenizer CoOp-style prompt learning trains through.
    pub fn prompt_tower(&self) -> (&dyn PromptTextEncoder, &dyn PromptTokenizer) {
        match self {
            Self::Clip(m, t) => (m.as_ref(), t.as_ref()),
            Self::Siglip(m, t) => (m.as_ref(), t.as_ref()),
            Self::TimmBert(m, t) => (m.as_ref(), t.as_ref()),
        }
    }
}

impl ImageTower for ZeroShotModel {
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        match self {
            Self::Clip(m, _) => m.image_features(images),
            Self::Siglip(m, _) => m.image_features(images),
            Self::TimmBert(m, _) => m.image_features(images),
        }
    }
}

impl FeatureLogits for ZeroShotHead {
    fn logits_from_features(&self, image_features: Tensor<2>) -> Tensor<2> {
        match self {
            Self::Clip(h) => h.logits_from_features(image_features),
            Self::Siglip(h) => h.logits_from_features(image_features),
        }
    }
}

impl FeatureHead for ZeroShotHead {
    fn head_logits(&self, features: &[f32], dim: usize, device: &Device) -> Result<Vec<f64>, ExecError> {
        crate::clip_features::zero_shot_logits(self, features, dim, device)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use burn::tensor::TensorData;
    use calibra_models::clip::open_clip::TimmBertSources;

    use super::*;

    /// The BiomedCLIP-style fixture of calibra-models (scripts/golden/encoders_biomedclip.py), loaded
    /// with the reduced trunk sizes it was written with, goes through the zero-shot dispatch as a CLIP:
    /// the head's logits are open_clip's.
    #[test]
    fn a_timm_bert_model_scores_like_open_clip() {
        let fix =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/biomedclip");
        let read = |p: &str| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(fix.join(p)).unwrap()).unwrap()
        };
        let args = read("trunk_model_args.json").as_object().unwrap().clone();
        let hub = fix.join("hub");
        let device = Device::flex();
        let sources = TimmBertSources { hub_cache: Some(&hub), trunk_model_args: args };
        let (m, config, tok) = OpenClipTimmBert::load_with(&fix.join("model"), &sources, &device).unwrap();
        let tok = OpenClipBertTokenizer { wordpiece: tok, context_length: config.context_length };
        let model = ZeroShotModel::TimmBert(Box::new(m), Box::new(tok));
        let g = read("model/golden.json");
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
        };
        let z = &g["zero_shot"];
        let head = model.head(&strings(&z["classnames"]), &strings(&z["templates"]), &device).unwrap();
        assert!(matches!(head, ZeroShotHead::Clip(_)));
        let images: Vec<f32> = g["images"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c.as_array().unwrap().iter())
            .flat_map(|r| r.as_array().unwrap().iter())
            .flat_map(|r| r.as_array().unwrap().iter())
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let n = images.len() / (3 * 32 * 32);
        let images = Tensor::<4>::from_data(TensorData::new(images, [n, 3, 32, 32]), &device);
        let logits = head.logits_from_features(model.image_features(images).unwrap());
        let got: Vec<f32> = logits.into_data().try_to_vec::<f32>().unwrap();
        let want: Vec<f32> = z["logits"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().iter())
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(got.len(), want.len());
        let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(max <= 1e-4, "max |diff| {max:e}");
    }
}
