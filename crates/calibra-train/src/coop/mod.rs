//! CoOp prompt tuning (Zhou et al., IJCV 2022), its KgCoOp / ProGrad variants (spec §E) and MaPLe: train
//! the context vectors of a CLIP [`calibra_models::clip::PromptLearner`] on frozen image features
//! with SGD-momentum and Dassl's constant-warmup cosine schedule, with any class-label loss of the
//! registry.
//!
//! - [`config`]: [`CoopConfig`] (CoOp's reference hyper-parameters as defaults) and [`CoopMethod`].
//! - [`trainer`]: [`train_coop`] / [`train_prompt_learner`] and [`CoopOutcome`].
//! - [`maple`]: MaPLe (deep prompts in both towers, trained on images): [`train_maple`].
//! - [`kgcoop`]: the knowledge-guidance term; [`prograd`]: the distillation loss and the gradient
//!   projection.
//! - `checkpoint`: crash-safe checkpoints (resume gives the uninterrupted context).

mod checkpoint;
pub mod config;
pub mod error;
pub mod kgcoop;
pub mod maple;
pub mod prograd;
pub mod trainer;

pub use config::{CoopConfig, CoopMethod};
pub use error::CoopError;
pub use maple::{ImageBatches, MapleOutcome, train_maple, train_maple_learner};
pub use trainer::{CoopOutcome, steps_per_epoch, train_coop, train_prompt_learner};
