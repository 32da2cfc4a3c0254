//! Pre-norm transformer block (ViT, DeiT, DINOv2, CLIP and SigLIP all use this shape).

use super::layer_norm::{LayerNorm, LayerNormConfig};
use burn::module::{Module, Param};
use burn::prelude::*;

use super::attention::{MultiHeadSelfAttention, MultiHeadSelfAttentionConfig};
use super::mlp::{Activation, Mlp, MlpConfig};

/// Per-channel residual-branch scale (DINOv2 / CaiT "LayerScale"): `x ↦ x ⊙ λ`.
#[derive(Module, Debug)]
pub struct LayerScale {
    /// `λ`, `[d]` (HF key `lambda1`).
    pub lambda1: Param<Tensor<1>>,
}

impl LayerScale {
    /// `λ` filled with `init_value` (HF `layerscale_value`).
    pub fn new(d: usize, init_value: f64, device: &Device) -> Self {
        Self { lambda1: Param::from_tensor(Tensor::ones([d], device) * init_value) }
    }

    /// `x ⊙ λ` broadcast over the last axis.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        x * self.lambda1.val().unsqueeze::<3>()
    }
}

/// Configuration of [`TransformerBlock`].
#[derive(Config, Debug)]
pub struct TransformerBlockConfig {
    /// Model width.
    pub d_model: usize,
    /// Attention heads.
    pub n_heads: usize,
    /// MLP hidden width.
    pub d_hidden: usize,
    /// MLP activation.
    pub activation: Activation,
    /// LayerNorm epsilon (HF `layer_norm_eps`; ViT 1e-12, DINOv2/CLIP 1e-6/1e-5).
    #[config(default = 1e-12)]
    pub layer_norm_eps: f64,
    /// Bias on q/k/v.
    #[config(default = true)]
    pub qkv_bias: bool,
    /// Causal self-attention (CLIP text).
    #[config(default = false)]
    pub causal: bool,
    /// `Some(value)`: add LayerScale on both residual branches, initialised to `value`
    /// (DINOv2). `None`: no layer scale.
    #[config(default = "None")]
    pub layer_scale: Option<f64>,
}

/// `h = x + ls1(attn(norm1(x)))`, `y = h + ls2(mlp(norm2(h)))` (`ls` = identity when absent).
#[derive(Module, Debug)]
pub struct TransformerBlock {
    /// LayerNorm before attention.
    pub norm1: LayerNorm,
    /// Self-attention.
    pub attn: MultiHeadSelfAttention,
    /// Optional LayerScale after attention.
    pub layer_scale1: Option<LayerScale>,
    /// LayerNorm before the MLP.
    pub norm2: LayerNorm,
    /// Feed-forward.
    pub mlp: Mlp,
    /// Optional LayerScale after the MLP.
    pub layer_scale2: Option<LayerScale>,
}

impl TransformerBlockConfig {
    /// Builds the block with random weights.
    pub fn init(&self, device: &Device) -> TransformerBlock {
        let norm = || LayerNormConfig::new(self.d_model).with_epsilon(self.layer_norm_eps).init(device);
        let ls = || self.layer_scale.map(|v| LayerScale::new(self.d_model, v, device));
        TransformerBlock {
            norm1: norm(),
            attn: MultiHeadSelfAttentionConfig::new(self.d_model, self.n_heads)
                .with_qkv_bias(self.qkv_bias)
                .with_causal(self.causal)
                .init(device),
            layer_scale1: ls(),
            norm2: norm(),
            mlp: MlpConfig::new(self.d_model, self.d_hidden, self.activation).init(device),
            layer_scale2: ls(),
        }
    }
}

impl TransformerBlock {
    /// `x: [batch, seq, d]` → `[batch, seq, d]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let mut a = self.attn.forward(self.norm1.forward(x.clone()));
        if let Some(ls) = &self.layer_scale1 {
            a = ls.forward(a);
        }
        let h = x + a;
        let mut m = self.mlp.forward(self.norm2.forward(h.clone()));
        if let Some(ls) = &self.layer_scale2 {
            m = ls.forward(m);
        }
        h + m
    }
}

/// Runs `x` through `blocks` in order. With `collect_hidden`, also returns every block's input and
/// the last block's output (transformers' `hidden_states`: length `blocks.len() + 1`, before any
/// final norm); otherwise the list is empty.
pub fn run_blocks(
    blocks: &[TransformerBlock],
    x: Tensor<3>,
    collect_hidden: bool,
) -> (Tensor<3>, Vec<Tensor<3>>) {
    let mut x = x;
    let mut hidden = Vec::new();
    for block in blocks {
        if collect_hidden {
            hidden.push(x.clone());
        }
        x = block.forward(x);
    }
    if collect_hidden {
        hidden.push(x.clone());
    }
    (x, hidden)
}
