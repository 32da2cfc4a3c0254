//! `calibra report RUN_DIR`: regenerate the evaluation report from a run store alone — the records in
//! `RUN_DIR/runs.jsonl` and the `[evaluator]` settings of the recipe saved in
//! `RUN_DIR/journal/recipe.toml` (defaults when absent). It builds the `calibra eval` command line
//! those settings mean (`RUN_DIR --out RUN_DIR/report --force --bootstrap N --seed S ...`, printed on
//! stderr), parses it with eval's own argument definitions, and runs eval's pipeline: the report is
//! exactly what that `calibra eval` command writes.

use crate::cli::eval::EvalArgs;
use crate::cli::output::OutputFormat;
use anyhow::{Context, Result, bail};
use calibra_run::{Recipe, ValidationOptions};
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

/// Parses evaluator arguments exactly as `calibra eval` would (every option left out keeps eval's own
/// default).
#[derive(Debug, clap::Parser)]
#[command(no_binary_name = true)]
struct EvalCommandLine {
    #[command(flatten)]
    eval: EvalArgs,
}

/// The `calibra eval` command line (after `eval`) that a run store's saved recipe asks for.
pub fn eval_command_line(args: &ReportArgs) -> Result<Vec<String>> {
    let runs = args.run_dir.join("runs.jsonl");
    if !runs.is_file() {
        bail!("{}: not a run store (no runs.jsonl)", args.run_dir.display());
    }
    let recipe_path = args.run_dir.join("journal/recipe.toml");
    let settings = if recipe_path.is_file() {
        // Paths were checked when the grid ran; the report needs only the evaluator settings.
        Recipe::load(&recipe_path, ValidationOptions { check_paths: false })
            .with_context(|| format!("{}: the run store's saved recipe", recipe_path.display()))?
            .evaluator()
    } else {
        eprintln!("note: {} is absent; using the evaluator defaults", recipe_path.display());
        calibra_run::recipe::EvaluatorSettings::default()
    };
    let join = |w: &[f64]| w.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
    let out = args.out.clone().unwrap_or_else(|| args.run_dir.join("report"));
    let mut argv: Vec<String> =
        vec![args.run_dir.display().to_string(), "--out".into(), out.display().to_string()];
    argv.push("--force".into());
    argv.extend(["--bootstrap".into(), args.bootstrap.unwrap_or(settings.bootstrap).to_string()]);
    argv.extend(["--seed".into(), settings.seed.to_string()]);
    if let Some(reference) = &settings.reference {
        argv.extend(["--reference".into(), reference.clone()]);
    }
    if let Some(w) = settings.weights {
        argv.extend(["--weights".into(), join(&w)]);
    }
    if let Some(w) = settings.axis_weights {
        argv.extend(["--axis-weights".into(), join(&w)]);
    }
    argv.extend(["--robustness".into(), settings.robustness.clone()]);
    argv.extend(["--regime".into(), settings.regime.clone()]);
    if args.all_diagrams {
        argv.push("--all-diagrams".into());
    }
    if let Some(f) = &args.figures {
        argv.extend(["--figures".into(), f.clone()]);
    }
    argv.extend(["--format".into(), if args.format == OutputFormat::Json { "json" } else { "table" }.into()]);
    Ok(argv)
}

pub fn run(args: &ReportArgs) -> Result<()> {
    let argv = eval_command_line(args)?;
    let eval = <EvalCommandLine as clap::Parser>::try_parse_from(&argv)
        .with_context(|| {
            format!("the evaluator settings of the run store's recipe: eval {}", argv.join(" "))
        })?
        .eval;
    eprintln!("calibra eval {}", argv.join(" "));
    crate::cli::eval::run(&eval)?;
    if let Some(out) = &eval.out {
        eprintln!("report: {}", out.join("report.md").display());
    }
    Ok(())
}
