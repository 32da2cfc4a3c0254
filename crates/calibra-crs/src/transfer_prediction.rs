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

/// Estimator scores: (estimator, layer bits) → (encoder, dataset) → mean over seeds.
type Scores = BTreeMap<(String, u64), BTreeMap<(String, String), f64>>;

fn read_scores(estimates: &RunRecordSet, notes: &mut Vec<String>) -> Scores {
    let mut sums: BTreeMap<(String, u64), BTreeMap<(String, String), (f64, usize)>> = BTreeMap::new();
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
fn fit_index(
    fits: &RunRecordSet,
    regime: Regime,
    probes: &[String],
) -> BTreeSet<(String, String, String, u64, u64)> {
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
    let mut keys: Vec<&(String, u64)> = scores.keys().collect();
    keys.sort_by(|a, b| {
        estimator_order(&a.0)
            .cmp(&estimator_order(&b.0))
            .then(f64::from_bits(a.1).total_cmp(&f64::from_bits(b.1)))
    });
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
    // (scope kind, target, outcome, reason) → skipped estimator/layer pairs.
    let mut skipped: BTreeMap<(String, String, Outcome, &'static str), usize> = BTreeMap::new();
    for target in targets {
        let regime = target.regime;
        let fit_set = fit_index(fits, regime, &target.probes);
        let tlabel = target_label(regime, &target.method);
        for (&outcome, actual) in &target.cells {
            let scale = outcome.regret_scale();
            let sign = if outcome == Outcome::CalibrationError { -1.0 } else { 1.0 };
            let datasets: BTreeSet<&String> = actual.keys().map(|(_, d)| d).collect();
            for key in &keys {
                let est = &scores[*key];
                let layer = f64::from_bits(key.1);
                let mut scoped: Vec<(String, Vec<String>, Vec<(String, f64, f64)>)> = Vec::new();
                for &d in &datasets {
                    let pairs: Vec<(String, f64, f64)> = actual
                        .iter()
                        .filter(|((_, ds), _)| ds == d)
                        .filter_map(|((e, ds), &v)| Some((e.clone(), *est.get(&(e.clone(), ds.clone()))?, v)))
                        .collect();
                    scoped.push((d.clone(), vec![d.clone()], pairs));
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
                                    None => {
                                        common.iter().map(|&d| actual[&(e.clone(), d.clone())]).sum::<f64>()
                                            / n
                                    }
                                };
                                (e.clone(), s, v)
                            })
                            .collect();
                        scoped.push((OVERALL.to_string(), common.into_iter().cloned().collect(), pairs));
                    }
                    Some(_) => {
                        *skipped
                            .entry((
                                OVERALL.into(),
                                tlabel.clone(),
                                outcome,
                                "no dataset that every compared encoder has",
                            ))
                            .or_default() += 1;
                    }
                    None => {}
                }
                for (scope, row_datasets, pairs) in scoped {
                    if pairs.len() < 2 {
                        let kind =
                            if scope == OVERALL { OVERALL.to_string() } else { format!("dataset {scope}") };
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
                    let c = compare(&pairs, scale);
                    let encoders: BTreeSet<&String> = pairs.iter().map(|p| &p.0).collect();
                    let in_scope = |f: &&(String, String, String, u64, u64)| {
                        encoders.contains(&f.0) && row_datasets.contains(&f.1)
                    };
                    let n_fits = fit_set.iter().filter(in_scope).count();
                    let (fits_saved, fraction) = if c.regret.is_some() {
                        let saved =
                            fit_set.iter().filter(in_scope).filter(|f| !c.shortlist.contains(&f.0)).count();
                        (Some(saved), (n_fits > 0).then(|| saved as f64 / n_fits as f64))
                    } else {
                        (None, None)
                    };
                    let note = (pairs.len() < SHORTLIST).then(|| {
                        format!(
                            "{} encoders: no top-{SHORTLIST} shortlist, so no regret or fits saved",
                            pairs.len()
                        )
                    });
                    rows.push(PredictionRow {
                        scope,
                        datasets: row_datasets,
                        estimator: key.0.clone(),
                        layer,
                        regime,
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
                    });
                }
            }
        }
    }
    for ((scope, target, outcome, reason), n) in skipped {
        notes.push(format!(
            "{scope}, {target}, {}: {n} estimator/layer pair(s) skipped: {reason}",
            outcome.name()
        ));
    }
    // Rows: targets in the given order, then outcome, estimator, layer, scope (datasets, then overall).
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
    let mut headlines = Vec::new();
    for outcome in [Outcome::Discrimination, Outcome::CalibrationError, Outcome::Crs] {
        let of_outcome: Vec<&PredictionRow> = rows.iter().filter(|r| r.outcome == outcome).collect();
        if targets.iter().any(|t| t.cells.contains_key(&outcome)) {
            headlines.push(verdict(outcome, None, &of_outcome, metrics));
        }
    }
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
        verdicts,
        headlines,
        notes,
    })
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
    let on = best_target.as_ref().map(|t| format!(", {t}")).unwrap_or_default();
    let sentence = if any_predicts {
        format!(
            "{label}{on} predicts {what}{for_target}: τ-b ≥ {PREDICTS_TAU_B} in {k} of {n} dataset(s), mean τ-b {mean:.2}"
        )
    } else {
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
    per_domain: &[crate::evaluation::DomainCrs],
    crs: &[crate::evaluation::EncoderCrs],
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
