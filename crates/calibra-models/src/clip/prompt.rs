//! CoOp prompt learner (Zhou et al., IJCV 2022; reference `KaiyangZhou/CoOp trainers/coop.py::PromptLearner`,
//! spec calibration-metrics-transfer.md §E1).
//!
//! Per class `k`, the prompt `prefix + " " + classname_k + "."` is tokenised (context length of the
//! tokenizer, SOT … EOT, padding) and embedded with CLIP's frozen token embedding `E`; with `n` context
//! tokens the frozen buffers are `prefix_k = E[k, :1]` (SOT) and `suffix_k = E[k, 1+n:]` (class tokens,
//! ".", EOT, padding). The learned context `ctx` (`[n, d]` unified or `[K, n, d]` class-specific) is
//! spliced in by the class-token position:
//!
//! ```text
//! end:    [prefix_k, ctx_k, suffix_k]
//! middle: [prefix_k, ctx_k[:n/2], class_k, ctx_k[n/2:], suffix_k[len_k:]]
//! front:  [prefix_k, class_k, ctx_k, suffix_k[len_k:]]
//! ```
//!
//! where `class_k = suffix_k[:len_k]` and `len_k` is the BPE length of the class name. The pooled row of
//! the text tower is the EOT position of the tokenised prompt (unchanged by the splicing: the
//! total length is constant).

use burn::module::{Module, Param};
use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::model::ClipModel;
use crate::error::ModelError;
use crate::tokenizer::ClipTokenizer;

/// Where the class-name tokens go relative to the learned context (CoOp `CLASS_TOKEN_POSITION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ClassTokenPosition {
    /// `[SOT, ctx, class, ".", EOT]` (CoOp default).
    End,
    /// `[SOT, ctx[:n/2], class, ctx[n/2:], ".", EOT]`.
    Middle,
    /// `[SOT, class, ctx, ".", EOT]`.
    Front,
}

impl std::str::FromStr for ClassTokenPosition {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "end" => Ok(Self::End),
            "middle" => Ok(Self::Middle),
            "front" => Ok(Self::Front),
            _ => Err(ModelError::Input(format!("class-token position {s:?}: expected end, middle or front"))),
        }
    }
}

/// How the context vectors start.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ContextInit {
    /// i.i.d. `N(0, 0.02²)` from a ChaCha8 stream seeded with `seed` (CoOp `CTX_INIT = ""`).
    Random {
        /// RNG seed.
        seed: u64,
    },
    /// The token embeddings of a phrase, e.g. `"a photo of a"` (CoOp `CTX_INIT`): `n_ctx` becomes the
    /// phrase's BPE length (CoOp uses the word count, equal for CLIP's vocabulary on such phrases)
    /// and the prompt prefix is the phrase itself. With class-specific context every class starts
    /// from the same phrase vectors.
    Phrase(String),
}

/// Configuration of [`PromptLearner`] (CoOp defaults: 16 context tokens, unified, end, random).
#[derive(Config, Debug)]
pub struct PromptLearnerConfig {
    /// Number of context tokens `n` (ignored with [`ContextInit::Phrase`]).
    #[config(default = 16)]
    pub n_ctx: usize,
    /// Class-specific context (CoOp `CSC`): `[K, n, d]` instead of one shared `[n, d]`.
    #[config(default = false)]
    pub class_specific: bool,
    /// Class-token position.
    #[config(default = "ClassTokenPosition::End")]
    pub position: ClassTokenPosition,
    /// Initialisation.
    #[config(default = "ContextInit::Random { seed: 0 }")]
    pub init: ContextInit,
}

/// The CoOp prompt learner: trainable `ctx`, frozen prefix/suffix embeddings (see the module docs).
#[derive(Module, Debug)]
pub struct PromptLearner {
    /// Context vectors `[1, n, d]` (unified) or `[K, n, d]` (class-specific) — the only parameter.
    pub ctx: Param<Tensor<3>>,
    /// Frozen SOT embeddings `[K, 1, d]`.
    #[module(skip)]
    pub token_prefix: Tensor<3>,
    /// Frozen embeddings after the context slots `[K, L-1-n, d]`.
    #[module(skip)]
    pub token_suffix: Tensor<3>,
    /// BPE length of each class name.
    #[module(skip)]
    pub name_lens: Vec<usize>,
    /// EOT position of each tokenised prompt (the pooled row).
    #[module(skip)]
    pub eot_positions: Vec<usize>,
    /// Class-token position.
    #[module(skip)]
    pub position: ClassTokenPosition,
}

/// `n·d` (or `k·n·d`) values from `N(0, std²)` via Box–Muller on a seeded ChaCha8 stream.
pub(crate) fn normal_values(count: usize, std: f64, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(count + 1);
    while out.len() < count {
        let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
        let u2: f64 = rng.random::<f64>();
        let r = (-2.0 * u1.ln()).sqrt() * std;
        let t = 2.0 * std::f64::consts::PI * u2;
        out.push((r * t.cos()) as f32);
        out.push((r * t.sin()) as f32);
    }
    out.truncate(count);
    out
}

fn tok_err(what: &str, e: impl std::fmt::Display) -> ModelError {
    ModelError::Input(format!("CoOp prompt learner: {what}: {e}"))
}

impl PromptLearnerConfig {
    /// Builds the learner for `classnames` on `model`'s frozen token embedding.
    ///
    /// Errors: no classes, `n_ctx == 0`, an empty phrase, or a prompt that does not fit the context
    /// length (its EOT would be truncated away).
    pub fn init(
        &self,
        model: &ClipModel,
        tokenizer: &ClipTokenizer,
        classnames: &[String],
        device: &Device,
    ) -> Result<PromptLearner, ModelError> {
        let k = classnames.len();
        if k == 0 {
            return Err(ModelError::Input("CoOp prompt learner: no class names".into()));
        }
        let text = &model.text_model;
        let d = text.d_model();
        let (n_ctx, prefix_text, init_ctx) = match &self.init {
            ContextInit::Random { seed } => {
                if self.n_ctx == 0 {
                    return Err(ModelError::Input("CoOp prompt learner: n_ctx must be > 0".into()));
                }
                let rows = if self.class_specific { k } else { 1 };
                let values = normal_values(rows * self.n_ctx * d, 0.02, *seed);
                let ctx = Tensor::<3>::from_data(TensorData::new(values, [rows, self.n_ctx, d]), device);
                (self.n_ctx, vec!["X"; self.n_ctx].join(" "), ctx)
            }
            ContextInit::Phrase(phrase) => {
                let phrase = phrase.replace('_', " ");
                let n = tokenizer.tokenize(&phrase).map_err(|e| tok_err("context phrase", e))?.len();
                if n == 0 {
                    return Err(ModelError::Input(format!(
                        "CoOp prompt learner: phrase {phrase:?} has no tokens"
                    )));
                }
                let ids = tokenizer.encode_padded(&phrase).map_err(|e| tok_err("context phrase", e))?;
                let emb = text.embed_tokens(&[ids], device)?; // [1, L, d]
                let ctx = emb.narrow(1, 1, n); // [1, n, d]
                let ctx = if self.class_specific { ctx.repeat_dim(0, k) } else { ctx };
                (n, phrase, ctx)
            }
        };
        let mut ids = Vec::with_capacity(k);
        let mut name_lens = Vec::with_capacity(k);
        let mut eot_positions = Vec::with_capacity(k);
        for name in classnames {
            let name = name.replace('_', " ");
            let prompt = format!("{prefix_text} {name}.");
            let row =
                tokenizer.encode_padded(&prompt).map_err(|e| tok_err(&format!("prompt {prompt:?}"), e))?;
            let len = tokenizer.tokenize(&name).map_err(|e| tok_err(&format!("class {name:?}"), e))?.len();
            let eot = tokenizer.eot_position(&row).filter(|&p| p >= 1 + n_ctx + len).ok_or_else(|| {
                ModelError::Input(format!("CoOp prompt {prompt:?} does not fit the context length"))
            })?;
            // a truncated prompt ends with EOT at the last position but lost content: reject it
            let full = tokenizer.encode(&prompt).map_err(|e| tok_err(&format!("prompt {prompt:?}"), e))?;
            if full.len() > tokenizer.context_length() {
                return Err(ModelError::Input(format!(
                    "CoOp prompt {prompt:?} has {} tokens, more than the context length {}",
                    full.len(),
                    tokenizer.context_length()
                )));
            }
            ids.push(row);
            name_lens.push(len);
            eot_positions.push(eot);
        }
        let embedding = text.embed_tokens(&ids, device)?; // [K, L, d]
        let l = embedding.dims()[1];
        Ok(PromptLearner {
            ctx: Param::from_tensor(init_ctx),
            token_prefix: embedding.clone().narrow(1, 0, 1),
            token_suffix: embedding.narrow(1, 1 + n_ctx, l - 1 - n_ctx),
            name_lens,
            eot_positions,
            position: self.position,
        })
    }
}

impl PromptLearner {
    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.name_lens.len()
    }

    /// Number of context tokens `n`.
    pub fn n_ctx(&self) -> usize {
        self.ctx.dims()[1]
    }

    /// Replaces the context vectors (`[1, n, d]`, `[n, d]`-like unified, or `[K, n, d]`), keeping
    /// `n` and `d`. Used to resume training or to feed externally computed context.
    pub fn with_context(mut self, ctx: Tensor<3>) -> Result<Self, ModelError> {
        let [rows, n, d] = ctx.dims();
        let [_, n0, d0] = self.ctx.dims();
        if n != n0 || d != d0 || (rows != 1 && rows != self.n_classes()) {
            return Err(ModelError::Input(format!(
                "CoOp context must be [1 or {}, {n0}, {d0}], got [{rows}, {n}, {d}]",
                self.n_classes()
            )));
        }
        self.ctx = Param::from_tensor(ctx);
        Ok(self)
    }

    /// The assembled prompt embeddings `[K, L, d]` (module docs), differentiable in `ctx`.
    pub fn prompts(&self) -> Tensor<3> {
        let k = self.n_classes();
        let ctx = self.ctx.val();
        let [rows, n, d] = ctx.dims();
        let ctx = if rows == 1 { ctx.expand([k, n, d]) } else { ctx };
        let prefix = self.token_prefix.clone();
        let suffix = self.token_suffix.clone();
        match self.position {
            ClassTokenPosition::End => Tensor::cat(vec![prefix, ctx, suffix], 1),
            ClassTokenPosition::Middle | ClassTokenPosition::Front => {
                let half = n / 2;
                let rest = suffix.dims()[1];
                let rows: Vec<Tensor<3>> = (0..k)
                    .map(|i| {
                        let len = self.name_lens[i];
                        let p = prefix.clone().narrow(0, i, 1);
                        let s = suffix.clone().narrow(0, i, 1);
                        let class = s.clone().narrow(1, 0, len);
                        let tail = s.narrow(1, len, rest - len);
                        let c = ctx.clone().narrow(0, i, 1);
                        if self.position == ClassTokenPosition::Middle {
                            let c1 = c.clone().narrow(1, 0, half);
                            let c2 = c.narrow(1, half, n - half);
                            Tensor::cat(vec![p, c1, class, c2, tail], 1)
                        } else {
                            Tensor::cat(vec![p, class, c, tail], 1)
                        }
                    })
                    .collect();
                Tensor::cat(rows, 0)
            }
        }
    }

    /// Text features of the learned prompts through `model`'s frozen text tower and projection:
    /// `[K, p]`, not normalised (CoOp `TextEncoder`).
    pub fn text_features(&self, model: &ClipModel) -> Result<Tensor<2>, ModelError> {
        model.text_features_from_embeddings(self.prompts(), &self.eot_positions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_context_is_seeded_and_has_the_requested_spread() {
        let a = normal_values(20_000, 0.02, 7);
        assert_eq!(a, normal_values(20_000, 0.02, 7));
        assert_ne!(a, normal_values(20_000, 0.02, 8));
        let n = a.len() as f64;
        let mean = a.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let var = a.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n;
        // 20 000 draws: the standard error of the std estimate is ~0.02/sqrt(40 000) = 1e-4.
        assert!(mean.abs() < 1e-3, "mean {mean}");
        assert!((var.sqrt() - 0.02).abs() < 1e-3, "std {}", var.sqrt());
    }

    #[test]
    fn positions_parse() {
        assert_eq!("middle".parse::<ClassTokenPosition>().unwrap(), ClassTokenPosition::Middle);
        assert!("left".parse::<ClassTokenPosition>().is_err());
    }
}
