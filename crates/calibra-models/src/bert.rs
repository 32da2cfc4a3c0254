//! A BERT encoder (transformers 5.24 `BertModel` numerics, eval mode, no pooler), the text tower of
//! BiomedCLIP-style OpenCLIP checkpoints (open_clip's `HFTextEncoder` wraps a `BertModel`):
//!
//! ```text
//! x₀ = LN(word_embeddings[ids] + position_embeddings[0..n] + token_type_embeddings[0])
//! a  = softmax(q kᵀ / √d_head + mask) v        mask: 0 on real tokens, −∞-like on padding keys
//! x' = LN(x + dense(a))                        post-LayerNorm blocks
//! x  = LN(x' + output(act(intermediate(x'))))
//! ```
//!
//! `token_type_ids` are all zero (open_clip passes none). The attention mask marks padding keys
//! (`ids != pad_token_id`, open_clip's `HFTextEncoder.forward`); their scores get `f32::MIN` added
//! (transformers' eager mask value), so a padded position never contributes to a real one.

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::softmax;

use crate::error::ModelError;
use crate::hf::{HfConfig, KeyMap};
use crate::layers::{Activation, token_id_tensor};

/// The options of a `BertConfig` calibra implements.
#[derive(Config, Debug)]
pub struct BertConfig {
    /// `vocab_size`.
    pub vocab_size: usize,
    /// `hidden_size`.
    pub hidden_size: usize,
    /// `num_hidden_layers`.
    pub num_layers: usize,
    /// `num_attention_heads`.
    pub num_heads: usize,
    /// `intermediate_size`.
    pub intermediate_size: usize,
    /// `max_position_embeddings`.
    pub max_positions: usize,
    /// `type_vocab_size`.
    pub type_vocab_size: usize,
    /// `layer_norm_eps`.
    pub layer_norm_eps: f64,
    /// `hidden_act`.
    pub activation: Activation,
    /// `pad_token_id`.
    pub pad_token_id: u32,
}

impl BertConfig {
    /// Reads a `config.json` of `model_type` `bert` (transformers 5.24 defaults). Refused by name:
    /// another `model_type`, a `position_embedding_type` other than `absolute`, a decoder
    /// (`is_decoder`, `add_cross_attention`) and a `hidden_act` other than `gelu` / `gelu_new`.
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let model_type = cfg.model_type()?;
        if model_type != "bert" {
            return Err(ModelError::UnsupportedModelType {
                path: cfg.path.clone(),
                model_type,
                supported: "bert (the text towers of BiomedCLIP-style OpenCLIP checkpoints)".into(),
            });
        }
        let pos = cfg.str_or("position_embedding_type", "absolute")?;
        if pos != "absolute" {
            return Err(
                cfg.unsupported(format!("position_embedding_type '{pos}' (only 'absolute' is implemented)"))
            );
        }
        for flag in ["is_decoder", "add_cross_attention"] {
            if cfg.bool_or(flag, false)? {
                return Err(cfg.unsupported(format!("'{flag}': a BERT decoder is not implemented")));
            }
        }
        let act = cfg.str_or("hidden_act", "gelu")?;
        let activation = match Activation::from_hf(&act) {
            Some(a @ (Activation::GeluExact | Activation::GeluTanh)) => a,
            _ => return Err(cfg.unsupported(format!("hidden_act '{act}' (expected gelu or gelu_new)"))),
        };
        let hidden_size = cfg.size_or("hidden_size", 768)?;
        let num_heads = cfg.size_or("num_attention_heads", 12)?;
        cfg.check_heads("hidden_size", hidden_size, "num_attention_heads", num_heads)?;
        let pad = cfg.usize_or("pad_token_id", 0)?;
        Ok(Self {
            vocab_size: cfg.size_or("vocab_size", 30522)?,
            hidden_size,
            num_layers: cfg.size_or("num_hidden_layers", 12)?,
            num_heads,
            intermediate_size: cfg.size_or("intermediate_size", 3072)?,
            max_positions: cfg.size_or("max_position_embeddings", 512)?,
            type_vocab_size: cfg.size_or("type_vocab_size", 2)?,
            layer_norm_eps: cfg.positive_f64_or("layer_norm_eps", 1e-12)?,
            activation,
            pad_token_id: u32::try_from(pad)
                .map_err(|_| cfg.invalid(format!("pad_token_id {pad} does not fit u32")))?,
        })
    }

    /// A lower bound on the number of weights (see [`crate::hf::load::check_fits_file`]).
    pub fn min_weights(&self) -> u128 {
        let (d, h) = (self.hidden_size as u128, self.intermediate_size as u128);
        (self.vocab_size + self.max_positions + self.type_vocab_size) as u128 * d
            + self.num_layers as u128 * (4 * d * d + 2 * d * h)
    }

    /// Builds the encoder with placeholder weights (load a checkpoint afterwards).
    pub fn init(&self, device: &Device) -> BertModel {
        let d = self.hidden_size;
        let norm = || LayerNormConfig::new(d).with_epsilon(self.layer_norm_eps).init(device);
        let linear = |i, o| LinearConfig::new(i, o).init(device);
        BertModel {
            word_embeddings: EmbeddingConfig::new(self.vocab_size, d).init(device),
            position_embeddings: EmbeddingConfig::new(self.max_positions, d).init(device),
            token_type_embeddings: EmbeddingConfig::new(self.type_vocab_size, d).init(device),
            embeddings_norm: norm(),
            layers: (0..self.num_layers)
                .map(|_| BertLayer {
                    query: linear(d, d),
                    key: linear(d, d),
                    value: linear(d, d),
                    attention_output: linear(d, d),
                    attention_norm: norm(),
                    intermediate: linear(d, self.intermediate_size),
                    output: linear(self.intermediate_size, d),
                    output_norm: norm(),
                })
                .collect(),
            num_heads: self.num_heads,
            activation: self.activation,
            pad_token_id: self.pad_token_id,
        }
    }
}

/// One post-LayerNorm BERT block (`encoder.layer.{i}`).
#[derive(Module, Debug)]
pub struct BertLayer {
    /// `attention.self.query`.
    pub query: Linear,
    /// `attention.self.key`.
    pub key: Linear,
    /// `attention.self.value`.
    pub value: Linear,
    /// `attention.output.dense`.
    pub attention_output: Linear,
    /// `attention.output.LayerNorm`.
    pub attention_norm: LayerNorm,
    /// `intermediate.dense`.
    pub intermediate: Linear,
    /// `output.dense`.
    pub output: Linear,
    /// `output.LayerNorm`.
    pub output_norm: LayerNorm,
}

/// transformers' `BertModel` without its pooler (see the module docs).
#[derive(Module, Debug)]
pub struct BertModel {
    /// `embeddings.word_embeddings`.
    pub word_embeddings: Embedding,
    /// `embeddings.position_embeddings`.
    pub position_embeddings: Embedding,
    /// `embeddings.token_type_embeddings` (row 0 is added).
    pub token_type_embeddings: Embedding,
    /// `embeddings.LayerNorm`.
    pub embeddings_norm: LayerNorm,
    /// `encoder.layer.{i}`.
    pub layers: Vec<BertLayer>,
    /// `num_attention_heads`.
    #[module(skip)]
    pub num_heads: usize,
    /// `hidden_act`.
    #[module(skip)]
    pub activation: Activation,
    /// `pad_token_id` (padding keys are masked).
    #[module(skip)]
    pub pad_token_id: u32,
}

impl BertLayer {
    fn forward(&self, x: Tensor<3>, mask: Tensor<4>, heads: usize, act: Activation) -> Tensor<3> {
        let [b, n, d] = x.dims();
        let dh = d / heads;
        let split = |t: Tensor<3>| t.reshape([b, n, heads, dh]).swap_dims(1, 2);
        let q = split(self.query.forward(x.clone()));
        let k = split(self.key.forward(x.clone()));
        let v = split(self.value.forward(x.clone()));
        let scores = q.matmul(k.swap_dims(2, 3)) / (dh as f64).sqrt() + mask;
        let ctx = softmax(scores, 3).matmul(v).swap_dims(1, 2).reshape([b, n, d]);
        let x = self.attention_norm.forward(x + self.attention_output.forward(ctx));
        let h = self.output.forward(act.forward(self.intermediate.forward(x.clone())));
        self.output_norm.forward(x + h)
    }
}

impl BertModel {
    /// Number of position embeddings (the longest sequence).
    pub fn max_positions(&self) -> usize {
        self.position_embeddings.weight.dims()[0]
    }

    /// `last_hidden_state` `[b, n, d]` of equal-length id rows, padding (`pad_token_id`) masked.
    pub fn forward_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        let words = self.embed_words(ids, device)?;
        let [b, n, _] = words.dims();
        let mask: Vec<f32> = ids
            .iter()
            .flat_map(|r| r.iter().map(|&t| if t == self.pad_token_id { f32::MIN } else { 0.0 }))
            .collect();
        let mask = Tensor::<2>::from_data(TensorData::new(mask, [b, n]), device).reshape([b, 1, 1, n]);
        Ok(self.encode(words, mask))
    }

    /// The word embeddings `[b, n, d]` of equal-length id rows (`embeddings.word_embeddings`, before
    /// positions, token types and the embedding LayerNorm).
    pub fn embed_words(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        let vocab = self.word_embeddings.weight.dims()[0];
        let tokens = token_id_tensor("BERT text", ids, vocab, device)?;
        let n = tokens.dims()[1];
        if n > self.max_positions() {
            return Err(ModelError::Input(format!(
                "BERT text: sequence length {n} exceeds max_position_embeddings {}",
                self.max_positions()
            )));
        }
        Ok(self.word_embeddings.forward(tokens))
    }

    /// `last_hidden_state` of word embeddings `[b, n, d]` (transformers' `inputs_embeds`, e.g. a
    /// prompt with learned context vectors) where sequence `b` attends to its first `attended[b]`
    /// positions only (the rest is padding, masked as [`Self::forward_ids`] masks it).
    pub fn forward_embeddings(&self, words: Tensor<3>, attended: &[usize]) -> Result<Tensor<3>, ModelError> {
        let [b, n, _] = words.dims();
        if n > self.max_positions() || attended.len() != b || attended.iter().any(|&a| a == 0 || a > n) {
            return Err(ModelError::Input(format!(
                "BERT text: {b} sequences of length {n} (at most {}) need one attended length in 1..={n} \
                 each, got {attended:?}",
                self.max_positions()
            )));
        }
        let mask: Vec<f32> =
            attended.iter().flat_map(|&a| (0..n).map(move |i| if i < a { 0.0 } else { f32::MIN })).collect();
        let mask =
            Tensor::<2>::from_data(TensorData::new(mask, [b, n]), &words.device()).reshape([b, 1, 1, n]);
        Ok(self.encode(words, mask))
    }

    /// Positions, token type 0 and the embedding LayerNorm, then every layer under `mask`.
    fn encode(&self, words: Tensor<3>, mask: Tensor<4>) -> Tensor<3> {
        let [_, n, d] = words.dims();
        let pos = self.position_embeddings.weight.val().narrow(0, 0, n).unsqueeze_dim::<3>(0);
        let token_type = self.token_type_embeddings.weight.val().narrow(0, 0, 1).reshape([1, 1, d]);
        let mut x = self.embeddings_norm.forward(words + pos + token_type);
        for layer in &self.layers {
            x = layer.forward(x, mask.clone(), self.num_heads, self.activation);
        }
        x
    }
}

/// Key table from transformers' `BertModel` names under `hf` (e.g. `transformer.` in open_clip's
/// `HFTextEncoder`) to [`BertModel`] paths under `burn`.
pub fn bert_rules(mut map: KeyMap, hf: &str, burn: &str) -> Result<KeyMap, ModelError> {
    for (from, to) in [
        ("embeddings.word_embeddings.", "word_embeddings."),
        ("embeddings.position_embeddings.", "position_embeddings."),
        ("embeddings.token_type_embeddings.", "token_type_embeddings."),
        ("embeddings.LayerNorm.", "embeddings_norm."),
        ("encoder.layer.{i}.attention.self.query.", "layers.{i}.query."),
        ("encoder.layer.{i}.attention.self.key.", "layers.{i}.key."),
        ("encoder.layer.{i}.attention.self.value.", "layers.{i}.value."),
        ("encoder.layer.{i}.attention.output.dense.", "layers.{i}.attention_output."),
        ("encoder.layer.{i}.attention.output.LayerNorm.", "layers.{i}.attention_norm."),
        ("encoder.layer.{i}.intermediate.dense.", "layers.{i}.intermediate."),
        ("encoder.layer.{i}.output.dense.", "layers.{i}.output."),
        ("encoder.layer.{i}.output.LayerNorm.", "layers.{i}.output_norm."),
    ] {
        map = map.rule(&format!("{hf}{from}"), &format!("{burn}{to}"))?;
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_refuses_what_is_not_implemented() {
        let cfg = |v: serde_json::Value| HfConfig::from_value("config.json", v);
        let ok = BertConfig::from_hf(&cfg(serde_json::json!({"model_type": "bert"}))).unwrap();
        assert_eq!((ok.hidden_size, ok.num_heads, ok.layer_norm_eps), (768, 12, 1e-12));
        for (json, needle) in [
            (serde_json::json!({"model_type": "roberta"}), "roberta"),
            (
                serde_json::json!({"model_type": "bert", "position_embedding_type": "relative_key"}),
                "relative_key",
            ),
            (serde_json::json!({"model_type": "bert", "is_decoder": true}), "is_decoder"),
            (serde_json::json!({"model_type": "bert", "hidden_act": "relu"}), "relu"),
        ] {
            let err = BertConfig::from_hf(&cfg(json)).unwrap_err().to_string();
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn names_map_both_ways() {
        let map = bert_rules(KeyMap::new("bert"), "transformer.", "transformer.").unwrap();
        for (hf, burn) in [
            ("transformer.embeddings.LayerNorm.weight", "transformer.embeddings_norm.weight"),
            ("transformer.encoder.layer.3.attention.self.key.bias", "transformer.layers.3.key.bias"),
            ("transformer.encoder.layer.0.output.LayerNorm.bias", "transformer.layers.0.output_norm.bias"),
        ] {
            assert_eq!(map.to_burn(hf), burn);
            assert_eq!(map.to_hf(burn), hf);
        }
    }
}
