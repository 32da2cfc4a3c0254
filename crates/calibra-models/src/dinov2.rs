//! DINOv2 (Hugging Face `Dinov2Model`, and `Dinov2WithRegistersModel` at its native grid).

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::{Module, Param};
use burn::prelude::*;

use crate::encoder_output::EncoderOutput;
use crate::error::ModelError;
use crate::hf::load::blocks_min_weights;
use crate::hf::{HfConfig, KeyMap};
use crate::layers::{
    Activation, PatchEmbedding, PatchEmbeddingConfig, TransformerBlock, TransformerBlockConfig,
    interpolate_patch_positions,
};

/// Hyper-parameters of a DINOv2 encoder (fields of HF `Dinov2Config` /
/// `Dinov2WithRegistersConfig`).
#[derive(Config, Debug)]
pub struct Dinov2Config {
    /// `hidden_size`.
    pub hidden_size: usize,
    /// `num_hidden_layers`.
    pub num_layers: usize,
    /// `num_attention_heads`.
    pub num_heads: usize,
    /// `int(hidden_size * mlp_ratio)`.
    pub mlp_hidden: usize,
    /// `hidden_act`.
    pub activation: Activation,
    /// `layer_norm_eps` (HF default 1e-6).
    #[config(default = 1e-6)]
    pub layer_norm_eps: f64,
    /// `layerscale_value` (initial LayerScale; overwritten by the checkpoint).
    #[config(default = 1.0)]
    pub layerscale_value: f64,
    /// `image_size` (square).
    pub image_size: usize,
    /// `patch_size`.
    pub patch_size: usize,
    /// `num_channels`.
    #[config(default = 3)]
    pub num_channels: usize,
    /// `qkv_bias`.
    #[config(default = true)]
    pub qkv_bias: bool,
    /// `num_register_tokens` (0 for plain DINOv2).
    #[config(default = 0)]
    pub num_register_tokens: usize,
}

impl Dinov2Config {
    /// Reads the fields from a HF config (`model_type` `dinov2` or `dinov2_with_registers`).
    /// SwiGLU FFNs (`use_swiglu_ffn`, the giant models) are not supported.
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let model_type = cfg.model_type()?;
        if cfg.bool_or("use_swiglu_ffn", false)? {
            return Err(cfg.unsupported("use_swiglu_ffn = true (SwiGLU FFN) is not implemented"));
        }
        let act_name = cfg.str_or("hidden_act", "gelu")?;
        let activation = Activation::from_hf(&act_name)
            .ok_or_else(|| cfg.unsupported(format!("hidden_act '{act_name}'")))?;
        let hidden_size = cfg.req_size("hidden_size")?;
        let num_heads = cfg.req_size("num_attention_heads")?;
        cfg.check_heads("hidden_size", hidden_size, "num_attention_heads", num_heads)?;
        let mlp_ratio = cfg.positive_f64_or("mlp_ratio", 4.0)?;
        // Python int(hidden_size * mlp_ratio) truncates toward zero.
        let mlp_hidden = (hidden_size as f64 * mlp_ratio) as usize;
        if !(1..=crate::hf::config::MAX_SIZE).contains(&mlp_hidden) {
            return Err(cfg.invalid(format!(
                "fields 'hidden_size' = {hidden_size} and 'mlp_ratio' = {mlp_ratio} give an MLP width of \
                 {mlp_hidden}; expected 1 to {}",
                crate::hf::config::MAX_SIZE
            )));
        }
        let num_register_tokens =
            if model_type == "dinov2_with_registers" { cfg.usize_or("num_register_tokens", 4)? } else { 0 };
        if num_register_tokens > crate::hf::config::MAX_SIZE {
            return Err(cfg.invalid(format!(
                "field 'num_register_tokens' = {num_register_tokens} is above {}",
                crate::hf::config::MAX_SIZE
            )));
        }
        let image_size = cfg.req_square_size("image_size")?;
        let patch_size = cfg.req_square_size("patch_size")?;
        cfg.check_patch_grid(image_size, patch_size)?;
        Ok(Self {
            hidden_size,
            num_layers: cfg.req_size("num_hidden_layers")?,
            num_heads,
            mlp_hidden,
            activation,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-6)?,
            layerscale_value: cfg.finite_f64_or("layerscale_value", 1.0)?,
            image_size,
            patch_size,
            num_channels: cfg.size_or("num_channels", 3)?,
            qkv_bias: cfg.bool_or("qkv_bias", true)?,
            num_register_tokens,
        })
    }

    /// A lower bound on the number of weights of the model (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        let (d, p, g) =
            (self.hidden_size as u128, self.patch_size as u128, (self.image_size / self.patch_size) as u128);
        blocks_min_weights(self.num_layers, self.hidden_size, self.mlp_hidden)
            + (g * g + 1 + self.num_register_tokens as u128) * d
            + self.num_channels as u128 * p * p * d
    }

    /// Builds the module with placeholder weights (load a checkpoint afterwards).
    pub fn init(&self, device: &Device) -> Dinov2 {
        let d = self.hidden_size;
        let grid = self.image_size / self.patch_size;
        let block = TransformerBlockConfig::new(d, self.num_heads, self.mlp_hidden, self.activation)
            .with_layer_norm_eps(self.layer_norm_eps)
            .with_qkv_bias(self.qkv_bias)
            .with_layer_scale(Some(self.layerscale_value));
        Dinov2 {
            embeddings: Dinov2Embeddings {
                cls_token: Param::from_tensor(Tensor::zeros([1, 1, d], device)),
                register_tokens: (self.num_register_tokens > 0)
                    .then(|| Param::from_tensor(Tensor::zeros([1, self.num_register_tokens, d], device))),
                position_embeddings: Param::from_tensor(Tensor::zeros([1, grid * grid + 1, d], device)),
                patch_embeddings: PatchEmbeddingConfig::new(self.num_channels, d, self.patch_size)
                    .init(device),
            },
            blocks: (0..self.num_layers).map(|_| block.init(device)).collect(),
            layernorm: LayerNormConfig::new(d).with_epsilon(self.layer_norm_eps).init(device),
        }
    }
}

/// CLS token, optional register tokens, position embeddings, patch embedding. The mask token
/// of the checkpoint (masked-image pre-training only) is not loaded.
#[derive(Module, Debug)]
pub struct Dinov2Embeddings {
    /// `[1, 1, d]`.
    pub cls_token: Param<Tensor<3>>,
    /// `[1, r, d]` when the model has registers.
    pub register_tokens: Option<Param<Tensor<3>>>,
    /// `[1, 1 + g·g, d]` (registers have no position embedding).
    pub position_embeddings: Param<Tensor<3>>,
    /// Patch convolution.
    pub patch_embeddings: PatchEmbedding,
}

/// DINOv2 encoder with Hugging Face numerics (blocks carry LayerScale).
#[derive(Module, Debug)]
pub struct Dinov2 {
    /// Token and position embeddings.
    pub embeddings: Dinov2Embeddings,
    /// Pre-norm transformer blocks with LayerScale.
    pub blocks: Vec<TransformerBlock>,
    /// Final LayerNorm.
    pub layernorm: LayerNorm,
}

impl Dinov2 {
    /// Token embeddings `[b, 1 + r + gh·gw, d]`: `cat(cls, patches) + pos`, then the `r`
    /// register tokens inserted after CLS (HF order).
    ///
    /// Position embeddings are resized bicubically ([`interpolate_patch_positions`]) unless
    /// the patch count equals the stored one and `H == W` (HF `Dinov2Embeddings`). For models
    /// with registers HF resizes with `antialias=True`, which is a different filter; that
    /// case is refused with [`ModelError::Input`] rather than computed differently.
    pub fn embed_tokens(&self, images: Tensor<4>) -> Result<Tensor<3>, ModelError> {
        let [b, c, h, w] = images.dims();
        let conv = &self.embeddings.patch_embeddings.projection;
        let expected_c = conv.weight.dims()[1];
        let p = conv.kernel_size[0];
        if c != expected_c {
            return Err(ModelError::Input(format!(
                "images have {c} channels, the model expects {expected_c}"
            )));
        }
        if h < p || w < p {
            return Err(ModelError::Input(format!("image {h}x{w} is smaller than one {p}x{p} patch")));
        }
        let (gh, gw) = self.embeddings.patch_embeddings.grid(h, w);
        let patches = self.embeddings.patch_embeddings.forward(images);
        let d = patches.dims()[2];
        let x = Tensor::cat(vec![self.embeddings.cls_token.val().expand([b, 1, d]), patches], 1);
        let pos = self.embeddings.position_embeddings.val();
        let n_pos = pos.dims()[1] - 1;
        let pos = if n_pos == gh * gw && h == w {
            pos
        } else {
            if self.embeddings.register_tokens.is_some() {
                return Err(ModelError::Input(format!(
                    "DINOv2 with registers at {h}x{w}: position interpolation with antialias is not implemented; \
                     use the native grid ({n_pos} patches)"
                )));
            }
            let head = pos.clone().narrow(1, 0, 1);
            let grid = pos.narrow(1, 1, n_pos);
            Tensor::cat(vec![head, interpolate_patch_positions(grid, gh, gw)], 1)
        };
        let x = x + pos;
        Ok(match &self.embeddings.register_tokens {
            Some(reg) => {
                let r = reg.dims()[1];
                let n = x.dims()[1];
                Tensor::cat(
                    vec![x.clone().narrow(1, 0, 1), reg.val().expand([b, r, d]), x.narrow(1, 1, n - 1)],
                    1,
                )
            }
            None => x,
        })
    }

    /// Full forward pass; see [`crate::vit::Vit::forward`] for `collect_hidden`. `cls` is the
    /// HF `pooler_output` (CLS token after the final LayerNorm); `pooler_output` is `None`.
    pub fn forward(&self, images: Tensor<4>, collect_hidden: bool) -> Result<EncoderOutput, ModelError> {
        let (x, hidden) = crate::layers::run_blocks(&self.blocks, self.embed_tokens(images)?, collect_hidden);
        let last = self.layernorm.forward(x);
        let [b, _, d] = last.dims();
        let cls = last.clone().narrow(1, 0, 1).reshape([b, d]);
        Ok(EncoderOutput { last_hidden_state: last, cls, pooler_output: None, hidden_states: hidden })
    }
}

/// Key table for DINOv2 checkpoints (with or without registers).
///
/// Two-way rules use the names `save_pretrained` writes (transformers 4.x and 5.24):
/// `encoder.layer.{i}.attention.attention.{query,key,value}`, `attention.output.dense`,
/// `norm1/norm2`, `layer_scale1/2.lambda1`, `mlp.fc1/fc2`. Load-only rules accept the 5.x
/// in-memory names `encoder.layer.{i}.attention.{q,k,v,o}_proj`. Prefixes `dinov2.` /
/// `dinov2_with_registers.` are stripped; `embeddings.mask_token` and `classifier.*` are ignored.
pub fn dinov2_key_map() -> KeyMap {
    let build = || -> Result<KeyMap, ModelError> {
        let mut m = KeyMap::new("dinov2").strip_prefix("dinov2_with_registers.").strip_prefix("dinov2.");
        for (hf, burn) in [
            ("attention.attention.query.", "attn.q_proj."),
            ("attention.attention.key.", "attn.k_proj."),
            ("attention.attention.value.", "attn.v_proj."),
            ("attention.output.dense.", "attn.o_proj."),
            ("norm1.", "norm1."),
            ("norm2.", "norm2."),
            ("layer_scale1.", "layer_scale1."),
            ("layer_scale2.", "layer_scale2."),
            ("mlp.fc1.", "mlp.fc1."),
            ("mlp.fc2.", "mlp.fc2."),
        ] {
            m = m.rule(&format!("encoder.layer.{{i}}.{hf}"), &format!("blocks.{{i}}.{burn}"))?;
        }
        for (hf, burn) in [
            ("attention.q_proj.", "attn.q_proj."),
            ("attention.k_proj.", "attn.k_proj."),
            ("attention.v_proj.", "attn.v_proj."),
            ("attention.o_proj.", "attn.o_proj."),
        ] {
            m = m.load_only(&format!("encoder.layer.{{i}}.{hf}"), &format!("blocks.{{i}}.{burn}"))?;
        }
        for pattern in [r"^embeddings\.mask_token$", r"^classifier\."] {
            m = m.ignore(pattern)?;
        }
        Ok(m)
    };
    build().expect("static DINOv2 key table compiles")
}
