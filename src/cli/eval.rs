//! `calibra eval RUN_RECORDS.jsonl|RUN_DIR`: the whole reliability evaluation of a run set — metric
//! rows, profiles, CRS with bootstrap intervals, rank comparisons, stability — written as JSON, CSV and
//! a Markdown report with SVG figures. The flags become [`calibra_report::EvalOptions`];
//! [`calibra_report::evaluate`] does the work and documents the output directory.

pub mod numbers;

use crate::cli::output::{OutputFormat, emit};
use crate::cli::weights;
use anyhow::Result;
use calibra_calibrate::{ConformalMethod, LastLabel};
use calibra_crs::{AxisWeights, ComponentWeights, GapKind, GroupColumn, Regime, RobustnessVariant};
use calibra_report::{ConformalSettings, EvalOptions};
use calibra_report::{
    DEFAULT_BINS, DEFAULT_BOOTSTRAP, DEFAULT_CONFORMAL_ALPHA, DEFAULT_DELTA_BOOTSTRAP, DEFAULT_LEVEL,
    DEFAULT_MIN_GROUP_SIZE,
};
use std::path::PathBuf;

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
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BOOTSTRAP, allow_negative_numbers = true, value_parser = numbers::count)]
    pub bootstrap: usize,
    /// Seed of the bootstrap and of the stability analyses.
    #[arg(long, value_name = "S", default_value_t = 0, allow_negative_numbers = true, value_parser = numbers::seed)]
    pub seed: u64,
    /// Level of the bootstrap percentile intervals, in (0, 1).
    #[arg(long, default_value_t = DEFAULT_LEVEL, allow_negative_numbers = true, value_parser = numbers::level)]
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
    #[arg(long, default_value_t = DEFAULT_BINS, allow_negative_numbers = true, value_parser = numbers::bins_usize)]
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

/// The flags of the selective, conformal and shift-detection analyses.
#[derive(Debug, Clone, clap::Args)]
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

/// The flags of the FOCUS additions (subgroup/quality gaps, adaptation deltas) and of the encoder
/// analyses E1–E6.
#[derive(Debug, Clone, clap::Args)]
pub struct FocusEvalArgs {
    /// A demographic group column for subgroup gaps: NAME, NAME:categorical, NAME:median (e.g.
    /// `age:median`) or NAME:thresholds=a,b,… (right-closed strata). Repeatable. Values come from
    /// --groups, or else from extra columns of each run's predictions file.
    #[arg(long = "group-column", value_name = "NAME[:SPLIT]", value_parser = |t: &str| GroupColumn::parse(t, GapKind::Subgroup))]
    pub group_columns: Vec<GroupColumn>,
    /// An image-quality column for quality-stratum gaps (same syntax as --group-column, e.g.
    /// `quality:median` or `quality:thresholds=0.5`). Repeatable.
    #[arg(long = "quality-column", value_name = "NAME[:SPLIT]", value_parser = |t: &str| GroupColumn::parse(t, GapKind::Quality))]
    pub quality_columns: Vec<GroupColumn>,
    /// Group table: a CSV with `id` and the declared group/quality columns, one row per test sample.
    #[arg(long, value_name = "GROUPS.csv")]
    pub groups: Option<PathBuf>,
    /// Groups with fewer samples are reported as skipped in the subgroup and quality gaps.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MIN_GROUP_SIZE, allow_negative_numbers = true, value_parser = numbers::count)]
    pub min_group_size: usize,
    /// Paired bootstrap replicates of the adaptation deltas (0: point deltas only). Seeded by --seed,
    /// interval level --level.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DELTA_BOOTSTRAP, allow_negative_numbers = true, value_parser = numbers::count)]
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
    calibra_report::regime_named(text)
        .ok_or_else(|| format!("`{text}` is not a regime; expected frozen, lora, coop, full or zero-shot"))
}

impl EvalArgs {
    /// The typed options these flags mean.
    pub fn options(&self) -> EvalOptions {
        let (focus, selective) = (&self.focus, &self.selective);
        let method = match selective.conformal_method.unwrap_or_default() {
            ConformalMethodArg::Lac => ConformalMethod::Lac,
            ConformalMethodArg::Aps => ConformalMethod::Aps { last_label: LastLabel::Include },
            ConformalMethodArg::Raps => {
                ConformalMethod::Raps { last_label: LastLabel::Include, lambda: 0.01, k_reg: 1 }
            }
        };
        EvalOptions {
            inputs: self.inputs.clone(),
            out: self.out.clone(),
            force: self.force,
            reference: self.reference.clone(),
            save_reference: self.save_reference.clone(),
            bootstrap: self.bootstrap,
            seed: self.seed,
            level: self.level,
            weights: self.weights,
            axis_weights: self.axis_weights,
            robustness: match self.robustness {
                RobustnessArg::WithShift => RobustnessVariant::WithShift,
                RobustnessArg::CorruptionOnly => RobustnessVariant::CorruptionOnly,
            },
            regime: self.regime,
            probe: self.probe.clone(),
            calibrator: self.calibrator.clone(),
            discrimination_metric: self.discrimination_metric.clone(),
            calibration_metric: self.calibration_metric.clone(),
            stability: !self.no_stability,
            reliability: !self.no_reliability,
            bins: self.bins,
            strict: self.strict,
            all_diagrams: self.all_diagrams,
            png: self.figures.contains(&FigureFormat::Png),
            focus: !focus.no_focus,
            group_columns: focus.group_columns.iter().chain(&focus.quality_columns).cloned().collect(),
            groups: focus.groups.clone(),
            min_group_size: focus.min_group_size,
            delta_bootstrap: focus.delta_bootstrap,
            specialists: focus.specialists.iter().cloned().collect(),
            crossover_reference: focus.crossover_reference.clone(),
            selective: selective.selective.then(|| ConformalSettings {
                alpha: selective.conformal_alpha.unwrap_or(DEFAULT_CONFORMAL_ALPHA),
                method,
            }),
        }
    }
}

/// Evaluates as `options` asks (progress on stderr) and prints the summary in `format`.
pub fn evaluate(options: &EvalOptions, format: OutputFormat) -> Result<()> {
    let evaluation = calibra_report::evaluate(options, &mut |m| eprintln!("{m}"))?;
    match format {
        OutputFormat::Json => emit(&(serde_json::to_string_pretty(&evaluation)? + "\n"))?,
        OutputFormat::Table => emit(&calibra_report::summary_table(&evaluation))?,
    }
    Ok(())
}

pub fn run(args: &EvalArgs) -> Result<()> {
    evaluate(&args.options(), args.format)
}
