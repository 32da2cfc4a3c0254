//! calibra-train: the training losses (CE, label smoothing in both published forms, focal and
//! FLSD-53, MDCA, MbLS, MCM, ZS-Norm, the zero-shot range penalty, masked multilabel BCE) with a
//! registry by name, the learning-rate schedules (warmup + cosine as in transformers; Dassl's
//! constant-warmup cosine), global-norm gradient clipping over burn `GradientsParams`, the one
//! training loop every trainer runs (`training_loop`: batch schedule, steps, progress, epoch ends,
//! crash-safe checkpoints), the image trainer on it (`trainer`), per-epoch held-out curves
//! (`training_curve`) and early stopping on them (`early_stopping`), cached frozen-feature passes
//! (`features`), fine-tuning an encoder with a head by LoRA, in full or head-only (`fine_tune`),
//! CoOp / KgCoOp / ProGrad prompt tuning of CLIP models (`coop`), and pretraining the tiny ViT
//! encoders shipped in `checkpoints/` from the synthetic suite (`pretrain`) and the tiny contrastive
//! CLIP (`pretrain_clip`).
//! What `calibra pretrain` asks for (the panel, `tiny-clip` or one ViT, with model cards) runs in one
//! call (`pretrain_job`).
//!
//! Must not depend on the evaluator side (metrics, calibrate, crs, report).
#![forbid(unsafe_code)]

pub mod augment;
mod checkpoint_dir;
pub mod coop;
pub mod early_stopping;
pub mod error;
pub mod features;
pub mod fine_tune;
pub mod grad_clip;
pub mod losses;
pub mod pretrain;
pub mod pretrain_clip;
pub mod pretrain_job;
pub mod schedule;
pub mod train_images;
pub mod trainer;
pub mod training_curve;
pub mod training_loop;

pub use coop::{CoopConfig, CoopMethod, CoopOutcome, train_coop};
pub use error::TrainError;
pub use grad_clip::{ClipOutcome, clip_grad_norm};
pub use losses::{Loss, LossBatch, LossSpec, build_loss, registry};
pub use schedule::{ConstantWarmupCosine, WarmupCosine};
