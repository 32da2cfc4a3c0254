//! Multi-head self-attention with separate q/k/v/out projections (the Hugging Face layout).

use burn::module::Module;
use burn::nn::LinearConfig;

use crate::lora::LoraLinear;
use burn::prelude::*;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;

/// Configuration of [`MultiHeadSelfAttention`].
#[derive(Config, Debug)]
pub struct MultiHeadSelfAttentionConfig {
    /// Model width `d` (input and output size).
    pub d_model: usize,
    /// Number of heads `h`; `d_model` must be divisible by it (head size `d / h`).
    pub n_heads: usize,
    /// Bias on the q/k/v projections (`qkv_bias` in HF configs). The output projection always
    /// has a bias.
    #[config(default = true)]
    pub qkv_bias: bool,
    /// Causal (autoregressive) masking: position `i` attends to `j <= i` only (CLIP text tower).
    #[config(default = false)]
    pub causal: bool,
}

/// Multi-head self-attention:
/// `softmax(Q Kᵀ / sqrt(d_head) [+ causal mask]) V`, heads concatenated, then `o_proj`.
///
/// `Q = x W_q + b_q` etc. (burn stores weights `[in, out]`; PyTorch `[out, in]` checkpoints are
/// transposed by `PyTorchToBurnAdapter` at load time). Uses burn's fused
/// `burn::tensor::module::attention`, which matches the HF eager path within f32 rounding
/// (verified by the ViT/DINOv2 parity tests).
#[derive(Module, Debug)]
pub struct MultiHeadSelfAttention {
    /// Query projection `[d, d]`.
    pub q_proj: LoraLinear,
    /// Key projection `[d, d]`.
    pub k_proj: LoraLinear,
    /// Value projection `[d, d]`.
    pub v_proj: LoraLinear,
    /// Output projection `[d, d]`.
    pub o_proj: LoraLinear,
    /// Number of heads.
    #[module(skip)]
    pub n_heads: usize,
    /// Whether a causal mask is applied.
    #[module(skip)]
    pub causal: bool,
}

impl MultiHeadSelfAttentionConfig {
    /// Builds the module with random weights (to be overwritten by a checkpoint).
    ///
    /// # Panics
    /// If `d_model` is not divisible by `n_heads` or `n_heads == 0`.
    pub fn init(&self, device: &Device) -> MultiHeadSelfAttention {
        assert!(
            self.n_heads > 0 && self.d_model.is_multiple_of(self.n_heads),
            "d_model {} must be a positive multiple of n_heads {}",
            self.d_model,
            self.n_heads
        );
        let proj = |bias: bool| {
            LoraLinear::plain(LinearConfig::new(self.d_model, self.d_model).with_bias(bias).init(device))
        };
        MultiHeadSelfAttention {
            q_proj: proj(self.qkv_bias),
            k_proj: proj(self.qkv_bias),
            v_proj: proj(self.qkv_bias),
            o_proj: proj(true),
            n_heads: self.n_heads,
            causal: self.causal,
        }
    }
}

impl MultiHeadSelfAttention {
    /// `x: [batch, seq, d]` → `[batch, seq, d]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, n, d] = x.dims();
        let h = self.n_heads;
        let dh = d / h;
        let split = |t: Tensor<3>| t.reshape([b, n, h, dh]).swap_dims(1, 2);
        let q = split(self.q_proj.forward(x.clone()));
        let k = split(self.k_proj.forward(x.clone()));
        let v = split(self.v_proj.forward(x));
        let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: self.causal };
        let ctx = attention(q, k, v, None, None, options); // [b, h, n, dh]
        let ctx = ctx.swap_dims(1, 2).reshape([b, n, d]);
        self.o_proj.forward(ctx)
    }
}
