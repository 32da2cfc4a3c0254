//! HiCroPL's hierarchical cross-modal prompt learner (hierarchical cross-modal prompt learning,
//! 2025; reference `zzeoZheng/HiCroPL trainers/hicropl.py::CrossModalPromptLearner` and
//! `CustomCLIP`).
//!
//! Parameters, with `m` context tokens per layer, depth `D`, cross layer `c` (`1 ≤ c < D`) and text
//! / vision widths `dt` / `dv`:
//!
//! - `text[i]: [m, dt]`, `i < D` (`cross_prompts_text`): `text[0]` is the first-layer context
//!   spliced into every class prompt, `text[i]` the text prompts of block `i`;
//! - `vision[i]: [m, dv]` (`cross_prompts_visual`): `vision[0]` appended after the patches,
//!   `vision[i]` the vision prompts of block `i`;
//! - the mapper ([`HicroplMapper`]): two [`CrossPromptAttention`]s and one
//!   [`AttentionPooling`] with a proxy token per layer.
//!
//! The towers apply the prompts as [`super::deep_prompts`] describes (the IVLP layout, `m` rows in
//! both towers). Before every forward pass the prompts are re-mapped ([`HicroplPromptLearner::mapped`]):
//!
//! ```text
//! T→I, layers i < c:   p_i = pool_text_i(proxy_text_i, text[i])                       [1, dt]
//!                      vision[0..c] ← text2visual(cat vision[0..c], cat p_0..p_{c-1})
//! I→T, layers i ≥ c:   q_i = pool_vision_i(proxy_vision_i, vision[i])                 [1, dv]
//!                      text[c..D]   ← visual2text(cat text[c..D], cat q_c..q_{D-1})
//! ```
//!
//! As in the reference, the mapped values are written into the prompt parameters (its
//! `.data.copy_`): the loss reaches the mapper only through those values, so the mapper, the pools
//! and the proxies get no gradient and keep their initial values, and the prompts train as leaves
//! holding the mapped values.
//!
//! Prompted features are fused with frozen ones before the logits: `image = l2n(l2n(v) + l2n(v̄))`
//! with `v̄` the frozen image tower's features, `text = l2n(l2n(w) + t̄)` with `t̄` the teacher text
//! features ([`HicroplPromptLearner::teacher_text`]). The reference's teacher averages the frozen
//! text features of GPT-3 descriptions of each class ([`teacher_from_descriptions`] takes such
//! descriptions); without them calibra averages over the 60 templates of
//! [`super::PROMPTSRC_TEMPLATES`] instead (each feature normalised, the mean normalised, as the
//! reference's `gpt_clip_classifier`).
//!
//! Initialisation follows the reference's structure on seeded ChaCha8 streams: `text[0]` as
//! [`super::deep_prompts::ClassPrompts`] (16 tokens, so random, with the reference config), the deep
//! text prompts `N(0, 0.02²)`, every vision prompt the same `N(0, 0.02²)` matrix (the reference builds
//! them from one tensor), the proxies `N(0, 1)` (one value per tower, shared by its layers), the pools
//! of a tower equal (deep copies), and PyTorch's default inits for the attention and linear layers.
//! The reference trains in fp16 (its `PREC`); calibra trains in float32.

use burn::module::{Module, Param};
use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::deep_prompt_model::DeepPromptModel;
use super::deep_prompts::{ClassPrompts, assemble, normal_matrix};
use super::model::l2_normalize;
use super::prompt::normal_values;
use super::prompt_mapper::{
    AttentionPooling, CrossPromptAttention, InitValues, NamedParams, join, matrix_param,
};
use super::prompt_text::PromptTokenizer;
use super::promptsrc_templates::PROMPTSRC_TEMPLATES;
use super::zero_shot::ZeroShotClassifier;
use crate::error::ModelError;

/// Configuration of [`HicroplPromptLearner`] (reference few-shot defaults,
/// `configs/trainers/HiCroPL/vit_b16_c2_ep50_batch32_16ctx_few_shot.yaml`).
#[derive(Config, Debug)]
pub struct HicroplConfig {
    /// Context tokens `m` per layer in both towers (`N_CTX`).
    #[config(default = 16)]
    pub n_ctx: usize,
    /// Prompt depth `D` in both towers (`PROMPT_DEPTH`), at most the blocks of the smaller tower.
    #[config(default = 12)]
    pub depth: usize,
    /// Layers `0..c` map text → vision, `c..D` vision → text (`CROSS_LAYER`), `1 ≤ c < D`.
    #[config(default = 6)]
    pub cross_layer: usize,
    /// Attention heads of the mapper and the pools (the reference's 8); must divide both widths.
    #[config(default = 8)]
    pub heads: usize,
    /// Initialise the first-layer context from this phrase (used when `n_ctx ≤ 4`, as the reference).
    #[config(default = "Some(\"a photo of a\".to_string())")]
    pub ctx_init: Option<String>,
    /// Seed of the random initial values.
    #[config(default = 1)]
    pub seed: u64,
}

/// HiCroPL's mapper: the two knowledge mappers, the layer-specific pools and their proxy tokens.
/// It receives no gradient (module docs), so it keeps its initial values.
#[derive(Module, Debug)]
pub struct HicroplMapper {
    /// `text2visual_net`: vision prompts attend over the text proxies.
    pub text_to_vision: CrossPromptAttention,
    /// `visual2text_net`: text prompts attend over the vision proxies.
    pub vision_to_text: CrossPromptAttention,
    /// `attn_pooling_text_nets`, one per layer `< c`.
    pub text_pools: Vec<AttentionPooling>,
    /// `attn_pooling_visual_nets`, one per layer `≥ c`.
    pub vision_pools: Vec<AttentionPooling>,
    /// `text_proxy_token`, `[1, dt]` each.
    pub text_proxies: Vec<Param<Tensor<2>>>,
    /// `visual_proxy_token`, `[1, dv]` each.
    pub vision_proxies: Vec<Param<Tensor<2>>>,
}

/// The HiCroPL prompt learner (module docs).
#[derive(Module, Debug)]
pub struct HicroplPromptLearner {
    /// `cross_prompts_text`, `[m, dt]` each.
    pub text: Vec<Param<Tensor<2>>>,
    /// `cross_prompts_visual`, `[m, dv]` each.
    pub vision: Vec<Param<Tensor<2>>>,
    /// The mapper. It never trains and is rebuilt from the config's seed, so it is left out of the
    /// learner's record (a checkpoint holds the prompts only; for ViT-B/16 the mapper is ~33M values).
    #[module(skip)]
    pub mapping: HicroplMapper,
    /// The cross layer `c`.
    #[module(skip)]
    pub cross_layer: usize,
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
    /// EOT position of each class prompt.
    #[module(skip)]
    pub eot_positions: Vec<usize>,
    /// The teacher text features `t̄`, L2-normalised, `[K, p]`.
    #[module(skip)]
    pub teacher_text: Tensor<2>,
}

/// A value source drawing PyTorch-style inits from a seeded ChaCha8 stream.
fn seeded_source(seed: u64) -> impl FnMut(usize, InitValues) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    move |count, init| match init {
        InitValues::Zeros => vec![0.0; count],
        InitValues::Uniform(bound) => {
            (0..count).map(|_| ((rng.random::<f64>() * 2.0 - 1.0) * bound) as f32).collect()
        }
    }
}

/// `p` holding `value` instead, with the same id (so the optimiser's state for it carries on) and on
/// the autodiff view when `p` was.
fn revalued(p: Param<Tensor<2>>, value: Tensor<2>) -> Param<Tensor<2>> {
    let id = p.id;
    let value = if p.val().is_autodiff() { value.autodiff() } else { value };
    let mut q = Param::from_tensor(value);
    q.id = id;
    q
}

impl HicroplConfig {
    /// Checks depth, cross layer and heads against `model`.
    pub fn validate(&self, model: &dyn DeepPromptModel) -> Result<(), ModelError> {
        let blocks = model.text_blocks().min(model.vision_blocks());
        if self.depth < 2 || self.depth > blocks {
            return Err(ModelError::Input(format!(
                "HiCroPL: prompt depth {} must be in 2..={blocks} (the blocks of the smaller tower of this \
                 model; the reference default 12 needs a 12-block CLIP; set hicropl_depth)",
                self.depth
            )));
        }
        if self.cross_layer == 0 || self.cross_layer >= self.depth {
            return Err(ModelError::Input(format!(
                "HiCroPL: cross layer {} must be in 1..{} (both mapping directions need a layer; set \
                 hicropl_cross_layer)",
                self.cross_layer, self.depth
            )));
        }
        let (dt, dv) = (model.token_width(), model.vision_width());
        if self.heads == 0 || !dt.is_multiple_of(self.heads) || !dv.is_multiple_of(self.heads) {
            return Err(ModelError::Input(format!(
                "HiCroPL: the mapper's {} attention heads must divide the text width {dt} and the vision \
                 width {dv}",
                self.heads
            )));
        }
        if self.n_ctx == 0 {
            return Err(ModelError::Input("HiCroPL: n_ctx must be >= 1".into()));
        }
        Ok(())
    }

    /// Builds the learner for `classnames` on `model`'s frozen token embedding, with the template
    /// teacher text features of `classnames` (module docs).
    pub fn init(
        &self,
        model: &dyn DeepPromptModel,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        device: &Device,
    ) -> Result<HicroplPromptLearner, ModelError> {
        self.init_with_teacher(model, tokenizer, classnames, None, device)
    }

    /// [`Self::init`] with the given teacher text features (`[K, p]`, for example
    /// [`teacher_from_descriptions`]'s) instead of the template teacher, which is then not computed.
    pub fn init_with_teacher(
        &self,
        model: &dyn DeepPromptModel,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        teacher: Option<Tensor<2>>,
        device: &Device,
    ) -> Result<HicroplPromptLearner, ModelError> {
        self.validate(model)?;
        let prompts = ClassPrompts::new(
            "HiCroPL",
            model,
            tokenizer,
            classnames,
            self.n_ctx,
            self.ctx_init.as_deref(),
            self.seed,
            device,
        )?;
        let (m, d, c, heads) = (self.n_ctx, self.depth, self.cross_layer, self.heads);
        let (dt, dv) = (model.token_width(), model.vision_width());
        let seed = |salt: u64| self.seed.wrapping_add(salt);
        let mut text = vec![Param::from_tensor(prompts.ctx)];
        text.extend((1..d).map(|i| Param::from_tensor(normal_matrix(m, dt, seed(1000 + i as u64), device))));
        let vision_init = normal_matrix(m, dv, seed(2000), device);
        let vision = (0..d).map(|_| Param::from_tensor(vision_init.clone())).collect();
        let proxy =
            |width: usize, salt: u64| matrix_param(normal_values(width, 1.0, seed(salt)), 1, width, device);
        let (text_proxy, vision_proxy) = (proxy(dt, 4000), proxy(dv, 5000));
        // The pools of a tower start equal (the reference deep-copies one), each with its own ids.
        let pools = |width: usize, count: usize, salt: u64| {
            (0..count)
                .map(|_| AttentionPooling::new(width, heads, &mut seeded_source(seed(salt)), device))
                .collect::<Result<Vec<_>, _>>()
        };
        let mapper = HicroplMapper {
            text_to_vision: CrossPromptAttention::new(dv, dt, heads, &mut seeded_source(seed(8000)), device)?,
            vision_to_text: CrossPromptAttention::new(dt, dv, heads, &mut seeded_source(seed(9000)), device)?,
            text_pools: pools(dt, c, 6000)?,
            vision_pools: pools(dv, d - c, 7000)?,
            text_proxies: (0..c).map(|_| Param::from_tensor(text_proxy.val())).collect(),
            vision_proxies: (0..d - c).map(|_| Param::from_tensor(vision_proxy.val())).collect(),
        };
        let teacher_text = match teacher {
            Some(teacher) => teacher,
            None => {
                let cleaned: Vec<String> = classnames.iter().map(|n| n.replace('_', " ")).collect();
                let templates: Vec<String> = PROMPTSRC_TEMPLATES.iter().map(|t| t.to_string()).collect();
                ZeroShotClassifier::for_prompt_tower(model, tokenizer, &cleaned, &templates, device)?
                    .class_embeddings
            }
        };
        let k = classnames.len();
        if teacher_text.dims()[0] != k {
            return Err(ModelError::Input(format!(
                "HiCroPL teacher: {} rows of text features for {k} classes",
                teacher_text.dims()[0]
            )));
        }
        Ok(HicroplPromptLearner {
            text,
            vision,
            mapping: mapper,
            cross_layer: c,
            token_prefix: prompts.prefix,
            token_suffix: prompts.suffix,
            slots: prompts.slots,
            eot_positions: prompts.pooled,
            teacher_text,
        })
    }
}

/// HiCroPL's teacher text features from descriptions of each class (the reference's
/// `gpt_clip_classifier` on its `gpt_file/<dataset>_prompt.json`: a JSON object from class name to a
/// list of sentences): each sentence's frozen text features L2-normalised, their mean normalised,
/// `[K, p]`. Class names are looked up with `_` read as a space, as the reference does.
///
/// Errors name the class that has no entry or an empty list, and a sentence longer than the
/// context length (the reference's tokenizer raises on it; nothing is truncated).
pub fn teacher_from_descriptions(
    model: &dyn DeepPromptModel,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    descriptions: &std::collections::BTreeMap<String, Vec<String>>,
    device: &Device,
) -> Result<Tensor<2>, ModelError> {
    let mut rows = Vec::with_capacity(classnames.len());
    for name in classnames {
        let name = name.replace('_', " ");
        let sentences = descriptions.get(&name).filter(|s| !s.is_empty()).ok_or_else(|| {
            let known: Vec<&str> = descriptions.keys().map(String::as_str).take(8).collect();
            ModelError::Input(format!(
                "HiCroPL descriptions: no sentences for class {name:?} (the descriptions name {} classes: \
                 {}{})",
                descriptions.len(),
                known.join(", "),
                if descriptions.len() > known.len() { ", …" } else { "" }
            ))
        })?;
        let ids = sentences
            .iter()
            .map(|t| {
                // A sentence longer than the context length is refused, as the reference's
                // `clip.tokenize` raises on it, rather than truncated.
                let refuse =
                    |e: ModelError| ModelError::Input(format!("HiCroPL description of class {name:?}: {e}"));
                tokenizer.slotted_prompt(0, t).map_err(refuse)?;
                tokenizer.zero_shot_ids(t).map_err(refuse)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let features = l2_normalize(model.text_features_of_ids(&ids, device)?);
        let p = features.dims()[1];
        rows.push(l2_normalize(features.mean_dim(0).reshape([1, p])));
    }
    Ok(Tensor::cat(rows, 0))
}

fn host(t: Tensor<2>) -> Vec<f32> {
    t.to_data().iter::<f32>().collect()
}

impl HicroplPromptLearner {
    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.eot_positions.len()
    }

    /// Context tokens `m` per layer.
    pub fn n_ctx(&self) -> usize {
        self.text[0].dims()[0]
    }

    /// Prompt depth `D`.
    pub fn depth(&self) -> usize {
        self.text.len()
    }

    /// Every parameter with its name in the reference's state dict (under `prompt_learner.`).
    pub fn named_params(&mut self) -> Vec<(String, &mut Param<Tensor<2>>)> {
        let mut out = Vec::new();
        for (i, p) in self.text.iter_mut().enumerate() {
            out.push((format!("cross_prompts_text.{i}"), p));
        }
        for (i, p) in self.vision.iter_mut().enumerate() {
            out.push((format!("cross_prompts_visual.{i}"), p));
        }
        let mapper = &mut self.mapping;
        mapper.text_to_vision.named_params("text2visual_net", &mut out);
        mapper.vision_to_text.named_params("visual2text_net", &mut out);
        for (i, pool) in mapper.text_pools.iter_mut().enumerate() {
            pool.named_params(&join("attn_pooling_text_nets", &i.to_string()), &mut out);
        }
        for (i, pool) in mapper.vision_pools.iter_mut().enumerate() {
            pool.named_params(&join("attn_pooling_visual_nets", &i.to_string()), &mut out);
        }
        for (i, p) in mapper.text_proxies.iter_mut().enumerate() {
            out.push((format!("text_proxy_token.{i}"), p));
        }
        for (i, p) in mapper.vision_proxies.iter_mut().enumerate() {
            out.push((format!("visual_proxy_token.{i}"), p));
        }
        out
    }

    /// The learner with the named parameters set to `values` (row-major, PyTorch's layout; names as
    /// [`Self::named_params`]). Errors on an unknown name or a wrong number of values.
    pub fn with_named_values(
        mut self,
        values: &[(String, Vec<f32>)],
        device: &Device,
    ) -> Result<Self, ModelError> {
        let mut named = self.named_params();
        for (name, v) in values {
            let (_, p) = named
                .iter_mut()
                .find(|(n, _)| n == name)
                .ok_or_else(|| ModelError::Input(format!("HiCroPL values: no parameter named {name:?}")))?;
            let [rows, cols] = p.dims();
            if v.len() != rows * cols {
                return Err(ModelError::Input(format!(
                    "HiCroPL values: {name} has {} values, expected [{rows}, {cols}]",
                    v.len()
                )));
            }
            **p = matrix_param(v.clone(), rows, cols, device);
        }
        drop(named);
        Ok(self)
    }

    /// The values of the prompts (`cross_prompts_text.*`, `cross_prompts_visual.*`), by name.
    pub fn prompt_values(&self) -> Vec<(String, Vec<f32>)> {
        let text =
            self.text.iter().enumerate().map(|(i, p)| (format!("cross_prompts_text.{i}"), host(p.val())));
        let vision =
            self.vision.iter().enumerate().map(|(i, p)| (format!("cross_prompts_visual.{i}"), host(p.val())));
        text.chain(vision).collect()
    }

    /// The learner with its prompts re-mapped (module docs): the mapped values are computed without
    /// gradient from the current ones and written into the same parameters.
    pub fn mapped(mut self) -> Self {
        let c = self.cross_layer;
        let d = self.text.len();
        let m = self.n_ctx();
        let mapper = &self.mapping;
        let value = |p: &Param<Tensor<2>>| p.val().inner();
        // T→I over layers 0..c.
        let text_proxies: Vec<Tensor<2>> = (0..c)
            .map(|i| mapper.text_pools[i].forward(value(&mapper.text_proxies[i]), value(&self.text[i])))
            .collect();
        let vision_in = Tensor::cat(self.vision[..c].iter().map(value).collect(), 0);
        let text_proxies = Tensor::cat(text_proxies, 0);
        let vision_out = mapper.text_to_vision.forward(vision_in, text_proxies);
        // I→T over layers c..D, from the vision prompts of those layers (not changed above).
        let vision_proxies: Vec<Tensor<2>> = (c..d)
            .map(|i| {
                mapper.vision_pools[i - c]
                    .forward(value(&mapper.vision_proxies[i - c]), value(&self.vision[i]))
            })
            .collect();
        let text_in = Tensor::cat(self.text[c..].iter().map(value).collect(), 0);
        let text_out = mapper.vision_to_text.forward(text_in, Tensor::cat(vision_proxies, 0));
        let vision: Vec<Param<Tensor<2>>> = std::mem::take(&mut self.vision);
        self.vision = vision
            .into_iter()
            .enumerate()
            .map(|(i, p)| if i < c { revalued(p, vision_out.clone().narrow(0, i * m, m)) } else { p })
            .collect();
        let text: Vec<Param<Tensor<2>>> = std::mem::take(&mut self.text);
        self.text = text
            .into_iter()
            .enumerate()
            .map(|(i, p)| if i >= c { revalued(p, text_out.clone().narrow(0, (i - c) * m, m)) } else { p })
            .collect();
        self
    }

    /// The first-layer class prompts `[K, L, dt]`.
    pub fn prompts(&self) -> Tensor<3> {
        assemble(self.token_prefix.as_ref(), self.text[0].val(), &self.token_suffix)
    }

    /// Text features `[K, p]` of the prompted text tower (projected, not normalised, not fused).
    pub fn prompted_text_features(&self, model: &dyn DeepPromptModel) -> Result<Tensor<2>, ModelError> {
        let deep: Vec<Tensor<2>> = self.text[1..].iter().map(|p| p.val()).collect();
        model.text_features_deep(self.prompts(), self.slots, &self.eot_positions, &deep)
    }

    /// Image features `[b, p]` of the prompted vision tower (projected, not normalised, not fused).
    pub fn prompted_image_features(
        &self,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
    ) -> Result<Tensor<2>, ModelError> {
        let deep: Vec<Tensor<2>> = self.vision[1..].iter().map(|p| p.val()).collect();
        model.image_features_deep(images, self.vision[0].val(), &deep)
    }

    /// The fused class features `l2n(l2n(w) + t̄)`, `[K, p]`.
    pub fn text_features(&self, model: &dyn DeepPromptModel) -> Result<Tensor<2>, ModelError> {
        let prompted = l2_normalize(self.prompted_text_features(model)?);
        Ok(l2_normalize(prompted + self.teacher_text.clone()))
    }

    /// The fused image features `l2n(l2n(v) + l2n(v̄))`, `[b, p]`, with `frozen = l2n(v̄)` the frozen
    /// tower's normalised features of the same images.
    pub fn fused_image_features(
        &self,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
        frozen: Tensor<2>,
    ) -> Result<Tensor<2>, ModelError> {
        let prompted = l2_normalize(self.prompted_image_features(model, images)?);
        Ok(l2_normalize(prompted + frozen))
    }

    /// The fused image features of `images`, the frozen features computed here.
    pub fn image_features(
        &self,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
    ) -> Result<Tensor<2>, ModelError> {
        let frozen = l2_normalize(model.frozen_image_features(images.clone())?);
        self.fused_image_features(model, images, frozen)
    }

    /// `exp(logit_scale) · image · textᵀ` (+ SigLIP's `logit_bias`) of the fused features, `[b, K]`
    /// (with the current prompts; the reference maps before every forward pass, so call it on
    /// [`Self::mapped`]).
    pub fn logits(&self, model: &dyn DeepPromptModel, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        let text = self.text_features(model)?;
        let image = self.image_features(model, images)?;
        Ok(model.prompt_logits(image, text))
    }
}
