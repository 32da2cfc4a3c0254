//! `calibra transfer score --features FILE [--labels FILE] [--estimators a,b,...] [--format table|json]`:
//! transferability estimators (calibra-transfer) on one frozen-feature matrix — a `calibra features`
//! safetensors or a `.npy` `[N, D]` — with its own or `.npy` labels (read by
//! `calibra_exec::transfer_score` and `calibra_transfer::npy_input`). NLEEP's posteriors are its own
//! Gaussian mixture on the PCA-80 % features (as the reference); LEEP is not offered here because a
//! feature file carries no source-classifier posteriors (the library's `leep` takes them).

use std::path::PathBuf;

use anyhow::Result;
use calibra_exec::transfer_score::{TransferScoreRequest, score_feature_file};
use calibra_report::transfer_score_table;
use calibra_transfer::TargetKind as Kind;

use crate::cli::output::{OutputFormat, emit};

#[derive(Debug, clap::Args)]
pub struct TransferArgs {
    #[command(subcommand)]
    pub command: TransferCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum TransferCommand {
    /// Score one feature matrix with the transferability estimators (higher = predicted better).
    Score(ScoreArgs),
}

/// How integer / float labels are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetKind {
    /// Integer labels → classes, fractional → continuous, `[N, L]` → multilabel.
    Auto,
    Classes,
    /// Ordered grades: LogME on the grade, k-NN agreement by Spearman ρ.
    Ordinal,
    /// A continuous outcome: quintile classes for the class-based estimators.
    Continuous,
}

#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// Features: a `calibra features` .safetensors, or a .npy `[N, D]` (f32 or f64).
    #[arg(long)]
    pub features: PathBuf,
    /// Labels: .npy `[N]` / `[N, L]`, or a `calibra features` .safetensors. Optional when the
    /// features file is a `calibra features` safetensors (its labels are used).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Depth fraction of a multi-layer safetensors (default: the deepest layer stored).
    #[arg(long)]
    pub layer: Option<f64>,
    /// Score only the rows of this split (train, calibration or test) of a file written by
    /// `calibra features --split all` (default: every row).
    #[arg(long)]
    pub split: Option<String>,
    /// How to read the labels.
    #[arg(long, value_enum, default_value_t = TargetKind::Auto)]
    pub target: TargetKind,
    /// Comma-separated subset of: logme, hscore, hscore_shrinkage, gbc, nleep, transrate,
    /// effective_dimensionality, knn_agreement (default: all).
    #[arg(long)]
    pub estimators: Option<String>,
    /// Neighbours of knn_agreement.
    #[arg(long, default_value_t = calibra_transfer::knn::DEFAULT_K)]
    pub knn_k: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

pub fn run(args: &TransferArgs) -> Result<()> {
    let TransferCommand::Score(args) = &args.command;
    let request = TransferScoreRequest {
        features: args.features.clone(),
        labels: args.labels.clone(),
        layer: args.layer,
        split: args.split.clone(),
        target: match args.target {
            TargetKind::Auto => Kind::Auto,
            TargetKind::Classes => Kind::Classes,
            TargetKind::Ordinal => Kind::Ordinal,
            TargetKind::Continuous => Kind::Continuous,
        },
        estimators: args.estimators.clone(),
        knn_k: args.knn_k,
    };
    let scores = score_feature_file(&request)?;
    for note in &scores.report.notes {
        eprintln!("note: {note}");
    }
    emit(&match args.format {
        OutputFormat::Json => serde_json::to_string_pretty(&scores.report)? + "\n",
        OutputFormat::Table => transfer_score_table(&scores.report, &scores.estimators),
    })?;
    Ok(())
}
