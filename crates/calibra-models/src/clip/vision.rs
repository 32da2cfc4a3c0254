//! CLIP vision tower (Hugging Face `CLIPVisionModel` numerics, transformers 5.24).

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::{Module, Param};
use burn::nn::{Embedding, EmbeddingConfig};
use burn::prelude::*;

use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::layers::{
    Activation, PatchEmbedding, PatchEmbeddingConfig, TransformerBlock, TransformerBlockConfig,
    interpolate_patch_positions,
};

/// Configuration of [`ClipVisionTransformer`] (HF `CLIPVisionConfig` fields in brackets).
#[derive(Config, Debug)]
pub struct ClipVisionConfig {
    /// Width `d` [`hidden_size`].
    pub d_model: usize,
    /// Number of blocks [`num_hidden_layers`].
    pub n_layers: usize,
    /// Attention heads [`num_attention_heads`].
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
    #[config(default = 1e-5)]
    pub layer_norm_eps: f64,
    /// MLP activation [`hidden_act`, default `quick_gelu`].
    #[config(default = "Activation::QuickGelu")]
    pub activation: Activation,
}

impl ClipVisionConfig {
    /// Reads a `CLIPVisionConfig` JSON object (the `vision_config` of a `CLIPConfig`, or a whole
    /// `clip_vision_model` config). Defaults are transformers 5.24's.
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let act = cfg.str_or("hidden_act", "quick_gelu")?;
        let activation = Activation::from_hf(&act).ok_or_else(|| {
            cfg.unsupported(format!("vision hidden_act '{act}' (expected quick_gelu, gelu, gelu_new)"))
        })?;
        let d_model = cfg.size_or("hidden_size", 768)?;
        let n_heads = cfg.size_or("num_attention_heads", 12)?;
        cfg.check_heads("hidden_size", d_model, "num_attention_heads", n_heads)?;
        let image_size = cfg.square_size_or("image_size", 224)?;
        let patch_size = cfg.square_size_or("patch_size", 32)?;
        cfg.check_patch_grid(image_size, patch_size)?;
        Ok(Self {
            d_model,
            n_layers: cfg.size_or("num_hidden_layers", 12)?,
            n_heads,
            d_hidden: cfg.size_or("intermediate_size", 3072)?,
            image_size,
            patch_size,
            num_channels: cfg.size_or("num_channels", 3)?,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-5)?,
            activation,
        })
    }

    /// A lower bound on the number of weights of the tower (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        let (d, p, g) =
            (self.d_model as u128, self.patch_size as u128, (self.image_size / self.patch_size) as u128);
        crate::hf::load::blocks_min_weights(self.n_layers, self.d_model, self.d_hidden)
            + (g * g + 1) * d
            + self.num_channels as u128 * p * p * d
    }

    /// Builds the tower with random weights (to be overwritten by a checkpoint).
    pub fn init(&self, device: &Device) -> ClipVisionTransformer {
        let grid = self.image_size / self.patch_size;
        let norm = || LayerNormConfig::new(self.d_model).with_epsilon(self.layer_norm_eps).init(device);
        ClipVisionTransformer {
            class_embedding: Param::from_tensor(Tensor::zeros([self.d_model], device)),
            patch_embedding: PatchEmbeddingConfig::new(self.num_channels, self.d_model, self.patch_size)
                .with_bias(false)
                .init(device),
            position_embedding: EmbeddingConfig::new(grid * grid + 1, self.d_model).init(device),
            pre_layernorm: norm(),
            blocks: (0..self.n_layers)
                .map(|_| {
                    TransformerBlockConfig::new(self.d_model, self.n_heads, self.d_hidden, self.activation)
                        .with_layer_norm_eps(self.layer_norm_eps)
                        .init(device)
                })
                .collect(),
            post_layernorm: norm(),
        }
    }
}

/// CLIP vision transformer:
///
/// ```text
/// x₀ = pre_LN([cls ; patches(img)] + pos)          pos bicubically resized for another grid
/// x_l = block_l(x_{l-1})                            pre-norm blocks, QuickGELU MLP
/// last_hidden_state = x_L                           (no final LayerNorm on the sequence)
/// pooled = post_LN(x_L[:, 0])                       (CLS token)
/// ```
#[derive(Module, Debug)]
pub struct ClipVisionTransformer {
    /// CLS token `[d]` (HF `embeddings.class_embedding`).
    pub class_embedding: Param<Tensor<1>>,
    /// Patch convolution without bias (HF `embeddings.patch_embedding`).
    pub patch_embedding: PatchEmbedding,
    /// Learned positions `[1 + g², d]` (HF `embeddings.position_embedding`).
    pub position_embedding: Embedding,
    /// LayerNorm before the blocks (HF `pre_layrnorm`, sic).
    pub pre_layernorm: LayerNorm,
    /// Transformer blocks (HF `encoder.layers.N`).
    pub blocks: Vec<TransformerBlock>,
    /// LayerNorm on the pooled CLS token (HF `post_layernorm`).
    pub post_layernorm: LayerNorm,
}

/// Outputs of a tower forward pass.
#[derive(Debug, Clone)]
pub struct TowerOutput {
    /// Last block output `[b, n, d]` (SigLIP: after its final LayerNorm).
    pub last_hidden_state: Tensor<3>,
    /// Pooled representation `[b, d]` (before any projection).
    pub pooled: Tensor<2>,
    /// HF `hidden_states`: entry 0 is the input of block 1, entry `l` the output of block `l`
    /// (`n_layers + 1` entries). Empty unless requested.
    pub hidden_states: Vec<Tensor<3>>,
}

impl ClipVisionTransformer {
    /// Number of transformer blocks.
    pub fn n_layers(&self) -> usize {
        self.blocks.len()
    }

    /// Embeddings after `pre_layrnorm`: `[b, 1 + gh·gw, d]`. Position embeddings are resized
    /// bicubically (HF `interpolate_pos_encoding`) when the patch grid differs from the trained one.
    pub fn embed(&self, images: Tensor<4>) -> Result<Tensor<3>, ModelError> {
        Ok(self.pre_layernorm.forward(self.embed_positions(images)?))
    }

    /// `[cls ; patches] + pos` before `pre_layrnorm` (HF `CLIPVisionEmbeddings`), `[b, 1 + gh·gw, d]`.
    pub fn embed_positions(&self, images: Tensor<4>) -> Result<Tensor<3>, ModelError> {
        let [b, c, h, w] = images.dims();
        let [_, c_in, _, _] = self.patch_embedding.projection.weight.dims();
        if c != c_in {
            return Err(ModelError::Input(format!(
                "CLIP vision: images have {c} channels, the model expects {c_in}"
            )));
        }
        let (gh, gw) = self.patch_embedding.grid(h, w);
        if gh == 0 || gw == 0 {
            return Err(ModelError::Input(format!("CLIP vision: image {h}x{w} is smaller than one patch")));
        }
        let patches = self.patch_embedding.forward(images); // [b, gh*gw, d]
        let d = patches.dims()[2];
        let cls = self.class_embedding.val().reshape([1, 1, d]).expand([b, 1, d]);
        let x = Tensor::cat(vec![cls, patches], 1);
        let pos = self.position_embedding.weight.val(); // [1 + g², d]
        let n_pos = pos.dims()[0];
        let pos_cls = pos.clone().narrow(0, 0, 1).unsqueeze_dim::<3>(0);
        let pos_patch = pos.narrow(0, 1, n_pos - 1).unsqueeze_dim::<3>(0);
        let g = ((n_pos - 1) as f64).sqrt().round() as usize;
        let pos_patch =
            if g == gh && g == gw { pos_patch } else { interpolate_patch_positions(pos_patch, gh, gw) };
        let pos = Tensor::cat(vec![pos_cls, pos_patch], 1);
        Ok(x + pos)
    }

    /// Forward pass; `with_hidden_states` also returns every block's output.
    pub fn forward_full(
        &self,
        images: Tensor<4>,
        with_hidden_states: bool,
    ) -> Result<TowerOutput, ModelError> {
        let (x, hidden_states) =
            crate::layers::run_blocks(&self.blocks, self.embed(images)?, with_hidden_states);
        Ok(TowerOutput { pooled: self.pool_hidden(x.clone()), last_hidden_state: x, hidden_states })
    }

    /// The pooled feature of a block output `h: [b, n, d]`: `post_LN(h[:, 0])` (CLS). Applied to
    /// `hidden_states[L]` it is `pooled`; applied to an earlier block it is the matching
    /// intermediate-depth feature.
    pub fn pool_hidden(&self, h: Tensor<3>) -> Tensor<2> {
        let [b, _, d] = h.dims();
        self.post_layernorm.forward(h.narrow(1, 0, 1).reshape([b, d]))
    }

    /// Forward pass without intermediate states.
    pub fn forward(&self, images: Tensor<4>) -> Result<TowerOutput, ModelError> {
        self.forward_full(images, false)
    }
}
