//! MaPLe's multi-modal prompt learner (Khattak et al., CVPR 2023; reference
//! `muzairkhattak/multimodal-prompt-learning trainers/maple.py::MultiModalPromptLearner`).
//!
//! Parameters, with `m` context tokens, prompt depth `J + 1` and text / vision widths `dt` / `dv`:
//!
//! - `ctx: [m, dt]`: the first-layer text context, spliced into every class prompt (rows `1..1+m`);
//! - `proj: Linear(dt → dv)`: the coupling function; `proj(ctx)` are the `m` first-layer vision
//!   prompts (appended after the patches);
//! - `deep_text[j]: [m, dt]`, `j < J`: the text prompts of block `j + 1`;
//! - `deep_proj[j]: Linear(dt → dv)`: the vision prompts of block `j + 1` are `deep_proj[j](deep_text[j])`.
//!
//! The towers apply them as [`super::deep_prompts`] describes. The class prompt is
//! `"{prefix} {classname}."`, tokenised and embedded by the frozen token embedding; its rows `1..1+m`
//! are replaced by `ctx`. With an init phrase (reference default `"a photo of a"`, `m = 2`) the prefix
//! is the whole phrase and `ctx` starts as the embeddings of its first `m` tokens, so the tokens after
//! them stay fixed words of the prompt ("of a" with the defaults), as in the reference; without one,
//! the prefix is `m` × `"X"` and `ctx` starts `N(0, 0.02²)`.
//!
//! Initialisation: the deep text prompts `N(0, 0.02²)`; `proj` and the deep projections PyTorch's
//! `nn.Linear` default, `U(±1/√dt)` for weights and biases, with every deep projection starting
//! equal (the reference deep-copies one Linear). Random values come from seeded ChaCha8 streams,
//! so a learner is a function of its config, class names and seed.
//!
//! The reference trains in fp16 (its `PREC` default); calibra trains in float32.

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::deep_prompt_model::DeepPromptModel;
use super::deep_prompts::{ClassPrompts, assemble, normal_matrix};
use super::model::l2_normalize;
use super::prompt_text::PromptTokenizer;
use crate::error::ModelError;

/// Configuration of [`MaplePromptLearner`] (reference defaults: `N_CTX 2`, `PROMPT_DEPTH 9`,
/// `CTX_INIT "a photo of a"`, `configs/trainers/MaPLe/vit_b16_c2_ep5_batch4_2ctx.yaml`).
#[derive(Config, Debug)]
pub struct MapleConfig {
    /// Context tokens `m` per layer (`N_CTX`).
    #[config(default = 2)]
    pub n_ctx: usize,
    /// Prompt depth (`PROMPT_DEPTH`): blocks `0..depth` of both towers get prompts; 1 is shallow
    /// MaPLe (first layer only). At most the number of blocks of the smaller tower.
    #[config(default = 9)]
    pub depth: usize,
    /// Initialise the context from this phrase (used when `n_ctx ≤ 4`, as the reference).
    #[config(default = "Some(\"a photo of a\".to_string())")]
    pub ctx_init: Option<String>,
    /// Seed of the random initial values.
    #[config(default = 1)]
    pub seed: u64,
}

/// The MaPLe prompt learner (module docs). Only the `Param`s and the Linears train.
#[derive(Module, Debug)]
pub struct MaplePromptLearner {
    /// First-layer text context `[m, dt]`.
    pub ctx: Param<Tensor<2>>,
    /// Coupling function of the first layer, `dt → dv`.
    pub proj: Linear,
    /// Text prompts of blocks `1..depth`, each `[m, dt]`.
    pub deep_text: Vec<Param<Tensor<2>>>,
    /// Coupling functions of blocks `1..depth`, each `dt → dv`.
    pub deep_proj: Vec<Linear>,
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

/// `count` values from `U(-bound, bound)` on a seeded ChaCha8 stream.
fn uniform_values(count: usize, bound: f64, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count).map(|_| ((rng.random::<f64>() * 2.0 - 1.0) * bound) as f32).collect()
}

/// A `d_in → d_out` Linear with the given row-major values (`weight` in burn's `[d_in, d_out]`).
fn linear_with(weight: Vec<f32>, bias: Vec<f32>, d_in: usize, d_out: usize, device: &Device) -> Linear {
    let mut linear = LinearConfig::new(d_in, d_out).init(device);
    linear.weight = Param::from_tensor(Tensor::from_data(TensorData::new(weight, [d_in, d_out]), device));
    linear.bias = Some(Param::from_tensor(Tensor::from_data(TensorData::new(bias, [d_out]), device)));
    linear
}

/// PyTorch's `nn.Linear` default init for `d_in → d_out` from `seed` (weights, then biases).
fn torch_default_linear(d_in: usize, d_out: usize, seed: u64, device: &Device) -> Linear {
    let bound = 1.0 / (d_in as f64).sqrt();
    let values = uniform_values(d_in * d_out + d_out, bound, seed);
    let (w, b) = values.split_at(d_in * d_out);
    linear_with(w.to_vec(), b.to_vec(), d_in, d_out, device)
}

impl MapleConfig {
    /// Checks the depth against `model` and the context size.
    pub fn validate(&self, model: &dyn DeepPromptModel) -> Result<(), ModelError> {
        let blocks = model.text_blocks().min(model.vision_blocks());
        if self.depth == 0 || self.depth > blocks {
            return Err(ModelError::Input(format!(
                "MaPLe: prompt depth {} must be in 1..={blocks} (the blocks of the smaller tower of this \
                 model; the reference default 9 needs a 12-block CLIP; set maple_depth)",
                self.depth
            )));
        }
        if self.n_ctx == 0 {
            return Err(ModelError::Input("MaPLe: n_ctx must be >= 1".into()));
        }
        Ok(())
    }

    /// Builds the learner for `classnames` on `model`'s frozen token embedding.
    ///
    /// Errors: a depth outside `1..=blocks`, or what [`ClassPrompts::new`] refuses.
    pub fn init(
        &self,
        model: &dyn DeepPromptModel,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        device: &Device,
    ) -> Result<MaplePromptLearner, ModelError> {
        self.validate(model)?;
        let prompts = ClassPrompts::new(
            "MaPLe",
            model,
            tokenizer,
            classnames,
            self.n_ctx,
            self.ctx_init.as_deref(),
            self.seed,
            device,
        )?;
        let (m, dt) = (self.n_ctx, model.token_width());
        let dv = model.vision_width();
        let depth = self.depth - 1;
        let deep_text = (0..depth)
            .map(|j| {
                Param::from_tensor(normal_matrix(m, dt, self.seed.wrapping_add(1000 + j as u64), device))
            })
            .collect();
        let one = torch_default_linear(dt, dv, self.seed.wrapping_add(2000), device);
        Ok(MaplePromptLearner {
            ctx: Param::from_tensor(prompts.ctx),
            proj: torch_default_linear(dt, dv, self.seed.wrapping_add(3000), device),
            deep_text,
            deep_proj: vec![one; depth],
            token_prefix: prompts.prefix,
            token_suffix: prompts.suffix,
            slots: prompts.slots,
            eot_positions: prompts.pooled,
        })
    }
}

/// Values of every MaPLe parameter, in PyTorch's layout (`nn.Linear.weight` is `[out, in]`),
/// row-major: to start a learner from given values (e.g. a reference implementation's).
#[derive(Debug, Clone, PartialEq)]
pub struct MapleValues {
    /// `ctx`, `[m, dt]`.
    pub ctx: Vec<f32>,
    /// `proj.weight` `[dv, dt]` and `proj.bias` `[dv]`.
    pub proj: (Vec<f32>, Vec<f32>),
    /// `deep_text[j]`, each `[m, dt]`.
    pub deep_text: Vec<Vec<f32>>,
    /// `deep_proj[j]` weight `[dv, dt]` and bias `[dv]`.
    pub deep_proj: Vec<(Vec<f32>, Vec<f32>)>,
}

/// `[rows, cols]` row-major → `[cols, rows]` row-major.
fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

fn host(t: Tensor<2>) -> Vec<f32> {
    t.to_data().iter::<f32>().collect()
}

impl MaplePromptLearner {
    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.eot_positions.len()
    }

    /// Context tokens `m`.
    pub fn n_ctx(&self) -> usize {
        self.ctx.dims()[0]
    }

    /// Prompt depth (1 + the number of deep prompts).
    pub fn depth(&self) -> usize {
        1 + self.deep_text.len()
    }

    fn widths(&self) -> (usize, usize) {
        let [dt, dv] = self.proj.weight.dims();
        (dt, dv)
    }

    /// The learner with every parameter replaced by `values` (shapes checked), keeping the frozen
    /// prompt embeddings.
    pub fn with_values(mut self, values: &MapleValues, device: &Device) -> Result<Self, ModelError> {
        let (m, (dt, dv), j) = (self.n_ctx(), self.widths(), self.deep_text.len());
        let bad = |what: &str| ModelError::Input(format!("MaPLe values: {what} has the wrong size"));
        let linear = |(w, b): &(Vec<f32>, Vec<f32>), what: &str| -> Result<Linear, ModelError> {
            if w.len() != dv * dt || b.len() != dv {
                return Err(bad(what));
            }
            Ok(linear_with(transposed(w, dv, dt), b.clone(), dt, dv, device))
        };
        let matrix = |v: &Vec<f32>, what: &str| -> Result<Param<Tensor<2>>, ModelError> {
            if v.len() != m * dt {
                return Err(bad(what));
            }
            Ok(Param::from_tensor(Tensor::from_data(TensorData::new(v.clone(), [m, dt]), device)))
        };
        if values.deep_text.len() != j || values.deep_proj.len() != j {
            return Err(ModelError::Input(format!(
                "MaPLe values: expected {j} deep prompts and projections"
            )));
        }
        self.ctx = matrix(&values.ctx, "ctx")?;
        self.proj = linear(&values.proj, "proj")?;
        self.deep_text = values.deep_text.iter().map(|v| matrix(v, "deep_text")).collect::<Result<_, _>>()?;
        self.deep_proj = values.deep_proj.iter().map(|p| linear(p, "deep_proj")).collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// The current values of every parameter (PyTorch layout, see [`MapleValues`]).
    pub fn values(&self) -> MapleValues {
        let (dt, dv) = self.widths();
        let linear = |l: &Linear| {
            let w = transposed(&host(l.weight.val()), dt, dv);
            let b = l.bias.as_ref().map(|b| b.val().to_data().iter::<f32>().collect()).unwrap_or_default();
            (w, b)
        };
        MapleValues {
            ctx: host(self.ctx.val()),
            proj: linear(&self.proj),
            deep_text: self.deep_text.iter().map(|p| host(p.val())).collect(),
            deep_proj: self.deep_proj.iter().map(linear).collect(),
        }
    }

    /// The first-layer class prompts `[K, L, dt]`: `[prefix_k, ctx, suffix_k]`.
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
        let shared = self.proj.forward(self.ctx.val());
        let deep: Vec<Tensor<2>> =
            self.deep_text.iter().zip(&self.deep_proj).map(|(t, l)| l.forward(t.val())).collect();
        model.image_features_deep(images, shared, &deep)
    }

    /// `exp(logit_scale) · l2n(image_features) · l2n(text_features)ᵀ` (+ SigLIP's `logit_bias`),
    /// `[b, K]` (reference `CustomCLIP.forward`).
    pub fn logits(&self, model: &dyn DeepPromptModel, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        let text = l2_normalize(self.text_features(model)?);
        let image = l2_normalize(self.image_features(model, images)?);
        Ok(model.prompt_logits(image, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_values_are_seeded_and_bounded() {
        let a = uniform_values(1000, 0.25, 3);
        assert_eq!(a, uniform_values(1000, 0.25, 3));
        assert_ne!(a, uniform_values(1000, 0.25, 4));
        assert!(a.iter().all(|x| x.abs() <= 0.25));
        assert!(a.iter().any(|&x| x > 0.2) && a.iter().any(|&x| x < -0.2));
    }

    #[test]
    fn transposition_round_trips() {
        let v: Vec<f32> = (0..6).map(|x| x as f32).collect();
        let t = transposed(&v, 2, 3);
        assert_eq!(t, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(transposed(&t, 3, 2), v);
    }
}
