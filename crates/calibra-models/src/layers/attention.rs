//! Multi-head self-attention with separate q/k/v/out projections (the Hugging Face layout).

use burn::module::Module;
use burn::nn::LinearConfig;

use super::softmax_attention::softmax_attention;
use crate::lora::{LoraBranch, LoraLinear};
use burn::prelude::*;

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
/// transposed by `PyTorchToBurnAdapter` at load time). Attention runs through
/// [`softmax_attention`](super::softmax_attention): burn's fused
/// `burn::tensor::module::attention` when no gradient is needed, which matches the HF eager path
/// within f32 rounding (verified by the ViT/DINOv2 parity tests), and one op with a closed-form
/// backward pass when one is.
///
/// **The fused attention hides NaN** (burn-flex 0.22.1, both its naive and flash kernels): a score
/// row with no value above −∞ is taken for a fully masked row and its output set to zero, and a
/// NaN never compares above −∞. A NaN in the query or key weights makes every score of its head NaN,
/// so that head outputs zeros and the model returns finite, wrong features, where PyTorch's
/// softmax (and so transformers) returns NaN. NaN in value / MLP weights still propagates. This is
/// why weights are checked for non-finite values at load (`hf::load`), and features / logits /
/// losses before they are written; `tests::fused_attention_turns_nan_scores_into_zeros` pins the
/// behaviour.
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
    /// A LoRA branch over the packed q/k/v projection, as PEFT adapts timm's fused `attn.qkv`
    /// Linear (`d → 3·d`): one A `[r, d]` and one B `[3·d, r]`, its output `[.., 3·d]` added to q,
    /// k and v in that order (rows `0..d`, `d..2d`, `2d..3d` of timm's `qkv`). See
    /// [`crate::lora::FusedQkv`].
    pub qkv_lora: Option<LoraBranch>,
    /// Whether `qkv_lora` has been folded into the q/k/v weights (then `forward` skips it).
    #[module(skip)]
    pub qkv_merged: bool,
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
            qkv_lora: None,
            qkv_merged: false,
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
        let (mut q, mut k, mut v) =
            (self.q_proj.forward(x.clone()), self.k_proj.forward(x.clone()), self.v_proj.forward(x.clone()));
        if let (Some(branch), false) = (&self.qkv_lora, self.qkv_merged) {
            let delta = branch.forward(x); // [b, n, 3·d]: q, k, v parts in that order
            q = q + delta.clone().narrow(2, 0, d);
            k = k + delta.clone().narrow(2, d, d);
            v = v + delta.narrow(2, 2 * d, d);
        }
        let (q, k, v) = (split(q), split(k), split(v));
        let ctx = softmax_attention(q, k, v, self.causal); // [b, h, n, dh]
        let ctx = ctx.swap_dims(1, 2).reshape([b, n, d]);
        self.o_proj.forward(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::module::attention;
    use burn::tensor::ops::AttentionModuleOptions;

    /// Issue 20, defect 5: one NaN feature in every key makes the whole score row NaN. PyTorch's
    /// softmax gives NaN; burn's fused attention gives zeros (finite, wrong). If burn changes this,
    /// update the note on [`MultiHeadSelfAttention`].
    #[test]
    fn fused_attention_turns_nan_scores_into_zeros() {
        let device = Device::flex();
        let (n, dh) = (4, 2);
        let values = |f: &dyn Fn(usize) -> f32| -> Vec<f32> { (0..n * dh).map(f).collect() };
        let q = Tensor::<4>::from_data(TensorData::new(values(&|i| 0.1 * i as f32), [1, 1, n, dh]), &device);
        let k_values = values(&|i| if i % dh == 1 { f32::NAN } else { 0.2 - 0.05 * i as f32 });
        let k = Tensor::<4>::from_data(TensorData::new(k_values, [1, 1, n, dh]), &device);
        let v = Tensor::<4>::from_data(TensorData::new(values(&|i| 1.0 + i as f32), [1, 1, n, dh]), &device);
        let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: false };
        let fused = attention(q.clone(), k.clone(), v.clone(), None, None, options)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let scores = q.matmul(k.swap_dims(2, 3)) / (dh as f32).sqrt();
        let eager =
            burn::tensor::activation::softmax(scores, 3).matmul(v).into_data().try_to_vec::<f32>().unwrap();
        assert!(eager.iter().all(|x| x.is_nan()), "eager softmax attention: {eager:?}");
        assert!(fused.iter().all(|&x| x == 0.0), "fused attention: {fused:?}");
    }
}
