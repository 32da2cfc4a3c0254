//! Zero-shot classification with a CLIP model: class names × prompt templates.
//!
//! For class `k` and templates `t = 1..T`: `f_kt = l2n(text_features(template_t(name_k)))`,
//! `w_k = l2n(mean_t f_kt)` (the CLIP prompt-ensemble convention: normalise, average, renormalise),
//! and for an image `logit_k = exp(logit_scale) · cos(image_features, w_k) + bias` (`bias` is 0 for
//! CLIP; [`ZeroShotClassifier::for_prompt_tower`] takes SigLIP's `logit_bias`).

use burn::prelude::*;

use super::model::{ClipModel, l2_normalize};
use super::prompt_text::{PromptTextEncoder, PromptTokenizer};
use crate::error::ModelError;
use crate::tokenizer::ClipTokenizer;

/// The seven MVC-Bench prompt templates, P1…P7: the workspace's one list (calibra-core), which
/// recipe validation reads too.
pub use calibra_core::MVC_BENCH_TEMPLATES;

/// Fills the single `{}` of `template` with `classname`.
pub fn fill_template(template: &str, classname: &str) -> Result<String, ModelError> {
    if template.matches("{}").count() != 1 {
        return Err(ModelError::Input(format!(
            "prompt template {template:?} must contain exactly one '{{}}'"
        )));
    }
    Ok(template.replacen("{}", classname, 1))
}

/// A text tower as [`ZeroShotClassifier::from_text_encoder`] calls it: padded id rows → features.
pub type TextFeatures<'a> = dyn Fn(&[Vec<u32>]) -> Result<Tensor<2>, ModelError> + 'a;

/// How many prompts go through the text tower at once.
const TEXT_BATCH: usize = 64;

/// A zero-shot head: one unit-norm text embedding per class and CLIP's temperature.
#[derive(Debug, Clone)]
pub struct ZeroShotClassifier {
    /// Class names, in logit-column order.
    pub classnames: Vec<String>,
    /// Templates used (each with one `{}`).
    pub templates: Vec<String>,
    /// `w_k`, `[K, p]`, rows of unit L2 norm.
    pub class_embeddings: Tensor<2>,
    /// `exp(logit_scale)`.
    pub scale: f32,
    /// Added to every logit (SigLIP's `logit_bias`; 0 for CLIP).
    pub bias: f32,
}

impl ZeroShotClassifier {
    /// Builds the class embeddings. Each prompt is tokenised with SOT/EOT, truncated and padded
    /// to the tokenizer's context length (as transformers' `padding="max_length", truncation=True`).
    ///
    /// Errors: no class names, no templates, a template without exactly one `{}`, or a tokenizer /
    /// text-tower failure (named with the prompt).
    pub fn new(
        model: &ClipModel,
        tokenizer: &ClipTokenizer,
        classnames: &[String],
        templates: &[String],
        device: &Device,
    ) -> Result<Self, ModelError> {
        Self::for_prompt_tower(model, tokenizer, classnames, templates, device)
    }

    /// [`Self::new`] on any image–text family's text tower (CLIP, SigLIP, BiomedCLIP's BERT), each
    /// prompt tokenised by `tokenizer` as that family's zero-shot expects
    /// ([`PromptTokenizer::zero_shot_ids`]), with the family's logit bias.
    pub fn for_prompt_tower(
        encoder: &dyn PromptTextEncoder,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        templates: &[String],
        device: &Device,
    ) -> Result<Self, ModelError> {
        let mut head = Self::from_text_encoder(
            classnames,
            templates,
            encoder.logit_scale_exp(),
            &|p| tokenizer.zero_shot_ids(p).map_err(|e| e.to_string()),
            &|ids| encoder.text_features_of_ids(ids, device),
        )?;
        head.bias = encoder.logit_bias();
        Ok(head)
    }

    /// [`Self::new`] for any text tower: `tokenize` turns a prompt into its padded id row,
    /// `text_features` a batch of rows into (unnormalised) features `[n, p]`; `scale` is
    /// `exp(logit_scale)`.
    pub fn from_text_encoder(
        classnames: &[String],
        templates: &[String],
        scale: f32,
        tokenize: &dyn Fn(&str) -> Result<Vec<u32>, String>,
        text_features: &TextFeatures<'_>,
    ) -> Result<Self, ModelError> {
        if classnames.is_empty() || templates.is_empty() {
            return Err(ModelError::Input(format!(
                "zero-shot: need at least one class and one template (got {} and {})",
                classnames.len(),
                templates.len()
            )));
        }
        let mut prompts = Vec::with_capacity(classnames.len() * templates.len());
        for name in classnames {
            for t in templates {
                prompts.push(fill_template(t, name)?);
            }
        }
        let mut ids = Vec::with_capacity(prompts.len());
        for p in &prompts {
            ids.push(tokenize(p).map_err(|e| ModelError::Input(format!("zero-shot prompt {p:?}: {e}")))?);
        }
        let mut feats = Vec::new();
        for chunk in ids.chunks(TEXT_BATCH) {
            feats.push(l2_normalize(text_features(chunk)?));
        }
        let feats = Tensor::cat(feats, 0); // [K*T, p]
        let [_, p] = feats.dims();
        let per_class =
            feats.reshape([classnames.len(), templates.len(), p]).mean_dim(1).reshape([classnames.len(), p]);
        Ok(Self {
            classnames: classnames.to_vec(),
            templates: templates.to_vec(),
            class_embeddings: l2_normalize(per_class),
            scale,
            bias: 0.0,
        })
    }

    /// [`Self::new`] with [`MVC_BENCH_TEMPLATES`].
    pub fn with_mvc_bench_templates(
        model: &ClipModel,
        tokenizer: &ClipTokenizer,
        classnames: &[String],
        device: &Device,
    ) -> Result<Self, ModelError> {
        let templates: Vec<String> = MVC_BENCH_TEMPLATES.iter().map(|t| t.to_string()).collect();
        Self::new(model, tokenizer, classnames, &templates, device)
    }

    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.classnames.len()
    }

    /// Logits from (unnormalised) projected image features `[b, p]`: `[b, K]`.
    pub fn logits_from_features(&self, image_features: Tensor<2>) -> Tensor<2> {
        let logits =
            l2_normalize(image_features).matmul(self.class_embeddings.clone().transpose()) * self.scale;
        if self.bias == 0.0 { logits } else { logits + self.bias }
    }

    /// Logits of a batch of images `[b, c, H, W]`: `[b, K]`.
    pub fn logits(&self, model: &ClipModel, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.logits_from_features(model.image_features(images)?))
    }

    /// Logits as row-major `f64` values with `K` columns (the layout of calibra's predictions files).
    pub fn logits_rows(&self, model: &ClipModel, images: Tensor<4>) -> Result<Vec<f64>, ModelError> {
        let logits = self.logits(model, images)?;
        let v: Vec<f32> = logits
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|e| ModelError::Input(format!("zero-shot: cannot read logits: {e:?}")))?;
        Ok(v.into_iter().map(f64::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_one_slot_and_p1_is_the_clip_default() {
        assert_eq!(MVC_BENCH_TEMPLATES[0], "a photo of a {}.");
        for t in MVC_BENCH_TEMPLATES {
            assert_eq!(fill_template(t, "melanoma").unwrap().matches("melanoma").count(), 1, "{t}");
        }
        assert!(fill_template("no slot", "x").is_err());
        assert!(fill_template("{} and {}", "x").is_err());
    }
}
