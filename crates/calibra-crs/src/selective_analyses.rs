//! Beyond ECE (issue 24): selective prediction, conformal prediction sets and shift detection over a run
//! set, computed from the runs' per-sample predictions files (`calibra eval --selective`).
//!
//! Inputs: the run records with a predictions file (`paths.predictions`, relative to the record file's
//! directory unless absolute); records of regime `estimate` take no part. A **fit** is the records
//! sharing (encoder, dataset, regime, probe, calibrator, label fraction, seed); its runs differ by
//! condition (clean, each perturbation × severity, each shift target).
//!
//! 1. **Selective prediction**, per run: AURC, E-AURC and AUGRC ([`calibra_metrics::selective_areas`],
//!    torch-uncertainty's definitions) with the maximum softmax probability (MSP) as the confidence and
//!    `argmax ≠ label` as the error, over every row of the file; and the risk–coverage curve at the
//!    coverages `i/20`, `i = 1..20` (risk of the `⌈n·c⌉` most confident rows, torch-uncertainty
//!    `RiskAtxCov`). Multilabel: every label is a binary problem on its observed rows with the
//!    probabilities `[1 − p, p]` (as `calibra metrics` does), each value the mean over labels where it
//!    is defined.
//! 2. **Conformal sets**, per fit with a clean predictions file: the clean test rows are split into a
//!    conformal calibration half and an evaluation half ([`crate::conformal_split`]); the split
//!    conformal quantile at level `α` of the calibration half ([`calibra_calibrate::ConformalPredictor`],
//!    MAPIE's rule) gives the sets of the clean evaluation half, of each perturbed condition and of each
//!    shift target of the fit, rows whose id is in the calibration half excluded. Reported: marginal
//!    coverage, mean set size and the fraction of empty sets. Multilabel: LAC per label (coverage over
//!    the observed (row, label) cells); APS and RAPS have no multilabel form and are refused. A
//!    calibration half with `n < 1/α − 1` rows is refused, naming the record.
//! 3. **Shift detection**, per fit and shift target: AUROC and FPR at 95 % TPR of `−MSP` at telling the
//!    shift target's rows (positives) from the fit's clean test rows ([`calibra_metrics::shift_detection`]);
//!    multilabel: per label with `max(p, 1 − p)`, the mean over labels.
//! 4. **Cells**: the mean over seeds of each of these per (encoder, dataset, regime, probe, calibrator,
//!    label fraction, condition), in record order.
//!
//! Undefined values (AURC of one row, an AUROC without both kinds of rows) are `None`, never a number.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use calibra_calibrate::{
    ConformalMethod, ConformalPredictor, SetCoverage, fit_multilabel, multilabel_set_coverage,
    predict_multilabel, set_coverage, uniform_draws,
};
use calibra_metrics::{
    RiskCoveragePoint, selective_areas, selective_risks, shift_detection, top_label_errors,
};
use calibra_predictions::{Predictions, Targets};
use serde::Serialize;

use crate::conformal_split::{ConformalHalves, split_seed};
use crate::predictions_cache::PredictionsCache;
use crate::run_label::{RunLabel, predictions_path};
use crate::run_record::{Condition, LocatedRecord, Regime, RunRecordSet};
use crate::selective_error::SelectiveError;

/// Points of the stored risk–coverage curves: coverages `i / 20`, `i = 1..=20`.
pub const RISK_COVERAGE_POINTS: usize = 20;

/// The draws of the evaluated rows come from a stream independent of the calibration draws (the same
/// constant as `calibra calibrate`).
const TEST_STREAM: u64 = 0xD1B5_4A32_D192_ED03;

/// What the selective analyses compute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectiveOptions {
    /// Miscoverage level of the conformal sets, in (0, 1).
    pub alpha: f64,
    /// The conformal method (LAC, APS or RAPS with their parameters).
    pub method: ConformalMethod,
    /// The eval seed: it seeds the conformal split ([`crate::conformal_split::split_seed`]) and the
    /// APS / RAPS draws.
    pub seed: u64,
}

impl Default for SelectiveOptions {
    fn default() -> Self {
        SelectiveOptions { alpha: 0.1, method: ConformalMethod::Lac, seed: 0 }
    }
}

/// One run's selective-prediction numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSelective {
    pub run: RunLabel,
    /// Rows of the predictions file.
    pub samples: usize,
    pub aurc: Option<f64>,
    pub eaurc: Option<f64>,
    pub augrc: Option<f64>,
    /// Risk at coverage `i / 20`, `i = 1..=20`.
    pub risk_coverage: Vec<RiskCoveragePoint>,
}

/// The conformal sets of one run of a fit, with the quantile of that fit's calibration half.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunConformal {
    pub run: RunLabel,
    /// Rows of the fit's conformal calibration half.
    pub calibration_samples: usize,
    /// `q̂` (multilabel: one per label, in column order).
    pub quantiles: Vec<f64>,
    /// Rows evaluated (multilabel: observed (row, label) cells).
    pub samples: usize,
    /// Rows of this run left out because their id is in the calibration half.
    pub excluded: usize,
    pub coverage: f64,
    pub mean_set_size: f64,
    pub empty_fraction: f64,
}

/// How well low confidence flags one shift target's rows against the fit's clean test rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunShiftDetection {
    /// The shift run (its condition names the target).
    pub run: RunLabel,
    pub clean_samples: usize,
    pub shifted_samples: usize,
    pub auroc: Option<f64>,
    pub fpr_at_95_tpr: Option<f64>,
}

/// The seed means of one (encoder, dataset, regime, probe, calibrator, label fraction, condition).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellSelective {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub condition: Condition,
    /// Runs (seeds) with a predictions file.
    pub runs: usize,
    pub aurc: Option<f64>,
    pub eaurc: Option<f64>,
    pub augrc: Option<f64>,
    /// Mean risk at coverage `i / 20` over the runs.
    pub risk_coverage: Vec<RiskCoveragePoint>,
    /// Conformal coverage and set size (runs whose fit had a clean calibration half).
    pub conformal_runs: usize,
    pub coverage: Option<f64>,
    pub mean_set_size: Option<f64>,
    /// Shift detection (shift conditions only).
    pub shift_auroc: Option<f64>,
    pub shift_fpr_at_95_tpr: Option<f64>,
}

/// Everything the selective analyses report (`evaluation.json`: `selective`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectiveReport {
    /// The confidence score ranking the rows: `msp`.
    pub confidence: &'static str,
    pub alpha: f64,
    pub method: ConformalMethod,
    pub seed: u64,
    /// Where the conformal calibration set comes from, in words.
    pub calibration_split: String,
    pub runs: Vec<RunSelective>,
    pub conformal: Vec<RunConformal>,
    pub shift_detection: Vec<RunShiftDetection>,
    pub cells: Vec<CellSelective>,
    pub notes: Vec<String>,
}

/// The rule of [`crate::conformal_split`], as the report states it.
pub const CALIBRATION_SPLIT: &str = "each fit's clean test predictions split by a seeded draw \
    (sample ids sorted; SplitMix64 draws seeded with eval_seed * 0x9E3779B97F4A7C15 + fit seed; the \
    floor(n/2) smallest draws) into a conformal calibration half and an evaluation half; the quantile of \
    the calibration half is applied to the clean evaluation half, to each perturbed condition and to each \
    shift target of the fit, rows whose id is in the calibration half excluded";

/// The ranking problems of a predictions table: `(confidence, error)` per row, one problem for a
/// single-label table (MSP, `argmax ≠ label`), one per label with observed rows for a multilabel one.
fn problems(p: &Predictions) -> Vec<(Vec<f64>, Vec<bool>)> {
    let probs = p.probabilities();
    let k = p.num_classes();
    match p.targets() {
        Targets::Classes(labels) => vec![top_label_errors(&probs, k, labels)],
        Targets::Labels(targets) => (0..k)
            .filter_map(|j| {
                let (two, y): (Vec<[f64; 2]>, Vec<usize>) = (0..p.len())
                    .filter_map(|i| {
                        targets[i * k + j].map(|t| ([1.0 - probs[i * k + j], probs[i * k + j]], t))
                    })
                    .map(|(row, t)| (row, usize::from(t)))
                    .unzip();
                let flat: Vec<f64> = two.into_iter().flatten().collect();
                (!y.is_empty()).then(|| top_label_errors(&flat, 2, &y))
            })
            .collect(),
    }
}

/// The confidence of every row (single-label: one vector of MSPs; multilabel: per label
/// `max(p, 1 − p)`), labels not needed.
fn confidences(p: &Predictions) -> Vec<Vec<f64>> {
    let probs = p.probabilities();
    let k = p.num_classes();
    match p.targets() {
        Targets::Classes(_) => {
            vec![
                probs
                    .chunks_exact(k)
                    .map(|row| row.iter().copied().fold(f64::NEG_INFINITY, f64::max))
                    .collect(),
            ]
        }
        Targets::Labels(_) => (0..k)
            .map(|j| (0..p.len()).map(|i| probs[i * k + j].max(1.0 - probs[i * k + j])).collect())
            .collect(),
    }
}

fn mean_defined(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn grid() -> impl Iterator<Item = f64> {
    (1..=RISK_COVERAGE_POINTS).map(|i| i as f64 / RISK_COVERAGE_POINTS as f64)
}

fn run_selective(r: &LocatedRecord, p: &Predictions) -> Result<RunSelective, SelectiveError> {
    let metric = |e: calibra_metrics::MetricsError| SelectiveError::Metric {
        record: r.location.to_string(),
        message: format!("selective prediction: {e}"),
    };
    let mut areas = Vec::new();
    let mut curves = Vec::new();
    for (conf, err) in problems(p) {
        areas.push(selective_areas(&conf, &err).map_err(metric)?);
        let risks = selective_risks(&conf, &err).map_err(metric)?;
        let n = risks.len();
        curves.push(
            grid().map(|c| risks[((n as f64 * c).ceil() as usize).clamp(1, n) - 1]).collect::<Vec<_>>(),
        );
    }
    let risk_coverage = grid()
        .enumerate()
        .map(|(i, coverage)| RiskCoveragePoint {
            coverage,
            risk: curves.iter().map(|c| c[i]).sum::<f64>() / curves.len().max(1) as f64,
        })
        .collect();
    Ok(RunSelective {
        run: RunLabel::of(r),
        samples: p.len(),
        aurc: mean_defined(areas.iter().map(|a| a.aurc)),
        eaurc: mean_defined(areas.iter().map(|a| a.eaurc)),
        augrc: mean_defined(areas.iter().map(|a| a.augrc)),
        risk_coverage: if curves.is_empty() { Vec::new() } else { risk_coverage },
    })
}

/// The rows of `p` whose id is not in `excluded`.
fn rows_outside(p: &Predictions, excluded: &std::collections::HashSet<String>) -> Vec<usize> {
    (0..p.len()).filter(|&i| !excluded.contains(&p.ids()[i])).collect()
}

fn select(values: &[f64], k: usize, rows: &[usize]) -> Vec<f64> {
    rows.iter().flat_map(|&i| values[i * k..(i + 1) * k].iter().copied()).collect()
}

/// A fitted conformal predictor of one fit: single-label, or one per label.
enum Fitted {
    Single(ConformalPredictor),
    PerLabel(Vec<ConformalPredictor>),
}

impl Fitted {
    fn quantiles(&self) -> Vec<f64> {
        match self {
            Fitted::Single(f) => vec![f.quantile],
            Fitted::PerLabel(v) => v.iter().map(|f| f.quantile).collect(),
        }
    }
}

/// The conformal predictor of a fit from the calibration half of its clean predictions.
fn fit_conformal(
    clean: &LocatedRecord,
    p: &Predictions,
    halves: &ConformalHalves,
    options: &SelectiveOptions,
    seed: u64,
) -> Result<Fitted, SelectiveError> {
    let record = clean.location.to_string();
    let rows: Vec<usize> = (0..p.len()).filter(|&i| halves.calibration.contains(&p.ids()[i])).collect();
    let k = p.num_classes();
    let probs = select(&p.probabilities(), k, &rows);
    let too_small = |e: calibra_calibrate::CalibrateError| SelectiveError::Conformal {
        record: record.clone(),
        message: format!(
            "{} at α = {}: the conformal calibration half of this fit's clean test predictions has {} of {} \
             samples: {e} (pass a larger --conformal-alpha, or give the fit a larger test split)",
            options.method,
            options.alpha,
            rows.len(),
            p.len()
        ),
    };
    match p.targets() {
        Targets::Classes(labels) => {
            let y: Vec<usize> = rows.iter().map(|&i| labels[i]).collect();
            let draws = uniform_draws(seed, rows.len());
            ConformalPredictor::fit(options.method, &probs, k, &y, options.alpha, &draws)
                .map(Fitted::Single)
                .map_err(too_small)
        }
        Targets::Labels(targets) => {
            if options.method != ConformalMethod::Lac {
                return Err(SelectiveError::Conformal {
                    record,
                    message: format!(
                        "the predictions are multilabel: conformal sets are made per label with LAC \
                         (--conformal-method lac); {} ranks mutually exclusive classes and has no \
                         multilabel form",
                        options.method
                    ),
                });
            }
            let t: Vec<Option<bool>> =
                rows.iter().flat_map(|&i| targets[i * k..(i + 1) * k].iter().copied()).collect();
            fit_multilabel(options.method, &probs, k, &t, options.alpha, p.class_names())
                .map(Fitted::PerLabel)
                .map_err(too_small)
        }
    }
}

/// Coverage of the fitted sets on the rows of `p` outside the calibration half.
fn evaluate_conformal(
    fitted: &Fitted,
    r: &LocatedRecord,
    p: &Predictions,
    halves: &ConformalHalves,
    seed: u64,
) -> Result<Option<(SetCoverage, usize)>, SelectiveError> {
    let rows = rows_outside(p, &halves.calibration);
    let excluded = p.len() - rows.len();
    if rows.is_empty() {
        return Ok(None);
    }
    let k = p.num_classes();
    let probs = select(&p.probabilities(), k, &rows);
    let cov = match (fitted, p.targets()) {
        (Fitted::Single(f), Targets::Classes(labels)) => {
            let y: Vec<usize> = rows.iter().map(|&i| labels[i]).collect();
            let sets = f.predict(&probs, k, &uniform_draws(seed ^ TEST_STREAM, rows.len())).map_err(|e| {
                SelectiveError::Metric { record: r.location.to_string(), message: e.to_string() }
            })?;
            set_coverage(&sets, &y, k)
        }
        (Fitted::PerLabel(f), Targets::Labels(targets)) => {
            let t: Vec<Option<bool>> =
                rows.iter().flat_map(|&i| targets[i * k..(i + 1) * k].iter().copied()).collect();
            multilabel_set_coverage(&predict_multilabel(f, &probs, k), &t, k)
        }
        _ => unreachable!("the task is checked against the clean run first"),
    };
    if cov.n == 0 {
        return Ok(None);
    }
    Ok(Some((cov, excluded)))
}

/// Whether two predictions tables of one fit are over the same classes and task.
fn check_same_task(
    clean: &Predictions,
    other: &Predictions,
    r: &LocatedRecord,
    clean_at: &str,
) -> Result<(), SelectiveError> {
    let same_task = matches!(
        (clean.targets(), other.targets()),
        (Targets::Classes(_), Targets::Classes(_)) | (Targets::Labels(_), Targets::Labels(_))
    );
    if !same_task || clean.class_names() != other.class_names() {
        return Err(SelectiveError::Mismatch {
            record: r.location.to_string(),
            message: format!(
                "its predictions have classes [{}] ({}), the clean run of the same fit ({clean_at}) has [{}] ({})",
                other.class_names().join(", "),
                other.task().as_str(),
                clean.class_names().join(", "),
                clean.task().as_str()
            ),
        });
    }
    Ok(())
}

/// The key of a fit: the run key without the condition (label fraction as its bits).
type FitKey = (String, String, Regime, String, String, u64, u64);

/// The key of a fit: the run key without the condition.
fn fit_key(r: &LocatedRecord) -> FitKey {
    let x = &r.record;
    (
        x.encoder.clone(),
        x.dataset.clone(),
        x.regime,
        x.probe.clone(),
        x.calibrator.clone(),
        x.label_fraction.to_bits(),
        x.seed,
    )
}

/// The key of a cell: the run key without the seed.
fn cell_key(r: &RunLabel) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        r.encoder,
        r.dataset,
        r.regime,
        r.probe,
        r.calibrator,
        r.label_fraction.to_bits(),
        r.condition
    )
}

/// A run with its predictions.
type RunPredictions<'a> = (&'a LocatedRecord, &'a Predictions);

/// The runs of each fit, fits in record order of their first run.
fn fits_of<'a>(
    with_predictions: &[(&'a LocatedRecord, PathBuf)],
    tables: &'a [std::sync::Arc<Predictions>],
) -> Vec<Vec<RunPredictions<'a>>> {
    let mut fit_order: Vec<FitKey> = Vec::new();
    let mut fit_runs: HashMap<FitKey, Vec<usize>> = HashMap::new();
    for (i, (r, _)) in with_predictions.iter().enumerate() {
        let key = fit_key(r);
        if !fit_runs.contains_key(&key) {
            fit_order.push(key.clone());
        }
        fit_runs.entry(key).or_default().push(i);
    }
    fit_order
        .iter()
        .map(|key| fit_runs[key].iter().map(|&i| (with_predictions[i].0, tables[i].as_ref())).collect())
        .collect()
}

/// The conformal coverage of every run of a fit with the fit's conformal sets; the number of runs with
/// no row outside the calibration half.
fn conformal_sets(
    fitted: &Fitted,
    halves: &ConformalHalves,
    seed: u64,
    members: &[RunPredictions],
    conformal: &mut Vec<RunConformal>,
) -> Result<usize, SelectiveError> {
    let quantiles = fitted.quantiles();
    let mut no_rows = 0;
    for &(r, p) in members {
        match evaluate_conformal(fitted, r, p, halves, seed)? {
            Some((cov, excluded)) => conformal.push(RunConformal {
                run: RunLabel::of(r),
                calibration_samples: halves.calibration.len(),
                quantiles: quantiles.clone(),
                samples: cov.n,
                excluded,
                coverage: cov.coverage,
                mean_set_size: cov.mean_set_size,
                empty_fraction: cov.empty_fraction,
            }),
            None => no_rows += 1,
        }
    }
    Ok(no_rows)
}

/// Shift detection of every shift run of a fit against the fit's clean predictions.
fn shift_detections(
    clean_p: &Predictions,
    members: &[RunPredictions],
) -> Result<Vec<RunShiftDetection>, SelectiveError> {
    let clean_conf = confidences(clean_p);
    let mut shift = Vec::new();
    for &(r, p) in members {
        if !matches!(r.record.condition, Condition::Shift { .. }) {
            continue;
        }
        let shifted = confidences(p);
        let mut detections = Vec::new();
        for (a, b) in clean_conf.iter().zip(&shifted) {
            detections.push(shift_detection(a, b).map_err(|e| SelectiveError::Metric {
                record: r.location.to_string(),
                message: format!("shift detection: {e}"),
            })?);
        }
        shift.push(RunShiftDetection {
            run: RunLabel::of(r),
            clean_samples: clean_p.len(),
            shifted_samples: p.len(),
            auroc: mean_defined(detections.iter().map(|d| d.auroc)),
            fpr_at_95_tpr: mean_defined(detections.iter().map(|d| d.fpr_at_95_tpr)),
        });
    }
    Ok(shift)
}

/// Runs the selective analyses (see the module documentation).
///
/// # Errors
/// α outside (0, 1); an unreadable predictions file; a fit whose runs predict other classes; a
/// calibration half too small for α; APS / RAPS on multilabel predictions.
pub fn selective_analyses(
    set: &RunRecordSet,
    options: &SelectiveOptions,
) -> Result<SelectiveReport, SelectiveError> {
    if !(options.alpha > 0.0 && options.alpha < 1.0) {
        return Err(SelectiveError::InvalidParameter {
            name: "α (--conformal-alpha)",
            message: format!("{} is not in (0, 1)", options.alpha),
        });
    }
    let (fits, _) = set.split_estimates();
    let mut notes = Vec::new();
    let mut cache = PredictionsCache::new(|p| p);
    let with_predictions: Vec<(&LocatedRecord, PathBuf)> =
        fits.records().iter().filter_map(|r| predictions_path(r).map(|p| (r, p))).collect();
    let without = fits.len() - with_predictions.len();
    if without > 0 {
        notes.push(format!(
            "{without} of {} run records have no predictions file (paths.predictions) and are not part of the \
             selective, conformal or shift-detection analyses",
            fits.len()
        ));
    }

    // 1. Selective prediction per run.
    let mut runs = Vec::with_capacity(with_predictions.len());
    let mut tables = Vec::with_capacity(with_predictions.len());
    for (r, path) in &with_predictions {
        let p = cache.get(r, path)?;
        runs.push(run_selective(r, &p)?);
        tables.push(p);
    }

    // 2–3. Conformal sets and shift detection per fit, in record order of their first run.
    let mut conformal = Vec::new();
    let mut shift = Vec::new();
    let mut no_clean = 0usize;
    let mut no_rows = 0usize;
    for members in fits_of(&with_predictions, &tables) {
        let Some(&(clean_r, clean_p)) = members.iter().find(|(r, _)| r.record.condition == Condition::Clean)
        else {
            no_clean += 1;
            continue;
        };
        let clean_at = clean_r.location.to_string();
        for &(r, p) in &members {
            check_same_task(clean_p, p, r, &clean_at)?;
        }
        let seed = split_seed(options.seed, clean_r.record.seed);
        let halves = ConformalHalves::split(clean_p.ids(), seed);
        let fitted = fit_conformal(clean_r, clean_p, &halves, options, seed)?;
        no_rows += conformal_sets(&fitted, &halves, seed, &members, &mut conformal)?;
        shift.extend(shift_detections(clean_p, &members)?);
    }
    if no_clean > 0 {
        notes.push(format!(
            "{no_clean} fit(s) have predictions but no clean-test predictions file: no conformal calibration \
             half, so no conformal sets or shift detection for them"
        ));
    }
    if no_rows > 0 {
        notes.push(format!(
            "{no_rows} run(s) have no row outside their fit's conformal calibration half (or no observed label): \
             no conformal coverage for them"
        ));
    }
    let cells = cells_of(&runs, &conformal, &shift);
    Ok(SelectiveReport {
        confidence: "msp",
        alpha: options.alpha,
        method: options.method,
        seed: options.seed,
        calibration_split: CALIBRATION_SPLIT.to_string(),
        runs,
        conformal,
        shift_detection: shift,
        cells,
        notes,
    })
}

/// The seed means per cell (run key without the seed), in the order of the cells' first runs.
fn cells_of(
    runs: &[RunSelective],
    conformal: &[RunConformal],
    shift: &[RunShiftDetection],
) -> Vec<CellSelective> {
    let mut order: Vec<String> = Vec::new();
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let key = cell_key(&r.run);
        if !by_key.contains_key(&key) {
            order.push(key.clone());
        }
        by_key.entry(key).or_default().push(i);
    }
    let mut conf_by: BTreeMap<String, Vec<&RunConformal>> = BTreeMap::new();
    for c in conformal {
        conf_by.entry(cell_key(&c.run)).or_default().push(c);
    }
    let mut shift_by: BTreeMap<String, Vec<&RunShiftDetection>> = BTreeMap::new();
    for s in shift {
        shift_by.entry(cell_key(&s.run)).or_default().push(s);
    }
    let mean = |v: Vec<Option<f64>>| mean_defined(v.into_iter().flatten());
    order
        .iter()
        .map(|key| {
            let members: Vec<&RunSelective> = by_key[key].iter().map(|&i| &runs[i]).collect();
            let first = &members[0].run;
            let points = members.iter().map(|m| m.risk_coverage.len()).min().unwrap_or(0);
            let risk_coverage = (0..points)
                .map(|j| RiskCoveragePoint {
                    coverage: members[0].risk_coverage[j].coverage,
                    risk: members.iter().map(|m| m.risk_coverage[j].risk).sum::<f64>() / members.len() as f64,
                })
                .collect();
            let conf = conf_by.get(key).map(Vec::as_slice).unwrap_or_default();
            let sh = shift_by.get(key).map(Vec::as_slice).unwrap_or_default();
            CellSelective {
                encoder: first.encoder.clone(),
                dataset: first.dataset.clone(),
                regime: first.regime,
                probe: first.probe.clone(),
                calibrator: first.calibrator.clone(),
                label_fraction: first.label_fraction,
                condition: first.condition.clone(),
                runs: members.len(),
                aurc: mean(members.iter().map(|m| m.aurc).collect()),
                eaurc: mean(members.iter().map(|m| m.eaurc).collect()),
                augrc: mean(members.iter().map(|m| m.augrc).collect()),
                risk_coverage,
                conformal_runs: conf.len(),
                coverage: mean(conf.iter().map(|c| Some(c.coverage)).collect()),
                mean_set_size: mean(conf.iter().map(|c| Some(c.mean_set_size)).collect()),
                shift_auroc: mean(sh.iter().map(|s| s.auroc).collect()),
                shift_fpr_at_95_tpr: mean(sh.iter().map(|s| s.fpr_at_95_tpr).collect()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_record::RunRecord;
    use calibra_calibrate::LastLabel;
    use calibra_predictions::read_predictions;
    use std::io::Write;
    use std::path::Path;

    /// Writes a single-label predictions file of `n` rows (ids `prefix{i}`) and returns its path.
    fn write_single(dir: &Path, name: &str, prefix: &str, n: usize, seed: u64) -> String {
        let u = uniform_draws(seed, 2 * n);
        let mut f = std::fs::File::create(dir.join(name)).unwrap();
        writeln!(f, "id,label,prob_0,prob_1,prob_2").unwrap();
        for i in 0..n {
            let y = (u[2 * i] * 3.0) as usize % 3;
            let strength = 0.2 + 0.7 * u[2 * i + 1];
            let mut p = [(1.0 - strength) / 2.0; 3];
            p[if i % 4 == 0 { (y + 1) % 3 } else { y }] = strength;
            p[2] = 1.0 - p[0] - p[1];
            writeln!(f, "{prefix}{i},{y},{},{},{}", p[0], p[1], p[2]).unwrap();
        }
        name.to_string()
    }

    fn record(cond: Condition, seed: u64, predictions: &str) -> RunRecord {
        RunRecord {
            encoder: "e".into(),
            dataset: "d".into(),
            regime: Regime::Frozen,
            probe: "linear".into(),
            calibrator: "none".into(),
            label_fraction: 1.0,
            seed,
            condition: cond,
            metrics: BTreeMap::new(),
            paths: BTreeMap::from([("predictions".to_string(), predictions.to_string())]),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    fn set(dir: &Path, n: usize) -> RunRecordSet {
        let mut records = Vec::new();
        for seed in 0..2u64 {
            let clean = write_single(dir, &format!("clean{seed}.csv"), "s", n, 10 + seed);
            let blur = write_single(dir, &format!("blur{seed}.csv"), "s", n, 20 + seed);
            let shift = write_single(dir, &format!("shift{seed}.csv"), "t", n / 2, 30 + seed);
            records.push(record(Condition::Clean, seed, &dir.join(clean).display().to_string()));
            let blur_c = Condition::Perturbation { perturbation: "gaussian_blur".into(), severity: 2 };
            records.push(record(blur_c, seed, &dir.join(blur).display().to_string()));
            let shift_c = Condition::Shift { target: "other".into() };
            records.push(record(shift_c, seed, &dir.join(shift).display().to_string()));
        }
        RunRecordSet::from_records(records, "mem").unwrap()
    }

    #[test]
    fn every_run_gets_areas_and_every_condition_of_a_fit_gets_sets() {
        let dir = tempfile::tempdir().unwrap();
        let report = selective_analyses(&set(dir.path(), 80), &SelectiveOptions::default()).unwrap();
        assert_eq!(report.runs.len(), 6);
        for r in &report.runs {
            let (aurc, augrc) = (r.aurc.unwrap(), r.augrc.unwrap());
            assert!((0.0..=1.0).contains(&aurc) && augrc >= 0.0 && r.eaurc.unwrap() >= -1e-15);
            assert_eq!(r.risk_coverage.len(), RISK_COVERAGE_POINTS);
            assert_eq!(r.risk_coverage.last().unwrap().coverage, 1.0);
        }
        assert_eq!(report.conformal.len(), 6);
        let clean = &report.conformal[0];
        assert_eq!((clean.calibration_samples, clean.samples, clean.excluded), (40, 40, 40));
        // The perturbed copies of the calibration images are left out; the shift target has its own ids.
        assert_eq!((report.conformal[1].samples, report.conformal[1].excluded), (40, 40));
        assert_eq!((report.conformal[2].samples, report.conformal[2].excluded), (40, 0));
        assert_eq!(report.shift_detection.len(), 2);
        assert_eq!(report.cells.len(), 3);
        assert!(report.cells.iter().all(|c| c.runs == 2 && c.conformal_runs == 2));
        assert!(report.cells[2].shift_auroc.is_some() && report.cells[0].shift_auroc.is_none());
    }

    #[test]
    fn bad_alpha_small_splits_and_multilabel_aps_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = set(dir.path(), 80);
        for alpha in [0.0, 1.0, -0.5, f64::NAN] {
            let err = selective_analyses(&s, &SelectiveOptions { alpha, ..SelectiveOptions::default() })
                .unwrap_err()
                .to_string();
            assert!(err.contains("(0, 1)"), "{err}");
        }
        // 80 rows → a calibration half of 40 < 1/0.02 − 1 = 49.
        let err = selective_analyses(&s, &SelectiveOptions { alpha: 0.02, ..SelectiveOptions::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("mem:1") && err.contains("40 of 80") && err.contains("too small"), "{err}");

        let path = dir.path().join("ml.csv");
        std::fs::write(
            &path,
            "id,label_a,label_b,prob_a,prob_b\nx,1,0,0.9,0.2\ny,0,,0.3,0.4\nz,1,1,0.6,0.7\nw,0,1,0.1,0.8\n\
             v,1,0,0.7,0.3\nu,0,0,0.2,0.1\n",
        )
        .unwrap();
        let ml =
            RunRecordSet::from_records(vec![record(Condition::Clean, 0, &path.display().to_string())], "mem")
                .unwrap();
        let aps = SelectiveOptions {
            alpha: 0.5,
            method: ConformalMethod::Aps { last_label: LastLabel::Include },
            ..SelectiveOptions::default()
        };
        let err = selective_analyses(&ml, &aps).unwrap_err().to_string();
        assert!(err.contains("no multilabel form") && err.contains("--conformal-method lac"), "{err}");
        let lac = SelectiveOptions { alpha: 0.5, ..SelectiveOptions::default() };
        let report = selective_analyses(&ml, &lac).unwrap();
        assert_eq!(report.conformal[0].quantiles.len(), 2);
    }

    #[test]
    fn multilabel_areas_are_those_of_calibra_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ml.csv");
        let mut text = String::from("id,label_a,label_b,prob_a,prob_b\n");
        let u = uniform_draws(5, 120);
        for i in 0..40 {
            let b = if i % 5 == 0 { String::new() } else { u32::from(u[3 * i + 2] > 0.5).to_string() };
            text.push_str(&format!("r{i},{},{b},{},{}\n", u32::from(u[3 * i] > 0.4), u[3 * i], u[3 * i + 1]));
        }
        std::fs::write(&path, text).unwrap();
        let r = record(Condition::Clean, 0, &path.display().to_string());
        let set = RunRecordSet::from_records(vec![r], "mem").unwrap();
        let report = selective_analyses(&set, &SelectiveOptions::default()).unwrap();
        let p = read_predictions(&path).unwrap();
        let Targets::Labels(t) = p.targets() else { panic!("multilabel") };
        let want = calibra_metrics::summarize_selective_multilabel(&p.probabilities(), 2, t).unwrap();
        assert_eq!(report.runs[0].aurc, want.aurc);
        assert_eq!(report.runs[0].augrc, want.augrc);
        assert_eq!(report.runs[0].eaurc, want.eaurc);
    }
}
