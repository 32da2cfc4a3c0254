//! ViT (Hugging Face `ViTModel`), DeiT (`DeiTModel`, with its distillation token) and the ViT-MAE
//! encoder (`ViTMAEModel`).
//!
//! ViT-MAE's encoder is a ViT without a pooler, whose position embeddings are a fixed 2-D sin-cos
//! table stored in the checkpoint; its only other difference is MAE's random masking, which
//! `ViTMAEModel` applies with the config's `mask_ratio` (0.75 in the released checkpoints) after
//! shuffling the patches by random noise. calibra embeds whole images: the result equals transformers
//! with `mask_ratio = 0` and the patches in image order (`noise = arange`), and the CLS token equals it
//! in any order, since attention does not depend on the order of its keys
//! (scripts/golden/encoders_mae.py checks both). `mask_ratio` is therefore read by nothing here.

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::prelude::*;

use crate::encoder_output::EncoderOutput;
use crate::error::ModelError;
use crate::hf::load::blocks_min_weights;
use crate::hf::{HfConfig, KeyMap};
use crate::layers::{
    Activation, PatchEmbedding, PatchEmbeddingConfig, TransformerBlock, TransformerBlockConfig,
    interpolate_patch_positions,
};

/// Hyper-parameters of a ViT/DeiT encoder (the fields of HF `ViTConfig`/`DeiTConfig` it uses).
#[derive(Config, Debug)]
pub struct VitConfig {
    /// `hidden_size`.
    pub hidden_size: usize,
    /// `num_hidden_layers`.
    pub num_layers: usize,
    /// `num_attention_heads`.
    pub num_heads: usize,
    /// `intermediate_size`.
    pub intermediate_size: usize,
    /// `hidden_act` (`gelu` → exact GELU).
    pub activation: Activation,
    /// `layer_norm_eps` (HF default 1e-12).
    #[config(default = 1e-12)]
    pub layer_norm_eps: f64,
    /// `image_size` (square) the position embeddings were trained at.
    pub image_size: usize,
    /// `patch_size`.
    pub patch_size: usize,
    /// `num_channels`.
    #[config(default = 3)]
    pub num_channels: usize,
    /// `qkv_bias`.
    #[config(default = true)]
    pub qkv_bias: bool,
    /// DeiT: a distillation token follows the CLS token.
    #[config(default = false)]
    pub distillation_token: bool,
    /// `Some(pooler_output_size)`: the HF tanh pooler (`dense` on the CLS token) is present.
    #[config(default = "None")]
    pub pooler_size: Option<usize>,
}

impl VitConfig {
    /// Reads the fields from a HF config (`model_type` `vit`, `deit` or `vit_mae`); `has_pooler` says
    /// whether the checkpoint carries `pooler.dense` weights.
    pub fn from_hf(cfg: &HfConfig, has_pooler: bool) -> Result<Self, ModelError> {
        let model_type = cfg.model_type()?;
        let act_name = cfg.str_or("hidden_act", "gelu")?;
        let activation = Activation::from_hf(&act_name)
            .ok_or_else(|| cfg.unsupported(format!("hidden_act '{act_name}'")))?;
        if has_pooler {
            let pooler_act = cfg.str_or("pooler_act", "tanh")?;
            if pooler_act != "tanh" {
                return Err(cfg.unsupported(format!("pooler_act '{pooler_act}' (only tanh)")));
            }
        }
        let hidden_size = cfg.req_size("hidden_size")?;
        let num_heads = cfg.req_size("num_attention_heads")?;
        cfg.check_heads("hidden_size", hidden_size, "num_attention_heads", num_heads)?;
        let image_size = cfg.req_square_size("image_size")?;
        let patch_size = cfg.req_square_size("patch_size")?;
        cfg.check_patch_grid(image_size, patch_size)?;
        Ok(Self {
            hidden_size,
            num_layers: cfg.req_size("num_hidden_layers")?,
            num_heads,
            intermediate_size: cfg.req_size("intermediate_size")?,
            activation,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-12)?,
            image_size,
            patch_size,
            num_channels: cfg.size_or("num_channels", 3)?,
            qkv_bias: cfg.bool_or("qkv_bias", true)?,
            distillation_token: model_type == "deit",
            pooler_size: if has_pooler {
                Some(cfg.size_or("pooler_output_size", hidden_size)?)
            } else {
                None
            },
        })
    }

    /// Number of leading special tokens (1 for ViT, 2 for DeiT).
    pub fn num_prefix_tokens(&self) -> usize {
        1 + usize::from(self.distillation_token)
    }

    /// A lower bound on the number of weights of the model (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        let (d, p, g) =
            (self.hidden_size as u128, self.patch_size as u128, (self.image_size / self.patch_size) as u128);
        blocks_min_weights(self.num_layers, self.hidden_size, self.intermediate_size)
            + (g * g + self.num_prefix_tokens() as u128) * d
            + self.num_channels as u128 * p * p * d
            + self.pooler_size.map_or(0, |s| s as u128 * d)
    }

    /// Builds the module with placeholder weights (load a checkpoint afterwards).
    pub fn init(&self, device: &Device) -> Vit {
        let d = self.hidden_size;
        let grid = self.image_size / self.patch_size;
        let n_pos = grid * grid + self.num_prefix_tokens();
        let block = TransformerBlockConfig::new(d, self.num_heads, self.intermediate_size, self.activation)
            .with_layer_norm_eps(self.layer_norm_eps)
            .with_qkv_bias(self.qkv_bias);
        Vit {
            embeddings: VitEmbeddings {
                cls_token: Param::from_tensor(Tensor::zeros([1, 1, d], device)),
                distillation_token: self
                    .distillation_token
                    .then(|| Param::from_tensor(Tensor::zeros([1, 1, d], device))),
                position_embeddings: Param::from_tensor(Tensor::zeros([1, n_pos, d], device)),
                patch_embeddings: PatchEmbeddingConfig::new(self.num_channels, d, self.patch_size)
                    .init(device),
            },
            blocks: (0..self.num_layers).map(|_| block.init(device)).collect(),
            layernorm: LayerNormConfig::new(d).with_epsilon(self.layer_norm_eps).init(device),
            pooler: self.pooler_size.map(|p| VitPooler { dense: LinearConfig::new(d, p).init(device) }),
        }
    }
}

/// CLS (+ distillation) token, position embeddings and patch embedding.
#[derive(Module, Debug)]
pub struct VitEmbeddings {
    /// `[1, 1, d]`.
    pub cls_token: Param<Tensor<3>>,
    /// DeiT only, `[1, 1, d]`.
    pub distillation_token: Option<Param<Tensor<3>>>,
    /// `[1, prefix + g·g, d]`.
    pub position_embeddings: Param<Tensor<3>>,
    /// Patch convolution.
    pub patch_embeddings: PatchEmbedding,
}

/// HF ViT/DeiT pooler: `tanh(dense(h_CLS))`.
#[derive(Module, Debug)]
pub struct VitPooler {
    /// `[d, pooler_output_size]`.
    pub dense: Linear,
}

/// ViT / DeiT encoder with Hugging Face numerics.
#[derive(Module, Debug)]
pub struct Vit {
    /// Token and position embeddings.
    pub embeddings: VitEmbeddings,
    /// Pre-norm transformer blocks.
    pub blocks: Vec<TransformerBlock>,
    /// Final LayerNorm.
    pub layernorm: LayerNorm,
    /// Optional tanh pooler.
    pub pooler: Option<VitPooler>,
}

impl Vit {
    /// Number of leading special tokens (1 ViT, 2 DeiT).
    pub fn num_prefix_tokens(&self) -> usize {
        1 + usize::from(self.embeddings.distillation_token.is_some())
    }

    /// Token embeddings `[b, prefix + gh·gw, d]` for `images: [b, c, H, W]`.
    ///
    /// Position embeddings are used as stored when the patch count equals the stored one and
    /// `H == W`; otherwise the patch part is resized with
    /// [`interpolate_patch_positions`] (HF `interpolate_pos_encoding=True`). `H`, `W` must be at
    /// least one patch; trailing pixels that do not fill a patch are dropped (as in HF).
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
        let mut tokens = vec![self.embeddings.cls_token.val().expand([b, 1, d])];
        if let Some(dist) = &self.embeddings.distillation_token {
            tokens.push(dist.val().expand([b, 1, d]));
        }
        tokens.push(patches);
        let x = Tensor::cat(tokens, 1);
        let pos = self.embeddings.position_embeddings.val();
        let prefix = self.num_prefix_tokens();
        let n_pos = pos.dims()[1] - prefix;
        let pos = if n_pos == gh * gw && h == w {
            pos
        } else {
            let head = pos.clone().narrow(1, 0, prefix);
            let grid = pos.narrow(1, prefix, n_pos);
            Tensor::cat(vec![head, interpolate_patch_positions(grid, gh, gw)], 1)
        };
        Ok(x + pos)
    }

    /// Full forward pass. `collect_hidden`: also return the embedding output and every block
    /// output (HF `hidden_states`, length `num_layers + 1`, before the final LayerNorm).
    pub fn forward(&self, images: Tensor<4>, collect_hidden: bool) -> Result<EncoderOutput, ModelError> {
        let (x, hidden) = crate::layers::run_blocks(&self.blocks, self.embed_tokens(images)?, collect_hidden);
        let last = self.layernorm.forward(x);
        let [b, _, d] = last.dims();
        let cls = last.clone().narrow(1, 0, 1).reshape([b, d]);
        let pooler_output = self.pooler.as_ref().map(|p| p.dense.forward(cls.clone()).tanh());
        Ok(EncoderOutput { last_hidden_state: last, cls, pooler_output, hidden_states: hidden })
    }
}

/// Key table for ViT/DeiT checkpoints.
///
/// Two-way rules (read and written on save) use the names `save_pretrained` writes in
/// transformers 4.x *and* 5.24 (5.x converts back to them on save):
/// `encoder.layer.{i}.attention.attention.{query,key,value}`, `attention.output.dense`,
/// `intermediate.dense`, `output.dense`, `layernorm_before/after`. Load-only rules accept the
/// transformers 5.x in-memory names (`layers.{i}.attention.{q,k,v,o}_proj`,
/// `layers.{i}.mlp.fc1/fc2`, `layers.{i}.layernorm_before/after`). Prefixes `vit.`/`deit.` (task
/// models) are stripped; heads (`classifier`, `distillation_classifier`, `cls_classifier`), the
/// MIM `decoder` and `embeddings.mask_token` are ignored. The same table reads ViT-MAE:
/// `ViTMAEModel` saves these names, and `ViTMAEForPreTraining` (what `facebook/vit-mae-*` ship) adds
/// `vit.` and the pre-training `decoder.`.
pub fn vit_key_map() -> KeyMap {
    let build = || -> Result<KeyMap, ModelError> {
        let mut m = KeyMap::new("vit").strip_prefix("vit.").strip_prefix("deit.");
        let l4 = "encoder.layer.{i}.";
        for (hf, burn) in [
            ("attention.attention.query.", "attn.q_proj."),
            ("attention.attention.key.", "attn.k_proj."),
            ("attention.attention.value.", "attn.v_proj."),
            ("attention.output.dense.", "attn.o_proj."),
            ("layernorm_before.", "norm1."),
            ("layernorm_after.", "norm2."),
            ("intermediate.dense.", "mlp.fc1."),
            ("output.dense.", "mlp.fc2."),
        ] {
            m = m.rule(&format!("{l4}{hf}"), &format!("blocks.{{i}}.{burn}"))?;
        }
        for (hf, burn) in [
            ("attention.q_proj.", "attn.q_proj."),
            ("attention.k_proj.", "attn.k_proj."),
            ("attention.v_proj.", "attn.v_proj."),
            ("attention.o_proj.", "attn.o_proj."),
            ("layernorm_before.", "norm1."),
            ("layernorm_after.", "norm2."),
            ("mlp.fc1.", "mlp.fc1."),
            ("mlp.fc2.", "mlp.fc2."),
        ] {
            m = m.load_only(&format!("layers.{{i}}.{hf}"), &format!("blocks.{{i}}.{burn}"))?;
        }
        for pattern in [
            r"^embeddings\.mask_token$",
            r"^classifier\.",
            r"^distillation_classifier\.",
            r"^cls_classifier\.",
            r"^decoder\.",
        ] {
            m = m.ignore(pattern)?;
        }
        Ok(m)
    };
    build().expect("static ViT key table compiles")
}
