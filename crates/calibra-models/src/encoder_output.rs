//! What one forward pass of a vision encoder returns ([`EncoderOutput`]): shared by the family
//! modules ([`crate::vit`], [`crate::dinov2`]) that produce it and [`crate::encoder`], which
//! dispatches to them, so that neither side depends on the other for it.
//!
//! A CNN ([`crate::resnet`]) fills it with feature maps read as token sequences: a map `[b, C, h, w]`
//! is the sequence `[b, h·w, C]` of its positions, `cls` is the pooled feature, and `hidden_states`
//! are the stem output then each stage's output.

use burn::prelude::*;

/// Outputs of one forward pass of a vision encoder.
#[derive(Debug, Clone)]
pub struct EncoderOutput {
    /// Final token states after the last LayerNorm, `[b, tokens, d]` (HF `last_hidden_state`).
    pub last_hidden_state: Tensor<3>,
    /// CLS token of `last_hidden_state`, `[b, d]` (HF DINOv2 `pooler_output`).
    pub cls: Tensor<2>,
    /// HF ViT/DeiT tanh pooler output `[b, pooler_size]` when the checkpoint has a pooler.
    pub pooler_output: Option<Tensor<2>>,
    /// When requested: embedding output then each block's output, before the final LayerNorm
    /// (HF `hidden_states`, `num_layers + 1` entries); empty otherwise.
    pub hidden_states: Vec<Tensor<3>>,
}
