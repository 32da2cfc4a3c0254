//! The training loop of the prompt methods that prompt the image tower too (MaPLe, PromptSRC, HiCroPL): the
//! prompts train, both CLIP towers stay frozen, and the image tower runs every step on a batch of
//! images (its prompts change the image features), so these methods train on images, not on cached
//! features as CoOp does.
//!
//! What differs between the methods is the learner ([`PromptedLearner`]) and the objective of a
//! batch, with an optional per-epoch aggregate of the parameters ([`ImagePromptObjective`]). The
//! rest is shared: the run's optimiser ([`CoopConfig`]: SGD-momentum, Adam for HiCroPL) with Dassl's constant-warmup cosine (constant within an epoch), the
//! batch order [`crate::training_loop::epoch_order`], the optional train-time augmentation of
//! [`CoopConfig::augment`] (crop + flip per image, seeded by the run seed, epoch and training row, as
//! fine-tuning augments), and crash-safe checkpoints (a resumed run ends with the same prompts).

use std::path::Path;

use burn::module::{Module, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Tensor, TensorData};
use calibra_models::clip::DeepPromptModel;

use super::checkpoint::{self, CoopState};
use super::config::CoopConfig;
use super::error::CoopError;
use super::trainer::steps_per_epoch;
use crate::augment::{Augment, augment_batch};
use crate::losses::finite_value;
use crate::schedule::ConstantWarmupCosine;
use crate::training_loop::{Batch, LoopPlan, StepReport, Stepped, TrainingSteps, at_step};

/// Where the training images come from: `batch(rows)` returns the preprocessed images of training
/// rows `rows` (indices into `0..n`) on the plain device: every one of them, or the readable ones when
/// the dataset's `skip` bad-image policy left some out.
pub type ImageBatches<'a> = dyn FnMut(&[usize]) -> Result<PromptImages, CoopError> + 'a;

/// The images of a batch's readable training rows.
#[derive(Debug, Clone)]
pub struct PromptImages {
    /// The training rows whose images `images` holds, in the order asked.
    pub rows: Vec<usize>,
    /// `[rows.len(), C, H, W]`; `None` when no row of the batch could be read.
    pub images: Option<Tensor<4>>,
}

impl PromptImages {
    /// Every row asked for, read.
    pub fn all(rows: &[usize], images: Tensor<4>) -> Self {
        PromptImages { rows: rows.to_vec(), images: Some(images) }
    }
}

/// A prompt learner the loop can train.
pub trait PromptedLearner: Module + Clone + std::fmt::Debug {
    /// Number of classes `K`.
    fn n_classes(&self) -> usize;
    /// The learner with every parameter on the autodiff view of its device (the frozen prompt
    /// embeddings stay constants).
    fn trainable(self) -> Self;
    /// The global L2 norm of the gradients of every parameter.
    fn grad_norm(&self, grads: &GradientsParams) -> f64;
    /// The learner a step's forward pass runs with (HiCroPL re-maps its prompts here; the others
    /// are unchanged).
    fn before_forward(self) -> Self {
        self
    }
}

/// `p` as a trainable parameter: its value on the autodiff view of its device (for
/// [`PromptedLearner::trainable`]).
pub(super) fn autodiff_param<const D: usize>(p: Param<Tensor<D>>) -> Param<Tensor<D>> {
    Param::from_tensor(p.val().inner().autodiff())
}

/// A method's objective on one batch, and what it does at the end of each epoch.
pub trait ImagePromptObjective<L> {
    /// The loss to minimise on a batch of images (on the plain device) with their labels.
    fn objective(
        &mut self,
        learner: &L,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
        labels: &[usize],
    ) -> Result<Tensor<1>, CoopError>;

    /// After epoch `epoch` (0-based) ends, with the parameters it ended with.
    fn epoch_end(&mut self, _learner: &L, _epoch: usize) -> Result<(), CoopError> {
        Ok(())
    }

    /// State to checkpoint next to the parameters (restored by [`Self::restore`]).
    fn state(&self) -> Option<Vec<f64>> {
        None
    }

    /// Restores [`Self::state`] from a checkpoint.
    fn restore(&mut self, _state: Option<Vec<f64>>) -> Result<(), CoopError> {
        Ok(())
    }

    /// The learner the run returns, from the one training ended with (on the plain device).
    fn finish(&self, learner: L) -> Result<L, CoopError> {
        Ok(learner)
    }
}

/// The result of an image-prompt run.
#[derive(Debug)]
pub struct ImagePromptOutcome<L> {
    /// The trained prompt learner, on the plain device (inference).
    pub learner: L,
    /// The loss of every step, including the steps before a resume.
    pub losses: Vec<f64>,
    /// Optimiser steps of the whole run.
    pub total_steps: usize,
    /// The step a checkpoint let the run start from (`None`: from scratch).
    pub resumed_from: Option<usize>,
}

/// The fixed inputs of a run.
pub(crate) struct ImagePromptRun<'a> {
    pub model: &'a dyn DeepPromptModel,
    pub classnames: &'a [String],
    pub labels: &'a [usize],
    pub config: &'a CoopConfig,
    pub checkpoint_dir: Option<&'a Path>,
}

/// Checks the run's inputs against `learner` and trains it (module docs).
pub(crate) fn run_image_prompts<L, O>(
    run: &ImagePromptRun<'_>,
    learner: L,
    objective: &mut O,
    images: &mut ImageBatches<'_>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<ImagePromptOutcome<L>, CoopError>
where
    L: PromptedLearner,
    O: ImagePromptObjective<L>,
{
    let (config, classnames, labels) = (run.config, run.classnames, run.labels);
    config.validate()?;
    let k = classnames.len();
    if learner.n_classes() != k {
        return Err(CoopError::Config(format!(
            "the {} learner has {} classes, {k} class names were given",
            config.method.name(),
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
    let steps_per_epoch = steps_per_epoch(n, config.batch_size);
    let total_steps = steps_per_epoch * config.epochs;
    let schedule =
        ConstantWarmupCosine::new(config.lr, config.epochs, config.warmup_epochs, config.warmup_lr)?;
    let mut optimizer = config.optimizer();
    let mut learner = learner.trainable();
    let mut start = 0;
    let mut losses = Vec::with_capacity(total_steps);
    let mut resumed_from = None;
    if let Some(dir) = run.checkpoint_dir {
        match checkpoint::resume(dir, config, classnames, n, learner, optimizer)? {
            Ok((l, o, state)) => {
                (learner, optimizer) = (l, o);
                objective.restore(state.aggregate)?;
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
        checkpoint_every: run.checkpoint_dir.map(|_| config.checkpoint_every),
    };
    let mut steps =
        ImagePromptSteps { learner: std::marker::PhantomData, run, images, objective, schedule, optimizer };
    let end = crate::training_loop::run(&mut steps, learner, &plan, start..total_steps, losses, progress)?;
    let learner = steps.objective.finish(end.model.valid())?;
    Ok(ImagePromptOutcome { learner, losses: end.losses, total_steps, resumed_from })
}

/// The image-prompt methods' part of the training loop.
struct ImagePromptSteps<'a, 'b, 'c, L, O> {
    learner: std::marker::PhantomData<L>,
    run: &'a ImagePromptRun<'a>,
    images: &'c mut ImageBatches<'b>,
    objective: &'c mut O,
    schedule: ConstantWarmupCosine,
    optimizer: ModuleOptimizer,
}

impl<L: PromptedLearner, O: ImagePromptObjective<L>> TrainingSteps for ImagePromptSteps<'_, '_, '_, L, O> {
    type Model = L;
    type Error = CoopError;

    fn step(&mut self, learner: L, batch: &Batch<'_>) -> Result<(L, Stepped), CoopError> {
        let (step, total_steps) = (batch.step, batch.total_steps);
        let PromptImages { rows, images } = (self.images)(batch.indices)?;
        // A batch none of whose images could be read (`skip` policy) is passed over.
        let Some(mut images) = images else {
            return Ok((learner, Stepped::Skipped));
        };
        if images.dims()[0] != rows.len() || rows.iter().any(|r| !batch.indices.contains(r)) {
            return Err(CoopError::Data(format!(
                "the image source returned {} images for rows {rows:?} of the batch {:?}",
                images.dims()[0],
                batch.indices
            )));
        }
        let indices = rows.as_slice();
        let config = self.run.config;
        if config.augment != Augment::None {
            let [b, c, h, w] = images.dims();
            let device = images.device();
            let pixels: Vec<f32> = images.into_data().iter::<f32>().collect();
            let pixels =
                augment_batch(pixels, [c, h, w], indices, config.augment, (config.seed, batch.epoch));
            images = Tensor::<4>::from_data(TensorData::new(pixels, [b, c, h, w]), &device);
        }
        let batch_labels: Vec<usize> = indices.iter().map(|&i| self.run.labels[i]).collect();
        let learner = learner.before_forward();
        let value = self.objective.objective(&learner, self.run.model, images, &batch_labels)?;
        let loss_value = finite_value(&value).map_err(|e| at_step(e, step + 1, total_steps))?;
        let grads = GradientsParams::from_grads(value.backward(), &learner);
        let grad_norm = learner.grad_norm(&grads);
        let lr = self.schedule.lr(batch.epoch);
        let learner = self.optimizer.step(lr, learner, grads);
        Ok((learner, Stepped::Updated { loss: loss_value, lr, grad_norm }))
    }

    fn epoch_end(&mut self, learner: &L, epoch: usize, _losses: &[f64]) -> Result<bool, CoopError> {
        self.objective.epoch_end(learner, epoch)?;
        Ok(false)
    }

    fn checkpoint(&mut self, learner: &L, done: usize, losses: &[f64], _stop: bool) -> Result<(), CoopError> {
        let Some(dir) = self.run.checkpoint_dir else {
            return Ok(());
        };
        let state = CoopState {
            format: 1,
            step: done,
            config: self.run.config.clone(),
            classnames: self.run.classnames.to_vec(),
            n_train: self.run.labels.len(),
            losses: losses.to_vec(),
            aggregate: self.objective.state(),
        };
        checkpoint::write(dir, learner, &self.optimizer, &state)
    }
}

/// The sum of squares of a gradient's values (a missing gradient counts 0).
pub(crate) fn squared_norm<const D: usize>(grad: Option<Tensor<D>>) -> f64 {
    grad.map_or(0.0, |g| g.to_data().iter::<f64>().map(|x| x * x).sum())
}
