//! The small attention networks HiCroPL maps prompts with (reference `zzeoZheng/HiCroPL
//! trainers/hicropl.py`: `CrossPromptAttention`, the multi-scale knowledge mapper, and
//! `AttentionPooling`, the layer-specific knowledge proxy), on 2-D prompt matrices `[rows, width]`.
//!
//! Every parameter is a 2-D matrix in PyTorch's layout (`nn.Linear.weight` is `[out, in]`; biases and
//! LayerNorm vectors are `[1, n]`), named as in the reference's state dict (for example
//! `attn.in_proj_weight`, `ffn.c_fc.bias`), so values can be set by name ([`NamedParams`]).
//!
//! - multi-head attention is `torch.nn.MultiheadAttention` on unbatched inputs: `q`, `k`, `v`
//!   projected by the rows of `in_proj_weight`, split into `heads` heads,
//!   `softmax(q_h k_hᵀ / √d_h) v_h`, concatenated and projected by `out_proj`;
//! - LayerNorm is `nn.LayerNorm` (biased variance, eps 1e-5);
//! - QuickGELU is `x · sigmoid(1.702 x)`.

use burn::module::{Module, Param};
use burn::prelude::*;
use burn::tensor::activation::softmax;

use crate::error::ModelError;
use crate::layers::quick_gelu;

/// `nn.LayerNorm`'s epsilon.
const LAYER_NORM_EPS: f64 = 1e-5;

/// How a parameter starts, as PyTorch initialises it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InitValues {
    /// `U(−bound, bound)`.
    Uniform(f64),
    /// All zeros.
    Zeros,
}

/// Gives the row-major values of a parameter of `count` values with the init `InitValues`.
pub type ValueSource<'a> = dyn FnMut(usize, InitValues) -> Vec<f32> + 'a;

/// A module whose parameters can be listed and replaced by their reference names.
pub trait NamedParams {
    /// Every parameter, with its name under `prefix` (the reference's state-dict name).
    fn named_params<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Param<Tensor<2>>)>);
}

/// `name` joined under `prefix` with a dot.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
}

/// A `[rows, cols]` parameter from row-major values.
pub(crate) fn matrix_param(values: Vec<f32>, rows: usize, cols: usize, device: &Device) -> Param<Tensor<2>> {
    Param::from_tensor(Tensor::from_data(TensorData::new(values, [rows, cols]), device))
}

/// `nn.Linear` in PyTorch's layout: `y = x Wᵀ + b`.
#[derive(Module, Debug)]
pub struct TorchLinear {
    /// `[out, in]`.
    pub weight: Param<Tensor<2>>,
    /// `[1, out]`.
    pub bias: Param<Tensor<2>>,
}

impl TorchLinear {
    /// A `d_in → d_out` map, weight then bias from `values` with `nn.Linear`'s default init
    /// (`U(±1/√d_in)` for both).
    pub fn new(d_in: usize, d_out: usize, values: &mut ValueSource<'_>, device: &Device) -> Self {
        let bound = InitValues::Uniform(1.0 / (d_in as f64).sqrt());
        let weight = matrix_param(values(d_out * d_in, bound), d_out, d_in, device);
        let bias = matrix_param(values(d_out, bound), 1, d_out, device);
        TorchLinear { weight, bias }
    }

    /// `x Wᵀ + b` for `x: [rows, in]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        x.matmul(self.weight.val().transpose()) + self.bias.val()
    }
}

impl NamedParams for TorchLinear {
    fn named_params<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Param<Tensor<2>>)>) {
        out.push((join(prefix, "weight"), &mut self.weight));
        out.push((join(prefix, "bias"), &mut self.bias));
    }
}

/// `nn.LayerNorm` over the last dimension.
#[derive(Module, Debug)]
pub struct TorchLayerNorm {
    /// `[1, n]`.
    pub weight: Param<Tensor<2>>,
    /// `[1, n]`.
    pub bias: Param<Tensor<2>>,
}

impl TorchLayerNorm {
    /// Weight 1, bias 0 (PyTorch's init).
    pub fn new(n: usize, device: &Device) -> Self {
        TorchLayerNorm {
            weight: matrix_param(vec![1.0; n], 1, n, device),
            bias: matrix_param(vec![0.0; n], 1, n, device),
        }
    }

    /// Normalises each row of `x: [rows, n]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let (var, mean) = x.clone().var_mean_bias(1);
        (x - mean) / (var + LAYER_NORM_EPS).sqrt() * self.weight.val() + self.bias.val()
    }
}

impl NamedParams for TorchLayerNorm {
    fn named_params<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Param<Tensor<2>>)>) {
        out.push((join(prefix, "weight"), &mut self.weight));
        out.push((join(prefix, "bias"), &mut self.bias));
    }
}

/// `torch.nn.MultiheadAttention(width, heads)` on unbatched inputs, without dropout.
#[derive(Module, Debug)]
pub struct PromptAttention {
    /// `[3·width, width]`: the query, key and value projections, stacked.
    pub in_proj_weight: Param<Tensor<2>>,
    /// `[1, 3·width]`.
    pub in_proj_bias: Param<Tensor<2>>,
    /// The output projection.
    pub out_proj: TorchLinear,
    /// Number of heads.
    #[module(skip)]
    pub heads: usize,
}

impl PromptAttention {
    /// Parameters from `values` with `nn.MultiheadAttention`'s init: `in_proj_weight`
    /// Xavier-uniform, `out_proj.weight` `U(±1/√width)`, both biases zero. Errors unless `heads`
    /// divides `width`.
    pub fn new(
        width: usize,
        heads: usize,
        values: &mut ValueSource<'_>,
        device: &Device,
    ) -> Result<Self, ModelError> {
        if heads == 0 || !width.is_multiple_of(heads) {
            return Err(ModelError::Input(format!(
                "prompt attention: {heads} heads do not divide the width {width}"
            )));
        }
        let xavier = InitValues::Uniform((6.0 / (4 * width) as f64).sqrt());
        let in_proj_weight = matrix_param(values(3 * width * width, xavier), 3 * width, width, device);
        let in_proj_bias = matrix_param(values(3 * width, InitValues::Zeros), 1, 3 * width, device);
        let out_weight = InitValues::Uniform(1.0 / (width as f64).sqrt());
        let out_proj = TorchLinear {
            weight: matrix_param(values(width * width, out_weight), width, width, device),
            bias: matrix_param(values(width, InitValues::Zeros), 1, width, device),
        };
        Ok(PromptAttention { in_proj_weight, in_proj_bias, out_proj, heads })
    }

    /// Attention of the rows of `q: [l, width]` over `k`, `v: [s, width]`: `[l, width]`.
    pub fn forward(&self, q: Tensor<2>, k: Tensor<2>, v: Tensor<2>) -> Tensor<2> {
        let width = q.dims()[1];
        let (w, b) = (self.in_proj_weight.val(), self.in_proj_bias.val());
        let project = |x: Tensor<2>, part: usize| {
            let wp = w.clone().narrow(0, part * width, width);
            let bp = b.clone().narrow(1, part * width, width);
            x.matmul(wp.transpose()) + bp
        };
        let (q, k, v) = (project(q, 0), project(k, 1), project(v, 2));
        let (l, s, h) = (q.dims()[0], k.dims()[0], self.heads);
        let d = width / h;
        // [rows, width] → [h, rows, d]
        let heads = |x: Tensor<2>, rows: usize| x.reshape([rows, h, d]).swap_dims(0, 1);
        let (q, k, v) = (heads(q, l), heads(k, s), heads(v, s));
        let scores = q.matmul(k.swap_dims(1, 2)) / (d as f64).sqrt();
        let out = softmax(scores, 2).matmul(v); // [h, l, d]
        self.out_proj.forward(out.swap_dims(0, 1).reshape([l, width]))
    }
}

impl NamedParams for PromptAttention {
    fn named_params<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Param<Tensor<2>>)>) {
        out.push((join(prefix, "in_proj_weight"), &mut self.in_proj_weight));
        out.push((join(prefix, "in_proj_bias"), &mut self.in_proj_bias));
        self.out_proj.named_params(&join(prefix, "out_proj"), out);
    }
}

/// HiCroPL's layer-specific knowledge proxy (`AttentionPooling`): a query token attends over a
/// layer's prompts, `ln_2(q + attn(ln_1(q), ln_1(k), ln_1(v)))`.
#[derive(Module, Debug)]
pub struct AttentionPooling {
    /// The attention.
    pub attn: PromptAttention,
    /// Applied to the query, keys and values.
    pub ln_1: TorchLayerNorm,
    /// Applied to the result.
    pub ln_2: TorchLayerNorm,
}

impl AttentionPooling {
    /// A pooling of `width`-wide prompts with `heads` heads.
    pub fn new(
        width: usize,
        heads: usize,
        values: &mut ValueSource<'_>,
        device: &Device,
    ) -> Result<Self, ModelError> {
        let attn = PromptAttention::new(width, heads, values, device)?;
        Ok(AttentionPooling {
            attn,
            ln_1: TorchLayerNorm::new(width, device),
            ln_2: TorchLayerNorm::new(width, device),
        })
    }

    /// The pooled token `[1, width]` of query `q: [1, width]` over the prompts `kv: [m, width]`.
    pub fn forward(&self, q: Tensor<2>, kv: Tensor<2>) -> Tensor<2> {
        let kv = self.ln_1.forward(kv);
        let attended = self.attn.forward(self.ln_1.forward(q.clone()), kv.clone(), kv);
        self.ln_2.forward(q + attended)
    }
}

impl NamedParams for AttentionPooling {
    fn named_params<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Param<Tensor<2>>)>) {
        self.attn.named_params(&join(prefix, "attn"), out);
        self.ln_1.named_params(&join(prefix, "ln_1"), out);
        self.ln_2.named_params(&join(prefix, "ln_2"), out);
    }
}

/// HiCroPL's multi-scale knowledge mapper (`CrossPromptAttention`): prompts of one tower (`q`,
/// `width` wide) attend over proxies of the other (`k`, `v`, `source` wide):
/// `q' = linear_q(q) + attn(ln_1(linear_q(q)), ln_1(linear_k(k)), ln_1(linear_v(v)))`, then
/// `q' + c_proj(QuickGELU(c_fc(ln_2(q'))))`.
#[derive(Module, Debug)]
pub struct CrossPromptAttention {
    /// The attention, `width` wide.
    pub attn: PromptAttention,
    /// `width → width`.
    pub linear_q: TorchLinear,
    /// `source → width`.
    pub linear_k: TorchLinear,
    /// `source → width`.
    pub linear_v: TorchLinear,
    /// Before the attention.
    pub ln_1: TorchLayerNorm,
    /// The feed-forward expansion, `width → 4·width`.
    pub c_fc: TorchLinear,
    /// Back to `width`.
    pub c_proj: TorchLinear,
    /// Before the feed-forward.
    pub ln_2: TorchLayerNorm,
}

impl CrossPromptAttention {
    /// A mapper into `width`-wide prompts from `source`-wide proxies, `heads` heads. Parameters are
    /// created in the reference's registration order (`attn`, `linear_q`, `linear_k`, `linear_v`,
    /// `ffn.c_fc`, `ffn.c_proj`), each from `values`.
    pub fn new(
        width: usize,
        source: usize,
        heads: usize,
        values: &mut ValueSource<'_>,
        device: &Device,
    ) -> Result<Self, ModelError> {
        let attn = PromptAttention::new(width, heads, values, device)?;
        let linear_q = TorchLinear::new(width, width, values, device);
        let linear_k = TorchLinear::new(source, width, values, device);
        let linear_v = TorchLinear::new(source, width, values, device);
        let c_fc = TorchLinear::new(width, 4 * width, values, device);
        let c_proj = TorchLinear::new(4 * width, width, values, device);
        Ok(CrossPromptAttention {
            attn,
            linear_q,
            linear_k,
            linear_v,
            ln_1: TorchLayerNorm::new(width, device),
            c_fc,
            c_proj,
            ln_2: TorchLayerNorm::new(width, device),
        })
    }

    /// The mapped prompts `[rows, width]` of `q: [rows, width]` given the proxies `kv: [s, source]`.
    pub fn forward(&self, q: Tensor<2>, kv: Tensor<2>) -> Tensor<2> {
        let q = self.linear_q.forward(q);
        let k = self.ln_1.forward(self.linear_k.forward(kv.clone()));
        let v = self.ln_1.forward(self.linear_v.forward(kv));
        let q = q.clone() + self.attn.forward(self.ln_1.forward(q), k, v);
        let hidden = self.c_fc.forward(self.ln_2.forward(q.clone()));
        let hidden = quick_gelu(hidden);
        q + self.c_proj.forward(hidden)
    }
}

impl NamedParams for CrossPromptAttention {
    fn named_params<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Param<Tensor<2>>)>) {
        self.attn.named_params(&join(prefix, "attn"), out);
        self.linear_q.named_params(&join(prefix, "linear_q"), out);
        self.linear_k.named_params(&join(prefix, "linear_k"), out);
        self.linear_v.named_params(&join(prefix, "linear_v"), out);
        self.ln_1.named_params(&join(prefix, "ln_1"), out);
        self.c_fc.named_params(&join(prefix, "ffn.c_fc"), out);
        self.c_proj.named_params(&join(prefix, "ffn.c_proj"), out);
        self.ln_2.named_params(&join(prefix, "ln_2"), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(count: usize) -> Vec<f32> {
        (0..count).map(|j| ((j as f32) * 0.37).sin() * 0.3).collect()
    }

    #[test]
    fn attention_over_one_key_returns_the_projected_value() {
        // With a single key the softmax weight is 1, so the output is out_proj(v W_vᵀ + b_v) for
        // every query row, whatever the queries.
        let device = Device::flex();
        let attn = PromptAttention::new(8, 2, &mut |n, _| ramp(n), &device).unwrap();
        let q = Tensor::<2>::from_data(TensorData::new(ramp(24), [3, 8]), &device);
        let kv = Tensor::<2>::from_data(
            TensorData::new(ramp(8).iter().map(|x| x + 0.5).collect::<Vec<_>>(), [1, 8]),
            &device,
        );
        let out = attn.forward(q, kv.clone(), kv.clone());
        let w = attn.in_proj_weight.val().narrow(0, 16, 8);
        let b = attn.in_proj_bias.val().narrow(1, 16, 8);
        let expected = attn.out_proj.forward(kv.matmul(w.transpose()) + b);
        let out: Vec<f32> = out.to_data().iter::<f32>().collect();
        let expected: Vec<f32> = expected.to_data().iter::<f32>().collect();
        for r in 0..3 {
            for c in 0..8 {
                assert!((out[r * 8 + c] - expected[c]).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn heads_must_divide_the_width() {
        let e = PromptAttention::new(10, 8, &mut |n, _| vec![0.0; n], &Device::flex()).unwrap_err();
        assert!(e.to_string().contains("8 heads do not divide the width 10"), "{e}");
    }

    #[test]
    fn names_follow_the_reference_state_dict() {
        let mut m = CrossPromptAttention::new(8, 4, 2, &mut |n, _| vec![0.0; n], &Device::flex()).unwrap();
        let mut named = Vec::new();
        m.named_params("text2visual_net", &mut named);
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"text2visual_net.attn.out_proj.weight"));
        assert!(names.contains(&"text2visual_net.ffn.c_fc.bias"));
        assert!(names.contains(&"text2visual_net.linear_k.weight"));
        assert_eq!(named.iter().find(|(n, _)| n.ends_with("linear_k.weight")).unwrap().1.dims(), [8, 4]);
    }
}
