//! CLIP text tower (Hugging Face `CLIPTextModel` numerics, transformers 5.24).

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig};
use burn::prelude::*;

use super::vision::TowerOutput;
use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::layers::{Activation, TransformerBlock, TransformerBlockConfig, token_id_tensor};

/// How the pooled (EOT) position of each sequence is found (transformers 5.24 `CLIPTextModel.forward`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EotPooling {
    /// `argmax(ids)`: the first position of the largest id (EOT is the largest id in CLIP's vocabulary).
    /// transformers uses it when the config's `eos_token_id == 2` (configs written before PR #24773).
    ArgMax,
    /// The first position whose id equals this EOT id (every other config; padding may also be EOT).
    FirstId(u32),
}

impl EotPooling {
    /// The pooled position of one sequence; `None` for an empty sequence or a missing EOT id.
    pub fn position(&self, ids: &[u32]) -> Option<usize> {
        match *self {
            Self::ArgMax => {
                let max = *ids.iter().max()?;
                ids.iter().position(|&i| i == max)
            }
            Self::FirstId(eot) => ids.iter().position(|&i| i == eot),
        }
    }
}

/// Configuration of [`ClipTextTransformer`] (HF `CLIPTextConfig` fields in brackets).
#[derive(Config, Debug)]
pub struct ClipTextConfig {
    /// Vocabulary size [`vocab_size`].
    pub vocab_size: usize,
    /// Width `d` [`hidden_size`].
    pub d_model: usize,
    /// Number of blocks [`num_hidden_layers`].
    pub n_layers: usize,
    /// Attention heads [`num_attention_heads`].
    pub n_heads: usize,
    /// MLP width [`intermediate_size`].
    pub d_hidden: usize,
    /// Context length [`max_position_embeddings`].
    #[config(default = 77)]
    pub max_positions: usize,
    /// LayerNorm epsilon [`layer_norm_eps`].
    #[config(default = 1e-5)]
    pub layer_norm_eps: f64,
    /// MLP activation [`hidden_act`].
    #[config(default = "Activation::QuickGelu")]
    pub activation: Activation,
    /// Pooling rule [`eos_token_id`: 2 → argmax, else first EOT].
    #[config(default = "EotPooling::FirstId(49407)")]
    pub pooling: EotPooling,
}

impl ClipTextConfig {
    /// Reads a `CLIPTextConfig` JSON object (the `text_config` of a `CLIPConfig`). Defaults are
    /// transformers 5.24's (`eos_token_id` 49407).
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let act = cfg.str_or("hidden_act", "quick_gelu")?;
        let activation = Activation::from_hf(&act).ok_or_else(|| {
            cfg.unsupported(format!("text hidden_act '{act}' (expected quick_gelu, gelu, gelu_new)"))
        })?;
        let eos = cfg.usize_or("eos_token_id", 49407)?;
        let eos =
            u32::try_from(eos).map_err(|_| cfg.invalid(format!("eos_token_id {eos} does not fit u32")))?;
        let d_model = cfg.size_or("hidden_size", 512)?;
        let n_heads = cfg.size_or("num_attention_heads", 8)?;
        cfg.check_heads("hidden_size", d_model, "num_attention_heads", n_heads)?;
        Ok(Self {
            vocab_size: cfg.size_or("vocab_size", 49408)?,
            d_model,
            n_layers: cfg.size_or("num_hidden_layers", 12)?,
            n_heads,
            d_hidden: cfg.size_or("intermediate_size", 2048)?,
            max_positions: cfg.size_or("max_position_embeddings", 77)?,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-5)?,
            activation,
            pooling: if eos == 2 { EotPooling::ArgMax } else { EotPooling::FirstId(eos) },
        })
    }

    /// A lower bound on the number of weights of the tower (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        crate::hf::load::blocks_min_weights(self.n_layers, self.d_model, self.d_hidden)
            + (self.vocab_size as u128 + self.max_positions as u128) * self.d_model as u128
    }

    /// Builds the tower with random weights (to be overwritten by a checkpoint).
    pub fn init(&self, device: &Device) -> ClipTextTransformer {
        ClipTextTransformer {
            token_embedding: EmbeddingConfig::new(self.vocab_size, self.d_model).init(device),
            position_embedding: EmbeddingConfig::new(self.max_positions, self.d_model).init(device),
            blocks: (0..self.n_layers)
                .map(|_| {
                    TransformerBlockConfig::new(self.d_model, self.n_heads, self.d_hidden, self.activation)
                        .with_layer_norm_eps(self.layer_norm_eps)
                        .with_causal(true)
                        .init(device)
                })
                .collect(),
            final_layer_norm: LayerNormConfig::new(self.d_model)
                .with_epsilon(self.layer_norm_eps)
                .init(device),
            pooling: self.pooling,
        }
    }
}

/// CLIP text transformer:
///
/// ```text
/// x₀ = token_embedding(ids) + position_embedding[0..n]
/// x_l = block_l(x_{l-1})                  causal self-attention (position i sees j ≤ i)
/// last_hidden_state = final_LN(x_L)
/// pooled[b] = last_hidden_state[b, p_b]   p_b = EOT position (see [`EotPooling`])
/// ```
///
/// No padding mask is applied (as OpenAI CLIP and CoOp): with the causal mask, the pooled EOT row
/// never sees the padding after it, so `pooled` equals transformers' with or without
/// `attention_mask`; rows after the EOT differ from transformers' only when it is given a mask.
#[derive(Module, Debug)]
pub struct ClipTextTransformer {
    /// Token embedding `[vocab, d]` (HF `embeddings.token_embedding`).
    pub token_embedding: Embedding,
    /// Position embedding `[context, d]` (HF `embeddings.position_embedding`).
    pub position_embedding: Embedding,
    /// Causal transformer blocks (HF `encoder.layers.N`).
    pub blocks: Vec<TransformerBlock>,
    /// Final LayerNorm (HF `final_layer_norm`).
    pub final_layer_norm: LayerNorm,
    /// Pooling rule.
    #[module(skip)]
    pub pooling: EotPooling,
}

impl ClipTextTransformer {
    /// Width `d`.
    pub fn d_model(&self) -> usize {
        self.token_embedding.weight.dims()[1]
    }

    /// Context length (number of position embeddings).
    pub fn max_positions(&self) -> usize {
        self.position_embedding.weight.dims()[0]
    }

    /// Number of transformer blocks.
    pub fn n_layers(&self) -> usize {
        self.blocks.len()
    }

    /// Token embeddings of a batch of equal-length id rows: `[b, n, d]` (no positions added).
    pub fn embed_tokens(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        let vocab = self.token_embedding.weight.dims()[0];
        Ok(self.token_embedding.forward(token_id_tensor("CLIP text", ids, vocab, device)?))
    }

    /// Forward pass on token ids (`ids[b]` all of one length ≤ the context length); the pooled
    /// row of each sequence follows [`EotPooling`].
    pub fn forward_ids(
        &self,
        ids: &[Vec<u32>],
        device: &Device,
        with_hidden_states: bool,
    ) -> Result<TowerOutput, ModelError> {
        let embeds = self.embed_tokens(ids, device)?;
        let positions = ids
            .iter()
            .enumerate()
            .map(|(row, r)| {
                self.pooling.position(r).ok_or_else(|| {
                    ModelError::Input(format!(
                        "CLIP text: row {row} has no end-of-text id ({:?})",
                        self.pooling
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.forward_embeddings(embeds, &positions, with_hidden_states)
    }

    /// Forward pass on input embeddings `[b, n, d]` (token embeddings or assembled prompt
    /// embeddings, *without* positions); `pool_positions[b]` is the row pooled for sequence `b`
    /// (CoOp: the EOT position of the tokenised prompt).
    pub fn forward_embeddings(
        &self,
        embeds: Tensor<3>,
        pool_positions: &[usize],
        with_hidden_states: bool,
    ) -> Result<TowerOutput, ModelError> {
        let [b, n, d] = embeds.dims();
        if n > self.max_positions() {
            return Err(ModelError::Input(format!(
                "CLIP text: sequence length {n} exceeds the context length {}",
                self.max_positions()
            )));
        }
        if pool_positions.len() != b || pool_positions.iter().any(|&p| p >= n) {
            return Err(ModelError::Input(format!(
                "CLIP text: need one pooling position < {n} per sequence ({b}), got {pool_positions:?}"
            )));
        }
        let pos = self.position_embedding.weight.val().narrow(0, 0, n).unsqueeze_dim::<3>(0);
        let mut x = embeds + pos;
        let mut hidden_states = Vec::new();
        for block in &self.blocks {
            if with_hidden_states {
                hidden_states.push(x.clone());
            }
            x = block.forward(x);
        }
        if with_hidden_states {
            hidden_states.push(x.clone());
        }
        let last = self.final_layer_norm.forward(x);
        let device = last.device();
        let index: Vec<i64> = pool_positions.iter().enumerate().map(|(i, &p)| (i * n + p) as i64).collect();
        let index = Tensor::<1, Int>::from_data(TensorData::new(index, [b]), &device);
        let pooled = last.clone().reshape([b * n, d]).select(0, index);
        Ok(TowerOutput { last_hidden_state: last, pooled, hidden_states })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_rules() {
        // argmax: first position of the maximum; first-id: first occurrence of the EOT id.
        assert_eq!(EotPooling::ArgMax.position(&[5, 9, 3, 9]), Some(1));
        assert_eq!(EotPooling::FirstId(9).position(&[5, 2, 9, 9]), Some(2));
        assert_eq!(EotPooling::FirstId(7).position(&[5, 2, 9]), None);
        assert_eq!(EotPooling::ArgMax.position(&[]), None);
        // CoOp-style zero padding: both rules find the EOT when it is the largest id.
        let ids = [49406, 320, 1125, 49407, 0, 0];
        assert_eq!(EotPooling::ArgMax.position(&ids), EotPooling::FirstId(49407).position(&ids));
    }
}
