//! calibra-run: recipes (TOML), grid expansion, run keys, the append-only crash-safe run store with
//! resume, sharding and merging, and the grid loop generic over an [`Executor`].
//!
//! Owns: the recipe schema and its validation ([`recipe`], [`names`]); the grid — fits, record slots,
//! feature passes ([`grid`]) — and the dry-run cost model ([`cost`]); fit keys ([`run_key`]), with the
//! digest of HiCroPL's teacher descriptions ([`descriptions`]); the run
//! store — layout ([`snapshot`]), commit protocol and crash recovery ([`store`]), lock ([`lock`]);
//! shards ([`shard`]), merging ([`merge`], with the recipe carried along: [`merge_recipe`]), repair of a store whose journal and records disagree ([`repair`], its report: [`repair_report`]); and the grid loop ([`runner`]) over an executor
//! ([`executor`]), which fits and returns a fitted model ([`fitted`]); the runner predicts it,
//! calibrates and scores the predictions and builds the records once for every regime
//! ([`slot_outputs`]), on datasets loaded once per grid ([`datasets`]); running a recipe into its
//! store, checks and recovery included ([`execute`]); the one-encoder recipe of `calibra train`'s
//! flags ([`train_recipe`]); the counts a grid's progress display shows ([`grid_counts`]).
//!
//! Must not depend on burn: fitting (probes, LoRA, CoOp) is the executor's job, plugged in from
//! calibra-exec. The one executor here, [`baseline`] (the `prior` probe), needs only the
//! evaluator-side crates (data, calibrate, metrics, predictions). Run records are calibra-crs's [`calibra_crs::RunRecord`], so a store is read by
//! `calibra eval <STORE>` as is.
#![forbid(unsafe_code)]

pub mod baseline;
pub mod cost;
pub mod datasets;
pub mod descriptions;
pub mod encoder_check;
pub mod error;
pub mod execute;
pub mod executor;
pub mod fitted;
pub mod grid;
pub mod grid_counts;
pub mod locate;
pub mod lock;
pub mod merge;
pub mod merge_recipe;
pub mod names;
pub mod recipe;
pub mod repair;
pub mod repair_report;
pub mod run_key;
pub mod runner;
pub mod shard;
pub mod slot_outputs;
pub mod snapshot;
pub mod store;
pub mod train_recipe;

pub use cost::{GridSummary, summarize};
pub use datasets::{DatasetCache, split_of};
pub use error::RunError;
pub use executor::{ExecError, Executor, NoProgress, Progress, RunContext};
pub use fitted::{FitOutcome, Fitted, PredictRequest};
pub use grid::{FeaturePass, FitConfig, FitMethod, FitSpec, PromptMethod, Slot, expand, feature_passes};
pub use merge::{MergeSummary, merge_stores};
pub use merge_recipe::{MergeOutcome, MergeRecipeError, RecipeCopy, merge_with_recipe};
pub use recipe::{Recipe, ValidationOptions};
pub use repair::{RepairSummary, repair_store};
pub use run_key::FitKey;
pub use runner::{RunSummary, check_outputs, run_grid, shard_fits};
pub use shard::Shard;
pub use snapshot::StoreSnapshot;
pub use store::{FaultInjection, PredictionsData, Recovery, RunOutput, RunStore, StoreOptions};
