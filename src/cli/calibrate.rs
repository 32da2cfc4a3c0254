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

use crate::cli::output::OutputFormat;
use anyhow::{Result, bail};
use calibra_calibrate::{
    CalibrationJob, CalibrationOutcome, CalibratorSource, ConformalJob, ConformalMethod, FitSettings,
    LastLabel, Method, PlattScore, RegulariserFamily,
};
use calibra_predictions::write_predictions;
use calibra_report::{CalibrationReport, set_fit_lines, set_table};
use std::path::PathBuf;

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

pub fn run(args: &CalibrateArgs) -> Result<()> {
    let method = match args.method {
        Some(MethodArg::Conformal(name)) => return conformal(args, name),
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
    let source = match (&args.load, &args.fit, method) {
        (Some(path), _, _) => CalibratorSource::Load(path.clone()),
        (None, Some(calibration), Some(method)) => CalibratorSource::Fit(FitSettings {
            method,
            calibration: calibration.clone(),
            reg_lambda: args.reg_lambda,
            reg_mu: args.reg_mu,
            regulariser: match args.regulariser {
                RegulariserKind::Odir => RegulariserFamily::Odir,
                RegulariserKind::L2 => RegulariserFamily::L2,
            },
            platt_score: match args.platt_score {
                PlattScoreArg::Logit => PlattScore::Logit,
                PlattScoreArg::Probability => PlattScore::Probability,
            },
            folds: args.folds.map(|f| f as usize),
        }),
        _ => bail!("give --method METHOD --fit CAL_PREDICTIONS, or --load CALIBRATOR_JSON"),
    };
    let job = CalibrationJob { source, apply: args.apply.clone(), zero_shot: args.zero_shot.clone() };
    let CalibrationOutcome { fitted, applied } = job.run(&mut |line| eprintln!("{line}"))?;
    let report = match (&applied, args.report) {
        (Some((before, after)), true) => {
            Some(CalibrationReport::of(fitted.method, before, after, args.bins as usize)?)
        }
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
    if let Some(report) = report {
        match args.format {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
            OutputFormat::Table => print!("{}", report.table()),
        }
    }
    Ok(())
}

/// `--method lac|thr|aps|raps`: split conformal prediction sets.
fn conformal(args: &CalibrateArgs, name: &str) -> Result<()> {
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
    let method = ConformalMethod::parse_name(
        name,
        args.last_label.unwrap_or(LastLabel::Include),
        args.raps_lambda.unwrap_or(0.01),
        args.k_reg.unwrap_or(1),
    )?;
    let job = ConformalJob {
        method,
        alpha: args.alpha.unwrap_or(0.1),
        seed: args.seed.unwrap_or(0),
        calibration: cal_path.clone(),
        test: test_path.clone(),
    };
    let outcome = job.run()?;
    for line in set_fit_lines(&outcome.report) {
        eprintln!("{line}");
    }
    calibra_predictions::write_atomically(out, |w| w.write_all(&outcome.csv))?;
    eprintln!("wrote prediction sets to {}", out.display());
    if args.report {
        match args.format {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome.report)?),
            OutputFormat::Table => print!("{}", set_table(&outcome.report)),
        }
    }
    Ok(())
}
