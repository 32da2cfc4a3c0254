//! `calibra run RECIPE --out DIR`: expand a recipe into its grid and run every unfinished fit into the
//! run store DIR (crash-safe and resumable; see the calibra-run crate docs). `--dry-run` prints the
//! grid size per regime, the feature passes and the estimated cost without running anything.

use crate::cli::output::{OutputFormat, emit};
use anyhow::{Context, Result};
use calibra_run::execute::{ExecuteOptions, check_supported, execute_recipe};
use calibra_run::executor::Progress;
use calibra_run::grid_counts::GridCounts;
use calibra_run::{FitSpec, Recipe, Shard, ValidationOptions, shard_fits, summarize};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The recipe (TOML).
    #[arg(value_name = "RECIPE.toml")]
    pub recipe: PathBuf,
    /// The run store directory (created if needed).
    #[arg(long, value_name = "DIR", required_unless_present = "dry_run")]
    pub out: Option<PathBuf>,
    /// Validate the recipe and print the grid size and estimated cost; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Continue a run store that already holds finished fits (skips them; reruns failed ones).
    #[arg(long)]
    pub resume: bool,
    /// Run only shard I of N (fits assigned to N shards by estimated cost; with --dry-run, every
    /// shard's estimated cost is printed).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Stop at the first failed fit (default: record it in journal/failures.jsonl and continue).
    #[arg(long)]
    pub fail_fast: bool,
    /// Remove the store's lock file first, when the process named in it is gone (refused while that
    /// process runs on this host; trusted for a holder on another host).
    #[arg(long)]
    pub break_lock: bool,
    /// Do not check that local encoder paths, dataset locations, HiCroPL's descriptions file and the
    /// reference exist.
    #[arg(long)]
    pub no_check_paths: bool,
    /// When the whole grid has run (not with --shard), write the report as `calibra report DIR` does
    /// (into DIR/report) and print where it is.
    #[arg(long, conflicts_with = "shard")]
    pub report: bool,
    /// Dry-run summary as a table or as JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
    /// Compute device for the networks: `cpu`, `wgpu`, `wgpu:N`, `cuda`, `cuda:N` (GPU backends need
    /// the matching cargo feature). Overrides the recipe's `[runtime] device`; default `cpu`. Not part
    /// of any fit key, so a store resumes on another device. One process per GPU:
    /// `--shard I/N --device cuda:I`.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
}

fn parse_shard(text: &str) -> Result<Shard, String> {
    Shard::parse(text).map_err(|e| e.to_string())
}

/// Progress of a grid on stderr: on a terminal an indicatif bar (fits done / total, fits per second,
/// ETA, the current fit, failures so far); otherwise (a Slurm log, a pipe) one plain line per fit
/// with the same numbers.
struct GridProgress {
    bar: Option<indicatif::ProgressBar>,
    counts: GridCounts,
}

impl GridProgress {
    fn new() -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let template = "{bar:30} {pos}/{len} fits  {per_sec}  ETA {eta}  {prefix}\n  {wide_msg}";
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(template).expect("a valid progress template"),
            );
            bar
        });
        GridProgress { bar, counts: GridCounts::default() }
    }

    fn finished_one(&mut self, outcome: String, failed: bool) {
        self.counts.fit_done(failed);
        let c = &self.counts;
        let Some(bar) = &self.bar else {
            eprintln!("[{}] {}: {outcome}", c.line(), c.current);
            return;
        };
        bar.set_position(c.done as u64);
        bar.set_prefix(format!("{} failed", c.failed));
        if failed {
            bar.println(format!("{}: {outcome}", c.current));
        }
        if c.done == c.total {
            bar.finish_and_clear();
        }
    }
}

impl Progress for GridProgress {
    fn fit_started(&mut self, done: usize, total: usize, fit: &FitSpec) {
        self.counts.fit_started(done, total, fit);
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_prefix(format!("{} failed", self.counts.failed));
            bar.set_message(self.counts.current.clone());
        }
    }
    fn fit_finished(&mut self, _fit: &FitSpec, records: usize, seconds: f64) {
        self.finished_one(format!("{records} records in {seconds:.2} s"), false);
    }
    fn fit_failed(&mut self, _fit: &FitSpec, error: &str) {
        self.finished_one(format!("FAILED: {error}"), true);
    }
    fn message(&mut self, _fit: &FitSpec, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("{}: {text}", self.counts.current)),
            None => eprintln!("        {text}"),
        }
    }
}

pub fn run(args: &RunArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.recipe)
        .with_context(|| format!("{}: cannot read the recipe", args.recipe.display()))?;
    let options = ValidationOptions { check_paths: !args.no_check_paths };
    let recipe = Recipe::parse(&text, &args.recipe.display().to_string(), options)?;
    if args.dry_run {
        if options.check_paths {
            // What the executors can tell without running anything (checkpoints, datasets' tasks).
            check_supported(&calibra_exec::RunExecutor::new(), &shard_fits(&recipe, args.shard))?;
        }
        let mut summary = summarize(&recipe, &shard_fits(&recipe, args.shard));
        if let Some(s) = args.shard {
            // Every shard's estimated cost, so the balance is visible before submitting N jobs.
            summary.shards =
                Some(calibra_run::shard::balance(&recipe, &calibra_run::expand(&recipe), s.count));
        }
        return match args.format {
            OutputFormat::Json => Ok(emit(&(serde_json::to_string_pretty(&summary)? + "\n"))?),
            OutputFormat::Table => {
                let scope = args.shard.map_or(String::new(), |s| format!(" (shard {s})"));
                Ok(emit(&format!("{}: recipe valid{scope}\n{}", args.recipe.display(), summary.to_text()))?)
            }
        };
    }
    let out = args.out.as_ref().expect("clap requires --out without --dry-run");
    let (resume, shard, fail_fast, break_lock) = (args.resume, args.shard, args.fail_fast, args.break_lock);
    let options = ExecuteOptions { resume, shard, fail_fast, break_lock };
    run_recipe(&recipe, &text, out, options, args.device.as_deref(), &args.recipe.display().to_string())?;
    if args.report {
        let started = std::time::Instant::now();
        eprintln!("report: evaluating {} (calibra report {})", out.display(), out.display());
        crate::cli::report::run(&crate::cli::report::ReportArgs {
            run_dir: out.clone(),
            out: None,
            bootstrap: None,
            format: OutputFormat::Table,
            all_diagrams: false,
            figures: None,
        })?;
        eprintln!(
            "report: {} (and the tables beside it), {:.0} s",
            out.join("report/report.md").display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Runs `recipe` (whose TOML is `text`, read from `source`) into the run store `out` with the burn
/// executors on `device` (else the recipe's `[runtime] device`, else the CPU), progress and notes on
/// stderr. The device is brought up and checked before anything else happens.
pub fn run_recipe(
    recipe: &Recipe,
    text: &str,
    out: &Path,
    options: ExecuteOptions,
    device: Option<&str>,
    source: &str,
) -> Result<()> {
    let executor = calibra_exec::RunExecutor::on(resolve_device(recipe, device, source)?);
    let mut note = |line: &str| eprintln!("{line}");
    execute_recipe(recipe, text, out, &executor, options, &mut GridProgress::new(), &mut note)?;
    eprintln!("evaluate with: calibra report {}", out.display());
    Ok(())
}

/// The device `--device` names, else the recipe's `[runtime] device`, else the CPU; brought up and
/// checked (a missing backend or driver is an error naming where the name came from). A GPU-API
/// device's name is printed, with a warning when it is a software renderer.
fn resolve_device(recipe: &Recipe, flag: Option<&str>, source: &str) -> Result<burn::tensor::Device> {
    let from_recipe = recipe.runtime.as_ref().and_then(|r| r.device.as_deref());
    let (name, origin) = match (flag, from_recipe) {
        (Some(name), _) => (name, "--device".to_string()),
        (None, Some(name)) => (name, format!("{source}: [runtime] device")),
        (None, None) => return Ok(burn::tensor::Device::flex()),
    };
    super::device_notice::announce_device(name, &origin)
}
