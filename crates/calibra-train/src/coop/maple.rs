//! The MaPLe training loop: the multi-modal prompts of a
//! [`calibra_models::clip::MaplePromptLearner`] train, both CLIP towers stay frozen, and — unlike
//! CoOp — the image tower runs every step (its prompts change the image features).
//!
//! One step on a batch of preprocessed images `x_i` with labels `y_i`:
//!
//! ```text
//! w_k = l2n(text_projection(text_tower(prompts_k(ctx), deep_text)))           k = 1..K
//! v_i = l2n(visual_projection(vision_tower(x_i, proj(ctx), deep_proj(deep_text))))
//! z_ik = exp(logit_scale) · v_i · w_k                    (reference CustomCLIP.forward)
//! L    = loss(z, y [, z^zs])                              (reference: cross-entropy)
//! θ    ← SGD-momentum step on ∇_θ L, θ = every prompt and coupling parameter
//! ```
//!
//! `z^zs` (only for losses that need zero-shot logits) are the frozen zero-shot classifier's logits
//! of the same images through the unprompted towers. Learning rate: Dassl's constant-warmup cosine,
//! constant within an epoch; batch order [`crate::training_loop::epoch_order`]; the steps run on the
//! one training loop, with crash-safe checkpoints (a resumed run ends with the same prompts).

use std::path::Path;

use burn::module::{Module, Param, ParamId};
use burn::nn::Linear;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig, decay::WeightDecayConfig};
use burn::tensor::{Device, Tensor};
use calibra_models::clip::{ClipModel, MaplePromptLearner, ZeroShotClassifier};
use calibra_models::tokenizer::ClipTokenizer;

use super::checkpoint::{self, CoopState};
use super::config::CoopConfig;
use super::error::CoopError;
use super::trainer::steps_per_epoch;
use crate::losses::{Loss, LossBatch, finite_value};
use crate::schedule::ConstantWarmupCosine;
use crate::training_loop::{Batch, LoopPlan, StepReport, Stepped, TrainingSteps, at_step};

/// Where the training images come from: `batch(rows)` returns the preprocessed images of training
/// rows `rows` (indices into `0..n`), `[rows.len(), C, H, W]`, on the plain device.
pub type ImageBatches<'a> = dyn FnMut(&[usize]) -> Result<Tensor<4>, CoopError> + 'a;

/// The result of [`train_maple`].
#[derive(Debug)]
pub struct MapleOutcome {
    /// The trained prompt learner, on the plain device (inference).
    pub learner: MaplePromptLearner,
    /// The loss of every step, including the steps before a resume.
    pub losses: Vec<f64>,
    /// Optimiser steps of the whole run.
    pub total_steps: usize,
    /// The step a checkpoint let the run start from (`None`: from scratch).
    pub resumed_from: Option<usize>,
}

impl MapleOutcome {
    /// Logits `[b, K]` of preprocessed images through the prompted towers (reference `CustomCLIP`
    /// in evaluation).
    pub fn logits(&self, model: &ClipModel, images: Tensor<4>) -> Result<Tensor<2>, CoopError> {
        Ok(self.learner.logits(model, images)?)
    }
}

/// Trains MaPLe prompts for `classnames` on `n` training images (`images`) with `labels`.
///
/// - `model`: the CLIP model on the plain `device`; the prompts train on `device.autodiff()`.
/// - `config`: a [`CoopConfig`] whose method is [`super::CoopMethod::Maple`]
///   ([`CoopConfig::maple_reference`] has the reference values).
/// - `loss`, `checkpoint_dir`, `progress`: as [`super::train_coop`].
#[allow(clippy::too_many_arguments)]
pub fn train_maple(
    model: &ClipModel,
    tokenizer: &ClipTokenizer,
    classnames: &[String],
    images: &mut ImageBatches<'_>,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<MapleOutcome, CoopError> {
    config.validate()?;
    let learner_config = config.maple_learner().ok_or_else(|| {
        CoopError::Config(format!("train_maple needs the maple method, not {}", config.method.name()))
    })?;
    let learner = learner_config.init(model, tokenizer, classnames, device)?;
    train_maple_learner(
        model,
        tokenizer,
        classnames,
        learner,
        images,
        labels,
        loss,
        config,
        device,
        checkpoint_dir,
        progress,
    )
}

/// [`train_maple`] from an already built learner (given initial values; `config`'s prompt fields are
/// then not used). `learner` must have been built for `classnames` on the plain `device`.
#[allow(clippy::too_many_arguments)]
pub fn train_maple_learner(
    model: &ClipModel,
    tokenizer: &ClipTokenizer,
    classnames: &[String],
    learner: MaplePromptLearner,
    images: &mut ImageBatches<'_>,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<MapleOutcome, CoopError> {
    config.validate()?;
    if !config.method.prompts_images() {
        return Err(CoopError::Config(format!(
            "train_maple needs the maple method, not {}",
            config.method.name()
        )));
    }
    let k = classnames.len();
    if learner.n_classes() != k {
        return Err(CoopError::Config(format!(
            "the MaPLe learner has {} classes, {k} class names were given",
            learner.n_classes()
        )));
    }
    let n = labels.len();
    if n == 0 {
        return Err(CoopError::Config("the training set is empty".into()));
    }
    if let Some((row, &label)) = labels.iter().enumerate().find(|(_, l)| **l >= k) {
        return Err(CoopError::Config(format!("label row {row}: class {label} is outside 0..{k}")));
    }
    let plain = device.clone().inner();
    let zero_shot = if loss.needs_zero_shot() {
        let template = vec![config.zero_shot_template.clone()];
        Some(ZeroShotClassifier::new(model, tokenizer, classnames, &template, &plain)?)
    } else {
        None
    };

    let steps_per_epoch = steps_per_epoch(n, config.batch_size);
    let total_steps = steps_per_epoch * config.epochs;
    let schedule =
        ConstantWarmupCosine::new(config.lr, config.epochs, config.warmup_epochs, config.warmup_lr)?;
    let momentum = (config.momentum > 0.0).then(|| {
        MomentumConfig::new().with_momentum(config.momentum).with_dampening(0.0).with_nesterov(false)
    });
    let decay = (config.weight_decay > 0.0).then(|| WeightDecayConfig::new(config.weight_decay as f32));
    let mut optimizer: ModuleOptimizer =
        SgdConfig::new().with_momentum(momentum).with_weight_decay(decay).init();

    let mut learner = trainable(learner);
    let mut start = 0;
    let mut losses = Vec::with_capacity(total_steps);
    let mut resumed_from = None;
    if let Some(dir) = checkpoint_dir
        && let Some((state, path)) = checkpoint::read(dir)?
    {
        if state.config != *config || state.n_train != n || state.classnames != classnames {
            return Err(CoopError::Checkpoint {
                path,
                why: "was written by a run with another config, class names or training set; remove it \
                      to start over"
                    .into(),
            });
        }
        (learner, optimizer) = checkpoint::load(&path, learner, optimizer)?;
        start = state.step;
        losses = state.losses;
        resumed_from = Some(start);
    }

    let plan = LoopPlan {
        n,
        batch_size: config.batch_size,
        steps_per_epoch,
        total_steps,
        order_seed: config.seed,
        checkpoint_every: checkpoint_dir.map(|_| config.checkpoint_every),
    };
    let mut steps = MapleSteps {
        model,
        classnames,
        labels,
        loss,
        config,
        images,
        zero_shot,
        schedule,
        optimizer,
        checkpoint_dir,
    };
    let end = crate::training_loop::run(&mut steps, learner, &plan, start..total_steps, losses, progress)?;
    Ok(MapleOutcome { learner: end.model.valid(), losses: end.losses, total_steps, resumed_from })
}

/// Every parameter of `learner` moved onto the autodiff view of its device (the frozen prompt
/// embeddings stay constants).
fn trainable(learner: MaplePromptLearner) -> MaplePromptLearner {
    fn param(p: Param<Tensor<2>>) -> Param<Tensor<2>> {
        Param::from_tensor(p.val().inner().autodiff())
    }
    fn linear(mut l: Linear) -> Linear {
        l.weight = param(l.weight);
        l.bias = l.bias.map(|b| Param::from_tensor(b.val().inner().autodiff()));
        l
    }
    MaplePromptLearner {
        ctx: param(learner.ctx),
        proj: linear(learner.proj),
        deep_text: learner.deep_text.into_iter().map(param).collect(),
        deep_proj: learner.deep_proj.into_iter().map(linear).collect(),
        ..learner
    }
}

/// The ids of every trained parameter.
fn param_ids(learner: &MaplePromptLearner) -> Vec<(ParamId, bool)> {
    let mut ids = vec![(learner.ctx.id, true)];
    let mut linear = |l: &Linear| {
        ids.push((l.weight.id, true));
        if let Some(b) = &l.bias {
            ids.push((b.id, false));
        }
    };
    linear(&learner.proj);
    learner.deep_proj.iter().for_each(&mut linear);
    ids.extend(learner.deep_text.iter().map(|p| (p.id, true)));
    ids
}

/// The global L2 norm of the gradients of every trained parameter.
fn gradient_norm(grads: &GradientsParams, learner: &MaplePromptLearner) -> f64 {
    let square = |values: Vec<f64>| values.iter().map(|x| x * x).sum::<f64>();
    param_ids(learner)
        .into_iter()
        .map(|(id, matrix)| {
            if matrix {
                grads.get::<2>(id).map_or(0.0, |g| square(g.to_data().iter::<f64>().collect()))
            } else {
                grads.get::<1>(id).map_or(0.0, |g| square(g.to_data().iter::<f64>().collect()))
            }
        })
        .sum::<f64>()
        .sqrt()
}

/// MaPLe's part of the training loop.
struct MapleSteps<'a, 'b> {
    model: &'a ClipModel,
    classnames: &'a [String],
    labels: &'a [usize],
    loss: &'a dyn Loss,
    config: &'a CoopConfig,
    images: &'a mut ImageBatches<'b>,
    zero_shot: Option<ZeroShotClassifier>,
    schedule: ConstantWarmupCosine,
    optimizer: ModuleOptimizer,
    checkpoint_dir: Option<&'a Path>,
}

impl TrainingSteps for MapleSteps<'_, '_> {
    type Model = MaplePromptLearner;
    type Error = CoopError;

    fn step(
        &mut self,
        learner: MaplePromptLearner,
        batch: &Batch<'_>,
    ) -> Result<(MaplePromptLearner, Stepped), CoopError> {
        let (step, total_steps, indices) = (batch.step, batch.total_steps, batch.indices);
        let images = (self.images)(indices)?;
        let batch_labels: Vec<usize> = indices.iter().map(|&i| self.labels[i]).collect();
        let zs = match &self.zero_shot {
            Some(zs) => Some(zs.logits_from_features(self.model.image_features(images.clone())?)),
            None => None,
        };
        let logits = learner.logits(self.model, images)?;
        let mut loss_batch = LossBatch::classes(logits, &batch_labels)?;
        if let Some(zs) = zs {
            loss_batch = loss_batch.with_zero_shot(zs)?;
        }
        let value = self.loss.forward(&loss_batch)?;
        let loss_value = finite_value(&value).map_err(|e| at_step(e, step + 1, total_steps))?;
        let grads = GradientsParams::from_grads(value.backward(), &learner);
        let grad_norm = gradient_norm(&grads, &learner);
        let lr = self.schedule.lr(batch.epoch);
        let learner = self.optimizer.step(lr, learner, grads);
        Ok((learner, Stepped::Updated { loss: loss_value, lr, grad_norm }))
    }

    fn checkpoint(
        &mut self,
        learner: &MaplePromptLearner,
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
        };
        checkpoint::write(dir, learner, &self.optimizer, &state)
    }
}
