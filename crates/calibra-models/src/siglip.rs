//! SigLIP vision tower (Hugging Face `SiglipVisionModel` numerics, transformers 5.24): patch
//! embedding with bias and no CLS token, pre-norm blocks with tanh-GELU, a final LayerNorm on the
//! whole sequence, and the multi-head attention-pooling head (`SiglipMultiheadAttentionPoolingHead`).

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::{Module, Param};
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;

use crate::clip::TowerOutput;
use crate::error::ModelError;
use crate::gemma3_projector::{Gemma3Projector, Gemma3ProjectorConfig};
use crate::hf::{HfConfig, KeyMap, LoadOptions, load_safetensors, read_config, resolve_checkpoint};
use crate::layers::{
    Activation, Mlp, MlpConfig, PatchEmbedding, PatchEmbeddingConfig, TransformerBlock,
    TransformerBlockConfig, interpolate_patch_positions,
};

/// Configuration of [`SiglipVisionTransformer`] (HF `SiglipVisionConfig` fields in brackets).
#[derive(Config, Debug)]
pub struct SiglipVisionConfig {
    /// Width `d` [`hidden_size`].
    pub d_model: usize,
    /// Number of blocks [`num_hidden_layers`].
    pub n_layers: usize,
    /// Attention heads [`num_attention_heads`] (also the pooling head's).
    pub n_heads: usize,
    /// MLP width [`intermediate_size`].
    pub d_hidden: usize,
    /// Training resolution (square) [`image_size`].
    pub image_size: usize,
    /// Patch side [`patch_size`].
    pub patch_size: usize,
    /// Input channels [`num_channels`].
    #[config(default = 3)]
    pub num_channels: usize,
    /// LayerNorm epsilon [`layer_norm_eps`].
    #[config(default = 1e-6)]
    pub layer_norm_eps: f64,
    /// MLP activation [`hidden_act`, default `gelu_pytorch_tanh`].
    #[config(default = "Activation::GeluTanh")]
    pub activation: Activation,
    /// Whether the attention-pooling head exists [`vision_use_head`, default true].
    #[config(default = true)]
    pub use_head: bool,
    /// MedGemma's multimodal projector, for a tower directory that carries it (`calibra_projector`,
    /// [`crate::gemma3_projector`]); the feature is then the mean of the projected tokens.
    #[config(default = "None")]
    pub projector: Option<Gemma3ProjectorConfig>,
}

impl SiglipVisionConfig {
    /// Reads a `SiglipVisionConfig` object (a `siglip_vision_model` config, or the `vision_config`
    /// of a `siglip` config). Defaults are transformers 5.24's.
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let act = cfg.str_or("hidden_act", "gelu_pytorch_tanh")?;
        let activation = Activation::from_hf(&act).ok_or_else(|| {
            cfg.unsupported(format!(
                "SigLIP hidden_act '{act}' (expected gelu_pytorch_tanh, gelu, quick_gelu)"
            ))
        })?;
        let d_model = cfg.size_or("hidden_size", 768)?;
        let n_heads = cfg.size_or("num_attention_heads", 12)?;
        cfg.check_heads("hidden_size", d_model, "num_attention_heads", n_heads)?;
        let image_size = cfg.square_size_or("image_size", 224)?;
        let patch_size = cfg.square_size_or("patch_size", 16)?;
        cfg.check_patch_grid(image_size, patch_size)?;
        let use_head = cfg.bool_or("vision_use_head", true)?;
        let projector = Gemma3ProjectorConfig::from_tower_config(cfg)?;
        if let Some(p) = &projector {
            if use_head {
                return Err(cfg.unsupported(
                    "a projector ('calibra_projector') on a tower with its attention-pooling head \
                     (vision_use_head): Gemma 3's tower has no head",
                ));
            }
            p.tokens_per_side(image_size / patch_size, cfg)?;
        }
        Ok(Self {
            d_model,
            n_layers: cfg.size_or("num_hidden_layers", 12)?,
            n_heads,
            d_hidden: cfg.size_or("intermediate_size", 3072)?,
            image_size,
            patch_size,
            num_channels: cfg.size_or("num_channels", 3)?,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-6)?,
            activation,
            use_head,
            projector,
        })
    }

    /// A lower bound on the number of weights of the tower (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        let (d, p, g) =
            (self.d_model as u128, self.patch_size as u128, (self.image_size / self.patch_size) as u128);
        crate::hf::load::blocks_min_weights(self.n_layers, self.d_model, self.d_hidden)
            + g * g * d
            + self.num_channels as u128 * p * p * d
    }

    /// Builds the tower with random weights (to be overwritten by a checkpoint).
    pub fn init(&self, device: &Device) -> SiglipVisionTransformer {
        let grid = self.image_size / self.patch_size;
        let norm = || LayerNormConfig::new(self.d_model).with_epsilon(self.layer_norm_eps).init(device);
        SiglipVisionTransformer {
            patch_embedding: PatchEmbeddingConfig::new(self.num_channels, self.d_model, self.patch_size)
                .init(device),
            position_embedding: EmbeddingConfig::new(grid * grid, self.d_model).init(device),
            blocks: (0..self.n_layers)
                .map(|_| {
                    TransformerBlockConfig::new(self.d_model, self.n_heads, self.d_hidden, self.activation)
                        .with_layer_norm_eps(self.layer_norm_eps)
                        .init(device)
                })
                .collect(),
            post_layernorm: norm(),
            head: self.use_head.then(|| SiglipAttentionPoolingHead {
                probe: Param::from_tensor(Tensor::zeros([1, 1, self.d_model], device)),
                in_proj: LinearConfig::new(self.d_model, 3 * self.d_model).init(device),
                out_proj: LinearConfig::new(self.d_model, self.d_model).init(device),
                layernorm: norm(),
                mlp: MlpConfig::new(self.d_model, self.d_hidden, self.activation).init(device),
                n_heads: self.n_heads,
            }),
            projector: self
                .projector
                .as_ref()
                .map(|p| p.init(self.d_model, grid, self.layer_norm_eps, device)),
        }
    }
}

/// SigLIP's attention-pooling head: one learned query (`probe`) attends over the sequence with
/// `torch.nn.MultiheadAttention` (packed `in_proj` = `[W_q; W_k; W_v]`, scale `1/√d_head`), then a
/// residual MLP:
///
/// ```text
/// a = out_proj(MHA(q = probe, k = v = x))          [b, 1, d]
/// y = a + mlp(LN(a));  pooled = y[:, 0]
/// ```
#[derive(Module, Debug)]
pub struct SiglipAttentionPoolingHead {
    /// The query `[1, 1, d]` (HF `head.probe`).
    pub probe: Param<Tensor<3>>,
    /// Packed q/k/v projection `[d, 3d]` (HF `head.attention.in_proj_weight` / `in_proj_bias`).
    pub in_proj: Linear,
    /// Output projection (HF `head.attention.out_proj`).
    pub out_proj: Linear,
    /// LayerNorm before the MLP (HF `head.layernorm`).
    pub layernorm: LayerNorm,
    /// MLP (HF `head.mlp`).
    pub mlp: Mlp,
    /// Number of heads.
    #[module(skip)]
    pub n_heads: usize,
}

impl SiglipAttentionPoolingHead {
    /// `x: [b, n, d]` → `[b, d]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<2> {
        let [b, n, d] = x.dims();
        let h = self.n_heads;
        let dh = d / h;
        let probe = self.probe.val().expand([b, 1, d]);
        let q = self.in_proj.forward(probe).narrow(2, 0, d); // [b, 1, d]
        let kv = self.in_proj.forward(x); // [b, n, 3d]
        let k = kv.clone().narrow(2, d, d);
        let v = kv.narrow(2, 2 * d, d);
        let heads = |t: Tensor<3>, len: usize| t.reshape([b, len, h, dh]).swap_dims(1, 2);
        let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: false };
        let ctx = attention(heads(q, 1), heads(k, n), heads(v, n), None, None, options); // [b, h, 1, dh]
        let a = self.out_proj.forward(ctx.swap_dims(1, 2).reshape([b, 1, d]));
        let y = a.clone() + self.mlp.forward(self.layernorm.forward(a));
        y.reshape([b, d])
    }
}

/// SigLIP vision transformer:
///
/// ```text
/// x₀ = patches(img) + pos                  no CLS; pos bicubically resized for another grid
/// x_l = block_l(x_{l-1})
/// last_hidden_state = post_LN(x_L)
/// pooled = head(last_hidden_state)          (mean of last_hidden_state when there is no head)
/// ```
#[derive(Module, Debug)]
pub struct SiglipVisionTransformer {
    /// Patch convolution with bias (HF `embeddings.patch_embedding`).
    pub patch_embedding: PatchEmbedding,
    /// Learned positions `[g², d]` (HF `embeddings.position_embedding`).
    pub position_embedding: Embedding,
    /// Transformer blocks (HF `encoder.layers.N`).
    pub blocks: Vec<TransformerBlock>,
    /// Final LayerNorm on the sequence (HF `post_layernorm`).
    pub post_layernorm: LayerNorm,
    /// Attention-pooling head (HF `head`), absent when `vision_use_head` is false.
    pub head: Option<SiglipAttentionPoolingHead>,
    /// MedGemma's multimodal projector (HF `multi_modal_projector`), when the directory carries it.
    pub projector: Option<Gemma3Projector>,
}

/// Key table for SigLIP vision checkpoints: transformers 5.x `SiglipVisionModel` names
/// (`embeddings.*`, `encoder.layers.N.*`, `post_layernorm.*`, `head.*`), 4.x names (the same
/// under `vision_model.`), and full `SiglipModel` checkpoints (text tower and logit scale/bias
/// ignored).
pub fn siglip_vision_keymap() -> Result<KeyMap, ModelError> {
    let map = siglip_vision_rules(KeyMap::new("siglip_vision_model").strip_prefix("vision_model."), "", "")?;
    map.ignore(r"^text_model\.")?.ignore(r"^logit_(scale|bias)$")?.ignore(r"position_ids$")
}

/// The vision tower's rules, HF names under `hf` mapped to module paths under `burn` (shared by
/// [`siglip_vision_keymap`] and the joint model's key table, `crate::siglip_model`).
pub(crate) fn siglip_vision_rules(mut map: KeyMap, hf: &str, burn: &str) -> Result<KeyMap, ModelError> {
    for (from, to) in [
        ("encoder.layers.{i}.self_attn.q_proj.", "blocks.{i}.attn.q_proj."),
        ("encoder.layers.{i}.self_attn.k_proj.", "blocks.{i}.attn.k_proj."),
        ("encoder.layers.{i}.self_attn.v_proj.", "blocks.{i}.attn.v_proj."),
        ("encoder.layers.{i}.self_attn.out_proj.", "blocks.{i}.attn.o_proj."),
        ("encoder.layers.{i}.layer_norm1.", "blocks.{i}.norm1."),
        ("encoder.layers.{i}.layer_norm2.", "blocks.{i}.norm2."),
        ("encoder.layers.{i}.mlp.fc1.", "blocks.{i}.mlp.fc1."),
        ("encoder.layers.{i}.mlp.fc2.", "blocks.{i}.mlp.fc2."),
        ("embeddings.patch_embedding.", "patch_embedding.projection."),
        ("embeddings.position_embedding.", "position_embedding."),
        ("post_layernorm.", "post_layernorm."),
        ("head.attention.in_proj_weight", "head.in_proj.weight"),
        ("head.attention.in_proj_bias", "head.in_proj.bias"),
        ("head.attention.out_proj.", "head.out_proj."),
        ("head.probe", "head.probe"),
        ("head.layernorm.", "head.layernorm."),
        ("head.mlp.", "head.mlp."),
        ("multi_modal_projector.mm_input_projection_weight", "projector.input_projection"),
        ("multi_modal_projector.mm_soft_emb_norm.weight", "projector.soft_emb_norm"),
    ] {
        map = map.rule(&format!("{hf}{from}"), &format!("{burn}{to}"))?;
    }
    Ok(map)
}

impl SiglipVisionTransformer {
    /// Loads from a `SiglipVisionModel` (`siglip_vision_model`) or `SiglipModel` (`siglip`, its
    /// `vision_config`) checkpoint: a directory, an HF cache snapshot or `hf:org/name`.
    pub fn load(spec: &str, device: &Device) -> Result<(Self, SiglipVisionConfig), ModelError> {
        let ckpt = resolve_checkpoint(spec)?;
        let cfg = read_config(&ckpt.config_path())?;
        Self::load_with(&cfg, &ckpt.weights_path(), device)
    }

    /// Loads weights `weights` described by the already-read `config.json` `cfg`.
    pub fn load_with(
        cfg: &HfConfig,
        weights: &std::path::Path,
        device: &Device,
    ) -> Result<(Self, SiglipVisionConfig), ModelError> {
        let model_type = cfg.model_type()?;
        let config = match model_type.as_str() {
            "siglip_vision_model" => SiglipVisionConfig::from_hf(cfg)?,
            "siglip" => SiglipVisionConfig::from_hf(&cfg.nested("vision_config")?)?,
            _ => {
                return Err(ModelError::UnsupportedModelType {
                    path: cfg.path.clone(),
                    model_type,
                    supported: "siglip, siglip_vision_model".into(),
                });
            }
        };
        crate::hf::load::check_fits_file(cfg, weights, config.min_weights())?;
        let mut tower = config.init(device);
        load_safetensors(&mut tower, weights, &siglip_vision_keymap()?, &LoadOptions::default())?;
        Ok((tower, config))
    }

    /// Number of transformer blocks.
    pub fn n_layers(&self) -> usize {
        self.blocks.len()
    }

    /// Patch embeddings plus (resized) positions: `[b, gh·gw, d]`.
    pub fn embed(&self, images: Tensor<4>) -> Result<Tensor<3>, ModelError> {
        let [_, c, h, w] = images.dims();
        let [_, c_in, _, _] = self.patch_embedding.projection.weight.dims();
        if c != c_in {
            return Err(ModelError::Input(format!(
                "SigLIP vision: images have {c} channels, the model expects {c_in}"
            )));
        }
        let (gh, gw) = self.patch_embedding.grid(h, w);
        if gh == 0 || gw == 0 {
            return Err(ModelError::Input(format!("SigLIP vision: image {h}x{w} is smaller than one patch")));
        }
        if let Some(p) = &self.projector
            && (gh, gw) != (p.patches_per_side, p.patches_per_side)
        {
            return Err(ModelError::Input(format!(
                "SigLIP vision with MedGemma's projector: image {h}x{w} gives a {gh}x{gw} patch grid; the \
                 projector pools the native {0}x{0} grid (give images of the tower's image_size)",
                p.patches_per_side
            )));
        }
        let x = self.patch_embedding.forward(images);
        let pos = self.position_embedding.weight.val().unsqueeze_dim::<3>(0); // [1, g², d]
        let g = (pos.dims()[1] as f64).sqrt().round() as usize;
        let pos = if g == gh && g == gw { pos } else { interpolate_patch_positions(pos, gh, gw) };
        Ok(x + pos)
    }

    /// Forward pass; `with_hidden_states` also returns every block's output (HF `hidden_states`,
    /// before `post_layernorm`).
    pub fn forward_full(
        &self,
        images: Tensor<4>,
        with_hidden_states: bool,
    ) -> Result<TowerOutput, ModelError> {
        let (x, hidden_states) =
            crate::layers::run_blocks(&self.blocks, self.embed(images)?, with_hidden_states);
        let last = self.post_layernorm.forward(x);
        let pooled = self.pool_normed(last.clone());
        Ok(TowerOutput { last_hidden_state: last, pooled, hidden_states })
    }

    /// HF `last_hidden_state` alone, `post_layernorm(last block output)` `[b, n, d]`, without running
    /// the pooling head (SiglipForImageClassification's classifier averages these tokens).
    pub fn last_hidden_state(&self, images: Tensor<4>) -> Result<Tensor<3>, ModelError> {
        let mut x = self.embed(images)?;
        for block in &self.blocks {
            x = block.forward(x);
        }
        Ok(self.post_layernorm.forward(x))
    }

    fn pool_normed(&self, last: Tensor<3>) -> Tensor<2> {
        match (&self.projector, &self.head) {
            (Some(projector), _) => projector.pooled(last),
            (None, Some(head)) => head.forward(last),
            (None, None) => last.mean_dim(1).squeeze_dim::<2>(1),
        }
    }

    /// The pooled feature of a block output `h: [b, n, d]` (before `post_layernorm`):
    /// `head(post_LN(h))`. Applied to `hidden_states[L]` it is `pooled`; applied to an earlier block
    /// it is the matching intermediate-depth feature.
    pub fn pool_hidden(&self, h: Tensor<3>) -> Tensor<2> {
        self.pool_normed(self.post_layernorm.forward(h))
    }

    /// Forward pass without intermediate states.
    pub fn forward(&self, images: Tensor<4>) -> Result<TowerOutput, ModelError> {
        self.forward_full(images, false)
    }
}
