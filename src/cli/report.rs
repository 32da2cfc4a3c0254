//! `calibra report RUN_DIR`: regenerate the evaluation report from a run store alone — the records in
//! `RUN_DIR/runs.jsonl` and the `[evaluator]` settings of the recipe saved in
//! `RUN_DIR/journal/recipe.toml` (defaults when absent), as typed options
//! ([`calibra_report::store_eval_options`]). It prints the `calibra eval` command line those options
//! mean on stderr and runs eval's pipeline with them: the report is exactly what that command writes.

use crate::cli::eval::FigureFormat;
use crate::cli::output::OutputFormat;
use anyhow::{Result, bail};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run store (the directory `calibra run --out` wrote).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// Where to write the report [default: RUN_DIR/report, replaced if present].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Bootstrap replicates, overriding the recipe's `[evaluator] bootstrap`.
    #[arg(long, value_name = "N")]
    pub bootstrap: Option<usize>,
    /// Summary on stdout: a table, or the whole evaluation as JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
    /// One reliability diagram per run record (as `calibra eval --all-diagrams`).
    #[arg(long)]
    pub all_diagrams: bool,
    /// Figure formats, e.g. `svg,png` (as `calibra eval --figures`).
    #[arg(long, value_name = "svg[,png]")]
    pub figures: Option<String>,
}

pub fn run(args: &ReportArgs) -> Result<()> {
    let mut options = calibra_report::store_eval_options(&args.run_dir, &mut |m| eprintln!("{m}"))?;
    options.out = args.out.clone().or(options.out);
    options.bootstrap = args.bootstrap.unwrap_or(options.bootstrap);
    options.all_diagrams = args.all_diagrams;
    for f in args.figures.iter().flat_map(|f| f.split(',')) {
        match <FigureFormat as clap::ValueEnum>::from_str(f.trim(), false) {
            Ok(format) => options.png |= format == FigureFormat::Png,
            Err(_) => bail!("--figures: `{f}` is not a figure format; expected svg or png"),
        }
    }
    let format = if args.format == OutputFormat::Json { "json" } else { "table" };
    eprintln!("calibra eval {} --format {format}", calibra_report::eval_command_line(&options).join(" "));
    crate::cli::eval::evaluate(&options, args.format)?;
    if let Some(out) = &options.out {
        eprintln!("report: {}", out.join("report.md").display());
    }
    Ok(())
}
