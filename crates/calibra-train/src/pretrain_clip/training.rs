//! Contrastive training of the CLIP being made: the trained module ([`ContrastiveClip`], the CLIP
//! with its learnable log temperature), the pool of preprocessed training images of every task, the
//! captions of a batch ([`Captions`]: a template per (step, task), a subject per (epoch, image)), and
//! the steps of the one training loop ([`crate::training_loop`]): AdamW with warmup + cosine and
//! global-norm clipping on the symmetric contrastive loss. A last batch of one image has no negative
//! and is skipped (counted, no update).

use std::collections::HashMap;

use burn::module::{Module, Param};
use burn::optim::ModuleOptimizer;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_data::PreprocessConfig;
use calibra_models::clip::{ClipModel, fill_template, l2_normalize};
use calibra_models::tokenizer::ClipTokenizer;

use super::MAX_LOGIT_SCALE;
use super::captions::caption_subject;
use super::contrastive::{contrastive_loss, identical_caption_mask};
use crate::features::{FeatureCondition, image_batch};
use crate::losses::finite_value;
use crate::pretrain::{LoadedTask, PretrainError};
use crate::schedule::WarmupCosine;
use crate::trainer::{StepReport, TrainConfig, adamw_with_schedule, update};
use crate::training_loop::{Batch, LoopPlan, Stepped, TrainingSteps};

/// The module trained: the CLIP plus its learnable log temperature (a burn parameter here; a plain
/// scalar in [`ClipModel`], which neither zero-shot nor CoOp trains).
#[derive(Module, Debug)]
pub(super) struct ContrastiveClip {
    pub(super) clip: ClipModel,
    logit_scale: Param<Tensor<1>>,
}

impl ContrastiveClip {
    /// The CLIP of checkpoint `dir_spec` on `device` (autodiff), its `logit_scale` made trainable.
    pub(super) fn load(dir_spec: &str, device: &Device) -> Result<Self, PretrainError> {
        let (clip, _) = ClipModel::load(dir_spec, device)?;
        let logit_scale =
            Param::from_tensor(Tensor::<1>::from_data(TensorData::new(vec![clip.logit_scale], [1]), device));
        Ok(ContrastiveClip { clip, logit_scale })
    }

    /// `min(logit_scale, ln 100)`, `[1]`.
    pub(super) fn clamped_scale(&self) -> Tensor<1> {
        self.logit_scale.val().clamp_max(MAX_LOGIT_SCALE)
    }

    /// `exp(clamped logit_scale) · l2n(image_features) · l2n(text_features)ᵀ`, `[B, B]`.
    fn logits(
        &self,
        images: Tensor<4>,
        ids: &[Vec<u32>],
        device: &Device,
    ) -> Result<Tensor<2>, PretrainError> {
        let img = l2_normalize(self.clip.image_features(images)?);
        let txt = l2_normalize(self.clip.text_features(ids, device)?);
        let scale = self.clamped_scale().exp().reshape([1, 1]);
        Ok(img.matmul(txt.transpose()) * scale)
    }
}

/// One training image: its task and dataset row.
struct PoolItem {
    task: usize,
    row: usize,
}

/// Every task's training rows, preprocessed once: `items[p]`'s pixels are the `p`-th image of
/// `pixels`, all of shape `shape`.
pub(super) struct TrainingPool {
    items: Vec<PoolItem>,
    pixels: Vec<f32>,
    shape: [usize; 3],
}

impl TrainingPool {
    pub(super) fn build(tasks: &[LoadedTask], preprocess: &PreprocessConfig) -> Result<Self, PretrainError> {
        let mut items = Vec::new();
        let mut pixels = Vec::new();
        let mut shape = [0usize; 3];
        for (t, task) in tasks.iter().enumerate() {
            let batch = image_batch(&task.dataset, &task.train_rows, preprocess, FeatureCondition::Clean)
                .map_err(|e| PretrainError::Invalid(format!("task `{}`: {e}", task.spec)))?;
            shape = batch.shape;
            pixels.extend(batch.pixels);
            items.extend(task.train_rows.iter().map(|&row| PoolItem { task: t, row }));
        }
        Ok(TrainingPool { items, pixels, shape })
    }
}

/// SplitMix64 finaliser of `seed` mixed with `a` and `b`.
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z =
        seed ^ a.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The captions of the pool's images: task `t`'s template drawn per (seed, step, t), the subject
/// per (seed, epoch, image), tokenised (each distinct caption once).
pub(super) struct Captions<'a> {
    pub(super) seed: u64,
    pub(super) tasks: &'a [LoadedTask],
    /// Each task's class names.
    pub(super) names: &'a [Vec<String>],
    /// Each task's templates.
    pub(super) templates: Vec<&'a [String]>,
    pub(super) tokenizer: &'a ClipTokenizer,
    pub(super) cache: HashMap<String, Vec<u32>>,
}

impl Captions<'_> {
    /// The token ids of the caption of pool image `p` (`item`) at `step` of `epoch`.
    fn ids(
        &mut self,
        item: &PoolItem,
        p: usize,
        step: usize,
        epoch: usize,
    ) -> Result<Vec<u32>, PretrainError> {
        let templates = self.templates[item.task];
        let template =
            &templates[(mix(self.seed, step as u64, item.task as u64) % templates.len() as u64) as usize];
        let pick = mix(self.seed ^ 0x5EED, epoch as u64, p as u64);
        let subject = caption_subject(&self.tasks[item.task].dataset, &self.names[item.task], item.row, pick);
        let caption = fill_template(template, &subject)?;
        Ok(match self.cache.get(&caption) {
            Some(v) => v.clone(),
            None => {
                let v = self
                    .tokenizer
                    .encode_truncated(&caption)
                    .map_err(|e| PretrainError::Invalid(format!("caption {caption:?}: {e}")))?;
                self.cache.insert(caption.clone(), v.clone());
                v
            }
        })
    }
}

/// What [`train_contrastive`] ends with.
pub(super) struct Trained {
    pub(super) model: ContrastiveClip,
    /// The loss of every step (NaN: a skipped batch of one image).
    pub(super) losses: Vec<f64>,
    pub(super) total_steps: usize,
    steps_per_epoch: usize,
}

impl Trained {
    /// The mean loss of epoch `e`'s updated steps.
    pub(super) fn epoch_mean(&self, e: usize) -> f64 {
        let v: Vec<f64> = self.losses[e * self.steps_per_epoch..(e + 1) * self.steps_per_epoch]
            .iter()
            .copied()
            .filter(|l| l.is_finite())
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }
}

/// Trains `model` on `pool` with `captions` for `config`'s epochs on `device` (autodiff), the batch
/// order seeded by the captions' seed.
pub(super) fn train_contrastive(
    model: ContrastiveClip,
    config: &TrainConfig,
    pool: &TrainingPool,
    captions: Captions<'_>,
    device: &Device,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<Trained, PretrainError> {
    if config.accumulate != 1 || config.augment != crate::augment::Augment::None {
        // A contrastive batch's negatives are the batch itself: accumulating gradients over
        // micro-batches would train another objective; and its images come from its own pool. Both
        // are refused rather than ignored.
        return Err(PretrainError::Invalid(format!(
            "contrastive pretraining takes neither gradient accumulation nor augmentation (accumulate = {}, augment = {})",
            config.accumulate,
            config.augment.name()
        )));
    }
    let n = pool.items.len();
    let steps_per_epoch = n.div_ceil(config.batch_size);
    let total_steps = steps_per_epoch * config.epochs;
    let (optimizer, schedule) =
        adamw_with_schedule(config, total_steps).map_err(|e| PretrainError::Invalid(e.to_string()))?;
    let plan = LoopPlan {
        n,
        batch_size: config.batch_size,
        steps_per_epoch,
        total_steps,
        order_seed: captions.seed,
        checkpoint_every: None,
    };
    let mut steps =
        ContrastiveSteps { pool, captions, device, optimizer, schedule, max_grad_norm: config.max_grad_norm };
    let losses = Vec::with_capacity(total_steps);
    let end = crate::training_loop::run(&mut steps, model, &plan, 0..total_steps, losses, progress)?;
    Ok(Trained { model: end.model, losses: end.losses, total_steps, steps_per_epoch })
}

/// One contrastive batch of `B` images.
struct ContrastiveBatch {
    /// `[B, c, h, w]`.
    images: Tensor<4>,
    /// Each image's caption ids, padded to the longest.
    ids: Vec<Vec<u32>>,
    /// `[B·B]`: whether images `i` and `j` have the identical caption.
    positives: Vec<bool>,
}

/// CLIP pretraining's part of the training loop.
struct ContrastiveSteps<'a> {
    pool: &'a TrainingPool,
    captions: Captions<'a>,
    device: &'a Device,
    optimizer: ModuleOptimizer,
    schedule: WarmupCosine,
    max_grad_norm: Option<f64>,
}

impl ContrastiveSteps<'_> {
    /// The batch's images, padded caption ids and identical-caption mask.
    fn assemble(&mut self, batch: &Batch<'_>) -> Result<ContrastiveBatch, PretrainError> {
        let pool = self.pool;
        let indices = batch.indices;
        let image_len: usize = pool.shape.iter().product();
        let mut batch_pixels = Vec::with_capacity(indices.len() * image_len);
        let mut ids = Vec::with_capacity(indices.len());
        for &p in indices {
            batch_pixels.extend_from_slice(&pool.pixels[p * image_len..(p + 1) * image_len]);
            ids.push(self.captions.ids(&pool.items[p], p, batch.step, batch.epoch)?);
        }
        let positives = identical_caption_mask(&ids);
        let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
        for row in &mut ids {
            row.resize(longest, self.captions.tokenizer.pad_id());
        }
        let [c, h, w] = pool.shape;
        let images =
            Tensor::<4>::from_data(TensorData::new(batch_pixels, [indices.len(), c, h, w]), self.device);
        Ok(ContrastiveBatch { images, ids, positives })
    }
}

impl TrainingSteps for ContrastiveSteps<'_> {
    type Model = ContrastiveClip;
    type Error = PretrainError;

    fn step(
        &mut self,
        model: ContrastiveClip,
        batch: &Batch<'_>,
    ) -> Result<(ContrastiveClip, Stepped), PretrainError> {
        if batch.indices.len() < 2 {
            return Ok((model, Stepped::Skipped));
        }
        let ContrastiveBatch { images, ids, positives } = self.assemble(batch)?;
        let logits = model.logits(images, &ids, self.device)?;
        let loss = contrastive_loss(logits, &positives)?;
        let loss_value = finite_value(&loss)
            .map_err(|e| PretrainError::Invalid(format!("step {}: {e}", batch.step + 1)))?;
        let lr = self.schedule.lr(batch.step);
        let (model, grad_norm) = update(model, loss, &mut self.optimizer, lr, self.max_grad_norm)
            .map_err(|e| PretrainError::Invalid(e.to_string()))?;
        Ok((model, Stepped::Updated { loss: loss_value, lr, grad_norm }))
    }
}
