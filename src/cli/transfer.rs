//! `calibra transfer score --features FILE [--labels FILE] [--estimators a,b,...] [--format table|json]`:
//! transferability estimators (calibra-transfer) on one frozen-feature matrix.
//!
//! FILE is a safetensors written by `calibra features` (its labels are used when `--labels` is not
//! given; `--layer` picks the depth, default the deepest; `--split` keeps one split of a file written
//! by `calibra features --split all`) or a `.npy` `[N, D]` of f32 / f64. Labels:
//! a `.npy` `[N]` of integers (classes; `--target ordinal` for grades) or of floats (`--target
//! continuous`), or `[N, L]` with 1 / 0 / −1 (multilabel, −1 = missing), or a `calibra features`
//! safetensors. NLEEP's posteriors are its own Gaussian mixture on the PCA-80 % features (as the
//! reference); LEEP is not offered here because a feature file carries no source-classifier
//! posteriors (the library's `leep` takes them).

mod npy;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use calibra_data::{Split, Target};
use calibra_train::features::FeatureSet;
use calibra_transfer::{Estimator, Features, ScoreOptions, ScoreReport, Targets, score};

use crate::cli::output::{OutputFormat, cell, emit};
use npy::read_npy;

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
    match &args.command {
        TransferCommand::Score(a) => run_score(a),
    }
}

fn is_safetensors(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
}

fn run_score(args: &ScoreArgs) -> Result<()> {
    let estimators = match &args.estimators {
        Some(s) => Estimator::parse_list(s).context("--estimators")?,
        None => Estimator::ALL.to_vec(),
    };
    if estimators.is_empty() {
        bail!("--estimators: no estimator named");
    }
    let file = args.features.display();
    let (features, embedded) = if is_safetensors(&args.features) {
        let mut set = FeatureSet::read(&args.features)?;
        if let Some(name) = &args.split {
            if args.labels.is_some() {
                bail!("--split selects rows with the features file's own labels; drop --labels");
            }
            let split = Split::parse(name)
                .with_context(|| format!("--split `{name}`: expected train, calibration or test"))?;
            set = set.only(split).with_context(|| {
                format!(
                    "{file}: --split {name}: this file holds one split and records no split per row \
                     (write it with `calibra features --split all`)"
                )
            })?;
            if set.ids.is_empty() {
                bail!("{file}: --split {name}: no row of this file is in the {} split", split.name());
            }
        }
        let (_, rows) = match args.layer {
            Some(f) => set
                .layers
                .iter()
                .find(|(g, _)| *g == f)
                .with_context(|| {
                    let have: Vec<f64> = set.layers.iter().map(|l| l.0).collect();
                    format!("{file}: --layer {f}: not stored (layers: {have:?})")
                })?
                .clone(),
            None => set
                .layers
                .iter()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .with_context(|| format!("{file}: no feature layer stored"))?
                .clone(),
        };
        let n = set.ids.len();
        let f = Features::from_f32(&rows, n, set.dim).with_context(|| file.to_string())?;
        (f, Some(targets_from_set(&set.targets, args.target)?))
    } else {
        if args.split.is_some() {
            bail!("{file}: --split needs a `calibra features` .safetensors file (a .npy has no splits)");
        }
        let a = read_npy(&args.features)?;
        if a.shape.len() != 2 {
            bail!("{file}: features must be [N, D], found shape {:?}", a.shape);
        }
        if a.integer {
            bail!("{file}: features must be f32 or f64, found an integer dtype");
        }
        (Features::new(a.data, a.shape[0], a.shape[1]).with_context(|| file.to_string())?, None)
    };
    let targets = match (&args.labels, embedded) {
        (Some(path), _) => read_labels(path, args.target)?,
        (None, Some(t)) => t,
        (None, None) => bail!("{file}: a .npy feature file carries no labels: pass --labels FILE"),
    };
    let options = ScoreOptions { knn_k: args.knn_k, ..ScoreOptions::default() };
    let report = score(&features, &targets, &estimators, &options).with_context(|| {
        format!(
            "{file} with labels {}",
            args.labels.as_ref().map_or(file.to_string(), |p| p.display().to_string())
        )
    })?;
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    let text = match args.format {
        OutputFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        OutputFormat::Table => table(&report, &estimators),
    };
    emit(&text)?;
    Ok(())
}

fn targets_from_set(targets: &[Target], kind: TargetKind) -> Result<Targets> {
    match targets.first() {
        Some(Target::Labels(first)) => {
            let labels = first.len();
            let mut values = Vec::with_capacity(targets.len() * labels);
            for t in targets {
                match t {
                    Target::Labels(l) => values.extend(l.iter().copied()),
                    Target::Class(_) => bail!("feature file mixes single-label and multilabel targets"),
                }
            }
            Ok(Targets::Multilabel { labels, values })
        }
        _ => {
            let y: Vec<usize> = targets
                .iter()
                .map(|t| match t {
                    Target::Class(c) => Ok(*c),
                    Target::Labels(_) => bail!("feature file mixes single-label and multilabel targets"),
                })
                .collect::<Result<_>>()?;
            Ok(match kind {
                TargetKind::Ordinal => Targets::Ordinal(y),
                TargetKind::Continuous => Targets::Continuous(y.iter().map(|&c| c as f64).collect()),
                TargetKind::Auto | TargetKind::Classes => Targets::Classes(y),
            })
        }
    }
}

fn read_labels(path: &Path, kind: TargetKind) -> Result<Targets> {
    let file = path.display();
    if is_safetensors(path) {
        return targets_from_set(&FeatureSet::read(path)?.targets, kind);
    }
    let a = read_npy(path)?;
    match a.shape.as_slice() {
        [n, l] => {
            let mut values = Vec::with_capacity(n * l);
            for (i, &v) in a.data.iter().enumerate() {
                let value = if v == 1.0 {
                    Some(true)
                } else if v == 0.0 {
                    Some(false)
                } else if v == -1.0 || v.is_nan() {
                    None
                } else {
                    bail!("{file}: row {}, label {}: {v} (expected 1, 0 or -1 = missing)", i / l, i % l)
                };
                values.push(value);
            }
            Ok(Targets::Multilabel { labels: *l, values })
        }
        [_] => {
            let integral = a.data.iter().all(|v| v.fract() == 0.0);
            let continuous = kind == TargetKind::Continuous || (kind == TargetKind::Auto && !integral);
            if continuous {
                if let Some(i) = a.data.iter().position(|v| !v.is_finite()) {
                    bail!("{file}: row {i}: {} is not a finite number", a.data[i]);
                }
                return Ok(Targets::Continuous(a.data));
            }
            let mut y = Vec::with_capacity(a.data.len());
            for (i, &v) in a.data.iter().enumerate() {
                if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0) {
                    bail!("{file}: row {i}: label {v} is not a class index (a non-negative integer)");
                }
                y.push(v as usize);
            }
            Ok(if kind == TargetKind::Ordinal { Targets::Ordinal(y) } else { Targets::Classes(y) })
        }
        other => bail!("{file}: labels must be [N] or [N, L], found shape {other:?}"),
    }
}

fn table(report: &ScoreReport, order: &[Estimator]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "n = {}, d = {}, classes = {}", report.n, report.d, report.num_classes);
    let _ = writeln!(s, "{:<26} {:>14}", "estimator", "score");
    for e in order {
        let v = report.scores.get(e.name()).copied().flatten();
        let _ = writeln!(s, "{:<26} {:>14}", e.name(), cell(v));
    }
    s
}
