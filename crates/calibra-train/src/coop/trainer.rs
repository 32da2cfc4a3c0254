//! The CoOp training loop: only the context vectors of a [`PromptLearner`] train; the text tower
//! runs every step on the K prompts (the gradient reaches the context through it) and the image
//! tower never runs (its features are an input, computed once).
//!
//! The text tower is any [`PromptTextEncoder`] with its [`PromptTokenizer`]: CLIP (CoOp's own) or
//! SigLIP, whose logit adds its `logit_bias` `b` (0 for CLIP). One step on the batch `B` of
//! (L2-normalised) image features `v_i`:
//!
//! ```text
//! w_k = l2n(text_projection(text_tower(prompts_k(ctx))))      k = 1..K
//! z_ik = exp(logit_scale) · v_i · w_k + b                       (CoOp CustomCLIP.forward)
//! L    = loss(z, y [, z^zs])  (+ λ·(1 − mean_k cos(w_k, w_k^clip)) for KgCoOp)
//! ctx  ← SGD-momentum step on ∇_ctx L (ProGrad: the projected gradient, see `prograd`)
//! ```
//!
//! with `z^zs = exp(logit_scale) · v_i · w_k^clip + b` the frozen zero-shot logits of the same images
//! (template [`CoopConfig::zero_shot_template`]). The learning rate is Dassl's constant-warmup
//! cosine, constant within an epoch.
//!
//! SigLIP was trained with a per-pair sigmoid loss; here its logits go through the configured
//! class-label loss as CLIP's do (CE and the calibration losses are softmaxes over the K classes, in
//! which `b` cancels; KgCoOp's and ProGrad's terms likewise), the same reading the evaluator gives
//! SigLIP's zero-shot logits.
//!
//! The steps run on the one training loop ([`crate::training_loop`]).
//!
//! Determinism: the batch order of epoch `e` is
//! [`epoch_order`](crate::training_loop::epoch_order)`(n, seed, e)` and nothing else is random (the
//! random context init is seeded by `seed`), so the run is a function of its inputs, config and seed;
//! a resumed run ends with the same context as an uninterrupted one.

use std::path::Path;

use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor, TensorData};
use calibra_models::clip::{
    PromptLearner, PromptTextEncoder, PromptTokenizer, ZeroShotClassifier, l2_normalize,
};

use super::checkpoint::{self, CoopState};
use super::config::{CoopConfig, CoopMethod};
use super::error::CoopError;
use super::kgcoop::knowledge_guidance;
use super::prograd::{distillation_loss, project_conflicting};
use crate::losses::{Loss, LossBatch, finite_value};
use crate::schedule::ConstantWarmupCosine;
use crate::training_loop::{Batch, LoopPlan, StepReport, Stepped, TrainingSteps, at_step};

/// The result of [`train_coop`].
#[derive(Debug)]
pub struct CoopOutcome {
    /// The trained prompt learner (its context lives on the autodiff view of the device).
    pub learner: PromptLearner,
    /// The loss of every step (the configured loss, plus the KgCoOp term for KgCoOp), including
    /// the steps before a resume.
    pub losses: Vec<f64>,
    /// `w_k`: the learned prompts' text features, L2-normalised, row-major `[K, dim]`.
    pub text_features: Vec<f32>,
    /// Width `p` of the joint embedding.
    pub dim: usize,
    /// `exp(logit_scale)`.
    pub scale: f64,
    /// The logit's bias (SigLIP's `logit_bias`; 0 for CLIP).
    pub bias: f64,
    /// Optimiser steps of the whole run.
    pub total_steps: usize,
    /// The step a checkpoint let the run start from (`None`: from scratch).
    pub resumed_from: Option<usize>,
}

impl CoopOutcome {
    /// Number of classes `K`.
    pub fn n_classes(&self) -> usize {
        self.text_features.len() / self.dim.max(1)
    }

    /// Logits `exp(logit_scale) · cos(v_i, w_k) + bias` of other (projected, normalised or not) image
    /// features, row-major `[n, K]`, computed in f64 on the host.
    ///
    /// Errors: a length that is not a multiple of `dim`, a non-finite value, or a zero row (its
    /// cosine is undefined).
    pub fn logits(&self, image_features: &[f32]) -> Result<Vec<f64>, CoopError> {
        let rows = normalized_rows(image_features, self.dim, "image features")?;
        let k = self.n_classes();
        let mut out = Vec::with_capacity(rows.len() / self.dim * k);
        for v in rows.chunks(self.dim) {
            for w in self.text_features.chunks(self.dim) {
                let dot: f64 = v.iter().zip(w).map(|(a, b)| a * f64::from(*b)).sum();
                out.push(self.scale * dot + self.bias);
            }
        }
        Ok(out)
    }
}

/// Rows of `values` (`[n, dim]`) divided by their L2 norm, in f64.
fn normalized_rows(values: &[f32], dim: usize, what: &str) -> Result<Vec<f64>, CoopError> {
    if dim == 0 || !values.len().is_multiple_of(dim) {
        return Err(CoopError::Config(format!(
            "{what}: {} values is not a whole number of rows of width {dim}",
            values.len()
        )));
    }
    let mut out = Vec::with_capacity(values.len());
    for (row, chunk) in values.chunks(dim).enumerate() {
        if let Some(col) = chunk.iter().position(|x| !x.is_finite()) {
            return Err(CoopError::Config(format!("{what}: row {row}, column {col} is not finite")));
        }
        let norm = chunk.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        if norm == 0.0 {
            return Err(CoopError::Config(format!("{what}: row {row} is all zeros (no direction)")));
        }
        out.extend(chunk.iter().map(|&x| f64::from(x) / norm));
    }
    Ok(out)
}

/// Steps per epoch: as Dassl's train loader (`drop_last` when the set holds a full batch).
pub fn steps_per_epoch(n: usize, batch_size: usize) -> usize {
    if n >= batch_size { n / batch_size } else { 1 }
}

/// Trains a CoOp / KgCoOp / ProGrad prompt for `classnames` on frozen image features.
///
/// - `model`, `tokenizer`: a CLIP or SigLIP model on `device` (a plain device; the context is
///   trained on `device.autodiff()`, the towers' weights stay constants) and its tokenizer.
/// - `image_features`: row-major `[n, dim]` projected image features (`ClipModel::image_features`,
///   `SiglipModel::image_features`),
///   normalised or not — every row is L2-normalised here (CoOp normalises them in its forward).
/// - `labels`: one class index in `0..K` per row.
/// - `loss`: any class-label loss of the registry (CE for CoOp); losses that need zero-shot logits
///   (`zs_norm`, `range_penalty`) get those of the frozen zero-shot classifier on the same batch.
/// - `checkpoint_dir`: as [`crate::trainer::train`]: `checkpoint/` is written there every
///   `checkpoint_every` steps and at the end, and a run finding a checkpoint of the same config,
///   class names and training-set size continues from it.
/// - `progress`: called after every step.
///
/// The context is initialised from `config` ([`CoopConfig::prompt_learner`]); use
/// [`train_prompt_learner`] to start from a given learner.
#[allow(clippy::too_many_arguments)]
pub fn train_coop(
    model: &dyn PromptTextEncoder,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    image_features: &[f32],
    dim: usize,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<CoopOutcome, CoopError> {
    config.validate()?;
    let learner = config.prompt_learner().init(model, tokenizer, classnames, device)?;
    train_prompt_learner(
        model,
        tokenizer,
        classnames,
        learner,
        image_features,
        dim,
        labels,
        loss,
        config,
        device,
        checkpoint_dir,
        progress,
    )
}

/// [`train_coop`] from an already built learner (a fixed context init; `config`'s prompt fields
/// are then not used). `learner` must have been built for `classnames` on `device`.
#[allow(clippy::too_many_arguments)]
pub fn train_prompt_learner(
    model: &dyn PromptTextEncoder,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    learner: PromptLearner,
    image_features: &[f32],
    dim: usize,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<CoopOutcome, CoopError> {
    config.validate()?;
    if config.method.prompts_images() {
        return Err(CoopError::Config(format!(
            "{} prompts the image tower and trains on images, not on cached features: use train_{0}",
            config.method.name()
        )));
    }
    let k = classnames.len();
    if learner.n_classes() != k {
        return Err(CoopError::Config(format!(
            "the prompt learner has {} classes, {k} class names were given",
            learner.n_classes()
        )));
    }
    let rows = normalized_rows(image_features, dim, "image features")?;
    let n = rows.len() / dim;
    if n == 0 {
        return Err(CoopError::Config("the training set is empty".into()));
    }
    if labels.len() != n {
        return Err(CoopError::Config(format!("{} labels for {n} image-feature rows", labels.len())));
    }
    if let Some((row, &label)) = labels.iter().enumerate().find(|(_, l)| **l >= k) {
        return Err(CoopError::Config(format!("label row {row}: class {label} is outside 0..{k}")));
    }

    let plain = device.clone().inner();
    let images = Tensor::<2>::from_data(
        TensorData::new(rows.iter().map(|&x| x as f32).collect::<Vec<f32>>(), [n, dim]),
        &plain,
    );
    let (scale, bias) = (model.logit_scale_exp(), model.logit_bias());
    let zero_shot = if config.method.needs_zero_shot() || loss.needs_zero_shot() {
        let template = vec![config.zero_shot_template.clone()];
        Some(ZeroShotClassifier::for_prompt_tower(model, tokenizer, classnames, &template, &plain)?)
    } else {
        None
    };
    let zs_logits = zero_shot.as_ref().map(|zs| zs.logits_from_features(images.clone()));

    let steps_per_epoch = steps_per_epoch(n, config.batch_size);
    let total_steps = steps_per_epoch * config.epochs;
    let schedule =
        ConstantWarmupCosine::new(config.lr, config.epochs, config.warmup_epochs, config.warmup_lr)?;
    let mut optimizer = config.sgd();
    let ctx = learner.ctx.val().inner().autodiff();
    let mut learner = learner.with_context(ctx)?;
    let mut start = 0;
    let mut losses = Vec::with_capacity(total_steps);
    let mut resumed_from = None;
    if let Some(dir) = checkpoint_dir {
        match checkpoint::resume(dir, config, classnames, n, learner, optimizer)? {
            Ok((l, o, state)) => {
                (learner, optimizer) = (l, o);
                start = state.step;
                losses = state.losses;
                resumed_from = Some(start);
            }
            Err((l, o)) => (learner, optimizer) = (l, o),
        }
    }

    let plan = LoopPlan {
        n,
        batch_size: config.batch_size,
        steps_per_epoch,
        total_steps,
        order_seed: config.seed,
        checkpoint_every: checkpoint_dir.map(|_| config.checkpoint_every),
    };
    let mut steps = PromptSteps {
        model,
        classnames,
        labels,
        loss,
        config,
        plain,
        images,
        scale,
        bias,
        zero_shot,
        zs_logits,
        schedule,
        optimizer,
        checkpoint_dir,
    };
    let end = crate::training_loop::run(&mut steps, learner, &plan, start..total_steps, losses, progress)?;
    let learner = end.model;

    let text = l2_normalize(learner.text_features(model)?).inner();
    let p = text.dims()[1];
    let text_features: Vec<f32> = text.to_data().iter::<f32>().collect();
    Ok(CoopOutcome {
        learner,
        losses: end.losses,
        text_features,
        dim: p,
        scale: f64::from(scale),
        bias: f64::from(bias),
        total_steps,
        resumed_from,
    })
}

/// The CoOp trainer's part of the training loop: a batch of cached image features against the
/// prompts' text features, the method's loss and gradient (ProGrad: projected), one SGD step at the
/// epoch's learning rate; checkpoints of the context.
struct PromptSteps<'a> {
    model: &'a dyn PromptTextEncoder,
    classnames: &'a [String],
    labels: &'a [usize],
    loss: &'a dyn Loss,
    config: &'a CoopConfig,
    /// The device of the frozen inputs (the context trains on its autodiff view).
    plain: Device,
    /// Every training row's L2-normalised image features, `[n, dim]`.
    images: Tensor<2>,
    /// `exp(logit_scale)`.
    scale: f32,
    /// The logit's bias.
    bias: f32,
    zero_shot: Option<ZeroShotClassifier>,
    /// The frozen zero-shot logits of every training row, when the method or the loss needs them.
    zs_logits: Option<Tensor<2>>,
    schedule: ConstantWarmupCosine,
    optimizer: ModuleOptimizer,
    checkpoint_dir: Option<&'a Path>,
}

impl TrainingSteps for PromptSteps<'_> {
    type Model = PromptLearner;
    type Error = CoopError;

    fn step(
        &mut self,
        learner: PromptLearner,
        batch: &Batch<'_>,
    ) -> Result<(PromptLearner, Stepped), CoopError> {
        let (model, loss, scale, bias) = (self.model, self.loss, self.scale, self.bias);
        let (step, total_steps, indices) = (batch.step, batch.total_steps, batch.indices);
        let index = Tensor::<1, Int>::from_data(
            TensorData::new(indices.iter().map(|&i| i as i64).collect::<Vec<i64>>(), [indices.len()]),
            &self.plain,
        );
        let batch_images = self.images.clone().select(0, index.clone());
        let batch_labels: Vec<usize> = indices.iter().map(|&i| self.labels[i]).collect();
        let batch_zs = self.zs_logits.as_ref().map(|z| z.clone().select(0, index));

        let forward = |learner: &PromptLearner| -> Result<(Tensor<2>, Tensor<2>), CoopError> {
            let text = l2_normalize(learner.text_features(model)?);
            let logits = batch_images.clone().matmul(text.clone().transpose()) * scale;
            let logits = if bias == 0.0 { logits } else { logits + bias };
            Ok((logits, text))
        };
        let task_loss = |logits: Tensor<2>| -> Result<Tensor<1>, CoopError> {
            let mut batch = LossBatch::classes(logits, &batch_labels)?;
            if loss.needs_zero_shot() {
                let zs = batch_zs.clone().expect("zero-shot logits are built when the loss needs them");
                batch = batch.with_zero_shot(zs)?;
            }
            Ok(loss.forward(&batch)?)
        };
        let ctx_id = learner.ctx.id;
        let (loss_value, grads) = match self.config.method {
            CoopMethod::Coop => {
                let (logits, _) = forward(&learner)?;
                let value = task_loss(logits)?;
                let v = finite_value(&value).map_err(|e| at_step(e, step + 1, total_steps))?;
                (v, GradientsParams::from_grads(value.backward(), &learner))
            }
            CoopMethod::KgCoop { lambda } => {
                let (logits, text) = forward(&learner)?;
                let clip = self.zero_shot.as_ref().expect("built for KgCoOp").class_embeddings.clone();
                let value = task_loss(logits)? + knowledge_guidance(text, clip) * lambda;
                let v = finite_value(&value).map_err(|e| at_step(e, step + 1, total_steps))?;
                (v, GradientsParams::from_grads(value.backward(), &learner))
            }
            CoopMethod::ProGrad { lambda, temperature } => {
                // Two passes: burn's backward consumes the graph.
                let (logits, _) = forward(&learner)?;
                let teacher = batch_zs.clone().expect("built for ProGrad");
                let kl = distillation_loss(logits, teacher, temperature);
                finite_value(&kl).map_err(|e| at_step(e, step + 1, total_steps))?;
                let mut kl_grads = GradientsParams::from_grads(kl.backward(), &learner);
                let g_kl = kl_grads.remove::<3>(ctx_id).map(|g| host(&g));
                let (logits, _) = forward(&learner)?;
                let value = task_loss(logits)?;
                let v = finite_value(&value).map_err(|e| at_step(e, step + 1, total_steps))?;
                let mut grads = GradientsParams::from_grads(value.backward(), &learner);
                if let (Some(g_kl), Some(g)) = (g_kl, grads.remove::<3>(ctx_id)) {
                    let dims = g.dims();
                    let mut g_host = host(&g);
                    project_conflicting(&mut g_host, &g_kl, lambda);
                    let values: Vec<f32> = g_host.iter().map(|&x| x as f32).collect();
                    grads
                        .register(ctx_id, Tensor::<3>::from_data(TensorData::new(values, dims), &g.device()));
                }
                (v, grads)
            }
            CoopMethod::Maple { .. } | CoopMethod::PromptSrc { .. } | CoopMethod::HiCroPL { .. } => {
                return Err(CoopError::Config(format!(
                    "{} trains on images: use train_{0}",
                    self.config.method.name()
                )));
            }
        };
        let grad_norm =
            grads.get::<3>(ctx_id).map(|g| host(&g).iter().map(|x| x * x).sum::<f64>().sqrt()).unwrap_or(0.0);
        let lr = self.schedule.lr(batch.epoch);
        let learner = self.optimizer.step(lr, learner, grads);
        Ok((learner, Stepped::Updated { loss: loss_value, lr, grad_norm }))
    }

    fn checkpoint(
        &mut self,
        learner: &PromptLearner,
        done: usize,
        losses: &[f64],
        _stop: bool,
    ) -> Result<(), CoopError> {
        let Some(dir) = self.checkpoint_dir else {
            return Ok(());
        };
        let state = CoopState {
            format: 1,
            step: done,
            config: self.config.clone(),
            classnames: self.classnames.to_vec(),
            n_train: self.labels.len(),
            losses: losses.to_vec(),
            aggregate: None,
        };
        checkpoint::write(dir, learner, &self.optimizer, &state)
    }
}

/// A tensor's values on the host, as f64.
fn host<const D: usize>(t: &Tensor<D>) -> Vec<f64> {
    t.to_data().iter::<f64>().collect()
}
