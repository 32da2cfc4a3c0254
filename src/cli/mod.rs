//! One module per subcommand: its clap arguments and its `run`.

pub mod calibrate;
pub mod compare_ranks;
pub mod convert;
pub mod crs;
pub mod data;
pub mod device_notice;
pub mod eval;
pub mod features;
pub mod merge;
pub mod metrics;
pub mod output;
pub mod pretrain;
pub mod report;
pub mod run;
pub mod train;
pub mod transfer;
pub mod weights;
pub mod zero_shot;
