//! calibra-exec: the executors `calibra run` and `calibra train` plug into calibra-run's grid loop,
//! and the CLIP image-feature core `calibra zero-shot` shares with them.
//!
//! Owns: one executor per regime, each of which only **fits** and returns a fitted model
//! ([`calibra_run::Fitted`]) — frozen probes on cached encoder features ([`frozen`]), LoRA and full
//! fine-tuning ([`adapted`]), CoOp prompt tuning ([`coop`]), zero-shot prompting ([`zero_shot`]) and
//! transferability estimates ([`estimate`]) — dispatched by [`RunExecutor`]; the feature passes they
//! read ([`feature_pass`], [`clip_features`]) and what the CLIP regimes share ([`clip_fit`]); the record-condition → image-condition conversion
//! ([`condition`]); the prompt texts ([`prompts`]); training progress lines ([`epoch_log`]);
//! `calibra zero-shot`'s template study ([`template_study`]: one split, one predictions file and
//! record per prompt template, the spread across templates); and the two one-file jobs the binary
//! runs outside a grid: a feature file (`calibra features`, [`feature_file`]) and the
//! transferability scores of one (`calibra transfer score`, [`transfer_score`]).
//!
//! Does not own, and must not re-implement: predicting the calibration and test splits, shift
//! targets, calibrators, metrics and run records (calibra-run's runner does them once for every
//! regime), datasets (calibra-data), models (calibra-models), training loops (calibra-train), probes
//! (calibra-probe) or estimators (calibra-transfer). Nothing here may depend on the binary. The
//! template study is no grid fit: it predicts the one split it is asked for, uncalibrated, and scores
//! it with the runner's own record metrics (`calibra_run::slot_outputs::record_metrics`).
#![forbid(unsafe_code)]

pub mod adapted;
pub mod clip_features;
pub mod clip_fit;
pub mod condition;
pub mod coop;
pub mod epoch_log;
pub mod estimate;
pub mod feature_file;
pub mod feature_pass;
pub mod frozen;
pub mod prompted_towers;
pub mod prompts;
pub mod run_executor;
pub mod template_study;
pub mod transfer_score;
pub mod zero_shot;
pub mod zero_shot_model;

pub use run_executor::RunExecutor;
