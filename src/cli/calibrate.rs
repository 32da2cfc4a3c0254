//! `calibra calibrate`: fit a post-hoc calibrator on a calibration split (or load a saved one), apply
//! it to a predictions file, write the calibrated predictions (`prob_*` columns), optionally save the
//! calibrator as JSON and print the before/after table (`--report`: ECE, adaptive ECE, Brier, NLL,
//! accuracy, macro AUROC and the change in AUROC — CRS-Bench's E2 table).
//!
//! `--method lac|thr|aps|raps` instead makes split conformal prediction sets (MAPIE 1.6's rules, see
//! `calibra_calibrate::conformal`): fitted on `--fit` at level `--alpha`, written for `--apply` as a CSV
//! with a `set` column of class indices separated by spaces (`set_<label>` columns, each a subset of
//! {0, 1}, for multilabel files), and with `--report` their coverage and size.
//!
//! Every output goes through a temp file + rename, and nothing is written before fitting and
//! applying have succeeded, so a failure never leaves a partial file.

use crate::cli::output::{OutputFormat, cell};
use anyhow::{Context, Result, bail};
use calibra_calibrate::{
    CalibratorOptions, FittedCalibrator, FittedParams, Method, PlattScore, Regulariser, calibrator_for,
};
use calibra_metrics::{Binning, MetricSummary, SummaryOptions};
use calibra_predictions::{Predictions, read_predictions, write_predictions};
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["method", "load"])))]
pub struct CalibrateArgs {
    /// Method to fit: temperature, vector, matrix, isotonic, dirichlet, platt or sals. On multilabel
    /// files temperature, isotonic and platt calibrate each label separately. Or a conformal method
    /// making prediction sets: lac (= thr), aps or raps (multilabel: lac, per label).
    #[arg(long, requires = "fit")]
    pub method: Option<MethodArg>,
    /// Calibration predictions (held-out split) to fit on.
    #[arg(long, value_name = "CAL_PREDICTIONS", conflicts_with = "load")]
    pub fit: Option<PathBuf>,
    /// A calibrator saved with --save, to apply instead of fitting one.
    #[arg(long, value_name = "CALIBRATOR_JSON")]
    pub load: Option<PathBuf>,
    /// Predictions to calibrate.
    #[arg(long, value_name = "PREDICTIONS", requires = "out")]
    pub apply: Option<PathBuf>,
    /// Where to write the calibrated predictions (same format, prob_* columns).
    #[arg(long, value_name = "CALIBRATED_PREDICTIONS", requires = "apply")]
    pub out: Option<PathBuf>,
    /// Save the fitted calibrator (method, format version, class names, parameters, fit report) as JSON.
    #[arg(long, value_name = "CALIBRATOR_JSON", conflicts_with = "load")]
    pub save: Option<PathBuf>,
    /// Print metrics of the predictions before and after calibration, and the change in AUROC.
    #[arg(long, requires = "apply")]
    pub report: bool,
    /// Matrix and Dirichlet: regulariser strength λ (ODIR off-diagonal, or L2 with --regulariser l2).
    /// Dirichlet without --reg-lambda selects (λ, μ) by 5-fold cross-validated log-loss.
    #[arg(long, value_name = "LAMBDA")]
    pub reg_lambda: Option<f64>,
    /// ODIR intercept strength μ (default: equal to λ).
    #[arg(long, value_name = "MU", requires = "reg_lambda")]
    pub reg_mu: Option<f64>,
    /// Regulariser family for --reg-lambda: odir (Kull et al. 2019, default) or l2.
    #[arg(long, value_enum, default_value_t = RegulariserKind::Odir)]
    pub regulariser: RegulariserKind,
    /// Dirichlet: number of cross-validation folds for the (λ, μ) selection.
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=100))]
    pub folds: Option<u32>,
    /// Platt: fit the sigmoid on the logit (log-odds; default) or on the probability (sklearn parity
    /// for estimators without decision_function).
    #[arg(long, value_enum, default_value_t = PlattScoreArg::Logit)]
    pub platt_score: PlattScoreArg,
    /// SaLS: zero-shot logits of the samples in --apply (matched by id).
    #[arg(long, value_name = "ZERO_SHOT_PREDICTIONS")]
    pub zero_shot: Option<PathBuf>,
    /// Bins for ECE in --report.
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = crate::cli::eval::numbers::bins)]
    pub bins: u32,
    /// Conformal sets: miscoverage level α in (0, 1) (default 0.1: sets hold the label 90 % of the time).
    #[arg(long, value_name = "ALPHA")]
    pub alpha: Option<f64>,
    /// APS / RAPS: MAPIE's include_last_label: include (MAPIE's default True), exclude (False) or
    /// randomized.
    #[arg(long, value_name = "RULE")]
    pub last_label: Option<calibra_calibrate::LastLabel>,
    /// RAPS: the penalty λ per class beyond rank k_reg (default 0.01).
    #[arg(long, value_name = "LAMBDA")]
    pub raps_lambda: Option<f64>,
    /// RAPS: the rank k_reg after which classes are penalised (default 1).
    #[arg(long, value_name = "K")]
    pub k_reg: Option<usize>,
    /// Conformal sets: seed of the uniform draws that randomise APS / RAPS (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

/// `--method`: a calibrator, or a conformal method that makes prediction sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MethodArg {
    Calibrator(Method),
    Conformal(&'static str),
}

impl std::str::FromStr for MethodArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(name) = calibra_calibrate::CONFORMAL_METHODS.iter().find(|m| **m == s) {
            return Ok(MethodArg::Conformal(name));
        }
        s.parse::<Method>().map(MethodArg::Calibrator).map_err(|e| {
            format!(
                "{e}; or a conformal method making prediction sets: {}",
                calibra_calibrate::CONFORMAL_METHODS.join(", ")
            )
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RegulariserKind {
    Odir,
    L2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlattScoreArg {
    Logit,
    Probability,
}

/// One row of the before/after table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportRow {
    pub metric: &'static str,
    pub before: Option<f64>,
    pub after: Option<f64>,
}

/// The `--report` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    pub method: Method,
    pub samples: usize,
    pub rows: Vec<ReportRow>,
    /// macro AUROC after − before.
    pub delta_auroc: Option<f64>,
}

pub fn run(args: &CalibrateArgs) -> Result<()> {
    let method = match args.method {
        Some(MethodArg::Conformal(name)) => return conformal::run(args, name),
        Some(MethodArg::Calibrator(m)) => Some(m),
        None => None,
    };
    if args.alpha.is_some()
        || args.last_label.is_some()
        || args.raps_lambda.is_some()
        || args.k_reg.is_some()
        || args.seed.is_some()
    {
        bail!(
            "--alpha, --last-label, --raps-lambda, --k-reg and --seed apply to the conformal methods (lac, aps, raps) only"
        );
    }
    if args.save.is_none() && args.out.is_none() {
        bail!(
            "nothing to do: give --apply PREDICTIONS --out CALIBRATED_PREDICTIONS, or --save CALIBRATOR_JSON"
        );
    }
    let target = match &args.apply {
        Some(path) => Some((path.as_path(), read_predictions(path)?)),
        None => None,
    };
    let fitted = match (&args.load, &args.fit, method) {
        (Some(path), _, _) => FittedCalibrator::load(path)?,
        (None, Some(cal_path), Some(method)) => fit(args, method, cal_path, target.as_ref())?,
        _ => bail!("give --method METHOD --fit CAL_PREDICTIONS, or --load CALIBRATOR_JSON"),
    };
    let applied = match target {
        Some((path, predictions)) => Some(apply(args, &fitted, path, predictions)?),
        None => None,
    };
    let summary = match (&applied, args.report) {
        (Some((before, after)), true) => Some(report(fitted.method, before, after, args.bins as usize)?),
        _ => None,
    };
    // Everything is computed: now write, each file atomically.
    if let Some(save) = &args.save {
        fitted.save(save)?;
        eprintln!("saved the {} calibrator to {}", fitted.method, save.display());
    }
    if let (Some((_, after)), Some(out)) = (&applied, &args.out) {
        write_predictions(out, after)?;
        eprintln!("wrote calibrated predictions to {}", out.display());
    }
    if let Some(report) = summary {
        match args.format {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
            OutputFormat::Table => print!("{}", table(&report)),
        }
    }
    Ok(())
}

fn options(args: &CalibrateArgs) -> CalibratorOptions {
    let regulariser = args.reg_lambda.map(|lambda| match args.regulariser {
        RegulariserKind::Odir => {
            Regulariser::Odir { lambda, mu: args.reg_mu.unwrap_or(lambda), normalised: true }
        }
        RegulariserKind::L2 => Regulariser::L2 { lambda, normalised: true },
    });
    CalibratorOptions {
        regulariser,
        platt_score: match args.platt_score {
            PlattScoreArg::Logit => PlattScore::Logit,
            PlattScoreArg::Probability => PlattScore::Probability,
        },
        folds: args.folds.map(|f| f as usize),
    }
}

fn fit(
    args: &CalibrateArgs,
    method: Method,
    cal_path: &Path,
    target: Option<&(&Path, Predictions)>,
) -> Result<FittedCalibrator> {
    if let Some(lambda) = args.reg_lambda {
        if !(lambda.is_finite() && lambda >= 0.0) || args.reg_mu.is_some_and(|m| !(m.is_finite() && m >= 0.0))
        {
            bail!("--reg-lambda and --reg-mu must be finite and ≥ 0");
        }
        if !matches!(method, Method::Matrix | Method::Dirichlet) {
            bail!("--reg-lambda applies to matrix and dirichlet only, not to {method}");
        }
    }
    let calibration = read_predictions(cal_path)?;
    if let Some((path, predictions)) = target {
        // Compare headers before fitting: a mismatch is the user's mistake, not worth a long fit.
        check_same_classes(cal_path, &calibration, path, predictions)?;
        if calibration.score_kind() != predictions.score_kind() {
            eprintln!(
                "warning[score-kind-mismatch]: {} stores {}* columns but {} stores {}* columns; logits are \
                 taken as ln(p + 1e-12) where only probabilities exist",
                cal_path.display(),
                calibration.score_kind().prefix(),
                path.display(),
                predictions.score_kind().prefix()
            );
        }
    }
    let calibrator = calibrator_for(method, calibration.task(), &options(args))?;
    let fitted = calibrator
        .fit(&calibration)
        .with_context(|| format!("fitting {method} on {}", cal_path.display()))?;
    for w in &fitted.report.warnings {
        eprintln!("warning[{}]: {}: {}", w.code, cal_path.display(), w.message);
    }
    for note in &fitted.report.notes {
        eprintln!("note: {note}");
    }
    eprintln!("fitted {method} on {} calibration samples: {}", fitted.report.samples, describe(&fitted));
    Ok(fitted)
}

/// The same classes in the same order, or an error saying which file has what.
fn check_same_classes(cal_path: &Path, cal: &Predictions, path: &Path, p: &Predictions) -> Result<()> {
    if cal.class_names() == p.class_names() && cal.task() == p.task() {
        return Ok(());
    }
    let mut a = cal.class_names().to_vec();
    let mut b = p.class_names().to_vec();
    a.sort();
    b.sort();
    let what = if cal.task() != p.task() {
        format!("tasks differ ({} vs {})", cal.task().as_str(), p.task().as_str())
    } else if a == b {
        "the same classes in a different column order".to_string()
    } else {
        "different class sets".to_string()
    };
    bail!(
        "{} has classes [{}] but {} has [{}]: {what}; calibration and predictions must have the same classes in \
         the same order",
        cal_path.display(),
        cal.class_names().join(", "),
        path.display(),
        p.class_names().join(", ")
    )
}

fn apply(
    args: &CalibrateArgs,
    fitted: &FittedCalibrator,
    path: &Path,
    predictions: Predictions,
) -> Result<(Predictions, Predictions)> {
    let calibrated = match (&fitted.params, &args.zero_shot) {
        (FittedParams::Sals(_), Some(zs_path)) => {
            let zero_shot = read_predictions(zs_path)?;
            fitted.apply_with_zero_shot(&predictions, &zero_shot)
        }
        (FittedParams::Sals(_), None) => {
            bail!("sals needs --zero-shot ZERO_SHOT_PREDICTIONS for {}", path.display())
        }
        _ => fitted.apply(&predictions),
    }
    .with_context(|| format!("applying the {} calibrator to {}", fitted.method, path.display()))?;
    Ok((predictions, calibrated))
}

/// A one-line summary of the fitted parameters.
fn describe(f: &FittedCalibrator) -> String {
    match &f.params {
        FittedParams::Temperature(t) => {
            format!("T = {:.6}{}", t.temperature, if t.at_bound { " (at a bound of the search)" } else { "" })
        }
        FittedParams::Dirichlet(a) | FittedParams::Matrix(a) => format!("regulariser {:?}", a.regulariser),
        _ => format!("mean NLL {} → {}", cell(f.report.nll_before), cell(f.report.nll_after)),
    }
}

fn summary(p: &Predictions, bins: usize) -> Result<MetricSummary> {
    let options = SummaryOptions { n_bins: bins, binning: Binning::RightClosed, ordinal: false };
    crate::cli::metrics::summarize(p, &options)
}

/// The before/after table of `--report`.
pub fn report(
    method: Method,
    before: &Predictions,
    after: &Predictions,
    bins: usize,
) -> Result<CalibrationReport> {
    let (b, a) = (summary(before, bins)?, summary(after, bins)?);
    let rows = vec![
        ReportRow { metric: "ECE", before: b.ece, after: a.ece },
        ReportRow { metric: "adaptive ECE", before: b.adaptive_ece, after: a.adaptive_ece },
        ReportRow { metric: "Brier", before: b.brier, after: a.brier },
        ReportRow { metric: "NLL", before: b.nll, after: a.nll },
        ReportRow { metric: "accuracy", before: b.accuracy, after: a.accuracy },
        ReportRow { metric: "macro AUROC", before: b.macro_auroc, after: a.macro_auroc },
    ];
    let delta_auroc = a.macro_auroc.zip(b.macro_auroc).map(|(x, y)| x - y);
    Ok(CalibrationReport { method, samples: before.len(), rows, delta_auroc })
}

fn table(r: &CalibrationReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{} calibration, {} samples", r.method, r.samples);
    let _ = writeln!(out, "{:<14} {:>12} {:>12} {:>12}", "metric", "before", "after", "change");
    for row in &r.rows {
        let change = row.after.zip(row.before).map(|(a, b)| a - b);
        let _ = writeln!(
            out,
            "{:<14} {:>12} {:>12} {:>12}",
            row.metric,
            cell(row.before),
            cell(row.after),
            change.map_or("n/a".to_string(), |c| format!("{c:+.6}"))
        );
    }
    let _ = writeln!(out, "ΔAUROC {}", r.delta_auroc.map_or("n/a".to_string(), |d| format!("{d:+.6}")));
    out
}

/// `--method lac|thr|aps|raps`: split conformal prediction sets.
mod conformal {
    use super::{CalibrateArgs, OutputFormat, cell, check_same_classes};
    use anyhow::{Context, Result, bail};
    use calibra_calibrate::{
        ConformalMethod, ConformalPredictor, LastLabel, SetCoverage, fit_multilabel, multilabel_set_coverage,
        predict_multilabel, set_coverage, uniform_draws,
    };
    use calibra_predictions::{Predictions, Targets, read_predictions};
    use serde::Serialize;

    /// The test draws come from a stream independent of the calibration draws.
    const TEST_STREAM: u64 = 0xD1B5_4A32_D192_ED03;

    /// The `--report` document of conformal sets.
    #[derive(Debug, Clone, PartialEq, Serialize)]
    pub struct SetReport {
        pub method: ConformalMethod,
        pub alpha: f64,
        pub seed: u64,
        pub calibration_samples: usize,
        /// `q̂` (multilabel: one per label, in column order).
        pub quantiles: Vec<f64>,
        pub samples: usize,
        /// Fraction of rows (multilabel: of observed (row, label) cells) whose set holds the label.
        pub coverage: f64,
        /// Coverage per true class (multilabel: per label); `null` without rows.
        pub class_coverage: Vec<(String, Option<f64>)>,
        pub mean_set_size: f64,
        pub empty_fraction: f64,
    }

    pub fn run(args: &CalibrateArgs, name: &str) -> Result<()> {
        if args.save.is_some() || args.load.is_some() || args.zero_shot.is_some() {
            bail!(
                "--save, --load and --zero-shot apply to calibrators; `{name}` makes prediction sets from --fit and --apply"
            );
        }
        let (Some(cal_path), Some(test_path), Some(out)) = (&args.fit, &args.apply, &args.out) else {
            bail!("conformal sets need --fit CAL_PREDICTIONS --apply PREDICTIONS --out SETS_CSV");
        };
        if args.reg_lambda.is_some() || args.folds.is_some() {
            bail!("--reg-lambda / --folds apply to matrix and dirichlet, not to `{name}`");
        }
        if name != "raps" && (args.raps_lambda.is_some() || args.k_reg.is_some()) {
            bail!("--raps-lambda and --k-reg apply to raps only, not to `{name}`");
        }
        if (name == "lac" || name == "thr") && args.last_label.is_some() {
            bail!("--last-label applies to aps and raps; LAC has no last-label rule");
        }
        let alpha = args.alpha.unwrap_or(0.1);
        let seed = args.seed.unwrap_or(0);
        let method = ConformalMethod::parse_name(
            name,
            args.last_label.unwrap_or(LastLabel::Include),
            args.raps_lambda.unwrap_or(0.01),
            args.k_reg.unwrap_or(1),
        )?;
        let cal = read_predictions(cal_path)?;
        let test = read_predictions(test_path)?;
        check_same_classes(cal_path, &cal, test_path, &test)?;
        let k = cal.num_classes();
        let names = cal.class_names().to_vec();
        let (csv, report) = match (cal.targets(), test.targets()) {
            (Targets::Classes(cal_y), Targets::Classes(test_y)) => {
                let fitted = ConformalPredictor::fit(
                    method,
                    &cal.probabilities(),
                    k,
                    cal_y,
                    alpha,
                    &uniform_draws(seed, cal.len()),
                )
                .with_context(|| format!("fitting {method} sets on {}", cal_path.display()))?;
                let sets = fitted
                    .predict(&test.probabilities(), k, &uniform_draws(seed ^ TEST_STREAM, test.len()))
                    .with_context(|| format!("making {method} sets for {}", test_path.display()))?;
                let cov = set_coverage(&sets, test_y, k);
                let csv = single_label_csv(&test, test_y, &sets)?;
                (csv, report_of(method, alpha, seed, cal.len(), vec![fitted.quantile], &test, &cov, &names))
            }
            (Targets::Labels(cal_t), Targets::Labels(test_t)) => {
                let fitted = fit_multilabel(method, &cal.probabilities(), k, cal_t, alpha, &names)
                    .with_context(|| format!("fitting per-label {method} sets on {}", cal_path.display()))?;
                let sets = predict_multilabel(&fitted, &test.probabilities(), k);
                let csv = multilabel_csv(&test, &names, &sets)?;
                let cov = multilabel_set_coverage(&sets, test_t, k);
                let q = fitted.iter().map(|f| f.quantile).collect();
                (csv, report_of(method, alpha, seed, cal.len(), q, &test, &cov, &names))
            }
            _ => unreachable!("check_same_classes compares the tasks"),
        };
        if report.quantiles.len() > 1 {
            for (label, q) in names.iter().zip(&report.quantiles) {
                eprintln!("label `{label}`: q̂ = {q}");
            }
        }
        eprintln!(
            "fitted {method} sets (α = {alpha}) on {} calibration samples; coverage {} with mean set size {}",
            cal.len(),
            cell(Some(report.coverage)),
            cell(Some(report.mean_set_size))
        );
        calibra_predictions::write_atomically(out, |w| std::io::Write::write_all(w, &csv))?;
        eprintln!("wrote prediction sets to {}", out.display());
        if args.report {
            match args.format {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
                OutputFormat::Table => print!("{}", table(&report)),
            }
        }
        Ok(())
    }

    fn join(set: &[usize]) -> String {
        set.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
    }

    fn single_label_csv(test: &Predictions, labels: &[usize], sets: &[Vec<usize>]) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(["id", "label", "set"])?;
        for ((id, y), set) in test.ids().iter().zip(labels).zip(sets) {
            w.write_record([id.as_str(), &y.to_string(), &join(set)])?;
        }
        Ok(w.into_inner().map_err(|e| e.into_error())?)
    }

    fn multilabel_csv(test: &Predictions, names: &[String], sets: &[Vec<Vec<usize>>]) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["id".to_string()];
        header.extend(names.iter().map(|n| format!("set_{n}")));
        w.write_record(&header)?;
        for (id, row) in test.ids().iter().zip(sets) {
            let mut record = vec![id.clone()];
            record.extend(row.iter().map(|s| join(s)));
            w.write_record(&record)?;
        }
        Ok(w.into_inner().map_err(|e| e.into_error())?)
    }

    #[allow(clippy::too_many_arguments)]
    fn report_of(
        method: ConformalMethod,
        alpha: f64,
        seed: u64,
        calibration_samples: usize,
        quantiles: Vec<f64>,
        test: &Predictions,
        cov: &SetCoverage,
        names: &[String],
    ) -> SetReport {
        SetReport {
            method,
            alpha,
            seed,
            calibration_samples,
            quantiles,
            samples: test.len(),
            coverage: cov.coverage,
            class_coverage: names.iter().cloned().zip(cov.class_coverage.iter().copied()).collect(),
            mean_set_size: cov.mean_set_size,
            empty_fraction: cov.empty_fraction,
        }
    }

    fn table(r: &SetReport) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} prediction sets, α = {}, {} calibration samples, {} test samples",
            r.method, r.alpha, r.calibration_samples, r.samples
        );
        let _ = writeln!(out, "{:<26}{:>12}", "coverage", cell(Some(r.coverage)));
        let _ = writeln!(out, "{:<26}{:>12}", "target coverage (1 − α)", cell(Some(1.0 - r.alpha)));
        let _ = writeln!(out, "{:<26}{:>12}", "mean set size", cell(Some(r.mean_set_size)));
        let _ = writeln!(out, "{:<26}{:>12}", "empty sets", cell(Some(r.empty_fraction)));
        let _ = writeln!(out, "\nclass-conditional coverage");
        for (name, c) in &r.class_coverage {
            let _ = writeln!(out, "{name:<26}{:>12}", cell(*c));
        }
        out
    }
}
