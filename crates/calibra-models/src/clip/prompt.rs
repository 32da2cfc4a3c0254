//! CoOp prompt learner (Zhou et al., IJCV 2022; reference `KaiyangZhou/CoOp trainers/coop.py::PromptLearner`,
//! spec calibration-metrics-transfer.md §E1).
//!
//! Per class `k`, the prompt is `n` context slots followed by `classname_k + "."`, laid out by the
//! text tower's [`PromptTokenizer`] (CLIP: `[SOT, slots, tokens, EOT, padding]`, CoOp's own
//! `"X X … X name."`; SigLIP: `[slots, tokens, </s>, padding]`, see [`super::prompt_text`]) and
//! embedded with the tower's frozen token embedding `E`. The frozen buffers are `prefix_k =
//! E[k, :s]` (the `s` special tokens before the slots: CLIP's SOT, none for SigLIP) and `suffix_k =
//! E[k, s+n:]` (class tokens, ".", end token, padding). The learned context `ctx` (`[n, d]` unified or
//! `[K, n, d]` class-specific) is spliced in by the class-token position:
//!
//! ```text
//! end:    [prefix_k, ctx_k, suffix_k]
//! middle: [prefix_k, ctx_k[:n/2], class_k, ctx_k[n/2:], suffix_k[len_k:]]
//! front:  [prefix_k, class_k, ctx_k, suffix_k[len_k:]]
//! ```
//!
//! where `class_k = suffix_k[:len_k]` and `len_k` is the token length of the class name. The pooled
//! row of the text tower is the one of the laid-out prompt (CLIP: its EOT; SigLIP: the last),
//! unchanged by the splicing: the total length is constant.

use burn::module::{Module, Param};
use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::prompt_text::{PromptTextEncoder, PromptTokenizer};
use crate::error::ModelError;

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
    /// Frozen embeddings of the special tokens before the context, `[K, s, d]` (CLIP: the SOT,
    /// `s = 1`; `None` when there are none, as for SigLIP).
    #[module(skip)]
    pub token_prefix: Option<Tensor<3>>,
    /// Frozen embeddings after the context slots `[K, L-1-n, d]`.
    #[module(skip)]
    pub token_suffix: Tensor<3>,
    /// Token length of each class name.
    #[module(skip)]
    pub name_lens: Vec<usize>,
    /// The row the text tower pools for each prompt (CLIP: its EOT; SigLIP: the last position;
    /// BERT: `[CLS]`).
    #[module(skip)]
    pub pooled_positions: Vec<usize>,
    /// The leading positions the text tower attends to in each prompt (see
    /// [`super::SlottedPrompt::attended`]).
    #[module(skip)]
    pub attended_lengths: Vec<usize>,
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
    /// Builds the learner for `classnames` on `encoder`'s frozen token embedding, with prompts laid
    /// out by `tokenizer` (a CLIP model with its tokenizer, or a SigLIP model with its own).
    ///
    /// Errors: no classes, `n_ctx == 0`, an empty phrase, or a prompt that does not fit the context
    /// length (its end token would be truncated away).
    pub fn init(
        &self,
        encoder: &dyn PromptTextEncoder,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        device: &Device,
    ) -> Result<PromptLearner, ModelError> {
        let k = classnames.len();
        if k == 0 {
            return Err(ModelError::Input("CoOp prompt learner: no class names".into()));
        }
        let d = encoder.token_width();
        let (n_ctx, init_ctx) = match &self.init {
            ContextInit::Random { seed } => {
                if self.n_ctx == 0 {
                    return Err(ModelError::Input("CoOp prompt learner: n_ctx must be > 0".into()));
                }
                let rows = if self.class_specific { k } else { 1 };
                let values = normal_values(rows * self.n_ctx * d, 0.02, *seed);
                let ctx = Tensor::<3>::from_data(TensorData::new(values, [rows, self.n_ctx, d]), device);
                (self.n_ctx, ctx)
            }
            ContextInit::Phrase(phrase) => {
                let phrase = phrase.replace('_', " ");
                let ids = tokenizer.content_ids(&phrase).map_err(|e| tok_err("context phrase", e))?;
                if ids.is_empty() {
                    return Err(ModelError::Input(format!(
                        "CoOp prompt learner: phrase {phrase:?} has no tokens"
                    )));
                }
                let ctx = encoder.embed_prompt_ids(&[ids], device)?; // [1, n, d]
                let n = ctx.dims()[1];
                let ctx = if self.class_specific { ctx.repeat_dim(0, k) } else { ctx };
                (n, ctx)
            }
        };
        let mut ids = Vec::with_capacity(k);
        let mut name_lens = Vec::with_capacity(k);
        let mut pooled_positions = Vec::with_capacity(k);
        let mut attended_lengths = Vec::with_capacity(k);
        let mut slots_start = None;
        for name in classnames {
            let name = name.replace('_', " ");
            let prompt = tokenizer
                .slotted_prompt(n_ctx, &format!("{name}."))
                .map_err(|e| tok_err(&format!("class {name:?}"), e))?;
            let len = tokenizer.content_ids(&name).map_err(|e| tok_err(&format!("class {name:?}"), e))?.len();
            let content_end = prompt.slots_start + n_ctx + len;
            if *slots_start.get_or_insert(prompt.slots_start) != prompt.slots_start
                || (prompt.pooled != 0 && prompt.pooled < content_end)
                || prompt.attended < content_end
            {
                return Err(ModelError::Input(format!(
                    "CoOp prompt learner: the {} tokenizer laid out class {name:?} inconsistently",
                    tokenizer.family()
                )));
            }
            ids.push(prompt.ids);
            name_lens.push(len);
            pooled_positions.push(prompt.pooled);
            attended_lengths.push(prompt.attended);
        }
        let s = slots_start.unwrap_or(0);
        let embedding = encoder.embed_prompt_ids(&ids, device)?; // [K, L, d]
        let l = embedding.dims()[1];
        Ok(PromptLearner {
            ctx: Param::from_tensor(init_ctx),
            token_prefix: (s > 0).then(|| embedding.clone().narrow(1, 0, s)),
            token_suffix: embedding.narrow(1, s + n_ctx, l - s - n_ctx),
            name_lens,
            pooled_positions,
            attended_lengths,
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
        let with_prefix = |p: Option<Tensor<3>>, rest: Vec<Tensor<3>>| -> Tensor<3> {
            Tensor::cat(p.into_iter().chain(rest).collect(), 1)
        };
        match self.position {
            ClassTokenPosition::End => with_prefix(prefix, vec![ctx, suffix]),
            ClassTokenPosition::Middle | ClassTokenPosition::Front => {
                let half = n / 2;
                let rest = suffix.dims()[1];
                let rows: Vec<Tensor<3>> = (0..k)
                    .map(|i| {
                        let len = self.name_lens[i];
                        let p = prefix.clone().map(|p| p.narrow(0, i, 1));
                        let s = suffix.clone().narrow(0, i, 1);
                        let class = s.clone().narrow(1, 0, len);
                        let tail = s.narrow(1, len, rest - len);
                        let c = ctx.clone().narrow(0, i, 1);
                        if self.position == ClassTokenPosition::Middle {
                            let c1 = c.clone().narrow(1, 0, half);
                            let c2 = c.narrow(1, half, n - half);
                            with_prefix(p, vec![c1, class, c2, tail])
                        } else {
                            with_prefix(p, vec![class, c, tail])
                        }
                    })
                    .collect();
                Tensor::cat(rows, 0)
            }
        }
    }

    /// Text features of the learned prompts through `encoder`'s frozen text tower (and projection):
    /// `[K, p]`, not normalised (CoOp `TextEncoder`).
    pub fn text_features(&self, encoder: &dyn PromptTextEncoder) -> Result<Tensor<2>, ModelError> {
        encoder.prompt_features(self.prompts(), &self.pooled_positions, &self.attended_lengths)
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
