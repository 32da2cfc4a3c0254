//! Independent vision-language prompts (IVLP; Khattak et al., the prompts PromptSRC trains, ICCV
//! 2023; reference `muzairkhattak/PromptSRC trainers/promptsrc.py::VLPromptLearner` and
//! `clip/model.py::ResidualAttentionBlock_IVLP`).
//!
//! Parameters, with `mt` / `mv` text / vision context tokens and depths `Jt` / `Jv`:
//!
//! - `ctx: [mt, dt]`: the first-layer text context, spliced into every class prompt (rows `1..1+mt`);
//! - `deep_text[j]: [mt, dt]`, `j < Jt − 1`: the text prompts of block `j + 1`;
//! - `vision_ctx: [mv, dv]`: the first-layer vision prompts, appended after the patches (the
//!   reference's `VPT`);
//! - `deep_vision[j]: [mv, dv]`, `j < Jv − 1`: the vision prompts of block `j + 1`.
//!
//! Unlike MaPLe the two towers' prompts are independent (no coupling function). The towers apply
//! them as [`super::deep_prompts`] describes; the class prompts are built as
//! [`super::deep_prompts::ClassPrompts`] (reference default: 4 tokens from "a photo of a"). Every
//! other prompt starts `N(0, 0.02²)` from a seeded ChaCha8 stream.

use burn::module::{Module, Param};
use burn::prelude::*;

use super::deep_prompt_model::DeepPromptModel;
use super::deep_prompts::{ClassPrompts, assemble, normal_matrix};
use super::model::l2_normalize;
use super::prompt_text::PromptTokenizer;
use crate::error::ModelError;

/// Configuration of [`IvlpPromptLearner`] (PromptSRC's reference defaults,
/// `configs/trainers/PromptSRC/vit_b16_c2_ep20_batch4_4+4ctx.yaml`).
#[derive(Config, Debug)]
pub struct IvlpConfig {
    /// Text context tokens per layer (`N_CTX_TEXT`).
    #[config(default = 4)]
    pub n_ctx_text: usize,
    /// Vision context tokens per layer (`N_CTX_VISION`).
    #[config(default = 4)]
    pub n_ctx_vision: usize,
    /// Text prompt depth (`PROMPT_DEPTH_TEXT`), at most the text tower's blocks.
    #[config(default = 9)]
    pub depth_text: usize,
    /// Vision prompt depth (`PROMPT_DEPTH_VISION`), at most the vision tower's blocks.
    #[config(default = 9)]
    pub depth_vision: usize,
    /// Initialise the text context from this phrase (used when `n_ctx_text ≤ 4`).
    #[config(default = "Some(\"a photo of a\".to_string())")]
    pub ctx_init: Option<String>,
    /// Seed of the random initial values.
    #[config(default = 1)]
    pub seed: u64,
}

/// The independent vision-language prompt learner (module docs). Only the `Param`s train.
#[derive(Module, Debug)]
pub struct IvlpPromptLearner {
    /// First-layer text context `[mt, dt]`.
    pub ctx: Param<Tensor<2>>,
    /// Text prompts of blocks `1..Jt`, each `[mt, dt]`.
    pub deep_text: Vec<Param<Tensor<2>>>,
    /// First-layer vision prompts `[mv, dv]`.
    pub vision_ctx: Param<Tensor<2>>,
    /// Vision prompts of blocks `1..Jv`, each `[mv, dv]`.
    pub deep_vision: Vec<Param<Tensor<2>>>,
    /// Frozen embeddings before the context rows `[K, slots, dt]` (CLIP's start token; `None` for
    /// SigLIP).
    #[module(skip)]
    pub token_prefix: Option<Tensor<3>>,
    /// Frozen embeddings after the context rows `[K, L-slots-m, dt]`.
    #[module(skip)]
    pub token_suffix: Tensor<3>,
    /// The first context row of the class prompts (1 for CLIP, 0 for SigLIP).
    #[module(skip)]
    pub slots: usize,
    /// EOT position of each class prompt (the pooled row).
    #[module(skip)]
    pub eot_positions: Vec<usize>,
}

/// Values of every IVLP parameter, row-major, in the order [`IvlpValues::flat`] concatenates them.
#[derive(Debug, Clone, PartialEq)]
pub struct IvlpValues {
    /// `ctx`, `[mt, dt]`.
    pub ctx: Vec<f32>,
    /// `deep_text[j]`, each `[mt, dt]`.
    pub deep_text: Vec<Vec<f32>>,
    /// `vision_ctx`, `[mv, dv]`.
    pub vision_ctx: Vec<f32>,
    /// `deep_vision[j]`, each `[mv, dv]`.
    pub deep_vision: Vec<Vec<f32>>,
}

impl IvlpValues {
    /// Every value, in the order `ctx`, `deep_text…`, `vision_ctx`, `deep_vision…`.
    pub fn flat(&self) -> Vec<f32> {
        let mut out = self.ctx.clone();
        self.deep_text.iter().for_each(|v| out.extend_from_slice(v));
        out.extend_from_slice(&self.vision_ctx);
        self.deep_vision.iter().for_each(|v| out.extend_from_slice(v));
        out
    }

    /// The same shapes as `self`, filled from `flat` (its length must match).
    pub fn with_flat(&self, flat: &[f32]) -> Result<IvlpValues, ModelError> {
        if flat.len() != self.flat().len() {
            return Err(ModelError::Input(format!(
                "IVLP values: {} values for {} parameters",
                flat.len(),
                self.flat().len()
            )));
        }
        let mut rest = flat;
        let mut take = |n: usize| {
            let (a, b) = rest.split_at(n);
            rest = b;
            a.to_vec()
        };
        Ok(IvlpValues {
            ctx: take(self.ctx.len()),
            deep_text: self.deep_text.iter().map(|v| take(v.len())).collect(),
            vision_ctx: take(self.vision_ctx.len()),
            deep_vision: self.deep_vision.iter().map(|v| take(v.len())).collect(),
        })
    }
}

impl IvlpConfig {
    /// Builds the learner for `classnames` on `model`'s frozen token embedding.
    ///
    /// Errors: a depth outside `1..=blocks` of its tower, `n_ctx_vision == 0`, or what
    /// [`ClassPrompts::new`] refuses.
    pub fn init(
        &self,
        model: &dyn DeepPromptModel,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        device: &Device,
    ) -> Result<IvlpPromptLearner, ModelError> {
        for (what, key, depth, blocks) in [
            ("text", "depth_text", self.depth_text, model.text_blocks()),
            ("vision", "depth_vision", self.depth_vision, model.vision_blocks()),
        ] {
            if depth == 0 || depth > blocks {
                return Err(ModelError::Input(format!(
                    "PromptSRC: {what} prompt depth {depth} ({key}) must be in 1..={blocks} (the blocks of \
                     this model's {what} tower; the reference default 9 needs a 12-block CLIP)"
                )));
            }
        }
        if self.n_ctx_vision == 0 {
            return Err(ModelError::Input("PromptSRC: n_ctx_vision must be >= 1".into()));
        }
        let prompts = ClassPrompts::new(
            "PromptSRC",
            model,
            tokenizer,
            classnames,
            self.n_ctx_text,
            self.ctx_init.as_deref(),
            self.seed,
            device,
        )?;
        let (mt, dt) = (self.n_ctx_text, model.token_width());
        let (mv, dv) = (self.n_ctx_vision, model.vision_width());
        let matrix = |rows, cols, salt: u64| {
            Param::from_tensor(normal_matrix(rows, cols, self.seed.wrapping_add(salt), device))
        };
        Ok(IvlpPromptLearner {
            ctx: Param::from_tensor(prompts.ctx),
            deep_text: (1..self.depth_text).map(|j| matrix(mt, dt, 1000 + j as u64)).collect(),
            vision_ctx: matrix(mv, dv, 2000),
            deep_vision: (1..self.depth_vision).map(|j| matrix(mv, dv, 3000 + j as u64)).collect(),
            token_prefix: prompts.prefix,
            token_suffix: prompts.suffix,
            slots: prompts.slots,
            eot_positions: prompts.pooled,
        })
    }
}

fn host(t: Tensor<2>) -> Vec<f32> {
    t.to_data().iter::<f32>().collect()
}

impl IvlpPromptLearner {
    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.eot_positions.len()
    }

    /// The learner with every parameter replaced by `values` (shapes checked), keeping the frozen
    /// prompt embeddings.
    pub fn with_values(mut self, values: &IvlpValues, device: &Device) -> Result<Self, ModelError> {
        fn matrix(
            like: &Param<Tensor<2>>,
            v: &[f32],
            what: &str,
            device: &Device,
        ) -> Result<Param<Tensor<2>>, ModelError> {
            let dims = like.dims();
            if v.len() != dims[0] * dims[1] {
                return Err(ModelError::Input(format!(
                    "IVLP values: {what} has {} values, expected {dims:?}",
                    v.len()
                )));
            }
            Ok(Param::from_tensor(Tensor::from_data(TensorData::new(v.to_vec(), dims), device)))
        }
        if values.deep_text.len() != self.deep_text.len()
            || values.deep_vision.len() != self.deep_vision.len()
        {
            return Err(ModelError::Input(format!(
                "IVLP values: expected {} deep text and {} deep vision prompts",
                self.deep_text.len(),
                self.deep_vision.len()
            )));
        }
        self.ctx = matrix(&self.ctx, &values.ctx, "ctx", device)?;
        self.vision_ctx = matrix(&self.vision_ctx, &values.vision_ctx, "vision_ctx", device)?;
        self.deep_text = self
            .deep_text
            .iter()
            .zip(&values.deep_text)
            .map(|(p, v)| matrix(p, v, "deep_text", device))
            .collect::<Result<_, _>>()?;
        self.deep_vision = self
            .deep_vision
            .iter()
            .zip(&values.deep_vision)
            .map(|(p, v)| matrix(p, v, "deep_vision", device))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// The current values of every parameter.
    pub fn values(&self) -> IvlpValues {
        IvlpValues {
            ctx: host(self.ctx.val()),
            deep_text: self.deep_text.iter().map(|p| host(p.val())).collect(),
            vision_ctx: host(self.vision_ctx.val()),
            deep_vision: self.deep_vision.iter().map(|p| host(p.val())).collect(),
        }
    }

    /// The first-layer class prompts `[K, L, dt]`.
    pub fn prompts(&self) -> Tensor<3> {
        assemble(self.token_prefix.as_ref(), self.ctx.val(), &self.token_suffix)
    }

    /// Text features `[K, p]` of the prompted text tower (projected, not normalised).
    pub fn text_features(&self, model: &dyn DeepPromptModel) -> Result<Tensor<2>, ModelError> {
        let deep: Vec<Tensor<2>> = self.deep_text.iter().map(|p| p.val()).collect();
        model.text_features_deep(self.prompts(), self.slots, &self.eot_positions, &deep)
    }

    /// Image features `[b, p]` of the prompted vision tower (projected, not normalised).
    pub fn image_features(
        &self,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
    ) -> Result<Tensor<2>, ModelError> {
        let deep: Vec<Tensor<2>> = self.deep_vision.iter().map(|p| p.val()).collect();
        model.image_features_deep(images, self.vision_ctx.val(), &deep)
    }

    /// `exp(logit_scale) · l2n(image_features) · l2n(text_features)ᵀ` (+ SigLIP's `logit_bias`),
    /// `[b, K]`.
    pub fn logits(&self, model: &dyn DeepPromptModel, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        let text = l2_normalize(self.text_features(model)?);
        let image = l2_normalize(self.image_features(model, images)?);
        Ok(model.prompt_logits(image, text))
    }
}
