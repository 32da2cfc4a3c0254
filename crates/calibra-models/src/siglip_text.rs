//! SigLIP text tower (Hugging Face `SiglipTextModel` numerics, transformers 5.24).
//!
//! ```text
//! x₀ = token_embedding(ids) + position_embedding[0..n]
//! x_l = block_l(x_{l-1})                  bidirectional self-attention (no causal mask)
//! last_hidden_state = final_LN(x_L)
//! pooled = head(last_hidden_state[:, n-1])   the *last* position, padding or not
//! ```
//!
//! No attention mask is applied: SigLIP was trained on ids padded to the context length with the
//! pad id and without a mask, and transformers' `SiglipModel` only masks when it is handed an
//! `attention_mask` (its processor and the model card's examples do not pass one). The pooled row is
//! the last position, so the padding *is* part of the input: ids must be padded exactly as the
//! tokenizer does for `padding="max_length"` (see `crate::siglip_tokenizer`).

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::*;

use crate::clip::TowerOutput;
use crate::error::ModelError;
use crate::hf::{HfConfig, KeyMap};
use crate::layers::{Activation, TransformerBlock, TransformerBlockConfig, token_id_tensor};

/// Configuration of [`SiglipTextTransformer`] (HF `SiglipTextConfig` fields in brackets).
#[derive(Config, Debug)]
pub struct SiglipTextConfig {
    /// Vocabulary size [`vocab_size`, 32000].
    pub vocab_size: usize,
    /// Width `d` [`hidden_size`, 768].
    pub d_model: usize,
    /// Number of blocks [`num_hidden_layers`, 12].
    pub n_layers: usize,
    /// Attention heads [`num_attention_heads`, 12].
    pub n_heads: usize,
    /// MLP width [`intermediate_size`, 3072].
    pub d_hidden: usize,
    /// Context length [`max_position_embeddings`, 64].
    #[config(default = 64)]
    pub max_positions: usize,
    /// Output width of `head` [`projection_size`, default `hidden_size`].
    pub projection_size: usize,
    /// LayerNorm epsilon [`layer_norm_eps`, 1e-6].
    #[config(default = 1e-6)]
    pub layer_norm_eps: f64,
    /// MLP activation [`hidden_act`, `gelu_pytorch_tanh`].
    #[config(default = "Activation::GeluTanh")]
    pub activation: Activation,
}

impl SiglipTextConfig {
    /// Reads a `SiglipTextConfig` object (the `text_config` of a `siglip` config). Defaults are
    /// transformers 5.24's.
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let act = cfg.str_or("hidden_act", "gelu_pytorch_tanh")?;
        let activation = Activation::from_hf(&act).ok_or_else(|| {
            cfg.unsupported(format!(
                "SigLIP text hidden_act '{act}' (expected gelu_pytorch_tanh, gelu, quick_gelu)"
            ))
        })?;
        let d_model = cfg.size_or("hidden_size", 768)?;
        let n_heads = cfg.size_or("num_attention_heads", 12)?;
        cfg.check_heads("hidden_size", d_model, "num_attention_heads", n_heads)?;
        Ok(Self {
            vocab_size: cfg.size_or("vocab_size", 32000)?,
            d_model,
            n_layers: cfg.size_or("num_hidden_layers", 12)?,
            n_heads,
            d_hidden: cfg.size_or("intermediate_size", 3072)?,
            max_positions: cfg.size_or("max_position_embeddings", 64)?,
            projection_size: cfg.size_or("projection_size", d_model)?,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-6)?,
            activation,
        })
    }

    /// A lower bound on the number of weights of the tower (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        crate::hf::load::blocks_min_weights(self.n_layers, self.d_model, self.d_hidden)
            + (self.vocab_size as u128 + self.max_positions as u128) * self.d_model as u128
            + self.d_model as u128 * self.projection_size as u128
    }

    /// Builds the tower with random weights (to be overwritten by a checkpoint).
    pub fn init(&self, device: &Device) -> SiglipTextTransformer {
        SiglipTextTransformer {
            token_embedding: EmbeddingConfig::new(self.vocab_size, self.d_model).init(device),
            position_embedding: EmbeddingConfig::new(self.max_positions, self.d_model).init(device),
            blocks: (0..self.n_layers)
                .map(|_| {
                    TransformerBlockConfig::new(self.d_model, self.n_heads, self.d_hidden, self.activation)
                        .with_layer_norm_eps(self.layer_norm_eps)
                        .init(device)
                })
                .collect(),
            final_layer_norm: LayerNormConfig::new(self.d_model)
                .with_epsilon(self.layer_norm_eps)
                .init(device),
            head: LinearConfig::new(self.d_model, self.projection_size).init(device),
        }
    }
}

/// The SigLIP text transformer (see the module documentation).
#[derive(Module, Debug)]
pub struct SiglipTextTransformer {
    /// Token embedding `[vocab, d]` (HF `embeddings.token_embedding`).
    pub token_embedding: Embedding,
    /// Position embedding `[context, d]` (HF `embeddings.position_embedding`).
    pub position_embedding: Embedding,
    /// Bidirectional transformer blocks (HF `encoder.layers.N`).
    pub blocks: Vec<TransformerBlock>,
    /// Final LayerNorm (HF `final_layer_norm`).
    pub final_layer_norm: LayerNorm,
    /// Linear head on the last position, with bias (HF `head`).
    pub head: Linear,
}

/// The text tower's rules, HF names under `hf` mapped to module paths under `burn`.
pub(crate) fn siglip_text_rules(mut map: KeyMap, hf: &str, burn: &str) -> Result<KeyMap, ModelError> {
    for (from, to) in [
        ("encoder.layers.{i}.self_attn.q_proj.", "blocks.{i}.attn.q_proj."),
        ("encoder.layers.{i}.self_attn.k_proj.", "blocks.{i}.attn.k_proj."),
        ("encoder.layers.{i}.self_attn.v_proj.", "blocks.{i}.attn.v_proj."),
        ("encoder.layers.{i}.self_attn.out_proj.", "blocks.{i}.attn.o_proj."),
        ("encoder.layers.{i}.layer_norm1.", "blocks.{i}.norm1."),
        ("encoder.layers.{i}.layer_norm2.", "blocks.{i}.norm2."),
        ("encoder.layers.{i}.mlp.fc1.", "blocks.{i}.mlp.fc1."),
        ("encoder.layers.{i}.mlp.fc2.", "blocks.{i}.mlp.fc2."),
        ("embeddings.token_embedding.", "token_embedding."),
        ("embeddings.position_embedding.", "position_embedding."),
        ("final_layer_norm.", "final_layer_norm."),
        ("head.", "head."),
    ] {
        map = map.rule(&format!("{hf}{from}"), &format!("{burn}{to}"))?;
    }
    Ok(map)
}

impl SiglipTextTransformer {
    /// Context length (number of position embeddings).
    pub fn max_positions(&self) -> usize {
        self.position_embedding.weight.dims()[0]
    }

    /// Number of transformer blocks.
    pub fn n_layers(&self) -> usize {
        self.blocks.len()
    }

    /// Token embeddings `[b, n, d]` of equal-length id rows (no positions added).
    pub fn embed_tokens(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        let vocab = self.token_embedding.weight.dims()[0];
        Ok(self.token_embedding.forward(token_id_tensor("SigLIP text", ids, vocab, device)?))
    }

    /// Forward pass on a batch of equal-length id rows (length ≤ the context length). `pooled` is
    /// `head(last_hidden_state[:, -1])` (HF `pooler_output`, i.e. `get_text_features`).
    pub fn forward_ids(
        &self,
        ids: &[Vec<u32>],
        device: &Device,
        with_hidden_states: bool,
    ) -> Result<TowerOutput, ModelError> {
        let n = ids.first().map_or(0, Vec::len);
        if n > self.max_positions() {
            return Err(ModelError::Input(format!(
                "SigLIP text: sequence length {n} exceeds the context length {} (max_position_embeddings)",
                self.max_positions()
            )));
        }
        self.forward_embeddings(self.embed_tokens(ids, device)?, with_hidden_states)
    }

    /// Forward pass on input embeddings `[b, n, d]` (token embeddings or assembled prompt
    /// embeddings, *without* positions); pooled as [`Self::forward_ids`], from the last position.
    pub fn forward_embeddings(
        &self,
        embeds: Tensor<3>,
        with_hidden_states: bool,
    ) -> Result<TowerOutput, ModelError> {
        let [b, n, d] = embeds.dims();
        if n == 0 || n > self.max_positions() {
            return Err(ModelError::Input(format!(
                "SigLIP text: sequence length {n} is outside 1..={} (max_position_embeddings)",
                self.max_positions()
            )));
        }
        let pos = self.position_embedding.weight.val().narrow(0, 0, n).unsqueeze_dim::<3>(0);
        let (x, hidden_states) = crate::layers::run_blocks(&self.blocks, embeds + pos, with_hidden_states);
        let last = self.final_layer_norm.forward(x);
        let pooled = self.head.forward(last.clone().narrow(1, n - 1, 1).reshape([b, d]));
        Ok(TowerOutput { last_hidden_state: last, pooled, hidden_states })
    }
}
