//! calibra-run: recipes (TOML), grid expansion, run keys, the append-only crash-safe run store with
//! resume, sharding and merging, and the grid loop generic over an [`Executor`].
//!
//! Owns: the recipe schema and its validation ([`recipe`], [`names`]); the grid — fits, record slots,
//! feature passes ([`grid`]) — and the dry-run cost model ([`cost`]); fit keys ([`run_key`]); the run
//! store — layout ([`snapshot`]), commit protocol and crash recovery ([`store`]), lock ([`lock`]);
//! shards ([`shard`]), merging ([`merge`]), repair of a store whose journal and records disagree ([`repair`]); and the grid loop ([`runner`]) over an executor
//! ([`executor`]).
//!
//! Must not depend on burn: executing a fit (probes, LoRA, CoOp) is the executor's job, plugged in by
//! the binary. The one executor here, [`baseline`] (the `prior` probe), needs only the evaluator-side
//! crates (data, calibrate, metrics, predictions). Run records are calibra-crs's [`calibra_crs::RunRecord`], so a store is read by
//! `calibra eval <STORE>` as is.
#![forbid(unsafe_code)]

pub mod baseline;
pub mod cost;
pub mod encoder_check;
pub mod error;
pub mod executor;
pub mod grid;
pub mod locate;
pub mod lock;
pub mod merge;
pub mod names;
pub mod recipe;
pub mod repair;
pub mod run_key;
pub mod runner;
pub mod shard;
pub mod snapshot;
pub mod store;

pub use cost::{GridSummary, summarize};
pub use error::RunError;
pub use executor::{ExecError, Executor, NoProgress, Progress, RunContext};
pub use grid::{FeaturePass, FitConfig, FitMethod, FitSpec, Slot, expand, feature_passes};
pub use merge::{MergeSummary, merge_stores};
pub use recipe::{Recipe, ValidationOptions};
pub use repair::{RepairSummary, repair_store};
pub use run_key::FitKey;
pub use runner::{RunSummary, check_outputs, run_grid, shard_fits};
pub use shard::Shard;
pub use snapshot::StoreSnapshot;
pub use store::{FaultInjection, PredictionsData, Recovery, RunOutput, RunStore, StoreOptions};
