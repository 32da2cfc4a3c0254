//! The image trainer, for LoRA, full fine-tuning, MLP-style heads and ViT pretraining: a classifier
//! on preprocessed images ([`TrainSet`], in memory or streamed batch by batch) with AdamW, linear warmup + cosine decay, global-norm gradient
//! clipping, seeded dropout, per-epoch held-out curves with early stopping, and crash-safe
//! checkpoints from which a killed run resumes to the same final weights as an uninterrupted one. It
//! runs on the one training loop ([`crate::training_loop`]), which owns the batch schedule.
//!
//! Determinism: the batch order of epoch `e` is a ChaCha20 shuffle seeded by `(seed, e)`, and
//! burn's random stream (dropout masks) is re-seeded before every step from `(seed, step)`. The
//! state of a run after step `s` is therefore a function of the recipe, the seed and `s` alone:
//! a checkpoint holds the weights (burnpack, with their parameter ids), the AdamW moments and `s`,
//! and nothing else is needed to continue.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::optim::{AdamWConfig, GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::augment::Augment;
use crate::early_stopping::{EarlyStopping, Verdict};
use crate::error::TrainError;
use crate::grad_clip::clip_grad_norm;
use crate::losses::{Loss, LossBatch, finite_value};
use crate::schedule::WarmupCosine;
use crate::train_images::{Gathered, TrainImages, UnreadableImage};
use crate::training_curve::{EpochRecord, Monitor, mean_loss};
use crate::training_loop::{Batch, LoopPlan, Stepped, TrainingSteps, at_step, mix};
pub use crate::training_loop::{EpochSummary, StepReport, epoch_order};

/// A model trained to classify: preprocessed images `[b, c, h, w]` → logits `[b, K]`.
pub trait Classifier: Module + Clone {
    fn logits(&self, images: Tensor<4>) -> Tensor<2>;
}

/// Errors of the training loop.
#[derive(Debug, thiserror::Error)]
pub enum TrainerError {
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint {}: {why}", path.display())]
    Checkpoint { path: PathBuf, why: String },
    #[error("training config: {0}")]
    Config(String),
    /// A streamed training image could not be read (the message names it).
    #[error("training images: {0}")]
    Images(String),
}

/// Hyper-parameters of a run. Defaults follow CRS-Bench's LoRA recipe (lr 2e-4, 8 epochs) with
/// torch's AdamW moments (β 0.9 / 0.999, ε 1e-8, weight decay 0.01), 10 % warmup and clipping at 1.0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    pub epochs: usize,
    /// Images per forward pass (a micro-batch when `accumulate` > 1).
    pub batch_size: usize,
    /// Gradient accumulation (`--accumulate N`, Hugging Face's `gradient_accumulation_steps`): each
    /// optimiser step sums the gradients of `accumulate` forward passes of `batch_size` images, so it
    /// sees `batch_size · accumulate` images while memory holds `batch_size`. The step's loss is the
    /// image-weighted mean of the micro-batch losses, which is the loss of the whole batch for losses
    /// averaged over images (CE, focal, label smoothing, masked BCE per row); batch-level terms
    /// (MDCA, MMCE, DCA, MCM's) see each micro-batch on its own. Steps per epoch and the LR schedule
    /// count optimiser steps.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub accumulate: usize,
    /// Train-time augmentation of each training image, drawn per image and epoch
    /// ([`crate::augment`]); `none` by default.
    #[serde(default, skip_serializing_if = "is_no_augment")]
    pub augment: Augment,
    pub lr: f64,
    pub weight_decay: f64,
    pub beta_1: f64,
    pub beta_2: f64,
    pub epsilon: f64,
    /// Fraction of the total steps spent in linear warmup.
    pub warmup_ratio: f64,
    /// Global-norm clipping threshold (`None`: no clipping).
    pub max_grad_norm: Option<f64>,
    pub seed: u64,
    /// Write a checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: usize,
    /// Early stopping on the monitored (calibration-split) loss: stop after this many epochs in a
    /// row without a new lowest loss and restore the best epoch's weights (`None`: train every
    /// epoch and keep the last weights). Needs a [`Monitor`]; see [`crate::early_stopping`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stopping: Option<usize>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            epochs: 8,
            batch_size: 32,
            accumulate: 1,
            augment: Augment::None,
            lr: 2e-4,
            weight_decay: 0.01,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-8,
            warmup_ratio: 0.1,
            max_grad_norm: Some(1.0),
            seed: 0,
            checkpoint_every: 50,
            early_stopping: None,
        }
    }
}

fn one() -> usize {
    1
}

fn is_one(v: &usize) -> bool {
    *v == 1
}

fn is_no_augment(a: &Augment) -> bool {
    *a == Augment::None
}

impl TrainConfig {
    /// Images per optimiser step: `batch_size · accumulate`.
    pub fn step_batch(&self) -> usize {
        self.batch_size.saturating_mul(self.accumulate)
    }

    fn validate(&self) -> Result<(), TrainerError> {
        let bad = |m: String| Err(TrainerError::Config(m));
        if self.epochs == 0 || self.batch_size == 0 || self.accumulate == 0 {
            return bad(format!(
                "epochs ({}), batch_size ({}) and accumulate ({}) must be >= 1",
                self.epochs, self.batch_size, self.accumulate
            ));
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad(format!("lr must be a positive number, got {}", self.lr));
        }
        if !(0.0..1.0).contains(&self.warmup_ratio) {
            return bad(format!("warmup_ratio must be in [0, 1), got {}", self.warmup_ratio));
        }
        if self.early_stopping == Some(0) {
            return bad("early_stopping (patience) must be >= 1 epoch".into());
        }
        Ok(())
    }
}

/// What the training images are labelled with.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainTargets {
    /// One class index per image (multiclass and ordinal tasks).
    Classes(Vec<usize>),
    /// Row-major `[n, n_labels]` codes as [`LossBatch::multilabel`] reads them: `Some(1.0)` positive,
    /// `Some(0.0)` negative, `None` missing (masked out of the loss).
    Multilabel { codes: Vec<Option<f64>>, n_labels: usize },
}

impl TrainTargets {
    /// The targets of `rows`, in that order.
    pub fn of_rows(&self, rows: &[usize]) -> TrainTargets {
        match self {
            TrainTargets::Classes(labels) => TrainTargets::Classes(rows.iter().map(|&r| labels[r]).collect()),
            TrainTargets::Multilabel { codes, n_labels } => TrainTargets::Multilabel {
                codes: rows
                    .iter()
                    .flat_map(|&r| codes[r * n_labels..(r + 1) * n_labels].iter().copied())
                    .collect(),
                n_labels: *n_labels,
            },
        }
    }
}

/// Preprocessed training images (in memory or streamed, see [`TrainImages`]) with their targets.
#[derive(Debug, Clone)]
pub struct TrainSet {
    /// `[c, h, w]` of every image.
    pub image_shape: [usize; 3],
    pub images: TrainImages,
    pub targets: TrainTargets,
}

impl TrainSet {
    /// A single-label training set held in memory (`pixels` row-major `n × c·h·w`).
    pub fn classes(image_shape: [usize; 3], pixels: Vec<f32>, labels: Vec<usize>) -> Self {
        TrainSet {
            image_shape,
            images: TrainImages::in_memory(pixels),
            targets: TrainTargets::Classes(labels),
        }
    }

    /// The preprocessed pixels of `rows`, row-major; an image that cannot be read is an error naming
    /// it, whatever the bad-image policy (see [`TrainSet::read`] for the readable ones only).
    pub fn pixels(&self, rows: &[usize]) -> Result<Vec<f32>, TrainerError> {
        let read = self.read(rows)?;
        match read.unreadable.first() {
            None => Ok(read.pixels),
            Some(u) => Err(TrainerError::Images(format!(
                "{u} (under on_bad_image=skip, unreadable images are left out of training batches only)"
            ))),
        }
    }

    /// The pixels of the first training image that can be read (see [`TrainSet::read`]).
    pub fn first_readable_image(&self) -> Result<Vec<f32>, TrainerError> {
        for row in 0..self.len() {
            let read = self.read(&[row])?;
            if !read.rows.is_empty() {
                return Ok(read.pixels);
            }
        }
        Err(TrainerError::Images(format!("none of the {} training images can be read", self.len())))
    }

    /// The readable images among `rows`: under the dataset's `skip` bad-image policy an image that
    /// cannot be read is left out and listed; under `fail` it is an error naming it.
    pub fn read(&self, rows: &[usize]) -> Result<Gathered, TrainerError> {
        self.images.gather(rows, self.image_shape.iter().product())
    }

    pub fn len(&self) -> usize {
        match &self.targets {
            TrainTargets::Classes(labels) => labels.len(),
            TrainTargets::Multilabel { codes, n_labels } => codes.len() / (*n_labels).max(1),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn check(&self) -> Result<(), TrainerError> {
        let size: usize = self.image_shape.iter().product();
        let held = match &self.images {
            TrainImages::InMemory { pixels, .. } => Some(pixels.len()),
            TrainImages::Streamed(..) => None,
        };
        if size == 0 || held.is_some_and(|n| n != self.len() * size) {
            return Err(TrainerError::Config(format!(
                "the training set holds {} pixel values for {} images of shape {:?}",
                held.unwrap_or(0),
                self.len(),
                self.image_shape
            )));
        }
        if let TrainTargets::Multilabel { codes, n_labels } = &self.targets
            && (*n_labels == 0 || codes.len() % n_labels != 0)
        {
            return Err(TrainerError::Config(format!(
                "{} multilabel codes do not form rows of {n_labels} labels",
                codes.len()
            )));
        }
        Ok(())
    }

    /// Row-major images of this set's shape (`pixels` as [`TrainSet::read`] gives them) as a
    /// `[n, c, h, w]` tensor on `device`.
    pub(crate) fn tensor(&self, pixels: Vec<f32>, device: &Device) -> Tensor<4> {
        let [c, h, w] = self.image_shape;
        let n = pixels.len() / (c * h * w).max(1);
        Tensor::<4>::from_data(TensorData::new(pixels, [n, c, h, w]), device)
    }

    /// The images of `rows` (`pixels`, as [`TrainSet::read`] gave them) as `augment` transforms them
    /// in epoch `epoch` of a run seeded `seed`: each image's random stream depends on (seed, epoch,
    /// its row) only, so neither the batch it falls in nor the thread count changes it.
    pub(crate) fn augmented_images(
        &self,
        rows: &[usize],
        pixels: Vec<f32>,
        augment: Augment,
        (seed, epoch): (u64, usize),
        device: &Device,
    ) -> Tensor<4> {
        let pixels = crate::augment::augment_batch(pixels, self.image_shape, rows, augment, (seed, epoch));
        self.tensor(pixels, device)
    }

    /// The loss batch of `logits` computed for the images `indices`.
    pub fn loss_batch(&self, logits: Tensor<2>, indices: &[usize]) -> Result<LossBatch, TrainError> {
        match &self.targets {
            TrainTargets::Classes(labels) => {
                let batch: Vec<usize> = indices.iter().map(|&i| labels[i]).collect();
                LossBatch::classes(logits, &batch)
            }
            TrainTargets::Multilabel { codes, n_labels } => {
                let k = *n_labels;
                let batch: Vec<Option<f64>> =
                    indices.iter().flat_map(|&i| codes[i * k..(i + 1) * k].iter().copied()).collect();
                LossBatch::multilabel(logits, &batch)
            }
        }
    }
}

/// The AdamW optimiser of `config` (its moments, ε and decoupled weight decay) and the warmup +
/// cosine schedule of its peak lr over `total_steps` (warmup: `ceil(warmup_ratio · total_steps)`).
pub(crate) fn adamw_with_schedule(
    config: &TrainConfig,
    total_steps: usize,
) -> Result<(ModuleOptimizer, WarmupCosine), TrainError> {
    let warmup = (config.warmup_ratio * total_steps as f64).ceil() as usize;
    let schedule = WarmupCosine::new(config.lr, warmup, total_steps)?;
    let optimizer = AdamWConfig::new()
        .with_beta_1(config.beta_1 as f32)
        .with_beta_2(config.beta_2 as f32)
        .with_epsilon(config.epsilon as f32)
        .with_weight_decay(config.weight_decay as f32)
        .init();
    Ok((optimizer, schedule))
}

/// One optimiser update of `model` from `loss`: backward, the gradients clipped at global norm
/// `max_grad_norm` when given, then a step at `lr`. Returns the updated model and the gradient norm
/// before clipping (NaN without clipping, where it is not computed).
pub(crate) fn update<M: Module>(
    model: M,
    loss: Tensor<1>,
    optimizer: &mut ModuleOptimizer,
    lr: f64,
    max_grad_norm: Option<f64>,
) -> Result<(M, f64), TrainError> {
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    update_with(model, grads, optimizer, lr, max_grad_norm)
}

/// [`update`] from gradients already taken (e.g. accumulated over micro-batches).
pub(crate) fn update_with<M: Module>(
    model: M,
    mut grads: GradientsParams,
    optimizer: &mut ModuleOptimizer,
    lr: f64,
    max_grad_norm: Option<f64>,
) -> Result<(M, f64), TrainError> {
    let grad_norm = match max_grad_norm {
        Some(max) => clip_grad_norm(&model, &mut grads, max)?.total_norm,
        None => f64::NAN,
    };
    Ok((optimizer.step(lr, model, grads), grad_norm))
}

/// The result of [`train`].
#[derive(Debug)]
pub struct TrainOutcome<M> {
    pub model: M,
    pub total_steps: usize,
    /// The step a checkpoint let the run start from (`None`: from scratch).
    pub resumed_from: Option<usize>,
    /// Loss of every step, including those before a resume (read from the checkpoint).
    pub losses: Vec<f64>,
    /// The training curve with a [`Monitor`] (epoch 0: the initial weights), else empty.
    pub curve: Vec<EpochRecord>,
    /// With early stopping: the epoch (1-based) whose weights `model` holds.
    pub best_epoch: Option<usize>,
    /// Whether early stopping ended the run before its last epoch.
    pub stopped_early: bool,
    /// Training images left out because they could not be read (the dataset's `skip` bad-image
    /// policy), each once, by row; including those met before a resume.
    pub unreadable: Vec<UnreadableImage>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CheckpointState {
    format: u32,
    step: usize,
    config: TrainConfig,
    n_train: usize,
    /// NaN (a step passed over) is written as `null`.
    #[serde(with = "crate::checkpoint_dir::losses_with_gaps")]
    losses: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unreadable: Vec<UnreadableImage>,
    #[serde(default)]
    curve: Vec<EpochRecord>,
    #[serde(default)]
    early_stopping: Option<EarlyStopping>,
    #[serde(default)]
    stopped_early: bool,
}

/// The file of the best epoch's weights in a checkpoint (early stopping only).
const BEST_FILE: &str = "best.bpk";

/// Train `model` (its trainable parameters: those with `require_grad`) on `data` with `loss`.
///
/// `device` must be an autodiff device and `model` must live on it. With `checkpoint_dir`, the run
/// writes `checkpoint/` there every `checkpoint_every` steps and at the end (atomically: a new
/// directory is completed, then swapped in), and a run started with an existing checkpoint of the
/// same config and training-set size continues from it.
pub fn train<M: Classifier>(
    model: M,
    data: &TrainSet,
    loss: &dyn Loss,
    config: &TrainConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<TrainOutcome<M>, TrainerError> {
    train_monitored(model, data, loss, config, device, checkpoint_dir, None, progress)
}

/// [`train`] with a held-out [`Monitor`]: the monitored loss and score are computed on the initial
/// weights (epoch 0) and after every epoch (dropout off), and form [`TrainOutcome::curve`]. With
/// `config.early_stopping`, the run stops once that many epochs in a row did not lower the
/// monitored loss and returns the weights of the epoch with the lowest one (epochs >= 1: the
/// returned model has always trained). Monitoring does not touch the random streams, so the weights
/// after each step are those of an unmonitored run.
#[allow(clippy::too_many_arguments)]
pub fn train_monitored<M: Classifier>(
    model: M,
    data: &TrainSet,
    loss: &dyn Loss,
    config: &TrainConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    monitor: Option<&Monitor<'_>>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<TrainOutcome<M>, TrainerError> {
    config.validate()?;
    if config.early_stopping.is_some() && monitor.is_none() {
        return Err(TrainerError::Config(
            "early stopping needs a monitored held-out set (the calibration split)".into(),
        ));
    }
    if let Some(m) = monitor {
        m.check()?;
    }
    if data.is_empty() {
        return Err(TrainerError::Config("the training set is empty".into()));
    }
    data.check()?;
    let steps_per_epoch = data.len().div_ceil(config.step_batch());
    let total_steps = steps_per_epoch * config.epochs;
    let (optimizer, schedule) = adamw_with_schedule(config, total_steps)?;
    let Start {
        model,
        optimizer,
        step: start,
        losses,
        mut curve,
        stopping,
        best_model,
        stopped_early,
        resumed_from,
        unreadable,
    } = start_or_resume(model, optimizer, config, data.len(), checkpoint_dir)?;
    if let Some(m) = monitor
        && curve.is_empty()
    {
        let held_out = m.evaluate(&model, loss, device)?;
        let (train_loss, _, _) = mean_loss(&model, data, loss, device, m.batch_size)?;
        curve.push(EpochRecord {
            epoch: 0,
            train_loss,
            calibration_loss: held_out.loss,
            calibration_auroc: held_out.score,
            calibration_accuracy: held_out.accuracy,
        });
    }

    let plan = LoopPlan {
        n: data.len(),
        batch_size: config.step_batch(),
        steps_per_epoch,
        total_steps,
        order_seed: config.seed,
        checkpoint_every: checkpoint_dir.map(|_| config.checkpoint_every),
    };
    let run_to = if stopped_early { start } else { total_steps };
    let mut steps = ImageSteps {
        data,
        loss,
        config,
        device,
        optimizer,
        schedule,
        monitor,
        steps_per_epoch,
        checkpoint_dir,
        curve,
        stopping,
        best_model,
        unreadable: unreadable.into_iter().map(|u| (u.row, u)).collect(),
    };
    let end = crate::training_loop::run(&mut steps, model, &plan, start..run_to, losses, progress)?;
    let ImageSteps { curve, stopping, best_model, unreadable, .. } = steps;
    let best_epoch = stopping.as_ref().and_then(EarlyStopping::best_epoch);
    let model = match best_model {
        Some(best) if stopping.is_some() => best,
        _ => end.model,
    };
    Ok(TrainOutcome {
        model,
        total_steps,
        resumed_from,
        losses: end.losses,
        curve,
        best_epoch,
        stopped_early: stopped_early || end.stopped_early,
        unreadable: unreadable.into_values().collect(),
    })
}

/// Where a run starts: the given model and optimiser at step 0, or the state of a checkpoint.
struct Start<M> {
    model: M,
    optimizer: ModuleOptimizer,
    step: usize,
    losses: Vec<f64>,
    curve: Vec<EpochRecord>,
    stopping: Option<EarlyStopping>,
    best_model: Option<M>,
    stopped_early: bool,
    resumed_from: Option<usize>,
    unreadable: Vec<UnreadableImage>,
}

/// The newest checkpoint under `checkpoint_dir` (weights, AdamW moments, losses, curve, early-stopping
/// state and best weights), refused when another config or training-set size wrote it; else a fresh
/// start.
fn start_or_resume<M: Classifier>(
    model: M,
    optimizer: ModuleOptimizer,
    config: &TrainConfig,
    n_train: usize,
    checkpoint_dir: Option<&Path>,
) -> Result<Start<M>, TrainerError> {
    let stopping = config.early_stopping.map(EarlyStopping::new);
    let Some((state, path)) =
        checkpoint_dir.map(crate::checkpoint_dir::read_state::<CheckpointState>).transpose()?.flatten()
    else {
        return Ok(Start {
            model,
            optimizer,
            step: 0,
            losses: Vec::new(),
            curve: Vec::new(),
            stopping,
            best_model: None,
            stopped_early: false,
            resumed_from: None,
            unreadable: Vec::new(),
        });
    };
    if state.config != *config || state.n_train != n_train {
        return Err(TrainerError::Checkpoint {
            path,
            why: "was written by a run with another config or training set; remove it to start over".into(),
        });
    }
    let model = model
        .try_load_file(path.join("model.bpk"))
        .map_err(|e| TrainerError::Checkpoint { path: path.clone(), why: format!("model.bpk: {e}") })?;
    let optimizer = optimizer
        .load(path.join("optimizer.bpk"))
        .map_err(|e| TrainerError::Checkpoint { path: path.clone(), why: format!("optimizer.bpk: {e}") })?;
    let stopping = if state.early_stopping.is_some() { state.early_stopping } else { stopping };
    let best_model = if stopping.as_ref().is_some_and(|s| s.best.is_some()) {
        let best = model
            .clone()
            .try_load_file(path.join(BEST_FILE))
            .map_err(|e| TrainerError::Checkpoint { path: path.clone(), why: format!("{BEST_FILE}: {e}") })?;
        Some(best)
    } else {
        None
    };
    Ok(Start {
        model,
        optimizer,
        step: state.step,
        losses: state.losses,
        curve: state.curve,
        stopping,
        best_model,
        stopped_early: state.stopped_early,
        resumed_from: Some(state.step),
        unreadable: state.unreadable,
    })
}

/// The image trainer's part of the training loop: a batch of images and targets through the
/// classifier and the loss, one AdamW update; after each epoch, the monitored held-out set and early
/// stopping; the checkpoint with the best epoch's weights.
struct ImageSteps<'a, 'm, M> {
    data: &'a TrainSet,
    loss: &'a dyn Loss,
    config: &'a TrainConfig,
    device: &'a Device,
    optimizer: ModuleOptimizer,
    schedule: WarmupCosine,
    monitor: Option<&'a Monitor<'m>>,
    steps_per_epoch: usize,
    checkpoint_dir: Option<&'a Path>,
    curve: Vec<EpochRecord>,
    stopping: Option<EarlyStopping>,
    best_model: Option<M>,
    /// Training images met so far that could not be read (skip policy), by row.
    unreadable: BTreeMap<usize, UnreadableImage>,
}

impl<M: Classifier> TrainingSteps for ImageSteps<'_, '_, M> {
    type Model = M;
    type Error = TrainerError;

    /// A streamed training set starts reading the next step's images (see [`TrainImages::prefetch`]).
    fn upcoming(&mut self, rows: &[usize]) {
        self.data.images.prefetch(rows);
    }

    /// burn's random stream (dropout) is re-seeded from `(seed, step)` before the forward pass (and
    /// from `(seed, step, m)` before micro-batch `m` ≥ 1 under gradient accumulation).
    ///
    /// The step trains on the readable images of its rows (all of them, unless the dataset's
    /// `skip` bad-image policy left some out); a step none of whose images can be read is passed
    /// over. Under accumulation the readable rows form the micro-batches, each weighted by its share
    /// of them.
    fn step(&mut self, model: M, batch: &Batch<'_>) -> Result<(M, Stepped), TrainerError> {
        let data = self.data;
        let lr = self.schedule.lr(batch.step);
        let named = |e| at_step(e, batch.step + 1, batch.total_steps);
        let read = data.read(batch.indices)?;
        for u in read.unreadable {
            self.unreadable.entry(u.row).or_insert(u);
        }
        if read.rows.is_empty() {
            return Ok((model, Stepped::Skipped));
        }
        let (augment, augment_stream) = (self.config.augment, (self.config.seed, batch.epoch));
        if self.config.accumulate == 1 {
            self.device.seed(mix(self.config.seed, 1 << 40 | batch.step as u64));
            let images = data.augmented_images(&read.rows, read.pixels, augment, augment_stream, self.device);
            let logits = model.logits(images);
            let value = self.loss.forward(&data.loss_batch(logits, &read.rows)?)?;
            let loss = finite_value(&value).map_err(named)?;
            let (model, grad_norm) =
                update(model, value, &mut self.optimizer, lr, self.config.max_grad_norm)?;
            return Ok((model, Stepped::Updated { loss, lr, grad_norm }));
        }
        let size: usize = data.image_shape.iter().product();
        let mut accumulated = GradientsAccumulator::<M>::new();
        let mut loss = 0.0;
        let micro_pixels = read.pixels.chunks(self.config.batch_size * size);
        for (m, (micro, pixels)) in read.rows.chunks(self.config.batch_size).zip(micro_pixels).enumerate() {
            let stream = if m == 0 {
                1 << 40 | batch.step as u64
            } else {
                2 << 40 | (batch.step as u64) << 16 | m as u64
            };
            self.device.seed(mix(self.config.seed, stream));
            let share = micro.len() as f64 / read.rows.len() as f64;
            let images = data.augmented_images(micro, pixels.to_vec(), augment, augment_stream, self.device);
            let logits = model.logits(images);
            let value = self.loss.forward(&data.loss_batch(logits, micro)?)?;
            loss += share * finite_value(&value).map_err(named)?;
            accumulated.accumulate(&model, GradientsParams::from_grads((value * share).backward(), &model));
        }
        let (model, grad_norm) =
            update_with(model, accumulated.grads(), &mut self.optimizer, lr, self.config.max_grad_norm)?;
        Ok((model, Stepped::Updated { loss, lr, grad_norm }))
    }

    fn epoch_end(&mut self, model: &M, epoch: usize, losses: &[f64]) -> Result<bool, TrainerError> {
        let Some(m) = self.monitor else {
            return Ok(false);
        };
        // Steps passed over (none of their images readable) are NaN and left out of the mean.
        let epoch_losses: Vec<f64> =
            losses[losses.len() - self.steps_per_epoch..].iter().copied().filter(|l| !l.is_nan()).collect();
        if epoch_losses.is_empty() {
            return Err(TrainerError::Images(format!(
                "epoch {}: no step had a readable image ({} unreadable so far)",
                epoch + 1,
                self.unreadable.len()
            )));
        }
        let train_loss = epoch_losses.iter().sum::<f64>() / epoch_losses.len() as f64;
        let held_out = m.evaluate(model, self.loss, self.device)?;
        let calibration_loss = held_out.loss;
        self.curve.push(EpochRecord {
            epoch: epoch + 1,
            train_loss,
            calibration_loss,
            calibration_auroc: held_out.score,
            calibration_accuracy: held_out.accuracy,
        });
        let Some(s) = self.stopping.as_mut() else {
            return Ok(false);
        };
        Ok(match s.observe(epoch + 1, calibration_loss) {
            Verdict::Improved => {
                self.best_model = Some(model.clone());
                false
            }
            Verdict::Worse => false,
            Verdict::Stop => true,
        })
    }

    fn last_epoch_summary(&self) -> Option<EpochSummary> {
        self.monitor?;
        self.curve.last().filter(|e| e.epoch > 0).map(|e| EpochSummary {
            train_loss: e.train_loss,
            held_out_loss: e.calibration_loss,
            held_out_auroc: e.calibration_auroc,
            held_out_accuracy: e.calibration_accuracy,
        })
    }

    fn checkpoint(&mut self, model: &M, done: usize, losses: &[f64], stop: bool) -> Result<(), TrainerError> {
        let Some(dir) = self.checkpoint_dir else {
            return Ok(());
        };
        let mut modules: Vec<(&str, &M)> = vec![("model.bpk", model)];
        if let Some(best) = &self.best_model {
            modules.push((BEST_FILE, best));
        }
        let state = CheckpointState {
            format: 1,
            step: done,
            config: self.config.clone(),
            n_train: self.data.len(),
            losses: losses.to_vec(),
            curve: self.curve.clone(),
            early_stopping: self.stopping.clone(),
            stopped_early: stop,
            unreadable: self.unreadable.values().cloned().collect(),
        };
        Ok(crate::checkpoint_dir::write(dir, &modules, &self.optimizer, &state)?)
    }
}

impl From<crate::checkpoint_dir::CheckpointFault> for TrainerError {
    fn from(f: crate::checkpoint_dir::CheckpointFault) -> Self {
        match f {
            crate::checkpoint_dir::CheckpointFault::Io { path, source } => TrainerError::Io { path, source },
            crate::checkpoint_dir::CheckpointFault::Format { path, why } => {
                TrainerError::Checkpoint { path, why }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Tensor, TensorData};

    use super::*;

    /// Issue 20: a non-finite loss stops training with the step named (the trainer calls
    /// `finite_value` on every step's loss before the update, so nothing is stepped or saved).
    #[test]
    fn a_non_finite_loss_names_its_step() {
        let device = Device::flex();
        let loss = Tensor::<1>::from_data(TensorData::new(vec![f32::NAN], [1]), &device);
        let err = finite_value(&loss).map_err(|e| at_step(e, 3, 10)).unwrap_err().to_string();
        assert!(err.contains("loss value at step 3 of 10 is not finite"), "{err}");
    }
}
