//! The one training loop every trainer runs (the image trainer of LoRA / full / head fine-tuning and
//! ViT pretraining, the CoOp trainer, CLIP pretraining): the seeded batch schedule, one optimiser step
//! per batch, the loss record and progress report, the end-of-epoch hook (training curve and early
//! stopping) and crash-safe checkpoints. What varies between trainers (batch assembly, the forward
//! pass and loss, the optimiser and its learning rate, what an epoch end evaluates, what a checkpoint
//! holds) is a [`TrainingSteps`] implementation.
//!
//! Determinism: the batch order of epoch `e` is [`epoch_order`]`(n, seed, e)`, a ChaCha20 shuffle;
//! the loop draws nothing else, so whatever a trainer's steps draw comes in the same order whether a
//! run is whole or resumed from a checkpoint.

use std::ops::Range;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha20Rng;

use crate::error::TrainError;

/// What one step did, for progress reporting.
#[derive(Debug, Clone, Copy)]
pub struct StepReport {
    pub step: usize,
    pub total_steps: usize,
    pub epoch: usize,
    pub loss: f64,
    pub lr: f64,
    pub grad_norm: f64,
    pub images: usize,
    /// On the last step of an epoch of a monitored run: that epoch's mean training loss and the
    /// held-out (calibration-split) loss, macro AUROC and accuracy after it.
    pub epoch_end: Option<EpochSummary>,
}

/// The numbers of one finished epoch of a monitored run, for progress lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpochSummary {
    pub train_loss: f64,
    pub held_out_loss: f64,
    /// `None` when the held-out rows hold a single class.
    pub held_out_auroc: Option<f64>,
    /// Single-label: the share of held-out rows classified right; multilabel: of observed labels.
    pub held_out_accuracy: Option<f64>,
}

/// SplitMix64 finaliser of seed ⊕ golden-ratio·x: decorrelates neighbouring steps / epochs.
pub(crate) fn mix(seed: u64, x: u64) -> u64 {
    let mut z = seed ^ x.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The order in which epoch `epoch` visits the training set.
pub fn epoch_order(n: usize, seed: u64, epoch: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha20Rng::seed_from_u64(mix(seed, epoch as u64)));
    order
}

/// Names the optimiser step (1-based) of a non-finite loss.
pub(crate) fn at_step(e: TrainError, step: usize, total_steps: usize) -> TrainError {
    match e {
        TrainError::NonFinite { what, value } => {
            TrainError::NonFinite { what: format!("{what} at step {step} of {total_steps}"), value }
        }
        other => other,
    }
}

/// The shape of a run: how the training set is cut into batches and when checkpoints are due.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopPlan {
    /// Rows in the training set.
    pub n: usize,
    pub batch_size: usize,
    /// Batches per epoch (the last one of an epoch may be short; a trainer that drops the short
    /// batch says so by its count).
    pub steps_per_epoch: usize,
    pub total_steps: usize,
    /// Seed of the batch order.
    pub order_seed: u64,
    /// Checkpoint every this many steps and after the last (0: only after the last); `None`: never.
    pub checkpoint_every: Option<usize>,
}

/// One batch of the schedule.
pub(crate) struct Batch<'a> {
    /// 0-based step of the run.
    pub step: usize,
    pub epoch: usize,
    pub total_steps: usize,
    /// Training-set rows of the batch.
    pub indices: &'a [usize],
}

/// What a step did.
pub(crate) enum Stepped {
    /// The model was updated; its loss, learning rate and gradient norm.
    Updated { loss: f64, lr: f64, grad_norm: f64 },
    /// The batch was passed over (counted, no update): its loss is recorded as NaN, nothing is
    /// reported.
    Skipped,
}

/// The parts of a training run that vary between trainers.
pub(crate) trait TrainingSteps {
    type Model;
    type Error;

    /// The rows of the step after the one about to run (not called before the last), so that a
    /// trainer can start reading them while the step computes.
    fn upcoming(&mut self, _rows: &[usize]) {}

    /// One optimiser step on `batch`: the updated model and what the step did.
    fn step(&mut self, model: Self::Model, batch: &Batch<'_>) -> Result<(Self::Model, Stepped), Self::Error>;

    /// After the last step of epoch `epoch` (0-based), with the losses of every step so far: whether
    /// the run should stop (honoured before the last step only).
    fn epoch_end(
        &mut self,
        _model: &Self::Model,
        _epoch: usize,
        _losses: &[f64],
    ) -> Result<bool, Self::Error> {
        Ok(false)
    }

    /// What the last [`TrainingSteps::epoch_end`] measured, if the trainer monitors a held-out set.
    fn last_epoch_summary(&self) -> Option<EpochSummary> {
        None
    }

    /// Writes a checkpoint after step `done` (1-based); `stop`: the run stops early here.
    fn checkpoint(
        &mut self,
        _model: &Self::Model,
        _done: usize,
        _losses: &[f64],
        _stop: bool,
    ) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// What [`run`] ends with.
pub(crate) struct LoopEnd<M> {
    pub model: M,
    /// The loss of every step: those given to [`run`] (before a resume), then those of `steps`.
    pub losses: Vec<f64>,
    /// Whether an epoch end stopped the run before its last step.
    pub stopped_early: bool,
}

/// Runs the steps `steps` (0-based, a sub-range of the plan's) of `plan` on `model`,
/// appending each step's loss to `losses`.
pub(crate) fn run<S: TrainingSteps>(
    trainer: &mut S,
    model: S::Model,
    plan: &LoopPlan,
    steps: Range<usize>,
    mut losses: Vec<f64>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<LoopEnd<S::Model>, S::Error> {
    let LoopPlan { n, batch_size, steps_per_epoch, total_steps, .. } = *plan;
    let mut model = model;
    let mut order: Vec<usize> = Vec::new();
    let mut order_epoch = usize::MAX;
    let end_step = steps.end;
    for step in steps {
        let epoch = step / steps_per_epoch;
        if epoch != order_epoch {
            order = epoch_order(n, plan.order_seed, epoch);
            order_epoch = epoch;
        }
        let within = step % steps_per_epoch;
        let end = ((within + 1) * batch_size).min(n);
        let indices = &order[within * batch_size..end];
        if step + 1 < end_step {
            let (next_epoch, next_within) = ((step + 1) / steps_per_epoch, (step + 1) % steps_per_epoch);
            let next_end = ((next_within + 1) * batch_size).min(n);
            if next_epoch == epoch {
                trainer.upcoming(&order[next_within * batch_size..next_end]);
            } else {
                let next_order = epoch_order(n, plan.order_seed, next_epoch);
                trainer.upcoming(&next_order[next_within * batch_size..next_end]);
            }
        }
        let stepped;
        (model, stepped) = trainer.step(model, &Batch { step, epoch, total_steps, indices })?;
        let done = step + 1;
        let last_of_epoch = done.is_multiple_of(steps_per_epoch);
        let report = match stepped {
            Stepped::Updated { loss, lr, grad_norm } => {
                losses.push(loss);
                Some(StepReport {
                    step: done,
                    total_steps,
                    epoch,
                    loss,
                    lr,
                    grad_norm,
                    images: indices.len(),
                    epoch_end: None,
                })
            }
            Stepped::Skipped => {
                losses.push(f64::NAN);
                None
            }
        };
        // The epoch end runs before the step is reported, so the report of an epoch's last step
        // carries what the epoch end measured.
        let stop = last_of_epoch && trainer.epoch_end(&model, epoch, &losses)? && done < total_steps;
        if let Some(mut report) = report {
            if last_of_epoch {
                report.epoch_end = trainer.last_epoch_summary();
            }
            progress(&report);
        }
        if let Some(every) = plan.checkpoint_every
            && (stop || crate::checkpoint_dir::due(done, total_steps, every))
        {
            trainer.checkpoint(&model, done, &losses, stop)?;
        }
        if stop {
            return Ok(LoopEnd { model, losses, stopped_early: true });
        }
    }
    Ok(LoopEnd { model, losses, stopped_early: false })
}
