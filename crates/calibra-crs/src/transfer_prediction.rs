//! Predicted versus adapted (issue 18 item 5): does a transferability estimator, computed on frozen
//! features before any fine-tuning, rank the encoders as the adapted runs of the same run set do?
//!
//! # Inputs
//! - **Estimate records** (regime [`Regime::Estimate`], see its record contract): per (encoder,
//!   dataset, layer) one score per estimator (`logme`, `hscore`, …), higher = predicted better. Records
//!   off the contract (a calibrator other than `none`, a label fraction other than 1, a condition other
//!   than clean, a probe that is not `estimators[@layer]`) are ignored with a note. Several seeds of one
//!   (encoder, dataset, layer) are averaged.
//! - **Targets**: every method of every adapted regime that [`crate::regime_comparison`] identifies
//!   (LoRA, full, each CoOp loss, zero-shot as mean over templates and as best template) and the axis
//!   regime's probe (the frozen probes), with per cell (encoder × dataset) the seed-mean clean
//!   full-label uncalibrated values the regime comparisons use.
//! - **Outcomes** per target: `discrimination` (the axis discrimination metric, e.g. macro AUROC),
//!   `calibration_error` (the axis calibration metric, e.g. ECE; ranked by −ECE, lower is better) and,
//!   for the axis regime only, `crs` (per dataset from the per-domain CRS, overall the panel CRS).
//!
//! # Scopes
//! Each dataset on its own, and `overall`: per encoder, the mean over the datasets that every compared
//! encoder has (both an estimator score and an outcome; for `crs`, an estimator score, the outcome
//! being the panel CRS) of the estimator score and of the outcome. Raw estimator scores are averaged,
//! so datasets with larger score scales weigh more in `overall`; the verdicts use the per-dataset τ-b.
//!
//! # Statistics (per scope × estimator × layer × target × outcome)
//! Over the encoders with both an estimator score and an outcome in the scope (at least 2, else the
//! combination is skipped and counted in a note):
//! - Kendall τ-b (ties honoured), Spearman ρ (average ranks for ties) and the weighted (additive
//!   hyperbolic) τ of the estimator scores against the oriented outcome (calibra-metrics, scipy parity);
//!   `None` where undefined (a constant series);
//! - **top-3 shortlist regret** (at least 3 encoders, else `None` with a note on the row): the
//!   shortlist is the 3 encoders the estimator ranks highest (ties broken by encoder name, the earlier
//!   first); regret = best outcome over all compared encoders − best outcome within the shortlist
//!   (oriented, so ≥ 0), in AUROC points (×100) for discrimination, ECE points (×100) for calibration
//!   error and CRS units for the CRS;
//! - **fits saved**: run records carry no timings by design (reruns are byte-identical), so the saving
//!   counts **fits, not seconds**: the target regime's distinct (encoder, dataset, probe, label fraction,
//!   seed) groups — every condition and calibrator of a fit is one fit — over the method's probes (every
//!   template of a template method; zero-shot "fits" are its prompted prediction runs) in the scope's
//!   datasets, of the compared encoders outside the shortlist, also as a fraction of the compared
//!   encoders' fits.
//!
//! # Verdict rule
//! An estimator (at one layer) **predicts** an outcome of a target when its per-dataset τ-b is at least
//! [`PREDICTS_TAU_B`] in at least half of the datasets where its τ-b is defined (at least one). Per
//! (target, outcome) the verdict names, among the estimators that predict it, the one of highest mean
//! per-dataset τ-b; when none does, the best by mean τ-b, stated as "no estimator predicts". The
//! headlines apply the same rule over all targets of an outcome (discrimination and calibration error
//! after adaptation, and the CRS).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::run_record::{Condition, Regime, RunRecordSet, estimate_layer};
use crate::score::ordinal_ranks;

/// The estimator names of the record contract, in their canonical (table) order; other metric names of
/// estimate records are compared too and listed after these, alphabetically.
pub const ESTIMATORS: [&str; 8] = [
    "logme",
    "hscore",
    "hscore_shrinkage",
    "gbc",
    "nleep",
    "transrate",
    "effective_dimensionality",
    "knn_agreement",
];

/// The shortlist size of the regret and the fits saved.
pub const SHORTLIST: usize = 3;

/// The per-dataset τ-b at which an estimator counts as predicting an outcome (see the module docs).
pub const PREDICTS_TAU_B: f64 = 0.5;

/// The scope label of the across-datasets rows.
pub const OVERALL: &str = "overall";

/// What is predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The axis discrimination metric (larger is better).
    Discrimination,
    /// The axis calibration metric (lower is better; ranked by its negation).
    CalibrationError,
    /// The axis regime's CRS.
    Crs,
}

impl Outcome {
    /// The name used in tables.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Discrimination => "discrimination",
            Outcome::CalibrationError => "calibration_error",
            Outcome::Crs => "crs",
        }
    }

    /// Regret scale: points (×100) for the [0, 1] metrics, CRS units for the CRS.
    fn regret_scale(self) -> f64 {
        match self {
            Outcome::Discrimination | Outcome::CalibrationError => 100.0,
            Outcome::Crs => 1.0,
        }
    }
}

/// One prediction target: a regime's method with its outcomes per cell, oriented (higher is better:
/// calibration error enters as its negation).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetValues {
    pub regime: Regime,
    /// As in [`crate::RegimeComparison::method`]; for the axis regime its probe(s).
    pub method: String,
    /// The probes whose fits the method needs (fits saved are counted over these).
    pub probes: Vec<String>,
    /// Outcome → (encoder, dataset) → oriented value.
    pub cells: BTreeMap<Outcome, BTreeMap<(String, String), f64>>,
    /// Outcome → encoder → oriented value of the `overall` scope where it is not the mean over
    /// datasets (the panel CRS).
    pub overall: BTreeMap<Outcome, BTreeMap<String, f64>>,
}

/// One compared combination (a row of the table).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredictionRow {
    /// A dataset, or [`OVERALL`].
    pub scope: String,
    /// The datasets the row covers (one for a dataset scope).
    pub datasets: Vec<String>,
    pub estimator: String,
    /// Depth fraction of the features (1 = full depth).
    pub layer: f64,
    pub regime: Regime,
    pub method: String,
    pub outcome: Outcome,
    /// The metric behind the outcome (e.g. `macro_auroc`, `ece`, `crs`).
    pub metric: String,
    /// Compared encoders, in name order, with the estimator score and the outcome (raw: ECE as ECE).
    pub encoders: Vec<String>,
    pub scores: Vec<f64>,
    pub outcomes: Vec<f64>,
    pub kendall_tau_b: Option<f64>,
    pub spearman_rho: Option<f64>,
    pub weighted_tau: Option<f64>,
    /// The top-[`SHORTLIST`] encoders by estimator score (empty below 3 encoders).
    pub shortlist: Vec<String>,
    /// Best outcome − best outcome in the shortlist, in `regret_unit`; `None` below 3 encoders.
    pub regret: Option<f64>,
    /// `points` (×100 of the metric) or `crs`.
    pub regret_unit: &'static str,
    /// The compared encoders' fits of the target in the row's datasets.
    pub fits: usize,
    /// Of those, the fits of the encoders outside the shortlist; `None` below 3 encoders.
    pub fits_saved: Option<usize>,
    pub fits_saved_fraction: Option<f64>,
    pub note: Option<String>,
}

/// The best estimator for one outcome (of one target, or of all targets for a headline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub outcome: Outcome,
    /// `None` for a headline over all targets.
    pub regime: Option<Regime>,
    pub method: Option<String>,
    /// The best estimator and its layer; `None` when no τ-b was defined.
    pub estimator: Option<String>,
    pub layer: Option<f64>,
    /// For a headline: the target of the best estimator.
    pub best_target: Option<String>,
    /// Mean per-dataset τ-b of the best estimator.
    pub mean_tau_b: Option<f64>,
    /// Datasets where its τ-b is at least [`PREDICTS_TAU_B`], of the datasets where it is defined.
    pub datasets_meeting: usize,
    pub datasets: usize,
    /// Whether it meets the rule of the module docs.
    pub predicts: bool,
    pub sentence: String,
}

/// One estimator at one layer against one target's outcome, over the datasets: what the verdicts and
/// the report's figure are made of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EstimatorSummary {
    pub estimator: String,
    pub layer: f64,
    pub regime: Regime,
    pub method: String,
    pub outcome: Outcome,
    /// Mean of the per-dataset τ-b where defined; `None` when it is defined in no dataset.
    pub mean_tau_b: Option<f64>,
    /// Datasets with τ-b ≥ [`PREDICTS_TAU_B`], of the datasets where τ-b is defined.
    pub datasets_meeting: usize,
    pub datasets: usize,
    /// Whether it meets the rule of the module docs.
    pub predicts: bool,
}

/// The predicted-versus-adapted analysis (`evaluation.json`'s `transfer_prediction`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransferPrediction {
    /// Estimate records read (including ignored ones).
    pub estimate_records: usize,
    pub estimators: Vec<String>,
    pub layers: Vec<f64>,
    /// Targets as `regime method`, in table order.
    pub targets: Vec<String>,
    pub rule: String,
    pub rows: Vec<PredictionRow>,
    /// Per (target, outcome, estimator, layer), in table order.
    pub summaries: Vec<EstimatorSummary>,
    /// Per (target, outcome).
    pub verdicts: Vec<Verdict>,
    /// Per outcome over all targets.
    pub headlines: Vec<Verdict>,
    /// Skipped combinations and ignored records, and why.
    pub notes: Vec<String>,
}

/// `logme` at layer 1, `logme@0.5` below (the `probe@layer` convention).
pub fn estimator_label(estimator: &str, layer: f64) -> String {
    if layer == 1.0 { estimator.to_string() } else { format!("{estimator}@{layer}") }
}

/// `lora ce`, `frozen linear`.
pub fn target_label(regime: Regime, method: &str) -> String {
    format!("{regime} {method}")
}

fn defined(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// (encoder, dataset).
type Cell = (String, String);
/// (encoder, estimator score, oriented outcome).
type Pair = (String, f64, f64);
/// Estimator scores: (estimator, layer bits) → (encoder, dataset) → mean over seeds.
type Scores = BTreeMap<(String, u64), BTreeMap<Cell, f64>>;

fn read_scores(estimates: &RunRecordSet, notes: &mut Vec<String>) -> Scores {
    let mut sums: BTreeMap<(String, u64), BTreeMap<Cell, (f64, usize)>> = BTreeMap::new();
    let mut ignored: BTreeMap<String, usize> = BTreeMap::new();
    for located in estimates.records() {
        let r = &located.record;
        let reason = if r.regime != Regime::Estimate {
            Some("not of regime estimate".to_string())
        } else if r.calibrator != "none" {
            Some("calibrator other than none".to_string())
        } else if r.label_fraction != 1.0 {
            Some("label fraction other than 1".to_string())
        } else if r.condition != Condition::Clean {
            Some("condition other than clean".to_string())
        } else if estimate_layer(&r.probe).is_none() {
            Some(format!("probe `{}` is not `estimators` or `estimators@<layer in (0, 1]>`", r.probe))
        } else {
            None
        };
        if let Some(reason) = reason {
            *ignored.entry(reason).or_default() += 1;
            continue;
        }
        let layer = estimate_layer(&r.probe).unwrap_or(1.0);
        for (name, &value) in &r.metrics {
            let cell = sums
                .entry((name.clone(), layer.to_bits()))
                .or_default()
                .entry((r.encoder.clone(), r.dataset.clone()))
                .or_default();
            cell.0 += value;
            cell.1 += 1;
        }
    }
    for (reason, n) in ignored {
        notes.push(format!("{n} estimate record(s) ignored: {reason} (see the estimate record contract)"));
    }
    sums.into_iter()
        .map(|(k, cells)| (k, cells.into_iter().map(|(c, (s, n))| (c, s / n as f64)).collect()))
        .collect()
}

/// The canonical estimator order: [`ESTIMATORS`] first, then the others by name.
fn estimator_order(name: &str) -> (usize, String) {
    (ESTIMATORS.iter().position(|e| *e == name).unwrap_or(ESTIMATORS.len()), name.to_string())
}

/// Distinct fits (encoder, dataset, probe, label fraction, seed) of `regime` over `probes`.
fn fit_index(fits: &RunRecordSet, regime: Regime, probes: &[String]) -> BTreeSet<Fit> {
    fits.records()
        .iter()
        .map(|l| &l.record)
        .filter(|r| r.regime == regime && probes.contains(&r.probe))
        .map(|r| (r.encoder.clone(), r.dataset.clone(), r.probe.clone(), r.label_fraction.to_bits(), r.seed))
        .collect()
}

/// The statistics of one compared set (`pairs`: (encoder, score, oriented outcome), name order).
struct Compared {
    tau_b: Option<f64>,
    rho: Option<f64>,
    weighted: Option<f64>,
    shortlist: Vec<String>,
    regret: Option<f64>,
}

fn compare(pairs: &[(String, f64, f64)], scale: f64) -> Compared {
    let x: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let y: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    let (shortlist, regret) = if pairs.len() >= SHORTLIST {
        let ranks = ordinal_ranks(&x);
        let short: Vec<usize> = (0..pairs.len()).filter(|&i| ranks[i] <= SHORTLIST).collect();
        let best = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let best_short = short.iter().map(|&i| y[i]).fold(f64::NEG_INFINITY, f64::max);
        (short.iter().map(|&i| pairs[i].0.clone()).collect(), Some((best - best_short) * scale))
    } else {
        (Vec::new(), None)
    };
    Compared {
        tau_b: defined(calibra_metrics::kendall_tau_b(&x, &y)),
        rho: defined(calibra_metrics::spearman_rho(&x, &y)),
        weighted: defined(calibra_metrics::weighted_tau(&x, &y)),
        shortlist,
        regret,
    }
}

/// The metric names behind the outcomes.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeMetrics {
    pub discrimination: String,
    pub calibration: String,
}

impl OutcomeMetrics {
    fn of(&self, outcome: Outcome) -> String {
        match outcome {
            Outcome::Discrimination => self.discrimination.clone(),
            Outcome::CalibrationError => self.calibration.clone(),
            Outcome::Crs => "crs".to_string(),
        }
    }
}

/// The analysis (see the module docs); `None` when `estimates` is empty.
///
/// `fits` are the run set's other records (for the fits saved), `targets` the prediction targets in
/// table order, `notes` what the caller already knows was skipped (e.g. targets it could not form).
pub fn transfer_prediction(
    estimates: &RunRecordSet,
    fits: &RunRecordSet,
    targets: &[TargetValues],
    metrics: &OutcomeMetrics,
    mut notes: Vec<String>,
) -> Option<TransferPrediction> {
    if estimates.is_empty() {
        return None;
    }
    let scores = read_scores(estimates, &mut notes);
    let keys = ordered_keys(&scores);
    let mut estimators: Vec<String> = Vec::new();
    for (name, _) in &keys {
        if !estimators.contains(name) {
            estimators.push(name.clone());
        }
    }
    let mut layers: Vec<f64> = keys.iter().map(|k| f64::from_bits(k.1)).collect();
    layers.sort_by(f64::total_cmp);
    layers.dedup();
    if targets.is_empty() {
        notes.push(
            "no prediction target: the run set has no adapted regime and no axis-regime cells to compare \
             the estimators with"
                .into(),
        );
    }
    let mut rows = Vec::new();
    let mut skipped = Skipped::new();
    for target in targets {
        rows.extend(target_rows(target, &keys, &scores, fits, metrics, &mut skipped));
    }
    for ((scope, target, outcome, reason), n) in skipped {
        notes.push(format!(
            "{scope}, {target}, {}: {n} estimator/layer pair(s) skipped: {reason}",
            outcome.name()
        ));
    }
    sort_rows(&mut rows, targets);
    let summaries = estimator_summaries(&rows);
    let verdicts = target_verdicts(targets, &rows, metrics);
    let headlines = headlines(targets, &rows, metrics);
    Some(TransferPrediction {
        estimate_records: estimates.len(),
        estimators,
        layers,
        targets: targets.iter().map(|t| target_label(t.regime, &t.method)).collect(),
        rule: format!(
            "an estimator predicts an outcome when its per-dataset Kendall τ-b is ≥ {PREDICTS_TAU_B} in at least \
             half of the datasets where it is defined; the best estimator is the one of highest mean per-dataset \
             τ-b (among those that predict, if any)"
        ),
        rows,
        summaries,
        verdicts,
        headlines,
        notes,
    })
}

/// (scope kind, target, outcome, reason) → skipped estimator/layer pairs.
type Skipped = BTreeMap<(String, String, Outcome, &'static str), usize>;

/// A fit: (encoder, dataset, probe, label fraction bits, seed).
type Fit = (String, String, String, u64, u64);

/// The estimator/layer keys of `scores`, in estimator order then by layer.
fn ordered_keys(scores: &Scores) -> Vec<&(String, u64)> {
    let mut keys: Vec<&(String, u64)> = scores.keys().collect();
    keys.sort_by(|a, b| {
        estimator_order(&a.0)
            .cmp(&estimator_order(&b.0))
            .then(f64::from_bits(a.1).total_cmp(&f64::from_bits(b.1)))
    });
    keys
}

/// One compared set: its scope (a dataset or [`OVERALL`]), the datasets it covers, and (encoder,
/// score, oriented outcome) in encoder order.
struct Scoped {
    scope: String,
    datasets: Vec<String>,
    pairs: Vec<Pair>,
}

/// The rows of one target: every outcome × estimator/layer × scope with at least 2 encoders (the others
/// are counted in `skipped`).
fn target_rows(
    target: &TargetValues,
    keys: &[&(String, u64)],
    scores: &Scores,
    fits: &RunRecordSet,
    metrics: &OutcomeMetrics,
    skipped: &mut Skipped,
) -> Vec<PredictionRow> {
    let fit_set = fit_index(fits, target.regime, &target.probes);
    let tlabel = target_label(target.regime, &target.method);
    let mut rows = Vec::new();
    for (&outcome, actual) in &target.cells {
        for key in keys {
            let est = &scores[*key];
            for scoped in scoped_pairs(target, outcome, actual, est, &tlabel, skipped) {
                if scoped.pairs.len() < 2 {
                    let kind = if scoped.scope == OVERALL {
                        OVERALL.to_string()
                    } else {
                        format!("dataset {}", scoped.scope)
                    };
                    *skipped
                        .entry((
                            kind,
                            tlabel.clone(),
                            outcome,
                            "fewer than 2 encoders with both a score and an outcome",
                        ))
                        .or_default() += 1;
                    continue;
                }
                rows.push(prediction_row(target, outcome, key, scoped, &fit_set, metrics));
            }
        }
    }
    rows
}

/// The compared sets of one estimator/layer (`est`: its score per cell) for one outcome of a target
/// (`actual`: the outcome per cell): one per dataset, then the overall set over the datasets every
/// compared encoder has (counted in `skipped` when there is none).
fn scoped_pairs(
    target: &TargetValues,
    outcome: Outcome,
    actual: &BTreeMap<Cell, f64>,
    est: &BTreeMap<Cell, f64>,
    tlabel: &str,
    skipped: &mut Skipped,
) -> Vec<Scoped> {
    let datasets: BTreeSet<&String> = actual.keys().map(|(_, d)| d).collect();
    let mut scoped: Vec<Scoped> = Vec::new();
    for &d in &datasets {
        let pairs: Vec<(String, f64, f64)> = actual
            .iter()
            .filter(|((_, ds), _)| ds == d)
            .filter_map(|((e, ds), &v)| Some((e.clone(), *est.get(&(e.clone(), ds.clone()))?, v)))
            .collect();
        scoped.push(Scoped { scope: d.clone(), datasets: vec![d.clone()], pairs });
    }
    // Overall: the datasets every compared encoder has.
    let overall_actual = target.overall.get(&outcome);
    let mut per_encoder: BTreeMap<&String, BTreeSet<&String>> = BTreeMap::new();
    for (e, d) in est.keys() {
        let has = match overall_actual {
            Some(o) => o.contains_key(e),
            None => actual.contains_key(&(e.clone(), d.clone())),
        };
        if has {
            per_encoder.entry(e).or_default().insert(d);
        }
    }
    let common: Option<BTreeSet<&String>> =
        per_encoder.values().cloned().reduce(|a, b| a.intersection(&b).copied().collect());
    match common {
        Some(common) if !common.is_empty() => {
            let n = common.len() as f64;
            let pairs: Vec<(String, f64, f64)> = per_encoder
                .keys()
                .map(|&e| {
                    let s = common.iter().map(|&d| est[&(e.clone(), d.clone())]).sum::<f64>() / n;
                    let v = match overall_actual {
                        Some(o) => o[e],
                        None => common.iter().map(|&d| actual[&(e.clone(), d.clone())]).sum::<f64>() / n,
                    };
                    (e.clone(), s, v)
                })
                .collect();
            scoped.push(Scoped {
                scope: OVERALL.to_string(),
                datasets: common.into_iter().cloned().collect(),
                pairs,
            });
        }
        Some(_) => {
            *skipped
                .entry((
                    OVERALL.into(),
                    tlabel.to_string(),
                    outcome,
                    "no dataset that every compared encoder has",
                ))
                .or_default() += 1;
        }
        None => {}
    }
    scoped
}

/// The row of one compared set (at least 2 encoders), with the fits its shortlist saves.
fn prediction_row(
    target: &TargetValues,
    outcome: Outcome,
    key: &(String, u64),
    scoped: Scoped,
    fit_set: &BTreeSet<Fit>,
    metrics: &OutcomeMetrics,
) -> PredictionRow {
    let Scoped { scope, datasets: row_datasets, pairs } = scoped;
    let sign = if outcome == Outcome::CalibrationError { -1.0 } else { 1.0 };
    let c = compare(&pairs, outcome.regret_scale());
    let encoders: BTreeSet<&String> = pairs.iter().map(|p| &p.0).collect();
    let in_scope = |f: &&Fit| encoders.contains(&f.0) && row_datasets.contains(&f.1);
    let n_fits = fit_set.iter().filter(in_scope).count();
    let (fits_saved, fraction) = if c.regret.is_some() {
        let saved = fit_set.iter().filter(in_scope).filter(|f| !c.shortlist.contains(&f.0)).count();
        (Some(saved), (n_fits > 0).then(|| saved as f64 / n_fits as f64))
    } else {
        (None, None)
    };
    let note = (pairs.len() < SHORTLIST).then(|| {
        format!("{} encoders: no top-{SHORTLIST} shortlist, so no regret or fits saved", pairs.len())
    });
    PredictionRow {
        scope,
        datasets: row_datasets,
        estimator: key.0.clone(),
        layer: f64::from_bits(key.1),
        regime: target.regime,
        method: target.method.clone(),
        outcome,
        metric: metrics.of(outcome),
        encoders: pairs.iter().map(|p| p.0.clone()).collect(),
        scores: pairs.iter().map(|p| p.1).collect(),
        outcomes: pairs.iter().map(|p| sign * p.2).collect(),
        kendall_tau_b: c.tau_b,
        spearman_rho: c.rho,
        weighted_tau: c.weighted,
        shortlist: c.shortlist,
        regret: c.regret,
        regret_unit: if outcome == Outcome::Crs { "crs" } else { "points" },
        fits: n_fits,
        fits_saved,
        fits_saved_fraction: fraction,
        note,
    }
}

/// Rows: targets in the given order, then outcome, estimator, layer, scope (datasets, then overall).
fn sort_rows(rows: &mut [PredictionRow], targets: &[TargetValues]) {
    let target_pos = |r: &PredictionRow| {
        targets.iter().position(|t| t.regime == r.regime && t.method == r.method).unwrap_or(usize::MAX)
    };
    rows.sort_by(|a, b| {
        target_pos(a)
            .cmp(&target_pos(b))
            .then(a.outcome.cmp(&b.outcome))
            .then(estimator_order(&a.estimator).cmp(&estimator_order(&b.estimator)))
            .then(a.layer.total_cmp(&b.layer))
            .then((a.scope == OVERALL).cmp(&(b.scope == OVERALL)))
            .then(a.scope.cmp(&b.scope))
    });
}

/// Per (target, outcome, estimator, layer): the mean per-dataset τ-b and whether the estimator predicts.
fn estimator_summaries(rows: &[PredictionRow]) -> Vec<EstimatorSummary> {
    let mut summaries: Vec<EstimatorSummary> = Vec::new();
    for r in rows.iter().filter(|r| r.scope != OVERALL) {
        let found = summaries.iter_mut().find(|s| {
            s.regime == r.regime
                && s.method == r.method
                && s.outcome == r.outcome
                && s.estimator == r.estimator
                && s.layer == r.layer
        });
        let s = match found {
            Some(s) => s,
            None => {
                summaries.push(EstimatorSummary {
                    estimator: r.estimator.clone(),
                    layer: r.layer,
                    regime: r.regime,
                    method: r.method.clone(),
                    outcome: r.outcome,
                    mean_tau_b: None,
                    datasets_meeting: 0,
                    datasets: 0,
                    predicts: false,
                });
                summaries.last_mut().expect("just pushed")
            }
        };
        if let Some(tau) = r.kendall_tau_b {
            // Running sum in mean_tau_b; divided below.
            s.mean_tau_b = Some(s.mean_tau_b.unwrap_or(0.0) + tau);
            s.datasets += 1;
            s.datasets_meeting += usize::from(tau >= PREDICTS_TAU_B);
        }
    }
    for s in &mut summaries {
        s.mean_tau_b = s.mean_tau_b.map(|sum| sum / s.datasets as f64);
        s.predicts = s.datasets > 0 && 2 * s.datasets_meeting >= s.datasets;
    }
    summaries
}

/// The verdict of every target and outcome, in target order.
fn target_verdicts(
    targets: &[TargetValues],
    rows: &[PredictionRow],
    metrics: &OutcomeMetrics,
) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    for target in targets {
        let regime = target.regime;
        for &outcome in target.cells.keys() {
            let of_target: Vec<&PredictionRow> = rows
                .iter()
                .filter(|r| r.regime == regime && r.method == target.method && r.outcome == outcome)
                .collect();
            verdicts.push(verdict(outcome, Some((regime, target.method.as_str())), &of_target, metrics));
        }
    }
    verdicts
}

/// The verdict of every outcome some target has, over every target's rows.
fn headlines(targets: &[TargetValues], rows: &[PredictionRow], metrics: &OutcomeMetrics) -> Vec<Verdict> {
    let mut headlines = Vec::new();
    for outcome in [Outcome::Discrimination, Outcome::CalibrationError, Outcome::Crs] {
        let of_outcome: Vec<&PredictionRow> = rows.iter().filter(|r| r.outcome == outcome).collect();
        if targets.iter().any(|t| t.cells.contains_key(&outcome)) {
            headlines.push(verdict(outcome, None, &of_outcome, metrics));
        }
    }
    headlines
}

/// What an outcome is called in a verdict sentence.
fn outcome_words(outcome: Outcome, metrics: &OutcomeMetrics) -> String {
    match outcome {
        Outcome::Discrimination => format!("post-adaptation {}", metrics.discrimination),
        Outcome::CalibrationError => format!("post-adaptation {}", metrics.calibration.to_uppercase()),
        Outcome::Crs => "the CRS".to_string(),
    }
}

/// The verdict over `rows` (one target's, or every target's for a headline `target` of `None`).
fn verdict(
    outcome: Outcome,
    target: Option<(Regime, &str)>,
    rows: &[&PredictionRow],
    metrics: &OutcomeMetrics,
) -> Verdict {
    // (target, estimator, layer) → per-dataset τ-b values.
    type Candidate = (String, (usize, String), u64);
    let mut per: BTreeMap<Candidate, (String, Vec<f64>)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.scope != OVERALL) {
        let Some(tau) = r.kendall_tau_b else { continue };
        let t = target_label(r.regime, &r.method);
        per.entry((t, estimator_order(&r.estimator), r.layer.to_bits()))
            .or_insert_with(|| (r.estimator.clone(), Vec::new()))
            .1
            .push(tau);
    }
    let scored: Vec<(&Candidate, &String, f64, usize, usize)> = per
        .iter()
        .map(|(k, (name, taus))| {
            let mean = taus.iter().sum::<f64>() / taus.len() as f64;
            let meeting = taus.iter().filter(|&&t| t >= PREDICTS_TAU_B).count();
            (k, name, mean, meeting, taus.len())
        })
        .collect();
    let predicts = |s: &(&Candidate, &String, f64, usize, usize)| s.4 > 0 && 2 * s.3 >= s.4;
    // Highest mean τ-b; ties: the earlier candidate (target, estimator order, layer).
    let best_of = |pool: &[usize]| -> Option<usize> {
        pool.iter().copied().fold(None, |acc: Option<usize>, i| match acc {
            Some(a) if scored[a].2 >= scored[i].2 => Some(a),
            _ => Some(i),
        })
    };
    let meeting: Vec<usize> = (0..scored.len()).filter(|&i| predicts(&scored[i])).collect();
    let any_predicts = !meeting.is_empty();
    let all: Vec<usize> = (0..scored.len()).collect();
    let best = if any_predicts { best_of(&meeting) } else { best_of(&all) }.map(|i| scored[i]);
    let what = outcome_words(outcome, metrics);
    let for_target = target.map(|(r, m)| format!(" for {}", target_label(r, m))).unwrap_or_default();
    let Some((cand, name, mean, k, n)) = best else {
        return Verdict {
            outcome,
            regime: target.map(|t| t.0),
            method: target.map(|t| t.1.to_string()),
            estimator: None,
            layer: None,
            best_target: None,
            mean_tau_b: None,
            datasets_meeting: 0,
            datasets: 0,
            predicts: false,
            sentence: format!(
                "{what}{for_target}: not assessed (no dataset with at least 2 encoders and a defined τ-b)"
            ),
        };
    };
    let layer = f64::from_bits(cand.2);
    let label = estimator_label(name, layer);
    let best_target = target.is_none().then(|| cand.0.clone());
    let sentence = if any_predicts {
        // A headline names the target of its best estimator as a per-target verdict does.
        let for_best = best_target.as_ref().map(|t| format!(" for {t}")).unwrap_or(for_target);
        format!(
            "{label} predicts {what}{for_best}: τ-b ≥ {PREDICTS_TAU_B} in {k} of {n} dataset(s), mean τ-b {mean:.2}"
        )
    } else {
        let on = best_target.as_ref().map(|t| format!(", {t}")).unwrap_or_default();
        format!(
            "no estimator predicts {what}{for_target}: best mean τ-b {mean:.2} ({label}{on}; τ-b ≥ {PREDICTS_TAU_B} in \
             {k} of {n} dataset(s))"
        )
    };
    Verdict {
        outcome,
        regime: target.map(|t| t.0),
        method: target.map(|t| t.1.to_string()),
        estimator: Some(name.clone()),
        layer: Some(layer),
        best_target,
        mean_tau_b: Some(mean),
        datasets_meeting: k,
        datasets: n,
        predicts: any_predicts,
        sentence,
    }
}

/// The prediction targets of an evaluation: the axis regime (its cells, with the per-domain and panel
/// CRS; `axis_cells` empty without a CRS) first, then every method of every other regime
/// ([`crate::regime_comparison`]). A regime whose methods cannot be formed is left out with a note.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prediction_targets(
    table: &crate::metric_rows::SeedTable,
    means: &[f64],
    axes: &crate::axes::AxisConfig,
    regimes: &[Regime],
    axis_cells: &[crate::axes::CellAxes],
    per_domain: &[crate::per_domain::DomainCrs],
    crs: &[crate::encoder_crs::EncoderCrs],
    notes: &mut Vec<String>,
) -> Vec<TargetValues> {
    let mut out = Vec::new();
    if !axis_cells.is_empty() {
        let mut probes: Vec<String> = match &axes.probe {
            Some(p) => vec![p.clone()],
            None => table
                .groups()
                .iter()
                .filter(|g| g.regime == axes.regime)
                .filter(|g| axes.calibrator.as_ref().is_none_or(|c| *c == g.calibrator))
                .map(|g| g.probe.clone())
                .collect(),
        };
        probes.sort();
        probes.dedup();
        let cell = |c: &crate::axes::CellAxes| (c.encoder.clone(), c.dataset.clone());
        let mut cells = BTreeMap::new();
        cells.insert(
            Outcome::Discrimination,
            axis_cells.iter().filter_map(|c| Some((cell(c), c.values.discrimination?))).collect(),
        );
        cells.insert(
            Outcome::CalibrationError,
            axis_cells.iter().filter_map(|c| Some((cell(c), c.values.calibration?))).collect(),
        );
        let mut overall = BTreeMap::new();
        if !crs.is_empty() {
            cells.insert(
                Outcome::Crs,
                per_domain
                    .iter()
                    .flat_map(|d| d.scores.iter().map(|(e, v, _)| ((e.clone(), d.dataset.clone()), *v)))
                    .collect(),
            );
            overall.insert(Outcome::Crs, crs.iter().map(|c| (c.encoder.clone(), c.crs)).collect());
        }
        out.push(TargetValues { regime: axes.regime, method: probes.join(", "), probes, cells, overall });
    }
    let others: Vec<Regime> =
        regimes.iter().copied().filter(|&r| r != axes.regime && r != Regime::Estimate).collect();
    for regime in others {
        match crate::regime_comparison::method_targets(table, means, axes, &[regime]) {
            Ok(methods) => {
                for m in methods {
                    let mut cells = BTreeMap::new();
                    cells.insert(
                        Outcome::Discrimination,
                        m.cells.iter().filter_map(|(k, v)| Some((k.clone(), v.0?))).collect(),
                    );
                    cells.insert(
                        Outcome::CalibrationError,
                        m.cells.iter().filter_map(|(k, v)| Some((k.clone(), v.1?))).collect(),
                    );
                    out.push(TargetValues {
                        regime: m.regime,
                        method: m.method,
                        probes: m.probes,
                        cells,
                        overall: BTreeMap::new(),
                    });
                }
            }
            Err(e) => notes.push(format!("regime {regime} is not a prediction target: {e}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::{Evaluation, EvaluationOptions};
    use crate::run_record::RunRecord;
    use proptest::prelude::*;

    const ENCODERS: [&str; 4] = ["a", "b", "c", "d"];
    const DATASETS: [&str; 2] = ["d1", "d2"];
    const FRACTIONS: [f64; 5] = [0.01, 0.05, 0.1, 0.25, 1.0];
    const SEEDS: [u64; 2] = [0, 1];
    /// Inputs of the construction (per encoder, per dataset): LoRA's clean AUROC and ECE at seed 0.
    const LORA_AUROC: [[f64; 2]; 4] = [[0.80, 0.86], [0.84, 0.81], [0.78, 0.83], [0.88, 0.79]];
    const LORA_ECE: [[f64; 2]; 4] = [[0.05, 0.09], [0.12, 0.04], [0.07, 0.06], [0.10, 0.11]];

    #[allow(clippy::too_many_arguments)]
    fn rec(
        enc: &str,
        ds: &str,
        regime: Regime,
        probe: &str,
        frac: f64,
        seed: u64,
        condition: Condition,
        metrics: &[(&str, f64)],
    ) -> RunRecord {
        RunRecord {
            encoder: enc.into(),
            dataset: ds.into(),
            regime,
            probe: probe.into(),
            calibrator: "none".into(),
            label_fraction: frac,
            seed,
            condition,
            metrics: metrics.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    fn lora_value(table: &[[f64; 2]; 4], e: usize, d: usize, seed: u64) -> f64 {
        table[e][d] + 0.01 * seed as f64
    }

    /// The seed mean of a LoRA value, as the metric rows compute it (sum over seeds / count).
    fn lora_mean(table: &[[f64; 2]; 4], e: usize, d: usize) -> f64 {
        SEEDS.iter().map(|&s| lora_value(table, e, d, s)).sum::<f64>() / SEEDS.len() as f64
    }

    /// Frozen runs on a full grid (every axis of every encoder in both datasets) and LoRA runs.
    fn fits() -> Vec<RunRecord> {
        let mut out = Vec::new();
        for (e, enc) in ENCODERS.iter().enumerate() {
            for (d, ds) in DATASETS.iter().enumerate() {
                let q = 0.02 * e as f64 + 0.01 * d as f64;
                let ece = 0.1 - 0.013 * ((e * 7 + d) % 4) as f64;
                for &seed in &SEEDS {
                    let noise = 0.003 * seed as f64;
                    for (i, &frac) in FRACTIONS.iter().enumerate() {
                        let auroc =
                            0.7 + q + noise + 0.02 * i as f64 * (1.0 + 0.1 * ((e * 3 + d) % 4) as f64);
                        let m = [("macro_auroc", auroc), ("ece", ece + noise)];
                        out.push(rec(enc, ds, Regime::Frozen, "p", frac, seed, Condition::Clean, &m));
                    }
                    let blur = Condition::Perturbation { perturbation: "blur".into(), severity: 1 };
                    let m = [("macro_auroc", 0.7 + q - 0.01 * ((e * 5 + d) % 4) as f64), ("ece", ece)];
                    out.push(rec(enc, ds, Regime::Frozen, "p", 1.0, seed, blur, &m));
                    let m = [
                        ("macro_auroc", lora_value(&LORA_AUROC, e, d, seed)),
                        ("ece", lora_value(&LORA_ECE, e, d, seed)),
                    ];
                    out.push(rec(enc, ds, Regime::Lora, "ce", 1.0, seed, Condition::Clean, &m));
                }
            }
        }
        out
    }

    /// Estimate records at seed 0: `logme` = 10·AUROC − 3 (monotone in the LoRA AUROC), `gbc` = −AUROC
    /// (reversed), `knn_agreement` = −ECE (monotone in LoRA's −ECE); `hscore` = AUROC at layer 0.5.
    fn estimates() -> Vec<RunRecord> {
        let mut out = Vec::new();
        for (e, enc) in ENCODERS.iter().enumerate() {
            for (d, ds) in DATASETS.iter().enumerate() {
                let (auroc, ece) = (lora_mean(&LORA_AUROC, e, d), lora_mean(&LORA_ECE, e, d));
                let m = [("logme", 10.0 * auroc - 3.0), ("gbc", -auroc), ("knn_agreement", -ece)];
                out.push(rec(enc, ds, Regime::Estimate, "estimators", 1.0, 0, Condition::Clean, &m));
                let m = [("hscore", auroc)];
                out.push(rec(enc, ds, Regime::Estimate, "estimators@0.5", 1.0, 0, Condition::Clean, &m));
            }
        }
        out
    }

    fn quick() -> EvaluationOptions {
        EvaluationOptions { bootstrap: None, stability_seed: None, ..EvaluationOptions::default() }
    }

    fn evaluate(records: Vec<RunRecord>, options: &EvaluationOptions) -> Evaluation {
        Evaluation::build(&RunRecordSet::from_records(records, "mem").unwrap(), options).unwrap()
    }

    fn row<'a>(
        t: &'a TransferPrediction,
        scope: &str,
        estimator: &str,
        layer: f64,
        regime: Regime,
        outcome: Outcome,
    ) -> &'a PredictionRow {
        t.rows
            .iter()
            .find(|r| {
                r.scope == scope
                    && r.estimator == estimator
                    && r.layer == layer
                    && r.regime == regime
                    && r.outcome == outcome
            })
            .unwrap_or_else(|| panic!("no row {scope} {estimator}@{layer} {regime} {outcome:?}"))
    }

    #[test]
    fn a_monotone_estimator_is_perfect_and_a_reversed_one_regrets_the_best_encoder() {
        let records: Vec<RunRecord> = fits().into_iter().chain(estimates()).collect();
        let e = evaluate(records, &quick());
        let t = e.transfer_prediction.as_ref().expect("estimate records give the analysis");
        assert_eq!(t.estimate_records, ENCODERS.len() * DATASETS.len() * 2);
        assert_eq!(t.estimators, ["logme", "hscore", "gbc", "knn_agreement"]);
        assert_eq!(t.layers, [0.5, 1.0]);
        assert_eq!(t.targets, ["frozen p", "lora ce"]);
        let lora_fits_per_dataset = ENCODERS.len() * SEEDS.len();
        for (d, ds) in DATASETS.iter().enumerate() {
            for (name, layer) in [("logme", 1.0), ("hscore", 0.5)] {
                let r = row(t, ds, name, layer, Regime::Lora, Outcome::Discrimination);
                assert_eq!((r.kendall_tau_b, r.spearman_rho), (Some(1.0), Some(1.0)));
                // Weighted τ sums hyperbolic weights in floating point: 1 up to rounding.
                assert!((r.weighted_tau.unwrap() - 1.0).abs() < 1e-12, "{:?}", r.weighted_tau);
                assert_eq!(r.regret, Some(0.0));
                assert_eq!(r.fits, lora_fits_per_dataset);
                assert_eq!(r.fits_saved, Some((ENCODERS.len() - SHORTLIST) * SEEDS.len()));
            }
            let r = row(t, ds, "gbc", 1.0, Regime::Lora, Outcome::Discrimination);
            assert_eq!((r.kendall_tau_b, r.spearman_rho), (Some(-1.0), Some(-1.0)));
            assert!((r.weighted_tau.unwrap() + 1.0).abs() < 1e-12, "{:?}", r.weighted_tau);
            // The shortlist is the three worst encoders: the regret is best − second best, in points.
            let mut means: Vec<(f64, &str)> =
                (0..ENCODERS.len()).map(|i| (lora_mean(&LORA_AUROC, i, d), ENCODERS[i])).collect();
            means.sort_by(|x, y| y.0.total_cmp(&x.0));
            let expected = (means[0].0 - means[1].0) * 100.0;
            assert!((r.regret.unwrap() - expected).abs() < 1e-9, "{:?} vs {expected}", r.regret);
            let mut worst: Vec<&str> = means[1..].iter().map(|m| m.1).collect();
            worst.sort_unstable();
            assert_eq!(r.shortlist, worst);
            let saved = (ENCODERS.len() - SHORTLIST) * SEEDS.len();
            assert_eq!(r.fits_saved, Some(saved));
            assert_eq!(r.fits_saved_fraction, Some(saved as f64 / lora_fits_per_dataset as f64));
            // The outcomes are the raw LoRA values, ECE as ECE.
            let c = row(t, ds, "knn_agreement", 1.0, Regime::Lora, Outcome::CalibrationError);
            assert_eq!(c.kendall_tau_b, Some(1.0));
            assert_eq!(c.regret, Some(0.0));
            let eces: Vec<f64> = (0..ENCODERS.len()).map(|i| lora_mean(&LORA_ECE, i, d)).collect();
            assert_eq!(c.outcomes, eces);
            // Frozen fits: every label fraction and seed of the probe (perturbations reuse the fit).
            let f = row(t, ds, "logme", 1.0, Regime::Frozen, Outcome::Discrimination);
            assert_eq!(f.fits, ENCODERS.len() * FRACTIONS.len() * SEEDS.len());
            assert_eq!(f.fits_saved, Some((ENCODERS.len() - SHORTLIST) * FRACTIONS.len() * SEEDS.len()));
        }
        // Overall: per-encoder means over both datasets keep the monotone and the reversed relation.
        let o = row(t, OVERALL, "logme", 1.0, Regime::Lora, Outcome::Discrimination);
        assert_eq!(o.datasets, DATASETS);
        assert_eq!((o.kendall_tau_b, o.regret), (Some(1.0), Some(0.0)));
        assert_eq!(o.fits, lora_fits_per_dataset * DATASETS.len());
        let g = row(t, OVERALL, "gbc", 1.0, Regime::Lora, Outcome::Discrimination);
        assert_eq!(g.kendall_tau_b, Some(-1.0));
        let overall: Vec<f64> = (0..ENCODERS.len())
            .map(|i| {
                (0..DATASETS.len()).map(|d| lora_mean(&LORA_AUROC, i, d)).sum::<f64>() / DATASETS.len() as f64
            })
            .collect();
        let mut sorted = overall.clone();
        sorted.sort_by(|x, y| y.total_cmp(x));
        assert!((g.regret.unwrap() - (sorted[0] - sorted[1]) * 100.0).abs() < 1e-9);
        // Verdicts: logme predicts LoRA's AUROC, knn_agreement its ECE; gbc does not.
        let v = |outcome| {
            t.verdicts.iter().find(|v| v.regime == Some(Regime::Lora) && v.outcome == outcome).unwrap()
        };
        let disc = v(Outcome::Discrimination);
        assert!(disc.predicts && disc.estimator.as_deref() == Some("logme"), "{disc:?}");
        assert_eq!((disc.datasets_meeting, disc.datasets, disc.mean_tau_b), (2, 2, Some(1.0)));
        let cal = v(Outcome::CalibrationError);
        assert_eq!(cal.estimator.as_deref(), Some("knn_agreement"));
        assert!(
            cal.sentence.starts_with("knn_agreement predicts post-adaptation ECE for lora ce"),
            "{}",
            cal.sentence
        );
        let crs = t.headlines.iter().find(|h| h.outcome == Outcome::Crs).unwrap();
        assert_eq!(crs.best_target.as_deref(), Some("frozen p"));
        // The summaries agree with the verdicts.
        let s = t
            .summaries
            .iter()
            .find(|s| {
                s.estimator == "gbc" && s.regime == Regime::Lora && s.outcome == Outcome::Discrimination
            })
            .unwrap();
        assert_eq!((s.mean_tau_b, s.datasets_meeting, s.datasets, s.predicts), (Some(-1.0), 0, 2, false));
    }

    #[test]
    fn estimate_records_change_nothing_else() {
        let options = EvaluationOptions {
            bootstrap: Some(crate::BootstrapConfig { replicates: 20, seed: 3, ..Default::default() }),
            ..EvaluationOptions::default()
        };
        let before = evaluate(fits(), &options);
        let after = evaluate(fits().into_iter().chain(estimates()).collect(), &options);
        assert!(before.transfer_prediction.is_none() && after.transfer_prediction.is_some());
        let strip = |e: &Evaluation| {
            let mut v = serde_json::to_value(e).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("transfer_prediction");
            o.remove("input");
            v
        };
        assert_eq!(strip(&before), strip(&after));
        assert!(serde_json::to_value(&before).unwrap().get("transfer_prediction").is_none());
        assert_eq!(after.input.records, before.input.records + estimates().len());
        assert_eq!(after.input.regimes, [Regime::Frozen, Regime::Lora, Regime::Estimate]);
        assert_eq!(
            (&after.input.metrics, &after.input.encoders, after.input.metric_rows),
            (&before.input.metrics, &before.input.encoders, before.input.metric_rows)
        );
    }

    #[test]
    fn an_estimator_of_the_crs_predicts_it() {
        let base = evaluate(fits(), &quick());
        let mut records = fits();
        // nleep = the dataset's CRS (per-dataset τ-b 1); transrate = the panel CRS in every dataset, so its
        // overall mean is the panel CRS (overall τ-b 1).
        for domain in &base.per_domain {
            for (enc, crs, _) in &domain.scores {
                let panel = base.crs.iter().find(|c| c.encoder == *enc).unwrap().crs;
                let m = [("nleep", *crs), ("transrate", panel)];
                records.push(rec(
                    enc,
                    &domain.dataset,
                    Regime::Estimate,
                    "estimators",
                    1.0,
                    0,
                    Condition::Clean,
                    &m,
                ));
            }
        }
        assert_eq!(base.per_domain.len(), DATASETS.len());
        let e = evaluate(records, &quick());
        let t = e.transfer_prediction.as_ref().unwrap();
        for ds in DATASETS {
            let r = row(t, ds, "nleep", 1.0, Regime::Frozen, Outcome::Crs);
            assert_eq!((r.kendall_tau_b, r.regret, r.regret_unit), (Some(1.0), Some(0.0), "crs"));
        }
        let o = row(t, OVERALL, "transrate", 1.0, Regime::Frozen, Outcome::Crs);
        assert_eq!((o.kendall_tau_b, o.regret), (Some(1.0), Some(0.0)));
        let crs = t.headlines.iter().find(|h| h.outcome == Outcome::Crs).unwrap();
        assert!(crs.predicts && crs.estimator.as_deref() == Some("nleep"), "{crs:?}");
        assert!(crs.sentence.contains("predicts the CRS"), "{}", crs.sentence);
    }

    /// Two encoders tied by the estimator: τ-b honours the tie.
    #[test]
    fn ties_are_honoured_and_small_sets_say_why() {
        let mut records = Vec::new();
        // Actual AUROC a < b < c < d (0.6, 0.7, 0.8, 0.9), scores 1, 1, 2, 3: of the 6 pairs one is tied in
        // the scores and the other 5 concordant, so τ-b = 5 / sqrt(5 · 6).
        let actual = [0.6, 0.7, 0.8, 0.9];
        let scores = [1.0, 1.0, 2.0, 3.0];
        for (i, enc) in ENCODERS.iter().enumerate() {
            let m = [("macro_auroc", actual[i]), ("ece", 0.1)];
            records.push(rec(enc, "d1", Regime::Lora, "ce", 1.0, 0, Condition::Clean, &m));
            let mut m = vec![("transrate", scores[i])];
            // logme exists for two encoders only, gbc for one.
            if i < 2 {
                m.push(("logme", scores[i] + i as f64));
            }
            if i == 0 {
                m.push(("gbc", 1.0));
            }
            records.push(rec(enc, "d1", Regime::Estimate, "estimators", 1.0, 0, Condition::Clean, &m));
        }
        // A record off the contract is ignored with a note.
        let mut off =
            rec("a", "d1", Regime::Estimate, "estimators", 1.0, 1, Condition::Clean, &[("logme", 9.0)]);
        off.calibrator = "temperature".into();
        records.push(off);
        let e = evaluate(records, &quick());
        assert!(e.crs_not_computed.is_some(), "no frozen runs: no CRS, the adapted targets remain");
        let t = e.transfer_prediction.as_ref().unwrap();
        let r = row(t, "d1", "transrate", 1.0, Regime::Lora, Outcome::Discrimination);
        assert!((r.kendall_tau_b.unwrap() - 5.0 / 30f64.sqrt()).abs() < 1e-12);
        // ECE is constant: no τ.
        let c = row(t, "d1", "transrate", 1.0, Regime::Lora, Outcome::CalibrationError);
        assert_eq!((c.kendall_tau_b, c.spearman_rho, c.weighted_tau), (None, None, None));
        // Shortlist ties broken by name, the earlier first: a (score 1, tied with b) joins c and d; d has
        // the best AUROC and is in it, so the regret is 0.
        assert_eq!(r.shortlist, ["a", "c", "d"]);
        assert_eq!(r.regret, Some(0.0));
        let two = row(t, "d1", "logme", 1.0, Regime::Lora, Outcome::Discrimination);
        assert_eq!((two.encoders.len(), two.regret, two.fits_saved), (2, None, None));
        assert!(two.note.as_deref().unwrap().contains("no top-3 shortlist"));
        assert!(!t.rows.iter().any(|r| r.estimator == "gbc"));
        assert!(
            t.notes
                .iter()
                .any(|n| n.contains("dataset d1, lora ce, discrimination") && n.contains("fewer than 2"))
        );
        assert!(
            t.notes.iter().any(|n| n.contains("1 estimate record(s) ignored: calibrator other than none"))
        );
    }

    /// Every method `regime_comparisons` identifies is a target: each CoOp loss on its own, zero-shot as
    /// mean over templates and as best template (their fits: every template's run).
    #[test]
    fn coop_losses_and_template_methods_are_targets() {
        let mut records = Vec::new();
        let templates = ["zero-shot:P1", "zero-shot:P2"];
        for (i, enc) in ENCODERS.iter().enumerate() {
            let q = 0.01 * i as f64;
            for &seed in &SEEDS {
                for (loss, base) in [("ce", 0.8), ("mcm", 0.7)] {
                    let m = [("macro_auroc", base + q), ("ece", 0.1 - q)];
                    records.push(rec(enc, "d1", Regime::Coop, loss, 1.0, seed, Condition::Clean, &m));
                }
            }
            for (t, probe) in templates.iter().enumerate() {
                let m = [("macro_auroc", 0.6 + q + 0.05 * t as f64), ("ece", 0.2)];
                records.push(rec(enc, "d1", Regime::ZeroShot, probe, 1.0, 0, Condition::Clean, &m));
            }
            // Two seeds of the estimate: averaged, (q − 1 + q + 1) / 2 = q, monotone in the quality.
            for (seed, offset) in [(0, -1.0), (1, 1.0)] {
                let m = [("logme", q + offset)];
                records.push(rec(enc, "d1", Regime::Estimate, "estimators", 1.0, seed, Condition::Clean, &m));
            }
        }
        let e = evaluate(records, &quick());
        let t = e.transfer_prediction.as_ref().unwrap();
        assert_eq!(
            t.targets,
            [
                "coop ce",
                "coop mcm",
                "zero-shot zero-shot (mean over templates)",
                "zero-shot zero-shot (best template)"
            ]
        );
        for (regime, method, fits) in [
            (Regime::Coop, "ce", ENCODERS.len() * SEEDS.len()),
            (Regime::Coop, "mcm", ENCODERS.len() * SEEDS.len()),
            (Regime::ZeroShot, "zero-shot (mean over templates)", ENCODERS.len() * templates.len()),
            (Regime::ZeroShot, "zero-shot (best template)", ENCODERS.len() * templates.len()),
        ] {
            let r = t
                .rows
                .iter()
                .find(|r| {
                    r.scope == "d1"
                        && r.regime == regime
                        && r.method == method
                        && r.outcome == Outcome::Discrimination
                })
                .unwrap();
            assert_eq!((r.kendall_tau_b, r.regret, r.fits), (Some(1.0), Some(0.0), fits), "{method}");
            assert_eq!(r.fits_saved, Some(fits / ENCODERS.len() * (ENCODERS.len() - SHORTLIST)));
        }
        // The seed mean of the estimate is the mean of its two records.
        let r = &t.rows[0];
        let expected: Vec<f64> =
            (0..ENCODERS.len()).map(|i| ((0.01 * i as f64 - 1.0) + (0.01 * i as f64 + 1.0)) / 2.0).collect();
        assert_eq!(r.scores, expected);
    }

    #[test]
    fn an_estimate_only_set_has_no_target_but_evaluates() {
        let e = evaluate(estimates(), &quick());
        assert!(e.crs_not_computed.is_some() && e.metric_rows.is_empty());
        let t = e.transfer_prediction.unwrap();
        assert!(t.rows.is_empty() && t.verdicts.is_empty());
        assert!(t.notes.iter().any(|n| n.contains("no prediction target")), "{:?}", t.notes);
    }

    #[test]
    fn a_reversed_estimator_is_stated_as_predicting_nothing() {
        let mut records = fits();
        // gbc alone: it reverses LoRA's AUROC ranking in every dataset (τ-b −1).
        records.extend(
            estimates()
                .into_iter()
                .map(|mut r| {
                    r.metrics.retain(|k, _| k == "gbc");
                    r
                })
                .filter(|r| !r.metrics.is_empty()),
        );
        let e = evaluate(records, &quick());
        let t = e.transfer_prediction.unwrap();
        let disc = t
            .verdicts
            .iter()
            .find(|v| v.regime == Some(Regime::Lora) && v.outcome == Outcome::Discrimination)
            .unwrap();
        assert!(!disc.predicts);
        assert_eq!(disc.mean_tau_b, Some(-1.0));
        assert!(
            disc.sentence.starts_with(
                "no estimator predicts post-adaptation macro_auroc for lora ce: best mean τ-b -1.00 (gbc"
            ),
            "{}",
            disc.sentence
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// τ in [−1, 1], regret ≥ 0, fits saved ≤ fits, and the analysis does not depend on record order.
        #[test]
        fn invariants_hold_and_record_order_does_not_matter(
            values in proptest::collection::vec((0u8..20, 0u8..20, -50i32..50), 2..7),
            datasets in 1usize..3,
            seed in any::<u64>(),
        ) {
            let mut records = Vec::new();
            for (i, &(auroc, ece, score)) in values.iter().enumerate() {
                let enc = format!("e{i}");
                for d in 0..datasets {
                    let ds = format!("d{d}");
                    let shift = d as f64 * 0.01;
                    let m = [("macro_auroc", 0.5 + f64::from(auroc) / 50.0 + shift), ("ece", f64::from(ece) / 100.0)];
                    records.push(rec(&enc, &ds, Regime::Lora, "ce", 1.0, 0, Condition::Clean, &m));
                    let m = [("logme", f64::from(score) + shift), ("gbc", -f64::from(auroc))];
                    records.push(rec(&enc, &ds, Regime::Estimate, "estimators", 1.0, 0, Condition::Clean, &m));
                }
            }
            let t = evaluate(records.clone(), &quick()).transfer_prediction.unwrap();
            for r in &t.rows {
                for tau in [r.kendall_tau_b, r.spearman_rho, r.weighted_tau].into_iter().flatten() {
                    prop_assert!((-1.0..=1.0).contains(&tau));
                }
                if let Some(regret) = r.regret {
                    prop_assert!(regret >= 0.0);
                    prop_assert_eq!(r.shortlist.len(), SHORTLIST);
                }
                prop_assert!(r.fits_saved.unwrap_or(0) <= r.fits);
            }
            // A deterministic shuffle of the records.
            let mut rng = seed;
            let mut shuffled = records;
            for i in (1..shuffled.len()).rev() {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                shuffled.swap(i, (rng >> 33) as usize % (i + 1));
            }
            prop_assert_eq!(evaluate(shuffled, &quick()).transfer_prediction.unwrap(), t);
        }
    }
}
