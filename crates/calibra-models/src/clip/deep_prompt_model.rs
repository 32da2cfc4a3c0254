//! The model interface of the deep-prompt methods (MaPLe, PromptSRC's independent prompts, HiCroPL):
//! an image–text model whose two towers take learned prompt rows at their first blocks. CLIP
//! (HF `CLIPModel` and native OpenCLIP checkpoints) implements it as the references do
//! ([`super::deep_prompts`]); SigLIP implements calibra's port ([`crate::siglip_deep_prompts`]; no
//! reference exists). BiomedCLIP-style checkpoints (timm trunk + BERT) do not.

use burn::prelude::*;

use super::model::ClipModel;
use super::prompt_text::PromptTextEncoder;
use crate::error::ModelError;
use crate::siglip_model::SiglipModel;

/// Both towers of an image–text model, with deep prompts (module docs). The text side's token
/// embedding, zero-shot features and logit come from [`PromptTextEncoder`].
pub trait DeepPromptModel: PromptTextEncoder {
    /// The family's name for error messages (`"CLIP"`, `"SigLIP"`).
    fn family(&self) -> &'static str;

    /// Blocks of the text tower.
    fn text_blocks(&self) -> usize;

    /// Width of the vision tower's tokens.
    fn vision_width(&self) -> usize;

    /// Blocks of the vision tower.
    fn vision_blocks(&self) -> usize;

    /// Text features `[b, p]` (not normalised) of prompt embeddings `[b, n, dt]` (without positions)
    /// whose rows `slots..slots+m` are the first-layer context, `deep[i-1]` (`[m, dt]`) replacing
    /// those rows before block `i`; `pooled[b]` is the row pooled for prompt `b`.
    fn text_features_deep(
        &self,
        embeds: Tensor<3>,
        slots: usize,
        pooled: &[usize],
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError>;

    /// Image features `[b, p]` (not normalised) of images with `shared: [m, dv]` appended after the
    /// patch tokens and `deep[i-1]` replacing those rows before block `i`.
    fn image_features_deep(
        &self,
        images: Tensor<4>,
        shared: Tensor<2>,
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError>;

    /// The frozen (unprompted) image features `[b, p]`, not normalised.
    fn frozen_image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError>;

    /// `exp(logit_scale) · image · textᵀ + logit_bias` of L2-normalised features.
    fn prompt_logits(&self, image: Tensor<2>, text: Tensor<2>) -> Tensor<2> {
        let logits = image.matmul(text.transpose()) * self.logit_scale_exp();
        let bias = self.logit_bias();
        if bias == 0.0 { logits } else { logits + bias }
    }
}

impl DeepPromptModel for ClipModel {
    fn family(&self) -> &'static str {
        "CLIP"
    }

    fn text_blocks(&self) -> usize {
        self.text_model.n_layers()
    }

    fn vision_width(&self) -> usize {
        self.vision_model.class_embedding.dims()[0]
    }

    fn vision_blocks(&self) -> usize {
        self.vision_model.n_layers()
    }

    fn text_features_deep(
        &self,
        embeds: Tensor<3>,
        slots: usize,
        pooled: &[usize],
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        self.text_features_deep_prompts(embeds, slots, pooled, deep)
    }

    fn image_features_deep(
        &self,
        images: Tensor<4>,
        shared: Tensor<2>,
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        self.image_features_deep_prompts(images, shared, deep)
    }

    fn frozen_image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        self.image_features(images)
    }
}

impl DeepPromptModel for SiglipModel {
    fn family(&self) -> &'static str {
        "SigLIP"
    }

    fn text_blocks(&self) -> usize {
        self.text_model.n_layers()
    }

    fn vision_width(&self) -> usize {
        self.vision_model.position_embedding.weight.dims()[1]
    }

    fn vision_blocks(&self) -> usize {
        self.vision_model.n_layers()
    }

    fn text_features_deep(
        &self,
        embeds: Tensor<3>,
        slots: usize,
        pooled: &[usize],
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        self.text_model.forward_deep_prompts(embeds, slots, pooled, deep)
    }

    fn image_features_deep(
        &self,
        images: Tensor<4>,
        shared: Tensor<2>,
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        self.vision_model.forward_deep_prompts(images, shared, deep)
    }

    fn frozen_image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        self.image_features(images)
    }
}
