//! The `calibra` command line: wires the library crates together; no numerics live here.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod cli;

/// calibra: choose and adapt medical image encoders by their reliability, not by AUROC alone.
#[derive(Debug, Parser)]
#[command(name = "calibra", version, about, long_about = None)]
struct Cli {
    /// CPU threads for the numeric work (burn's CPU backend, calibrators, metrics, bootstrap).
    /// Default: `RAYON_NUM_THREADS` if set, else every core. Results do not depend on it.
    #[arg(long, global = true, value_name = "N")]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compute discrimination and calibration metrics of one predictions file.
    Metrics(cli::metrics::MetricsArgs),
    /// Fit a post-hoc calibrator (or load a saved one) and apply it to a predictions file.
    Calibrate(cli::calibrate::CalibrateArgs),
    /// Clinical Reliability Score of encoder profiles (against a built or a saved reference).
    Crs(cli::crs::CrsArgs),
    /// Compare two orderings of the same encoders (Kendall τ, Spearman ρ, reversals, moves).
    CompareRanks(cli::compare_ranks::CompareRanksArgs),
    /// Inspect a dataset (splits, classes, metadata, problems) or write sample perturbed images.
    Data(cli::data::DataArgs),
    /// Evaluate a run set: metric rows, profiles, CRS with bootstrap intervals, rank comparisons,
    /// stability; writes JSON, CSV and a Markdown report with SVG figures.
    Eval(cli::eval::EvalArgs),
    /// Embed a dataset split with a frozen encoder into a safetensors feature file (a cache: the same
    /// encoder, data, split, condition and layers are read back instead of recomputed).
    Features(cli::features::FeaturesArgs),
    /// Run a recipe's grid into a crash-safe, resumable run store (`--dry-run`: size and cost only).
    Run(cli::run::RunArgs),
    /// Fit one encoder on one dataset (probe, LoRA, full fine-tuning or CoOp) over label fractions and
    /// seeds into a run store: records, predictions per condition, calibrators, the fitted adapter.
    Train(Box<cli::train::TrainArgs>),
    /// Transferability estimators on frozen features (LogME, H-score, GBC, NLEEP, TransRate, ...).
    Transfer(cli::transfer::TransferArgs),
    /// Combine run stores (e.g. shards) into one; identical duplicates dropped, conflicts refused.
    Merge(cli::merge::MergeArgs),
    /// Regenerate the evaluation report of a run store from its records and saved recipe alone.
    Report(cli::report::ReportArgs),
    /// Make the tiny ViT encoders shipped in `checkpoints/` from the synthetic suite (`--panel`), or one
    /// of your own (`--name X --task SPEC`), deterministically, each with a MODEL_CARD.md.
    Pretrain(cli::pretrain::PretrainArgs),
    /// Zero-shot predictions of a CLIP model, one predictions file and run record per prompt template
    /// (MVC-Bench P1…P7 or your own), with the metrics' spread across templates.
    ZeroShot(cli::zero_shot::ZeroShotArgs),
    /// Convert a checkpoint calibra cannot read as it is into a layout it loads: an OpenAI CLIP `.pt`
    /// state dict (CheXzero's) into an OpenCLIP directory; a multimodal model's (MedGemma's) vision
    /// tower into a standalone checkpoint.
    Convert(cli::convert::ConvertArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome =
        apply_heap_policy().and_then(|()| set_thread_count(cli.threads)).and_then(|()| run(cli.command));
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// glibc keeps the memory tensors free for the next tensor instead of returning it to the kernel
/// (crate `calibra-heap`; `CALIBRA_HEAP=system` opts out). A `mallopt` that glibc refuses only costs
/// speed, so it is a warning; an unknown `CALIBRA_HEAP` value is an error.
fn apply_heap_policy() -> Result<()> {
    match calibra_heap::HeapPolicy::apply_from_env() {
        Ok(_) => Ok(()),
        Err(refused @ calibra_heap::HeapPolicyError::Refused { .. }) => {
            eprintln!("warning: {refused}");
            Ok(())
        }
        Err(unknown) => Err(unknown.into()),
    }
}

/// Sizes rayon's global pool, which burn's CPU backend and calibra's own parallel loops share. Without
/// `--threads` rayon reads `RAYON_NUM_THREADS`, else uses every core.
fn set_thread_count(threads: Option<usize>) -> Result<()> {
    let Some(threads) = threads else { return Ok(()) };
    if threads == 0 {
        anyhow::bail!("--threads must be at least 1, got 0");
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .map_err(|e| anyhow::anyhow!("could not start {threads} CPU threads (--threads): {e}"))
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Metrics(args) => cli::metrics::run(&args),
        Command::Calibrate(args) => cli::calibrate::run(&args),
        Command::Crs(args) => cli::crs::run(&args),
        Command::CompareRanks(args) => cli::compare_ranks::run(&args),
        Command::Data(args) => cli::data::run(&args),
        Command::Eval(args) => cli::eval::run(&args),
        Command::Features(args) => cli::features::run(&args),
        Command::Run(args) => cli::run::run(&args),
        Command::Train(args) => cli::train::run(&args),
        Command::Merge(args) => cli::merge::run(&args),
        Command::Transfer(args) => cli::transfer::run(&args),
        Command::Report(args) => cli::report::run(&args),
        Command::ZeroShot(args) => cli::zero_shot::run(&args),
        Command::Convert(args) => cli::convert::run(&args),
        Command::Pretrain(args) => cli::pretrain::run(&args),
    }
}
