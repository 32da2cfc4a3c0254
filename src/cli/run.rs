//! `calibra run RECIPE --out DIR`: expand a recipe into its grid and run every unfinished fit into the
//! run store DIR (crash-safe and resumable; see the calibra-run crate docs). `--dry-run` prints the
//! grid size per regime, the feature passes and the estimated cost without running anything.

use crate::cli::output::{OutputFormat, emit};
use anyhow::{Context, Result, bail};
use calibra_run::executor::{Executor, Progress};
use calibra_run::store::{RunStore, StoreOptions};
use calibra_run::{FitSpec, Recipe, Shard, ValidationOptions, run_grid, shard_fits, summarize};
use std::path::PathBuf;

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
    /// Do not check that local encoder paths, dataset locations and the reference exist.
    #[arg(long)]
    pub no_check_paths: bool,
    /// When the whole grid has run (not with --shard), write the report as `calibra report DIR` does
    /// (into DIR/report) and print where it is.
    #[arg(long, conflicts_with = "shard")]
    pub report: bool,
    /// Dry-run summary as a table or as JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

fn parse_shard(text: &str) -> Result<Shard, String> {
    Shard::parse(text).map_err(|e| e.to_string())
}

/// Progress of a grid on stderr: on a terminal an indicatif bar (fits done / total, fits per second,
/// ETA, the current fit, failures so far); otherwise (a Slurm log, a pipe) one plain line per fit
/// with the same numbers.
struct GridProgress {
    bar: Option<indicatif::ProgressBar>,
    started: std::time::Instant,
    total: usize,
    done: usize,
    failed: usize,
    current: String,
}

impl GridProgress {
    fn new() -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} fits  {per_sec}  ETA {eta}  {prefix}\n  {wide_msg}",
                )
                .expect("a valid progress template"),
            );
            bar
        });
        GridProgress {
            bar,
            started: std::time::Instant::now(),
            total: 0,
            done: 0,
            failed: 0,
            current: String::new(),
        }
    }

    /// `12/340 fits, 0.85 fits/s, ETA 6m 26s, 1 failed`.
    fn counts(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { self.done as f64 / secs } else { 0.0 };
        let eta = if rate > 0.0 {
            let left = ((self.total - self.done.min(self.total)) as f64 / rate).round() as u64;
            format!("{}m {:02}s", left / 60, left % 60)
        } else {
            "unknown".to_string()
        };
        format!("{}/{} fits, {rate:.2} fits/s, ETA {eta}, {} failed", self.done, self.total, self.failed)
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn finished_one(&mut self, outcome: String) {
        self.done += 1;
        let counts = self.counts();
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done as u64);
                bar.set_prefix(format!("{} failed", self.failed));
                if outcome.starts_with("FAILED") {
                    bar.println(format!("{}: {outcome}", self.current));
                }
                if self.done == self.total {
                    bar.finish_and_clear();
                }
            }
            None => eprintln!("[{counts}] {}: {outcome}", self.current),
        }
    }
}

impl Progress for GridProgress {
    fn fit_started(&mut self, done: usize, total: usize, fit: &FitSpec) {
        if done == 0 {
            self.started = std::time::Instant::now();
        }
        self.total = total;
        self.current = fit.describe();
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_prefix(format!("{} failed", self.failed));
            bar.set_message(self.current.clone());
        }
    }
    fn fit_finished(&mut self, _fit: &FitSpec, records: usize, seconds: f64) {
        self.finished_one(format!("{records} records in {seconds:.2} s"));
    }
    fn fit_failed(&mut self, _fit: &FitSpec, error: &str) {
        self.failed += 1;
        self.finished_one(format!("FAILED: {error}"));
    }
    fn message(&mut self, _fit: &FitSpec, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("{}: {text}", self.current)),
            None => self.line(&format!("        {text}")),
        }
    }
}

pub fn run(args: &RunArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.recipe)
        .with_context(|| format!("{}: cannot read the recipe", args.recipe.display()))?;
    let options = ValidationOptions { check_paths: !args.no_check_paths };
    let recipe = Recipe::parse(&text, &args.recipe.display().to_string(), options)?;
    let fits = shard_fits(&recipe, args.shard);
    if args.dry_run {
        if options.check_paths {
            // What the executors can tell without running anything (checkpoints, datasets' tasks).
            let executor = calibra_exec::RunExecutor::new();
            let unsupported: Vec<String> = fits
                .iter()
                .filter_map(|f| executor.supports(f).err().map(|why| format!("{}: {why}", f.describe())))
                .collect();
            if !unsupported.is_empty() {
                return Err(calibra_run::RunError::Unsupported(unsupported).into());
            }
        }
        let mut summary = summarize(&recipe, &fits);
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
    if out.exists() && !out.is_dir() {
        bail!(
            "{}: --out names a run store directory, and this is a file; choose a new path or an existing \
             store",
            out.display()
        );
    }
    execute_recipe(
        &recipe,
        &text,
        out,
        &GridOptions {
            resume: args.resume,
            shard: args.shard,
            fail_fast: args.fail_fast,
            break_lock: args.break_lock,
        },
    )?;
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

/// How [`execute_recipe`] runs a grid.
pub struct GridOptions {
    pub resume: bool,
    pub shard: Option<Shard>,
    pub fail_fast: bool,
    pub break_lock: bool,
}

/// Run `recipe` (whose TOML is `text`) into the run store `out` with the burn executors: refuse up
/// front what cannot run, recover an interrupted store, skip finished fits, report progress.
pub fn execute_recipe(
    recipe: &Recipe,
    text: &str,
    out: &std::path::Path,
    options: &GridOptions,
) -> Result<()> {
    let fits = shard_fits(recipe, options.shard);
    let executor = calibra_exec::RunExecutor::new();
    if !out.join("runs.jsonl").exists() {
        // A fresh store: refuse a grid the executor cannot run before creating anything. (On an
        // existing store run_grid checks only the unfinished fits.)
        let unsupported: Vec<String> = fits
            .iter()
            .filter_map(|f| executor.supports(f).err().map(|why| format!("{}: {why}", f.describe())))
            .collect();
        if !unsupported.is_empty() {
            return Err(calibra_run::RunError::Unsupported(unsupported).into());
        }
    }
    let mut store = RunStore::open(out, StoreOptions { break_lock: options.break_lock })?;
    let recovery = store.recovery().clone();
    if recovery.runs_bytes_cut > 0 || recovery.journal_bytes_cut > 0 {
        eprintln!(
            "{}: recovered from an interrupted commit (cut {} bytes of runs.jsonl and {} of the journal; \
             that fit runs again)",
            out.display(),
            recovery.runs_bytes_cut,
            recovery.journal_bytes_cut
        );
    }
    if recovery.temporaries_removed > 0 {
        eprintln!(
            "{}: removed {} temporary file(s) an interrupted run left half-written",
            out.display(),
            recovery.temporaries_removed
        );
    }
    if store.commit_count() > 0 && !options.resume {
        bail!(
            "{}: the run store already holds {} records; pass --resume to continue it (finished fits are \
             skipped), or choose another --out",
            out.display(),
            store.record_count()
        );
    }
    store.save_recipe(text)?;
    let summary =
        run_grid(recipe, &mut store, &executor, options.shard, options.fail_fast, &mut GridProgress::new())?;
    eprintln!(
        "{}: {} fits ({} already finished, {} run now, {} failed); {} records written; {} records in the store",
        out.display(),
        summary.fits,
        summary.already_done,
        summary.completed,
        summary.failed.len(),
        summary.records_written,
        store.record_count()
    );
    if !summary.failed.is_empty() {
        bail!(
            "{} fit(s) failed (errors in {}); fix the cause and rerun with --resume",
            summary.failed.len(),
            out.join("journal/failures.jsonl").display()
        );
    }
    eprintln!("evaluate with: calibra report {}", out.display());
    Ok(())
}
