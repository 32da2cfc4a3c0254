//! `calibra eval RUN_RECORDS.jsonl|RUN_DIR`: the whole reliability evaluation of a run set — metric
//! rows, profiles, CRS with bootstrap intervals, rank comparisons, stability — written as JSON, CSV and
//! a Markdown report with SVG figures.
//!
//! Output directory layout (`--out DIR`):
//! - `evaluation.json`: everything (`calibra_crs::Evaluation`) except the per-row tables written whole
//!   as CSV here (`metric_rows` → `metric_rows.csv`, `calibration_stability` →
//!   `calibration_stability.csv`, `focus.adaptation` → `adaptation_deltas.csv`), which its `tables`
//!   key names with their row counts (`calibra_crs::evaluation_file`), as one line of compact JSON
//!   (`jq . evaluation.json` indents it); `--format json` prints the whole evaluation, those tables
//!   included, indented on stdout;
//! - `metric_rows.csv`, `profiles.csv` (exactly the `calibra crs` input columns: raw ECE), `crs.csv`;
//! - `report.md`: a summary page first (leading tier, CRS, AUROC vs CRS, frozen vs each adapted
//!   method, calibration repair, headline figures), then sections whose long tables show their first
//!   rows and link the whole table (an analysis CSV here, or `tables/*.csv`);
//! - `report.html`: the same content as one self-contained page (figures inlined as SVG, no script);
//! - `figures/*.svg` (and `figures/*.png` with `--figures svg,png`): profiles, rank displacements, and
//!   one reliability grid per dataset of the clean full-label runs pooled over seeds
//!   (`--all-diagrams`: one diagram per run record);
//! - `reference.json`: the reference the CRS was computed against (absent without a CRS);
//! - `calibration_stability.csv`: accuracy, ECE, MCE and ACE
//!   (`adaptive_ece`) across seeds and across prompt templates, per (encoder, dataset, regime, method,
//!   calibrator, label fraction, condition): n, mean and sample std (ddof 1) of each
//!   (`calibra_crs::calibration_stability`);
//! - encoder analyses E1–E6: `e1_specialist.csv`, `e2_calibration_repair.csv`, `e3_feature_depth.csv`,
//!   `e4_corruption_miscalibration.csv`, `e5_prompting.csv`, `e6_label_crossover.csv` (header only when
//!   the analysis had not enough records; the reason is in `evaluation.json` and the report);
//! - FOCUS additions (unless `--no-focus`): `group_metrics.csv` (per run, column, metric and group),
//!   `group_gaps.csv` (per cell, column and metric: gap mean/std over seeds), `adaptation_deltas.csv`.
//! - with `--selective` only (absent otherwise, and so is the `selective` key of `evaluation.json`):
//!   `selective_runs.csv` (AURC, E-AURC, AUGRC per run), `conformal_sets.csv` (coverage and set size
//!   per run), `shift_detection.csv` (AUROC, FPR@95 per shift run), `selective_cells.csv` (seed means),
//!   and the figures `figures/risk_coverage_<dataset>.svg`, `figures/coverage_shift_<dataset>.svg`
//!   (`calibra_crs::selective_analyses`).
//!
//! A run set that cannot give a CRS as a whole (e.g. the records of `calibra zero-shot`: one label
//! fraction, no perturbations; or a single encoder) is still evaluated: metric rows, calibration
//! stability and the analyses that apply are written, `profiles.csv` and `crs.csv` hold their header
//! only, and the reason is printed, stated at the top of `report.md` and stored as
//! `crs_not_computed` in `evaluation.json`; the exit status is 0. Asking for what needs the CRS
//! (`--reference`, `--save-reference`) on such a set is an error.
//!
//! The directory is complete or absent: everything is written (each file atomically) into a temporary
//! sibling directory that is renamed to DIR at the end; on error the temporary directory is removed.
//! An existing DIR is an error unless `--force`, which replaces it only after the new one is complete.

pub mod numbers;
mod records;

use crate::cli::output::{OutputFormat, emit};
use crate::cli::weights;
use anyhow::{Context, Result, bail};
use calibra_crs::encoder_analyses::EncoderAnalysisOptions;
use calibra_crs::evaluation::{Evaluation, EvaluationOptions};
use calibra_crs::{
    AxisConfig, AxisWeights, BootstrapConfig, CalibrationStability, ComponentWeights, Reference, Regime,
    RobustnessVariant, RunRecordSet, ScoreWeights, StabilityAxis,
};
use calibra_crs::{FocusOptions, GapKind, GroupColumn, PairedBootstrapConfig, SampleMetric, focus_analyses};
use calibra_crs::{SelectiveOptions, selective_analyses};
use calibra_metrics::{
    Binning, ReliabilityBin, expected_calibration_error, reliability_bins, top_label_reliability_bins,
};
use calibra_predictions::{Targets, read_predictions};
use calibra_report::{ReliabilityFigure, ReportOptions, eval_report_with, report_html, svg_to_png};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `--robustness`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RobustnessArg {
    /// `1_shift = 1` for cells with an observed shift target (the primary axis).
    #[default]
    WithShift,
    /// `1_shift = 0` everywhere.
    CorruptionOnly,
}

/// `--figures`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FigureFormat {
    Svg,
    Png,
}

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Run-record files (JSON Lines) or directories; a directory contributes every `*.jsonl` file in it
    /// (not recursive, sorted by name). Files are read together: a run key repeated across files is an
    /// error.
    #[arg(required = true, value_name = "RUN_RECORDS.jsonl|RUN_DIR")]
    pub inputs: Vec<PathBuf>,
    /// Write the evaluation into this directory (created; complete or absent). Without it, only the
    /// summary is printed.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace an existing output directory (only once the new one is complete).
    #[arg(long)]
    pub force: bool,
    /// Score against this saved reference (frozen panel, anchors and weights) instead of building one
    /// from the run set's encoders.
    #[arg(long, value_name = "REF.json")]
    pub reference: Option<PathBuf>,
    /// Save the reference used as versioned JSON.
    #[arg(long, value_name = "REF.json")]
    pub save_reference: Option<PathBuf>,
    /// Paired-seed bootstrap replicates (0 skips the bootstrap; a warning below 5 replicates per tail).
    #[arg(long, value_name = "N", default_value_t = 10_000, allow_negative_numbers = true, value_parser = numbers::count)]
    pub bootstrap: usize,
    /// Seed of the bootstrap and of the stability analyses.
    #[arg(long, value_name = "S", default_value_t = 0, allow_negative_numbers = true, value_parser = numbers::seed)]
    pub seed: u64,
    /// Level of the bootstrap percentile intervals, in (0, 1).
    #[arg(long, default_value_t = 0.95, allow_negative_numbers = true, value_parser = numbers::level)]
    pub level: f64,
    /// Component weights α_D,α_S,α_W (non-negative, summing to 1) [default: 0.60,0.25,0.15].
    #[arg(long, value_name = "D,S,W", value_parser = weights::parse_component_weights)]
    pub weights: Option<ComponentWeights>,
    /// Axis weights of the ideal-point term (discrimination,calibration,label_efficiency,robustness;
    /// non-negative, summing to 1) [default: 0.25 each]. A fifth weight adds the optional selective
    /// axis (−AUGRC of the clean predictions; needs --selective).
    #[arg(long, value_name = "a,b,c,d[,e]", value_parser = weights::parse_axis_weights)]
    pub axis_weights: Option<AxisWeights>,
    /// Robustness formula of the profile axis.
    #[arg(long, value_enum, default_value_t)]
    pub robustness: RobustnessArg,
    /// Regime whose runs define the axes: frozen, lora, coop, full or zero-shot.
    #[arg(long, default_value = "frozen", value_parser = parse_regime)]
    pub regime: Regime,
    /// Probe of the runs that define the axes (default: any, one per cell).
    #[arg(long)]
    pub probe: Option<String>,
    /// Post-hoc calibrator of the runs that define the axes ("none" = raw outputs).
    #[arg(long, default_value = "none")]
    pub calibrator: String,
    /// Larger-is-better discrimination metric of the run records.
    #[arg(long, default_value = "macro_auroc")]
    pub discrimination_metric: String,
    /// Lower-is-better calibration metric of the run records.
    #[arg(long, default_value = "ece")]
    pub calibration_metric: String,
    /// Skip the stability analyses (leave-one-out, sub-panels, insertion, weight perturbations).
    #[arg(long)]
    pub no_stability: bool,
    /// Do not read predictions files for reliability diagrams.
    #[arg(long)]
    pub no_reliability: bool,
    /// Bins of the reliability diagrams (equal width, right-closed), 1 to 10000.
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = numbers::bins_usize)]
    pub bins: usize,
    /// Make a record whose metrics disagree with its predictions file an error (default: a warning).
    #[arg(long)]
    pub strict: bool,
    /// One reliability diagram per run record, instead of one grid per dataset of the chosen slice
    /// (clean, full labels, pooled over seeds).
    #[arg(long)]
    pub all_diagrams: bool,
    /// Figure formats, comma-separated: svg (always written: report.md and report.html show it) and
    /// png (each figure also rasterised, with an embedded font).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "svg")]
    pub figures: Vec<FigureFormat>,
    /// Summary on stdout: a table, or the whole evaluation as JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
    /// FOCUS additions and encoder-analysis declarations (boxed: keeps the subcommand enum small).
    #[command(flatten)]
    pub focus: Box<FocusEvalArgs>,
    /// Selective prediction, conformal sets and shift detection (boxed like `focus`).
    #[command(flatten)]
    pub selective: Box<SelectiveEvalArgs>,
}

/// `--conformal-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ConformalMethodArg {
    /// LAC (score 1 − p̂_y); the only method with a multilabel (per-label) form.
    #[default]
    Lac,
    /// APS (Romano et al. 2020), MAPIE's include-last-label rule.
    Aps,
    /// RAPS (Angelopoulos et al. 2021), λ = 0.01, k_reg = 1 (`calibra calibrate`'s defaults).
    Raps,
}

/// The flags of the selective, conformal and shift-detection analyses. `Default` is "off".
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SelectiveEvalArgs {
    /// Add the selective-prediction (AURC, E-AURC, AUGRC, risk–coverage curves), conformal-set
    /// (coverage and set size clean vs perturbed vs shifted) and shift-detection analyses, read from the
    /// runs' predictions files. The conformal calibration set is a seeded half (--seed) of each fit's
    /// clean test predictions; see `calibra_crs::conformal_split`.
    #[arg(long)]
    pub selective: bool,
    /// Conformal sets: miscoverage level α, strictly between 0 and 1 [default: 0.1].
    #[arg(long, value_name = "ALPHA", requires = "selective", allow_negative_numbers = true, value_parser = numbers::alpha)]
    pub conformal_alpha: Option<f64>,
    /// Conformal method: lac, aps or raps [default: lac]; multilabel predictions need lac.
    #[arg(long, value_enum, value_name = "METHOD", requires = "selective")]
    pub conformal_method: Option<ConformalMethodArg>,
}

impl SelectiveEvalArgs {
    /// The analysis options, or `None` without `--selective`.
    fn options(&self, seed: u64) -> Option<SelectiveOptions> {
        use calibra_calibrate::{ConformalMethod, LastLabel};
        let method = match self.conformal_method.unwrap_or_default() {
            ConformalMethodArg::Lac => ConformalMethod::Lac,
            ConformalMethodArg::Aps => ConformalMethod::Aps { last_label: LastLabel::Include },
            ConformalMethodArg::Raps => {
                ConformalMethod::Raps { last_label: LastLabel::Include, lambda: 0.01, k_reg: 1 }
            }
        };
        self.selective.then(|| SelectiveOptions { alpha: self.conformal_alpha.unwrap_or(0.1), method, seed })
    }
}

/// The flags of the FOCUS additions (subgroup/quality gaps, adaptation deltas) and of the encoder
/// analyses E1–E6. `Default` is "no group column, 30, 2,000 replicates, no declarations": the same as
/// passing none of these flags.
#[derive(Debug, Clone, clap::Args)]
pub struct FocusEvalArgs {
    /// A demographic group column for subgroup gaps: NAME, NAME:categorical, NAME:median (e.g.
    /// `age:median`) or NAME:thresholds=a,b,… (right-closed strata). Repeatable. Values come from
    /// --groups, or else from extra columns of each run's predictions file.
    #[arg(long = "group-column", value_name = "NAME[:SPLIT]", value_parser = parse_subgroup_column)]
    pub group_columns: Vec<GroupColumn>,
    /// An image-quality column for quality-stratum gaps (same syntax as --group-column, e.g.
    /// `quality:median` or `quality:thresholds=0.5`). Repeatable.
    #[arg(long = "quality-column", value_name = "NAME[:SPLIT]", value_parser = parse_quality_column)]
    pub quality_columns: Vec<GroupColumn>,
    /// Group table: a CSV with `id` and the declared group/quality columns, one row per test sample.
    #[arg(long, value_name = "GROUPS.csv")]
    pub groups: Option<PathBuf>,
    /// Groups with fewer samples are reported as skipped in the subgroup and quality gaps.
    #[arg(long, value_name = "N", default_value_t = 30, allow_negative_numbers = true, value_parser = numbers::count)]
    pub min_group_size: usize,
    /// Paired bootstrap replicates of the adaptation deltas (0: point deltas only). Seeded by --seed,
    /// interval level --level.
    #[arg(long, value_name = "N", default_value_t = 2_000, allow_negative_numbers = true, value_parser = numbers::count)]
    pub delta_bootstrap: usize,
    /// Skip the analyses that read predictions files (subgroup/quality gaps, adaptation deltas).
    #[arg(long)]
    pub no_focus: bool,
    /// E1: a specialist encoder and its matched datasets, ENCODER=DATASET[+DATASET…]. Repeatable.
    #[arg(long = "specialist", value_name = "ENCODER=DATASETS", value_parser = parse_specialist)]
    pub specialists: Vec<(String, Vec<String>)>,
    /// E6: the reference encoder of the label-fraction crossover (e.g. a generalist such as ViT-B/16).
    #[arg(long, value_name = "ENCODER")]
    pub crossover_reference: Option<String>,
}

impl Default for FocusEvalArgs {
    fn default() -> Self {
        FocusEvalArgs {
            group_columns: Vec::new(),
            quality_columns: Vec::new(),
            groups: None,
            min_group_size: 30,
            delta_bootstrap: 2_000,
            no_focus: false,
            specialists: Vec::new(),
            crossover_reference: None,
        }
    }
}

fn parse_subgroup_column(text: &str) -> Result<GroupColumn, String> {
    GroupColumn::parse(text, GapKind::Subgroup)
}

fn parse_quality_column(text: &str) -> Result<GroupColumn, String> {
    GroupColumn::parse(text, GapKind::Quality)
}

fn parse_specialist(text: &str) -> Result<(String, Vec<String>), String> {
    let (encoder, datasets) =
        text.split_once('=').ok_or_else(|| format!("`{text}`: expected ENCODER=DATASET[+DATASET…]"))?;
    let datasets: Vec<String> =
        datasets.split('+').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect();
    if encoder.trim().is_empty() || datasets.is_empty() {
        return Err(format!("`{text}`: expected ENCODER=DATASET[+DATASET…]"));
    }
    Ok((encoder.trim().to_string(), datasets))
}

fn parse_regime(text: &str) -> Result<Regime, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("`{text}` is not a regime; expected frozen, lora, coop, full or zero-shot"))
}

/// The run-record files named by the inputs (directories expanded to their `*.jsonl` files).
fn record_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .with_context(|| format!("{}: cannot list the run directory", input.display()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            if found.is_empty() {
                bail!("{}: the run directory holds no *.jsonl run-record file", input.display());
            }
            found.sort();
            files.extend(found);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            bail!("{}: no such run-record file or directory", input.display());
        }
    }
    Ok(files)
}

/// Reliability bins of every run whose record points to a predictions file, in record order.
fn reliability_figures(set: &RunRecordSet, n_bins: usize) -> Result<Vec<ReliabilityFigure>> {
    let mut out = Vec::new();
    for located in set.records() {
        let Some(rel) = located.record.paths.get("predictions") else { continue };
        let base = Path::new(&located.location.source).parent().unwrap_or(Path::new(""));
        let path = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { base.join(rel) };
        let at = || {
            format!(
                "{}:{}: predictions file `{rel}` of this run record (pass --no-reliability to skip diagrams)",
                located.location.source, located.location.line
            )
        };
        let predictions = read_predictions(&path).with_context(at)?;
        let probs = predictions.probabilities();
        let k = predictions.num_classes();
        let bins: Vec<ReliabilityBin> = match predictions.targets() {
            Targets::Classes(labels) => {
                top_label_reliability_bins(&probs, k, labels, n_bins, Binning::RightClosed)
                    .with_context(at)?
            }
            Targets::Labels(values) => {
                let (conf, outcome): (Vec<f64>, Vec<f64>) = probs
                    .iter()
                    .zip(values)
                    .filter_map(|(&p, t)| t.map(|t| (p, if t { 1.0 } else { 0.0 })))
                    .unzip();
                reliability_bins(&conf, &outcome, n_bins, Binning::RightClosed)
            }
        };
        let n: usize = bins.iter().map(|b| b.count).sum();
        let r = &located.record;
        out.push(ReliabilityFigure {
            run: format!(
                "{} / {} / {} / {} / ρ={} / seed {}",
                r.encoder, r.dataset, r.regime, r.condition, r.label_fraction, r.seed
            ),
            encoder: r.encoder.clone(),
            dataset: r.dataset.clone(),
            regime: r.regime.to_string(),
            probe: r.probe.clone(),
            calibrator: r.calibrator.clone(),
            label_fraction: r.label_fraction,
            clean: r.condition == calibra_crs::Condition::Clean,
            seed: r.seed,
            source: rel.clone(),
            ece: expected_calibration_error(&bins, n),
            bins,
        });
    }
    Ok(out)
}

/// Every output file (relative path, bytes); `evaluation.json` last.
fn output_files(
    e: &Evaluation,
    figures: &[ReliabilityFigure],
    reference_json: Option<String>,
    layout: &ReportLayout,
) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = calibra_report::evaluation_csv_files(e)?;
    let report = eval_report_with(e, figures, &layout.options);
    // report.html: the same Markdown with every SVG figure inlined.
    let svgs: BTreeMap<String, String> = report
        .iter()
        .filter(|f| f.path.ends_with(".svg"))
        .map(|f| (f.path.clone(), f.contents.clone()))
        .collect();
    if let Some(md) = report.iter().find(|f| f.path == "report.md") {
        files.push(("report.html".to_string(), report_html(&md.contents, &svgs).into_bytes()));
    }
    if layout.png {
        for (path, svg) in &svgs {
            let png = svg_to_png(svg, 2.0).with_context(|| format!("rasterising {path}"))?;
            files.push((format!("{}.png", path.trim_end_matches(".svg")), png));
        }
    }
    for f in report {
        files.push((f.path, f.contents.into_bytes()));
    }
    if let Some(json) = reference_json {
        files.push(("reference.json".to_string(), (json + "\n").into_bytes()));
    }
    let file = calibra_crs::evaluation_file::evaluation_file_json(e)?;
    files.push(("evaluation.json".to_string(), (file + "\n").into_bytes()));
    Ok(files)
}

/// How the report files are laid out (`--all-diagrams`, `--figures`).
struct ReportLayout {
    options: ReportOptions,
    png: bool,
}

/// Write `files` into a fresh temporary sibling of `out`, then rename it to `out` (see the module docs).
fn write_output_dir(out: &Path, files: &[(String, Vec<u8>)], force: bool) -> Result<()> {
    if out.exists() && !force {
        bail!("{}: the output directory already exists (pass --force to replace it)", out.display());
    }
    for path in calibra_core::remove_dead_siblings(out) {
        eprintln!("removed {}, left by an interrupted eval or report", path.display());
    }
    calibra_core::write_dir_atomically(out, |tmp| -> Result<()> {
        for (rel, bytes) in files {
            let path = tmp.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
            }
            std::fs::write(&path, bytes).with_context(|| format!("{}: cannot write", path.display()))?;
        }
        Ok(())
    })
    .map_err(|e| {
        e.into_error(|path, source| {
            anyhow::Error::new(source)
                .context(format!("{}: cannot write the output directory", path.display()))
        })
    })
}

/// How many clean template groups the summary lists before pointing to the files.
const SUMMARY_TEMPLATE_ROWS: usize = 10;

/// The calibration-stability lines of the summary: group counts, then the std across templates of the
/// clean template groups (the first [`SUMMARY_TEMPLATE_ROWS`]).
fn stability_summary(table: &CalibrationStability, out: &mut String) {
    use std::fmt::Write;
    let seeds = table.axis(StabilityAxis::Seeds).count();
    let templates: Vec<_> = table.axis(StabilityAxis::Templates).collect();
    let _ = writeln!(
        out,
        "calibration stability: {seeds} seed groups, {} template groups (calibration_stability.csv)",
        templates.len()
    );
    let clean: Vec<_> = templates.iter().filter(|r| r.condition == calibra_crs::Condition::Clean).collect();
    for r in clean.iter().take(SUMMARY_TEMPLATE_ROWS) {
        let std = |m: &str| r.metric(m).and_then(|s| s.std).map_or("n/a".to_string(), |v| format!("{v:.4}"));
        let _ = writeln!(
            out,
            "  std across {} templates: {} / {} / {} / {} calibrator {} ρ={} seed {}: accuracy {} ECE {} MCE {} ACE {}",
            r.members.len(),
            r.encoder,
            r.dataset,
            r.regime,
            r.method,
            r.calibrator,
            r.label_fraction,
            r.seed.unwrap_or_default(),
            std("accuracy"),
            std("ece"),
            std("mce"),
            std("adaptive_ece"),
        );
    }
    if clean.len() > SUMMARY_TEMPLATE_ROWS {
        let _ = writeln!(out, "  … and {} more", clean.len() - SUMMARY_TEMPLATE_ROWS);
    }
}

fn summary_table(e: &Evaluation) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let reference = match e.reference_origin {
        "saved" => "saved",
        "panel" => "built from the run set's panel",
        _ => "none",
    };
    let _ = writeln!(
        out,
        "{} run records → {} metric rows; {} encoders; reference: {reference}",
        e.input.records,
        e.input.metric_rows,
        e.crs.len(),
    );
    if let Some(why) = &e.crs_not_computed {
        let _ = writeln!(out, "{why}");
    }
    let width = e.crs.iter().map(|c| c.encoder.chars().count()).max().unwrap_or(0).max("encoder".len());
    if !e.crs.is_empty() {
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:>8}  {:>19}  {:>9}  {:>8}",
            "rank", "encoder", "CRS", "95% interval", "P(rank1)", "P(top3)"
        );
    }
    let mut order: Vec<usize> = (0..e.crs.len()).collect();
    order.sort_by_key(|&i| e.crs[i].rank);
    let f = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.4}"));
    for i in order {
        let c = &e.crs[i];
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:>8.4}  {:>19}  {:>9}  {:>8}",
            c.rank,
            c.encoder,
            c.crs,
            format!("[{}, {}]", f(c.lower), f(c.upper)),
            f(c.p_rank1),
            f(c.p_top3)
        );
    }
    for c in &e.rank_comparisons {
        let _ = writeln!(
            out,
            "{}: Kendall τ {:.4}, reversals {}/{}, mean |Δrank| {:.4}",
            c.name,
            c.comparison.kendall_tau,
            c.comparison.reversals,
            c.comparison.pairs,
            c.comparison.mean_abs_displacement
        );
    }
    stability_summary(&e.calibration_stability, &mut out);
    if let Some(f) = &e.focus {
        let _ = writeln!(
            out,
            "gaps: {} (run, column) rows over {} columns; adaptation: {} base–adapted pairs, {} unpaired",
            f.run_gaps.len(),
            f.columns.len(),
            f.adaptation.len(),
            f.unpaired.len()
        );
        for n in &f.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if let Some(r) = &e.selective {
        let _ = writeln!(
            out,
            "selective: {} runs (AURC/E-AURC/AUGRC), {} conformal rows ({} at α = {}), {} shift-detection rows",
            r.runs.len(),
            r.conformal.len(),
            r.method,
            r.alpha,
            r.shift_detection.len()
        );
        for n in &r.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    for n in &e.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn describe(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Whether a saved reference scores the selective axis (then the evaluation computes it too, and a
/// four-axis request against it is refused by the reference's estimator check).
fn options_reference_has_selective(reference: Option<&Reference>) -> bool {
    reference.is_some_and(|r| r.estimators().selective.is_some())
}

pub fn run(args: &EvalArgs) -> Result<()> {
    let files = record_files(&args.inputs)?;
    let mut notes = Vec::new();
    let set = records::read_records(&files, &mut notes)?;
    for n in &notes {
        eprintln!("note: {n}");
    }
    records::report_disagreements(&records::check_against_predictions(&set), args.strict)?;
    for (flag, b) in [("--bootstrap", args.bootstrap), ("--delta-bootstrap", args.focus.delta_bootstrap)] {
        if let Some(w) = numbers::bootstrap_warning(b, args.level, flag) {
            eprintln!("{w}");
        }
    }
    let reference = match &args.reference {
        Some(path) => {
            let reference = Reference::load(path)?;
            weights::check_frozen(path, &reference, args.weights, args.axis_weights)?;
            Some(reference)
        }
        None => None,
    };
    // Five axis weights turn on the selective axis: it is computed from the selective analyses'
    // per-run AUGRC (attached to the records as metrics), so those analyses run first.
    let selective_axis = args.axis_weights.is_some_and(|w| w.has_selective())
        || options_reference_has_selective(reference.as_ref());
    let selective_options = args.selective.options(args.seed);
    if selective_axis && selective_options.is_none() {
        bail!(
            "{}: the selective axis needs the selective analyses (per-run AUGRC from the predictions files): \
             add --selective",
            if args.axis_weights.is_some_and(|w| w.has_selective()) {
                "five axis weights"
            } else {
                "the saved reference has a selective axis"
            }
        );
    }
    let run_selective = |options: &SelectiveOptions| {
        selective_analyses(&set, options).with_context(|| {
            format!("selective prediction, conformal sets and shift detection of {}", describe(&files))
        })
    };
    // Without the selective axis the analyses run where they always did (after the FOCUS analyses).
    let mut selective_report = match (&selective_options, selective_axis) {
        (Some(options), true) => Some(run_selective(options)?),
        _ => None,
    };
    let axis_set = match (&selective_report, selective_axis) {
        (Some(report), true) => std::borrow::Cow::Owned(calibra_crs::with_selective_metrics(&set, report)?),
        _ => std::borrow::Cow::Borrowed(&set),
    };
    let options = EvaluationOptions {
        axes: AxisConfig {
            regime: args.regime,
            probe: args.probe.clone(),
            calibrator: Some(args.calibrator.clone()),
            discrimination_metric: args.discrimination_metric.clone(),
            calibration_metric: args.calibration_metric.clone(),
            robustness: match args.robustness {
                RobustnessArg::WithShift => RobustnessVariant::WithShift,
                RobustnessArg::CorruptionOnly => RobustnessVariant::CorruptionOnly,
            },
            selective_metric: selective_axis.then(|| calibra_crs::SELECTIVE_METRIC.to_string()),
            ..AxisConfig::default()
        },
        weights: ScoreWeights {
            axis: args.axis_weights.unwrap_or_default(),
            component: args.weights.unwrap_or_default(),
        },
        reference,
        bootstrap: (args.bootstrap > 0).then(|| BootstrapConfig {
            replicates: args.bootstrap,
            seed: args.seed,
            level: args.level,
            ..BootstrapConfig::default()
        }),
        stability_seed: (!args.no_stability).then_some(args.seed),
        encoder_analyses: EncoderAnalysisOptions {
            specialists: args.focus.specialists.iter().cloned().collect(),
            crossover_reference: args.focus.crossover_reference.clone(),
        },
    };
    let what = describe(&files);
    let started = Instant::now();
    if args.bootstrap > 0 {
        eprintln!(
            "evaluating {} run records from {what}; paired-seed bootstrap with {} replicates (seed {})…",
            set.len(),
            args.bootstrap,
            args.seed
        );
    }
    let mut evaluation =
        Evaluation::build(&axis_set, &options).with_context(|| format!("evaluating {what}"))?;
    if !args.focus.no_focus {
        let focus = FocusOptions {
            columns: args.focus.group_columns.iter().chain(&args.focus.quality_columns).cloned().collect(),
            groups_file: args.focus.groups.clone(),
            min_group_size: args.focus.min_group_size,
            metrics: SampleMetric::ALL.to_vec(),
            bootstrap: PairedBootstrapConfig {
                replicates: args.focus.delta_bootstrap,
                seed: args.seed,
                level: args.level,
                ..PairedBootstrapConfig::default()
            },
        };
        let report = focus_analyses(&set, &focus)
            .with_context(|| format!("subgroup/quality gaps and adaptation deltas of {what}"))?;
        evaluation = evaluation.with_focus(report);
    } else if !args.focus.group_columns.is_empty()
        || !args.focus.quality_columns.is_empty()
        || args.focus.groups.is_some()
    {
        bail!("--no-focus skips the gap analyses: drop it, or drop --group-column/--quality-column/--groups");
    }
    if let (None, Some(options)) = (&selective_report, &selective_options) {
        selective_report = Some(run_selective(options)?);
    }
    if let Some(report) = selective_report {
        evaluation = evaluation.with_selective(report);
    }
    if args.bootstrap > 0 {
        eprintln!("evaluation done in {:.2} s", started.elapsed().as_secs_f64());
    }
    let figures = if args.no_reliability || args.out.is_none() {
        Vec::new()
    } else {
        reliability_figures(&set, args.bins)?
    };
    let reference = evaluation.reference_used.as_ref();
    if let (Some(path), None) = (&args.save_reference, reference) {
        bail!(
            "--save-reference {}: there is no reference to save: {}",
            path.display(),
            evaluation.crs_not_computed.as_deref().unwrap_or("CRS not computed")
        );
    }
    if let Some(out) = &args.out {
        let layout = ReportLayout {
            options: ReportOptions { all_diagrams: args.all_diagrams, ..ReportOptions::default() },
            png: args.figures.contains(&FigureFormat::Png),
        };
        let files = output_files(&evaluation, &figures, reference.map(Reference::to_json), &layout)?;
        write_output_dir(out, &files, args.force)?;
        eprintln!("wrote {} files to {}", files.len(), out.display());
    }
    if let (Some(path), Some(reference)) = (&args.save_reference, reference) {
        reference.save(path)?;
        eprintln!("saved the reference to {}", path.display());
    }
    if let Some(why) = &evaluation.crs_not_computed {
        eprintln!("note: {why}");
    }
    match args.format {
        OutputFormat::Json => emit(&(serde_json::to_string_pretty(&evaluation)? + "\n"))?,
        OutputFormat::Table => emit(&summary_table(&evaluation))?,
    }
    Ok(())
}
