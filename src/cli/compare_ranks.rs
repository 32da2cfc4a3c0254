//! `calibra compare-ranks <A.csv> <B.csv> [--format table|json]`: compare two orderings of the same
//! encoders (spec §5.4). Each CSV has the header `encoder,score` and one row per encoder; higher scores
//! are better. The reading and the statistics are `calibra_report::compare_score_files`'s.

use crate::cli::output::OutputFormat;
use anyhow::Result;
use std::path::PathBuf;

/// Arguments of `calibra compare-ranks`.
#[derive(Debug, clap::Args)]
pub struct CompareRanksArgs {
    /// First ordering: CSV `encoder,score` (higher is better); its order breaks score ties.
    pub a: PathBuf,
    /// Second ordering: CSV `encoder,score` with the same encoders, in any order.
    pub b: PathBuf,
    /// Output format: a summary table with per-encoder moves, or one JSON object.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

/// Runs the subcommand: prints the comparison to stdout.
pub fn run(args: &CompareRanksArgs) -> Result<()> {
    let comparison = calibra_report::compare_score_files(&args.a, &args.b)?;
    match args.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&comparison)?),
        OutputFormat::Table => {
            print!("{}", calibra_report::rank_comparison_table(&comparison, &args.a, &args.b))
        }
    }
    Ok(())
}
