//! CoOp prompt tuning (Zhou et al., IJCV 2022), its KgCoOp / ProGrad variants (spec §E), MaPLe, PromptSRC and HiCroPL: train
//! the context vectors of a CLIP [`calibra_models::clip::PromptLearner`] on frozen image features
//! with SGD-momentum and Dassl's constant-warmup cosine schedule, with any class-label loss of the
//! registry.
//!
//! - [`config`]: [`CoopConfig`] (CoOp's reference hyper-parameters as defaults) and [`CoopMethod`].
//! - [`trainer`]: [`train_coop`] / [`train_prompt_learner`] and [`CoopOutcome`].
//! - [`image_prompts`]: the loop of the methods that prompt the image tower too and train on images;
//!   [`maple`]: MaPLe ([`train_maple`]); [`promptsrc`]: PromptSRC ([`train_promptsrc`]);
//!   [`hicropl`]: HiCroPL ([`train_hicropl`]).
//! - [`kgcoop`]: the knowledge-guidance term; [`prograd`]: the distillation loss and the gradient
//!   projection.
//! - `checkpoint`: crash-safe checkpoints (resume gives the uninterrupted context).

mod checkpoint;
pub mod config;
pub mod error;
pub mod hicropl;
pub mod image_prompts;
pub mod kgcoop;
pub mod maple;
pub mod prograd;
pub mod promptsrc;
pub mod trainer;

pub use config::{CoopConfig, CoopMethod};
pub use error::CoopError;
pub use hicropl::{HicroplOutcome, hicropl_terms, train_hicropl, train_hicropl_learner};
pub use image_prompts::{ImageBatches, ImagePromptOutcome, PromptImages};
pub use maple::{MapleOutcome, train_maple, train_maple_learner};
pub use promptsrc::{PromptSrcOutcome, train_promptsrc, train_promptsrc_learner};
pub use trainer::{CoopOutcome, steps_per_epoch, train_coop, train_prompt_learner};
