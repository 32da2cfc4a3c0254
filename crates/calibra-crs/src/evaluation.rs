//! One evaluation of a run set (spec §5, §7): run records → metric rows → cell axes → encoder profiles →
//! CRS against a reference, with the paired-seed bootstrap, rank comparisons, estimator substitutions,
//! axis correlations, per-domain CRS and the stability analyses, gathered in one serialisable
//! [`Evaluation`]. Pure computation: no file IO (the caller reads records and writes the outputs).
//!
//! What is computed, in order:
//!
//! 1. **Metric rows**: seed mean and sample std (`n − 1`) of every metric per (cell, regime, probe,
//!    calibrator, label fraction, condition) ([`crate::SeedTable::rows`]).
//! 2. **Cell axes and profiles** for the configured regime ([`AxisConfig`], default `frozen`): see
//!    [`crate::axes`]. Every encoder of that regime must be observed on all four axes (an encoder
//!    missing a whole axis is an error naming it and the axis: axes are never imputed).
//!    With [`AxisConfig::selective_metric`] (five axis weights) there is a fifth axis, **selective** =
//!    −AUGRC of the same clean full-label group ([`crate::selective_axis`] attaches the per-run AUGRC from
//!    the selective analyses); every step below then works on five axes, the substitutions add
//!    `selective=aurc` / `selective=eaurc`, and a run set that cannot give the five-axis CRS is an error
//!    (an explicit request). Without it nothing changes: the optional fields are absent from the JSON.
//! 3. **Reference and CRS**: with no saved reference, one is built from the run set's own panel (anchors
//!    = panel min/max per oriented axis) with the configured weights; with a saved reference, the
//!    candidates must have been measured with its estimators and are scored with its frozen anchors,
//!    peers and weights. `rank` is ordinal (1 = best; ties by encoder name order).
//! 4. **Bootstrap** (optional, spec §5.1): [`paired_seed_bootstrap`] on the run set's own panel — anchors
//!    are recomputed in every replicate as the spec says, also when the point CRS is against a saved
//!    reference (then the intervals describe the run set's panel CRS, and `bootstrap.encoders[].crs` is
//!    that panel CRS, not the saved-reference CRS).
//! 5. **Rank comparisons** ([`compare_rankings`]): clean discrimination (mean clean macro-AUROC over the
//!    encoder's cells) vs CRS; and for every other regime present, frozen vs each method of that regime
//!    (each probe / loss on its own; template probes as their mean and their best template) on the
//!    matched cells, by discrimination and by `−ECE` (larger is better), each over at least 2 encoders
//!    ([`crate::regime_comparison`]; the per-encoder values are kept with any number of encoders).
//! 6. **Estimator substitution** (spec §5.5): the CRS recomputed (reference rebuilt on the panel) with
//!    corruption-only robustness, and with `adaptive_ece` / `brier` as the calibration metric where the
//!    run records carry those metrics; each compared with the primary CRS ranking. A substitution whose
//!    profiles are incomplete is reported as skipped with the reason.
//! 7. **Axis correlations** (spec §5.6): Spearman ρ between every pair of axes over encoders and over
//!    cells (pairs where both are observed), and LE vs AULC vs full-label AUROC over encoders.
//! 8. **Per-domain CRS** (spec §4): a reference per dataset from that dataset's cells, over the encoders
//!    complete in that dataset; a domain that cannot be scored (fewer than 2 complete encoders, no spread
//!    on an axis) is skipped with a note.
//! 9. **Stability** (optional, spec §5.2–5.3): [`stability`] on the panel, with sub-panel sizes and the
//!    insertion split scaled to the panel ([`EvaluationOptions::stability_for_panel`]).
//! 10. **Calibration stability** (spec §6): accuracy, ECE, MCE and ACE across seeds and across prompt
//!     templates ([`calibration_stability`]), from the records alone: computed for every run set.
//! 11. **Predicted vs adapted** (issue 18): with estimate records ([`Regime::Estimate`]), each
//!     transferability estimator's ranking against the ranking of every adapted regime/method and of
//!     the axis regime, by discrimination, calibration error and CRS ([`crate::transfer_prediction`]).
//!
//! Attached afterwards by the caller, because they read predictions files (this module does no file
//! IO): the FOCUS additions ([`Evaluation::with_focus`]) and, only on request, the selective,
//! conformal and shift-detection analyses ([`Evaluation::with_selective`], `calibra eval
//! --selective`), serialised as `selective` and absent from the JSON otherwise.
//!
//! # Estimate records
//! Records of regime `estimate` are predictions, not fits: they are split off first and take part in
//! nothing but step 11 (not in the metric rows, axes, CRS, comparisons, stability, encoder analyses or
//! the convergence check), so a run set evaluates exactly as without them, except that `input.records`
//! counts them and `input.regimes` lists `estimate`.
//!
//! # A run set without a CRS
//! Steps 2–9 need four-axis profiles of at least two encoders in the configured regime. When the run set
//! cannot give them **as a whole** — no runs of the configured regime/calibrator, a cell the axis
//! configuration does not resolve to one probe, an axis that no encoder of the regime has (e.g. zero-shot
//! records: one label fraction, no perturbations), or a single encoder without a saved reference — the
//! evaluation still holds what the records give (metric rows, calibration stability, the encoder analyses
//! that apply) and [`Evaluation::crs_not_computed`] says why the CRS is absent; profiles, CRS, bootstrap,
//! rank comparisons, substitutions, correlations, per-domain CRS and the ranking stability are empty.
//! With a saved reference (an explicit request to score) that is an error instead, and so is an axis that
//! some encoders have and others lack (a gap in the data, never imputed: [`CrsError::MissingAxis`]).

use std::collections::{BTreeMap, BTreeSet};

use calibra_metrics::spearman_rho;
use serde::Serialize;

use crate::axes::{
    AxisConfig, AxisPlan, CellAxes, CellValues, LE_FRACTIONS, RobustnessVariant, SELECTIVE_METRIC,
};
use crate::bootstrap::{BootstrapConfig, BootstrapResult, paired_seed_bootstrap};
use crate::calibration_stability::{CalibrationStability, calibration_stability};
use crate::convergence::ConvergenceReport;
use crate::encoder_analyses::{EncoderAnalyses, EncoderAnalysisOptions, encoder_analyses};
use crate::error::CrsError;
use crate::focus_analyses::FocusReport;
use crate::metric_rows::SeedTable;
use crate::profile::{Axis, Profile, axes_of};
use crate::rank_compare::{RankComparison, compare_rankings};
use crate::reference::{AxisEstimators, Reference, ReferenceConfig, ValueScale};
use crate::regime_comparison::RegimeComparison;
use crate::run_record::{Condition, Regime, RunRecordSet};
use crate::score::{ComponentWeights, ScoreWeights, ordinal_ranks};
use crate::selective_analyses::SelectiveReport;
use crate::stability::{StabilityConfig, StabilityReport, stability};
use crate::transfer_prediction::{
    OutcomeMetrics, TransferPrediction, prediction_targets, transfer_prediction,
};

/// The `format` field of an evaluation document.
pub const EVALUATION_FORMAT: &str = "calibra-evaluation";
/// The evaluation document version this build writes.
pub const EVALUATION_VERSION: u32 = 1;

/// What to compute.
#[derive(Debug, Clone)]
pub struct EvaluationOptions {
    /// Which runs define the axes (regime, probe, calibrator, metrics, fractions, robustness variant).
    pub axes: AxisConfig,
    /// CRS weights of a panel-built reference (ignored when `reference` is given: it freezes its own).
    pub weights: ScoreWeights,
    /// A saved reference to score against; `None` builds one from the run set's panel.
    pub reference: Option<Reference>,
    /// Bootstrap settings (its `weights` are replaced by the weights in force); `None` skips it.
    pub bootstrap: Option<BootstrapConfig>,
    /// Seed of the stability analyses; `None` skips them.
    pub stability_seed: Option<u64>,
    /// Declarations of the encoder analyses E1–E6 (specialist domains, crossover reference).
    pub encoder_analyses: EncoderAnalysisOptions,
}

impl Default for EvaluationOptions {
    fn default() -> Self {
        EvaluationOptions {
            axes: AxisConfig::default(),
            weights: ScoreWeights::default(),
            reference: None,
            bootstrap: Some(BootstrapConfig::default()),
            stability_seed: Some(0),
            encoder_analyses: EncoderAnalysisOptions::default(),
        }
    }
}

impl EvaluationOptions {
    /// The stability design for a panel of `n` encoders: the paper's counts (200 sub-panels per size,
    /// 30 insertion trials, 500 + 500 weight draws, top-3) with sizes scaled from the paper's 12 and 10
    /// of 15 (`round(0.8 n)`, `round(2n/3)`, each clamped to `2..=n−1`, deduplicated) and `min(3, n−2)`
    /// newcomers per insertion trial. `None` for fewer than 3 encoders.
    pub fn stability_for_panel(seed: u64, n: usize) -> Option<StabilityConfig> {
        if n < 3 {
            return None;
        }
        let mut sizes: Vec<usize> = [0.8 * n as f64, 2.0 * n as f64 / 3.0]
            .iter()
            .map(|&s| (s.round() as usize).clamp(2, n - 1))
            .collect();
        sizes.dedup();
        Some(StabilityConfig {
            subpanel_sizes: sizes,
            inserted_per_trial: 3.min(n - 2),
            top_k: 3.min(n),
            ..StabilityConfig::paper(seed)
        })
    }
}

/// The estimators implied by an axis configuration (recorded in references; a saved reference must
/// match them). Defaults map to [`AxisEstimators::default`]; anything else is named after its metric.
pub fn estimators_for(axes: &AxisConfig) -> AxisEstimators {
    let default_disc = axes.discrimination_metric == AxisEstimators::MACRO_AUROC;
    let default_fractions = axes.le_fractions.len() == LE_FRACTIONS.len()
        && axes.le_fractions.iter().zip(LE_FRACTIONS).all(|(a, b)| (a - b).abs() <= 1e-12);
    AxisEstimators {
        discrimination: axes.discrimination_metric.clone(),
        calibration: if axes.calibration_metric == "ece" {
            AxisEstimators::ECE_15_EQUAL_WIDTH.to_string()
        } else {
            axes.calibration_metric.clone()
        },
        label_efficiency: if default_disc && default_fractions {
            AxisEstimators::AUROC_RETENTION.to_string()
        } else {
            let fractions: Vec<String> = axes.le_fractions.iter().map(|f| f.to_string()).collect();
            format!("{}_retention_{}", axes.discrimination_metric, fractions.join("_"))
        },
        robustness: match axes.robustness {
            RobustnessVariant::WithShift => AxisEstimators::DELTA_MEAN_MAX_SHIFT.to_string(),
            RobustnessVariant::CorruptionOnly => "delta_mean_max_corruption_only".to_string(),
        },
        selective: axes.selective_metric.as_ref().map(|m| {
            if m == SELECTIVE_METRIC { AxisEstimators::AUGRC_MSP.to_string() } else { format!("{m}_msp") }
        }),
    }
}

/// What the run set holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSummary {
    pub records: usize,
    pub metric_rows: usize,
    pub seeds: Vec<u64>,
    pub encoders: Vec<String>,
    pub datasets: Vec<String>,
    pub regimes: Vec<Regime>,
    pub metrics: Vec<String>,
}

/// One metric row (seed aggregate), owned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRowRecord {
    pub encoder: String,
    pub dataset: String,
    pub regime: Regime,
    pub probe: String,
    pub calibrator: String,
    pub label_fraction: f64,
    pub condition: Condition,
    pub metric: String,
    pub mean: f64,
    /// Sample std (`n − 1`); `None` with fewer than 2 seeds.
    pub std: Option<f64>,
    pub n_seeds: usize,
}

/// One encoder's profile: measured (raw) values, oriented values and contrasts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderProfile {
    pub encoder: String,
    /// Mean clean discrimination over the encoder's cells.
    pub discrimination: Option<f64>,
    /// Mean raw calibration error (ECE, lower is better); the oriented axis is its negation.
    pub calibration_error: Option<f64>,
    pub label_efficiency: Option<f64>,
    /// Robustness of the configured variant.
    pub robustness: Option<f64>,
    /// Robustness with `1_shift = 0` (contrast).
    pub robustness_corruption_only: Option<f64>,
    /// Mean AULC over cells (contrast, never an axis).
    pub aulc: Option<f64>,
    /// Cells (datasets) observed.
    pub cells: usize,
    /// Mean raw selective metric (AUGRC, lower is better) over the encoder's cells; only with the
    /// selective axis (absent from the JSON otherwise). The oriented axis is its negation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selective_error: Option<f64>,
    /// Oriented values (calibration = −ECE, selective = −AUGRC), indexed as [`crate::ALL_AXES`].
    pub oriented: Vec<Option<f64>>,
}

/// One encoder's CRS.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderCrs {
    pub encoder: String,
    /// Values normalised with the reference's anchors (clipped to [0, 1]), indexed as
    /// [`crate::ALL_AXES`].
    pub normalized: Vec<f64>,
    pub dominance: f64,
    pub ideal: f64,
    pub worst: f64,
    pub crs: f64,
    /// Ordinal rank, 1 = best.
    pub rank: usize,
    pub in_panel: bool,
    /// Axes clipped by the anchors.
    pub saturated: Vec<Axis>,
    /// Bootstrap percentile interval and rank probabilities (when the bootstrap ran).
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    pub p_rank1: Option<f64>,
    pub p_top3: Option<f64>,
}

/// A rank comparison with what it compares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedComparison {
    /// e.g. `auroc_vs_crs`, `frozen_vs_lora_discrimination`.
    pub name: String,
    /// Ordering A (e.g. `clean macro_auroc (frozen)`).
    pub a: String,
    /// Ordering B.
    pub b: String,
    pub comparison: RankComparison,
}

/// The CRS ranking with one estimator substituted, compared with the primary ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Substitution {
    /// e.g. `robustness=corruption-only`, `calibration=brier`.
    pub estimator: String,
    /// Primary CRS (A) vs substituted CRS (B); `None` when skipped.
    pub comparison: Option<RankComparison>,
    /// Why it was skipped.
    pub skipped: Option<String>,
}

/// Spearman ρ between two quantities.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correlation {
    /// `encoder` or `cell`.
    pub level: &'static str,
    pub a: String,
    pub b: String,
    /// Pairs where both are observed.
    pub n: usize,
    /// NaN (JSON null) with fewer than 3 pairs or a constant series.
    pub spearman_rho: f64,
}

/// CRS per dataset against that dataset's own reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainCrs {
    pub dataset: String,
    /// `(encoder, CRS, rank)` over the encoders complete in this dataset, in encoder order.
    pub scores: Vec<(String, f64, usize)>,
}

/// Everything one evaluation reports (`evaluation.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub format: &'static str,
    pub version: u32,
    pub input: InputSummary,
    pub axes: AxisConfig,
    pub estimators: AxisEstimators,
    /// Weights in force (the saved reference's, or the configured ones).
    pub component_weights: ComponentWeights,
    /// Four weights, or five with the selective axis.
    pub axis_weights: Vec<f64>,
    /// `panel` (built from this run set), `saved`, or `none` (no CRS: see `crs_not_computed`).
    pub reference_origin: &'static str,
    /// The reference used, as its versioned JSON document (`null` without a CRS).
    pub reference: serde_json::Value,
    /// The reference used (not serialised: `reference` is its JSON form; save it with
    /// [`Reference::save`]); `None` without a CRS.
    #[serde(skip)]
    pub reference_used: Option<Reference>,
    /// Why the CRS (and everything built on profiles) is absent; `None` when it was computed. See the
    /// module docs, "A run set without a CRS".
    pub crs_not_computed: Option<String>,
    pub metric_rows: Vec<MetricRowRecord>,
    pub cells: Vec<CellAxes>,
    /// Encoder profiles in encoder-name order.
    pub profiles: Vec<EncoderProfile>,
    /// CRS per encoder, in encoder-name order.
    pub crs: Vec<EncoderCrs>,
    pub bootstrap: Option<BootstrapResult>,
    pub rank_comparisons: Vec<NamedComparison>,
    /// The axis regime vs every method of every other regime, on matched cells
    /// ([`crate::regime_comparison`]): what the report's summary shows.
    pub regime_comparisons: Vec<RegimeComparison>,
    pub substitutions: Vec<Substitution>,
    pub correlations: Vec<Correlation>,
    pub per_domain: Vec<DomainCrs>,
    pub stability: Option<StabilityReport>,
    /// Encoder analyses E1–E6 (spec §5.7), from the metric rows.
    pub encoder_analyses: EncoderAnalyses,
    /// Accuracy, ECE, MCE and ACE across seeds and across prompt templates (spec §6).
    pub calibration_stability: CalibrationStability,
    /// FOCUS additions (spec §6) from per-sample predictions; `None` until attached with
    /// [`Evaluation::with_focus`] (they need file IO, which this module does not do).
    pub focus: Option<FocusReport>,
    /// Adapted fits whose training curve says they did not converge (see [`crate::convergence`]).
    pub convergence: ConvergenceReport,
    /// Estimators' predicted rankings vs the adapted runs ([`crate::transfer_prediction`]); `None`
    /// (absent from the JSON) without estimate records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_prediction: Option<TransferPrediction>,
    /// Selective prediction, conformal sets and shift detection from per-sample predictions
    /// ([`crate::selective_analyses`]); `None` (absent from the JSON, so a default evaluation is
    /// byte-identical to one made before it existed) until attached with [`Evaluation::with_selective`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selective: Option<SelectiveReport>,
    /// Human-readable notes (skipped analyses and why).
    pub notes: Vec<String>,
}

/// `(encoder, profile values)` from a plan over the given table: cells, per-encoder profiles.
fn plan_profiles(
    table: &SeedTable,
    means: &[f64],
    axes: &AxisConfig,
) -> Result<(AxisPlan, Vec<CellAxes>, Vec<Profile>), CrsError> {
    let plan = AxisPlan::new(table.groups(), table.metrics(), axes)?;
    let cells = plan.evaluate(means);
    let profiles = plan.profiles(means);
    Ok((plan, cells, profiles))
}

/// The profiles of the configured regime (`Ok(Ok(..))`), or why the run set as a whole cannot give a
/// CRS (`Ok(Err(reason))`, see the module docs "A run set without a CRS"); `Err` for an invalid axis
/// configuration or a gap in the data (an axis some encoders have and others lack).
#[allow(clippy::type_complexity)]
fn profiles_or_why_not(
    table: &SeedTable,
    means: &[f64],
    options: &EvaluationOptions,
    input: &InputSummary,
) -> Result<Result<(AxisPlan, Vec<CellAxes>, Vec<Profile>), String>, CrsError> {
    const NOT_COMPUTED: &str = "CRS not computed";
    let axes = &options.axes;
    // Fractions outside (0, 1) are a configuration error, reported by the plan as an axis-input error.
    let fractions_valid = axes.le_fractions.iter().all(|&rho| rho > 0.0 && rho < 1.0);
    let (plan, cells, profiles) = match plan_profiles(table, means, axes) {
        Ok(found) => found,
        Err(CrsError::AxisInput { message }) if fractions_valid => {
            return Ok(Err(format!("{NOT_COMPUTED}: {message}")));
        }
        Err(e) => return Err(e),
    };
    if profiles.is_empty() {
        let held: Vec<&str> = input.regimes.iter().map(|r| r.name()).collect();
        return Ok(Err(format!(
            "{NOT_COMPUTED}: no runs of regime `{}`{} to build profiles from (the run set holds regimes: {})",
            axes.regime,
            axes.calibrator.as_ref().map(|c| format!(" with calibrator `{c}`")).unwrap_or_default(),
            held.join(", ")
        )));
    }
    let needs = |axis: Axis| match axis {
        Axis::Discrimination => {
            format!("clean runs at label fraction 1 with the metric `{}`", axes.discrimination_metric)
        }
        Axis::Calibration => {
            format!("clean runs at label fraction 1 with the metric `{}`", axes.calibration_metric)
        }
        Axis::LabelEfficiency => {
            let fractions: Vec<String> = axes.le_fractions.iter().map(f64::to_string).collect();
            format!("clean runs of one probe at the label fractions {} and 1", fractions.join(", "))
        }
        Axis::Robustness => "perturbation runs at label fraction 1".to_string(),
        Axis::Selective => format!(
            "the per-run `{}` of clean runs at label fraction 1 (from their predictions files: \
             `calibra eval --selective`)",
            axes.selective_metric.as_deref().unwrap_or(SELECTIVE_METRIC)
        ),
    };
    let missing: Vec<String> = axes_of(axes.n_axes())
        .iter()
        .filter(|&&axis| profiles.iter().all(|p| p.get(axis).is_none()))
        .map(|&axis| format!("the {} axis needs {}", axis.name(), needs(axis)))
        .collect();
    if !missing.is_empty() {
        return Ok(Err(format!(
            "{NOT_COMPUTED}: no encoder of regime `{}` has all {} axes: {}",
            axes.regime,
            if axes.n_axes() == 5 { "five" } else { "four" },
            missing.join("; ")
        )));
    }
    if profiles.len() < 2 && options.reference.is_none() {
        return Ok(Err(format!(
            "{NOT_COMPUTED}: a reference built from the run set needs at least 2 encoders, regime `{}` has {} \
             (a single encoder can be scored against a saved reference)",
            axes.regime,
            profiles.len()
        )));
    }
    Ok(Ok((plan, cells, profiles)))
}

/// The metric names behind the transfer-prediction outcomes.
fn outcome_metrics(axes: &AxisConfig) -> OutcomeMetrics {
    OutcomeMetrics {
        discrimination: axes.discrimination_metric.clone(),
        calibration: axes.calibration_metric.clone(),
    }
}

/// CRS of complete profiles against a reference built on them.
fn panel_crs_of(profiles: &[Profile], config: &ReferenceConfig) -> Result<Vec<(String, f64)>, CrsError> {
    let reference = Reference::build(profiles, config.clone())?;
    Ok(reference.panel_scores().into_iter().map(|s| (s.encoder, s.components.crs)).collect())
}

fn correlation(level: &'static str, a: &str, b: &str, pairs: &[(Option<f64>, Option<f64>)]) -> Correlation {
    let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().filter_map(|&(a, b)| Some((a?, b?))).unzip();
    let rho = if x.len() >= 3 { spearman_rho(&x, &y) } else { f64::NAN };
    Correlation { level, a: a.to_string(), b: b.to_string(), n: x.len(), spearman_rho: rho }
}

impl Evaluation {
    /// Run the evaluation (see the module documentation).
    ///
    /// A run set that cannot give a CRS as a whole is not an error: see the module docs, "A run set
    /// without a CRS" ([`Evaluation::crs_not_computed`]).
    ///
    /// # Errors
    /// An empty run set; label-efficiency fractions outside (0, 1); an encoder missing a whole axis that
    /// other encoders of the regime have ([`CrsError::MissingAxis`]); a saved reference with a run set
    /// that cannot give a CRS, measured with other estimators ([`CrsError::EstimatorMismatch`]) or
    /// holding a panel member with other values; no spread on an axis for a panel-built reference;
    /// bootstrap or stability parameter errors.
    pub fn build(set: &RunRecordSet, options: &EvaluationOptions) -> Result<Self, CrsError> {
        if set.is_empty() {
            return Err(CrsError::InvalidParameter { name: "run records", message: "no records".into() });
        }
        if options.reference.is_none() && options.weights.axis.len() != options.axes.n_axes() {
            return Err(if options.weights.axis.has_selective() {
                CrsError::SelectiveAxisInput {
                    needs: "the selective analyses' per-run AUGRC (the axis configuration names no \
                            selective metric: `calibra eval --selective`)"
                        .into(),
                }
            } else {
                CrsError::InvalidParameter {
                    name: "axis weights",
                    message: "the axis configuration has the selective axis but only 4 axis weights were \
                              given; give 5"
                        .into(),
                }
            });
        }
        let records = set.len();
        // Estimate records are predictions, not fits: nothing but the transfer prediction sees them.
        let (fits, estimates) = set.split_estimates();
        let set = &fits;
        let table = SeedTable::from_records(set);
        let rows = table.rows();
        let estimators = estimators_for(&options.axes);
        let mut notes = Vec::new();
        let convergence = crate::convergence::check_convergence(
            &set.records().iter().map(|r| r.record.clone()).collect::<Vec<_>>(),
        );
        if !convergence.not_converged.is_empty() {
            notes.push(crate::convergence::note(&convergence));
        }

        let metric_rows: Vec<MetricRowRecord> = rows
            .iter()
            .map(|r| MetricRowRecord {
                encoder: r.key.encoder.clone(),
                dataset: r.key.dataset.clone(),
                regime: r.key.regime,
                probe: r.key.probe.clone(),
                calibrator: r.key.calibrator.clone(),
                label_fraction: r.key.label_fraction.get(),
                condition: r.key.condition.clone(),
                metric: r.metric.to_string(),
                mean: r.mean,
                std: r.std,
                n_seeds: r.n_seeds,
            })
            .collect();
        let groups = table.groups();
        let mut regimes: BTreeSet<Regime> = groups.iter().map(|g| g.regime).collect();
        if !estimates.is_empty() {
            regimes.insert(Regime::Estimate);
        }
        let input = InputSummary {
            records,
            metric_rows: metric_rows.len(),
            seeds: table.seeds().to_vec(),
            encoders: groups.iter().map(|g| g.encoder.clone()).collect::<BTreeSet<_>>().into_iter().collect(),
            datasets: groups.iter().map(|g| g.dataset.clone()).collect::<BTreeSet<_>>().into_iter().collect(),
            regimes: regimes.into_iter().collect(),
            metrics: table.metrics().to_vec(),
        };

        let calibration_stability = calibration_stability(set);

        // Axes and profiles of the configured regime.
        let means = rows.means();
        let (plan, cells, profiles) = match profiles_or_why_not(&table, means, options, &input)? {
            Ok(found) => found,
            Err(reason) => {
                if options.reference.is_some() {
                    return Err(CrsError::AxisInput {
                        message: format!("cannot score against the saved reference: {reason}"),
                    });
                }
                if options.axes.selective_metric.is_some() {
                    // Five axis weights are an explicit request for the five-axis CRS.
                    return Err(CrsError::SelectiveAxisInput {
                        needs: format!("a five-axis CRS, which this run set cannot give: {reason}"),
                    });
                }
                let mut transfer_notes = Vec::new();
                let targets = prediction_targets(
                    &table,
                    means,
                    &options.axes,
                    &input.regimes,
                    &[],
                    &[],
                    &[],
                    &mut transfer_notes,
                );
                let transfer_prediction = transfer_prediction(
                    &estimates,
                    set,
                    &targets,
                    &outcome_metrics(&options.axes),
                    transfer_notes,
                );
                let encoder_analyses = encoder_analyses(
                    &metric_rows,
                    &[],
                    options.axes.regime,
                    &options.axes.discrimination_metric,
                    &options.axes.calibration_metric,
                    &options.encoder_analyses,
                );
                return Ok(Evaluation {
                    format: EVALUATION_FORMAT,
                    version: EVALUATION_VERSION,
                    input,
                    axes: options.axes.clone(),
                    estimators,
                    component_weights: options.weights.component,
                    axis_weights: options.weights.axis.as_slice().to_vec(),
                    reference_origin: "none",
                    reference: serde_json::Value::Null,
                    reference_used: None,
                    crs_not_computed: Some(reason),
                    metric_rows,
                    cells: Vec::new(),
                    profiles: Vec::new(),
                    crs: Vec::new(),
                    bootstrap: None,
                    rank_comparisons: Vec::new(),
                    regime_comparisons: Vec::new(),
                    substitutions: Vec::new(),
                    correlations: Vec::new(),
                    per_domain: Vec::new(),
                    stability: None,
                    encoder_analyses,
                    calibration_stability,
                    focus: None,
                    selective: None,
                    convergence,
                    transfer_prediction,
                    notes,
                });
            }
        };
        let values: Vec<CellValues> = plan.evaluate_values(means);
        let aulc = plan.encoder_means(&values, |c| c.aulc);
        let corruption_only = plan.encoder_means(&values, |c| c.robustness_corruption_only);
        let mut cell_count = vec![0usize; profiles.len()];
        for cell in &cells {
            if let Some(e) = plan.encoders().iter().position(|n| *n == cell.encoder) {
                cell_count[e] += 1;
            }
        }
        let encoder_profiles: Vec<EncoderProfile> = profiles
            .iter()
            .enumerate()
            .map(|(e, p)| EncoderProfile {
                encoder: p.encoder.clone(),
                discrimination: p.get(Axis::Discrimination),
                calibration_error: p.get(Axis::Calibration).map(|c| -c),
                label_efficiency: p.get(Axis::LabelEfficiency),
                robustness: p.get(Axis::Robustness),
                robustness_corruption_only: corruption_only[e],
                aulc: aulc[e],
                cells: cell_count[e],
                selective_error: p.get(Axis::Selective).map(|c| -c),
                oriented: p.values.clone(),
            })
            .collect();
        for p in &profiles {
            p.require_complete()?;
        }

        // Reference and CRS.
        let (reference, origin) = match &options.reference {
            Some(saved) => {
                saved.check_compatible(&estimators, ValueScale::Oriented)?;
                (saved.clone(), "saved")
            }
            None => {
                let config = ReferenceConfig {
                    weights: options.weights,
                    estimators: estimators.clone(),
                    ..Default::default()
                };
                (Reference::build(&profiles, config)?, "panel")
            }
        };
        let weights = *reference.weights();
        let scores = reference.score(&profiles)?;
        let crs_values: Vec<f64> = scores.iter().map(|s| s.components.crs).collect();
        let ranks = ordinal_ranks(&crs_values);

        let bootstrap = match &options.bootstrap {
            Some(config) if profiles.len() >= 2 => {
                let config = BootstrapConfig { weights, ..config.clone() };
                Some(paired_seed_bootstrap(&table, &options.axes, &config)?)
            }
            Some(_) => {
                notes.push("bootstrap skipped: the panel has fewer than 2 encoders".into());
                None
            }
            None => None,
        };
        let crs: Vec<EncoderCrs> = scores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let boot =
                    bootstrap.as_ref().and_then(|b| b.encoders.iter().find(|e| e.encoder == s.encoder));
                EncoderCrs {
                    encoder: s.encoder.clone(),
                    normalized: s.normalized.clone(),
                    dominance: s.components.dominance,
                    ideal: s.components.ideal,
                    worst: s.components.worst,
                    crs: s.components.crs,
                    rank: ranks[i],
                    in_panel: s.in_panel,
                    saturated: s.saturated.clone(),
                    lower: boot.map(|b| b.lower),
                    upper: boot.map(|b| b.upper),
                    p_rank1: boot.map(|b| b.p_rank1),
                    p_top3: boot.map(|b| b.p_top3),
                }
            })
            .collect();
        if origin == "saved" && bootstrap.is_some() {
            notes.push(
                "bootstrap intervals describe the run set's own panel CRS (anchors recomputed per replicate), \
                 not the CRS against the saved reference"
                    .into(),
            );
        }

        // Rank comparisons.
        let mut rank_comparisons = Vec::new();
        let named = |e: usize, v: f64| (profiles[e].encoder.clone(), v);
        let disc: Vec<(String, f64)> = (0..profiles.len())
            .filter_map(|e| profiles[e].get(Axis::Discrimination).map(|v| named(e, v)))
            .collect();
        let crs_named: Vec<(String, f64)> =
            scores.iter().map(|s| (s.encoder.clone(), s.components.crs)).collect();
        if disc.len() >= 2 {
            rank_comparisons.push(NamedComparison {
                name: "auroc_vs_crs".into(),
                a: format!("clean {} ({})", options.axes.discrimination_metric, options.axes.regime),
                b: "CRS".into(),
                comparison: compare_rankings(&disc, &crs_named)?,
            });
        }
        let regime_comparisons = crate::regime_comparison::regime_comparisons(
            &table,
            means,
            &options.axes,
            &cells,
            &input.regimes,
            &mut rank_comparisons,
            &mut notes,
        )?;

        // Estimator substitutions (reference rebuilt on the panel each time).
        let panel_config =
            ReferenceConfig { weights, estimators: estimators.clone(), ..ReferenceConfig::default() };
        let primary = match origin {
            "panel" => Ok(crs_named.clone()),
            _ => panel_crs_of(&profiles, &panel_config),
        };
        let mut substitutions = Vec::new();
        let mut candidates: Vec<(String, AxisConfig)> = Vec::new();
        if options.axes.robustness == RobustnessVariant::WithShift {
            candidates.push((
                "robustness=corruption-only".into(),
                AxisConfig { robustness: RobustnessVariant::CorruptionOnly, ..options.axes.clone() },
            ));
        }
        for metric in ["adaptive_ece", "brier"] {
            if metric != options.axes.calibration_metric && input.metrics.iter().any(|m| m == metric) {
                candidates.push((
                    format!("calibration={metric}"),
                    AxisConfig { calibration_metric: metric.to_string(), ..options.axes.clone() },
                ));
            }
        }
        // The selective axis's estimator substitutions: AURC and E-AURC for AUGRC, where the records
        // carry them (the selective analyses attach all three, see `crate::selective_axis`).
        if let Some(selective) = &options.axes.selective_metric {
            for metric in crate::selective_axis::SUBSTITUTE_METRICS {
                if metric != selective && input.metrics.iter().any(|m| m == metric) {
                    candidates.push((
                        format!("selective={metric}"),
                        AxisConfig { selective_metric: Some(metric.to_string()), ..options.axes.clone() },
                    ));
                }
            }
        }
        for (estimator, axes) in candidates {
            let result = primary.as_ref().map_err(|e| e.to_string()).and_then(|primary| {
                let (_, _, subst) = plan_profiles(&table, means, &axes).map_err(|e| e.to_string())?;
                let b = panel_crs_of(&subst, &panel_config).map_err(|e| e.to_string())?;
                compare_rankings(primary, &b).map_err(|e| e.to_string())
            });
            substitutions.push(match result {
                Ok(c) => Substitution { estimator, comparison: Some(c), skipped: None },
                Err(reason) => Substitution { estimator, comparison: None, skipped: Some(reason) },
            });
        }

        // Axis correlations.
        let mut correlations = Vec::new();
        let axes = axes_of(options.axes.n_axes());
        for (i, &a) in axes.iter().enumerate() {
            for &b in &axes[i + 1..] {
                let enc: Vec<_> = profiles.iter().map(|p| (p.get(a), p.get(b))).collect();
                correlations.push(correlation("encoder", a.name(), b.name(), &enc));
                let cell: Vec<_> = cells
                    .iter()
                    .map(|c| {
                        (c.values.axis(a, options.axes.robustness), c.values.axis(b, options.axes.robustness))
                    })
                    .collect();
                correlations.push(correlation("cell", a.name(), b.name(), &cell));
            }
        }
        let le: Vec<Option<f64>> = profiles.iter().map(|p| p.get(Axis::LabelEfficiency)).collect();
        let full: Vec<Option<f64>> = profiles.iter().map(|p| p.get(Axis::Discrimination)).collect();
        let zip = |x: &[Option<f64>], y: &[Option<f64>]| -> Vec<(Option<f64>, Option<f64>)> {
            x.iter().copied().zip(y.iter().copied()).collect()
        };
        correlations.push(correlation("encoder", "label_efficiency", "aulc", &zip(&le, &aulc)));
        correlations.push(correlation("encoder", "aulc", "full_label_discrimination", &zip(&aulc, &full)));

        // Per-domain CRS.
        let mut by_domain: BTreeMap<&str, Vec<Profile>> = BTreeMap::new();
        for cell in &cells {
            let values = axes.iter().map(|&a| cell.values.axis(a, options.axes.robustness)).collect();
            by_domain
                .entry(&cell.dataset)
                .or_default()
                .push(Profile::with_values(cell.encoder.clone(), values));
        }
        let mut per_domain = Vec::new();
        for (dataset, domain_profiles) in by_domain {
            let complete: Vec<Profile> =
                domain_profiles.into_iter().filter(|p| p.require_complete().is_ok()).collect();
            let config = ReferenceConfig { domain: Some(dataset.to_string()), ..panel_config.clone() };
            if complete.len() < 2 {
                notes.push(format!("per-domain CRS of {dataset} skipped: fewer than 2 complete encoders"));
                continue;
            }
            match panel_crs_of(&complete, &config) {
                Ok(scores) => {
                    let values: Vec<f64> = scores.iter().map(|s| s.1).collect();
                    let ranks = ordinal_ranks(&values);
                    per_domain.push(DomainCrs {
                        dataset: dataset.to_string(),
                        scores: scores.into_iter().zip(ranks).map(|((e, c), r)| (e, c, r)).collect(),
                    });
                }
                Err(e) => notes.push(format!("per-domain CRS of {dataset} skipped: {e}")),
            }
        }

        // Stability.
        let stability_report = match options.stability_seed {
            Some(seed) => match EvaluationOptions::stability_for_panel(seed, profiles.len()) {
                Some(config) => Some(stability(&profiles, &panel_config, &config)?),
                None => {
                    notes.push("stability analyses skipped: they need at least 3 encoders".into());
                    None
                }
            },
            None => None,
        };

        let encoder_analyses = encoder_analyses(
            &metric_rows,
            &per_domain,
            options.axes.regime,
            &options.axes.discrimination_metric,
            &options.axes.calibration_metric,
            &options.encoder_analyses,
        );
        let mut transfer_notes = Vec::new();
        let targets = prediction_targets(
            &table,
            means,
            &options.axes,
            &input.regimes,
            &cells,
            &per_domain,
            &crs,
            &mut transfer_notes,
        );
        let transfer_prediction =
            transfer_prediction(&estimates, set, &targets, &outcome_metrics(&options.axes), transfer_notes);
        let reference_json =
            serde_json::from_str(&reference.to_json()).map_err(|e| CrsError::InvalidParameter {
                name: "reference",
                message: format!("reference JSON did not round-trip: {e}"),
            })?;
        Ok(Evaluation {
            format: EVALUATION_FORMAT,
            version: EVALUATION_VERSION,
            input,
            axes: options.axes.clone(),
            estimators,
            component_weights: weights.component,
            axis_weights: weights.axis.as_slice().to_vec(),
            reference_origin: origin,
            reference: reference_json,
            reference_used: Some(reference),
            crs_not_computed: None,
            metric_rows,
            cells,
            profiles: encoder_profiles,
            crs,
            bootstrap,
            rank_comparisons,
            regime_comparisons,
            substitutions,
            correlations,
            per_domain,
            stability: stability_report,
            encoder_analyses,
            calibration_stability,
            focus: None,
            selective: None,
            convergence,
            transfer_prediction,
            notes,
        })
    }

    /// The evaluation with the FOCUS analyses attached (see [`crate::focus_analyses`]).
    pub fn with_focus(mut self, focus: FocusReport) -> Self {
        self.focus = Some(focus);
        self
    }

    /// The evaluation with the selective, conformal and shift-detection analyses attached (see
    /// [`crate::selective_analyses`]).
    pub fn with_selective(mut self, selective: SelectiveReport) -> Self {
        self.selective = Some(selective);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration_stability::StabilityAxis;
    use crate::run_record::RunRecord;

    fn rec(
        enc: &str,
        regime: Regime,
        frac: f64,
        seed: u64,
        cond: Condition,
        auroc: f64,
        ece: f64,
    ) -> RunRecord {
        RunRecord {
            encoder: enc.into(),
            dataset: "d".into(),
            regime,
            probe: "p".into(),
            calibrator: "none".into(),
            label_fraction: frac,
            seed,
            condition: cond,
            metrics: BTreeMap::from([("macro_auroc".to_string(), auroc), ("ece".to_string(), ece)]),
            paths: BTreeMap::new(),
            timings: BTreeMap::new(),
            versions: BTreeMap::new(),
            training: None,
        }
    }

    /// Four encoders of distinct quality, 3 seeds, every axis observed; LoRA runs for two of them.
    fn set(drop_perturbation_of: Option<&str>) -> RunRecordSet {
        let mut records = Vec::new();
        for (e, enc) in ["a", "b", "c", "d"].iter().enumerate() {
            let q = 0.02 * e as f64;
            let ece = 0.1 - 0.013 * ((e * 7) % 4) as f64;
            for seed in 0..3u64 {
                let noise = 0.003 * seed as f64;
                for (i, frac) in [0.01, 0.05, 0.1, 0.25, 1.0].into_iter().enumerate() {
                    let auroc = 0.7 + q + noise + 0.02 * i as f64 * (1.0 + 0.1 * ((e * 3) % 4) as f64);
                    records.push(rec(enc, Regime::Frozen, frac, seed, Condition::Clean, auroc, ece + noise));
                }
                if drop_perturbation_of != Some(*enc) {
                    let cond = Condition::Perturbation { perturbation: "blur".into(), severity: 1 };
                    let auroc = 0.7 + q - 0.01 * ((e * 5) % 4) as f64;
                    records.push(rec(enc, Regime::Frozen, 1.0, seed, cond, auroc, ece));
                }
                if e < 3 {
                    let auroc = 0.9 - q + noise;
                    records.push(rec(enc, Regime::Lora, 1.0, seed, Condition::Clean, auroc, ece));
                }
            }
        }
        RunRecordSet::from_records(records, "mem").unwrap()
    }

    fn options(replicates: usize) -> EvaluationOptions {
        EvaluationOptions {
            bootstrap: Some(BootstrapConfig { replicates, seed: 5, ..BootstrapConfig::default() }),
            ..EvaluationOptions::default()
        }
    }

    #[test]
    fn bootstrap_point_crs_is_the_panel_crs_and_intervals_are_attached() {
        let e = Evaluation::build(&set(None), &options(200)).unwrap();
        let boot = e.bootstrap.as_ref().unwrap();
        assert_eq!(e.crs.len(), 4);
        for c in &e.crs {
            let b = boot.encoders.iter().find(|b| b.encoder == c.encoder).unwrap();
            // The same anchors and CRS code on the same means: bit-identical.
            assert_eq!(b.crs.to_bits(), c.crs.to_bits(), "{}", c.encoder);
            assert_eq!((c.lower, c.upper, c.p_rank1), (Some(b.lower), Some(b.upper), Some(b.p_rank1)));
        }
        let mut ranks: Vec<usize> = e.crs.iter().map(|c| c.rank).collect();
        ranks.sort_unstable();
        assert_eq!(ranks, vec![1, 2, 3, 4]);
        assert_eq!(e.reference_origin, "panel");
    }

    #[test]
    fn compares_frozen_with_adapted_on_the_encoders_in_both() {
        let e = Evaluation::build(&set(None), &options(10)).unwrap();
        let c = e.rank_comparisons.iter().find(|c| c.name == "frozen_vs_lora_discrimination").unwrap();
        assert_eq!(c.comparison.n, 3);
        // LoRA AUROC is 0.9 − q, the reverse of the frozen order 0.7 + q: every pair reverses.
        assert_eq!(c.comparison.reversals, 3);
        assert!(e.rank_comparisons.iter().any(|c| c.name == "auroc_vs_crs"));
        assert_eq!(e.substitutions[0].estimator, "robustness=corruption-only");
    }

    #[test]
    fn every_coop_loss_and_both_template_choices_are_compared_with_frozen() {
        let mut records: Vec<RunRecord> = set(None).records().iter().map(|l| l.record.clone()).collect();
        for seed in 0..3u64 {
            for (enc, probe, auroc) in
                [("a", "ce", 0.8), ("b", "ce", 0.85), ("a", "mcm", 0.81), ("b", "mcm", 0.79)]
            {
                let mut r = rec(enc, Regime::Coop, 1.0, seed, Condition::Clean, auroc, 0.05);
                r.probe = probe.into();
                records.push(r);
            }
            // One CLIP-like encoder with two templates: P2 is the better one.
            for (probe, auroc, ece) in [("zero-shot:P1", 0.6, 0.25), ("zero-shot:P2", 0.7, 0.125)] {
                let mut r = rec("a", Regime::ZeroShot, 1.0, seed, Condition::Clean, auroc, ece);
                r.probe = probe.into();
                records.push(r);
            }
        }
        let set = RunRecordSet::from_records(records, "mem").unwrap();
        let e = Evaluation::build(&set, &options(10)).unwrap();
        let methods: Vec<(Regime, &str)> =
            e.regime_comparisons.iter().map(|c| (c.regime, c.method.as_str())).collect();
        assert_eq!(
            methods,
            [
                (Regime::Lora, "p"),
                (Regime::Coop, "ce"),
                (Regime::Coop, "mcm"),
                (Regime::ZeroShot, "zero-shot (mean over templates)"),
                (Regime::ZeroShot, "zero-shot (best template)"),
            ]
        );
        assert!(!e.notes.iter().any(|n| n.contains("select one")), "{:?}", e.notes);
        // Each CoOp loss is rank-compared on its two encoders; LoRA keeps its historical name.
        for name in [
            "frozen_vs_lora_discrimination",
            "frozen_vs_coop_ce_discrimination",
            "frozen_vs_coop_mcm_calibration",
        ] {
            assert!(e.rank_comparisons.iter().any(|c| c.name == name), "{name}");
        }
        let mcm = &e.regime_comparisons[2];
        assert_eq!(mcm.encoders.len(), 2);
        assert_eq!(mcm.encoders[1].adapted_discrimination, Some(0.79));
        // Zero-shot: one encoder, still answered per encoder; mean of the templates and the best (P2).
        let mean = &e.regime_comparisons[3];
        assert_eq!(mean.encoders[0].adapted_discrimination, Some((0.6 + 0.7) / 2.0));
        assert_eq!(mean.encoders[0].adapted_calibration_error, Some((0.25 + 0.125) / 2.0));
        assert!(mean.rank_comparisons.is_empty());
        let best = &e.regime_comparisons[4];
        assert_eq!(best.encoders[0].template.as_deref(), Some("P2"));
        assert_eq!(best.encoders[0].adapted_calibration_error, Some(0.125));
        assert_eq!(
            best.encoders[0].base_discrimination,
            e.cells.iter().find(|c| c.encoder == "a").unwrap().values.discrimination
        );
        assert!(
            e.notes.iter().any(|n| n.contains("zero-shot (best template) by discrimination: 1 encoder(s)")),
            "{:?}",
            e.notes
        );
    }

    #[test]
    fn an_encoder_missing_an_axis_is_an_error() {
        let err = Evaluation::build(&set(Some("c")), &options(10)).unwrap_err();
        assert!(
            matches!(&err, CrsError::MissingAxis { encoder, axis: Axis::Robustness } if encoder == "c"),
            "{err}"
        );
    }

    #[test]
    fn a_saved_reference_with_other_estimators_is_refused() {
        let base = Evaluation::build(&set(None), &options(10)).unwrap();
        let opts = EvaluationOptions {
            reference: base.reference_used.clone(),
            axes: AxisConfig { robustness: RobustnessVariant::CorruptionOnly, ..AxisConfig::default() },
            ..options(10)
        };
        let err = Evaluation::build(&set(None), &opts).unwrap_err();
        assert!(matches!(err, CrsError::EstimatorMismatch { .. }), "{err}");
        // The same estimators reproduce the panel scores exactly.
        let again = EvaluationOptions { reference: base.reference_used.clone(), ..options(10) };
        let e = Evaluation::build(&set(None), &again).unwrap();
        assert_eq!(e.reference_origin, "saved");
        for (a, b) in base.crs.iter().zip(&e.crs) {
            assert_eq!(a.crs.to_bits(), b.crs.to_bits());
        }
    }

    /// Zero-shot records as `calibra zero-shot` writes them: one per template, one seed, fraction 1.
    fn zero_shot_set() -> RunRecordSet {
        let records = (1..=3)
            .map(|t| {
                let mut r = rec("clip", Regime::ZeroShot, 1.0, 0, Condition::Clean, 0.6, 0.1 * t as f64);
                r.probe = format!("zero-shot:P{t}");
                r
            })
            .collect();
        RunRecordSet::from_records(records, "mem").unwrap()
    }

    #[test]
    fn a_set_without_the_configured_regime_gives_rows_and_stability_but_no_crs() {
        let e = Evaluation::build(&zero_shot_set(), &options(10)).unwrap();
        let why = e.crs_not_computed.as_deref().unwrap();
        assert!(why.contains("no runs of regime `frozen`") && why.contains("zero-shot"), "{why}");
        assert!(e.crs.is_empty() && e.profiles.is_empty() && e.bootstrap.is_none());
        assert!(e.reference_used.is_none() && e.reference.is_null() && e.reference_origin == "none");
        assert_eq!(e.metric_rows.len(), 3 * 2);
        let templates: Vec<_> = e.calibration_stability.axis(StabilityAxis::Templates).collect();
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].members, ["P1", "P2", "P3"]);
    }

    #[test]
    fn a_regime_with_axes_no_encoder_has_names_them() {
        let opts = EvaluationOptions {
            axes: AxisConfig {
                regime: Regime::ZeroShot,
                probe: Some("zero-shot:P1".into()),
                ..AxisConfig::default()
            },
            ..options(10)
        };
        let e = Evaluation::build(&zero_shot_set(), &opts).unwrap();
        let why = e.crs_not_computed.unwrap();
        assert!(
            why.contains("label_efficiency axis needs") && why.contains("0.01, 0.05, 0.1, 0.25"),
            "{why}"
        );
        assert!(why.contains("robustness axis needs"), "{why}");
        // Without --probe the templates are several probes per cell: also named, not an error.
        let opts = EvaluationOptions {
            axes: AxisConfig { regime: Regime::ZeroShot, ..AxisConfig::default() },
            ..options(10)
        };
        let why = Evaluation::build(&zero_shot_set(), &opts).unwrap().crs_not_computed.unwrap();
        assert!(why.contains("zero-shot:P1") && why.contains("zero-shot:P2"), "{why}");
    }

    #[test]
    fn a_saved_reference_on_a_set_without_a_crs_is_an_error() {
        let base = Evaluation::build(&set(None), &options(10)).unwrap();
        let opts = EvaluationOptions { reference: base.reference_used.clone(), ..options(10) };
        let err = Evaluation::build(&zero_shot_set(), &opts).unwrap_err().to_string();
        assert!(err.contains("saved reference") && err.contains("no runs of regime"), "{err}");
    }

    #[test]
    fn a_full_set_keeps_its_crs_and_gains_the_stability_table() {
        let e = Evaluation::build(&set(None), &options(10)).unwrap();
        assert!(e.crs_not_computed.is_none() && e.reference_used.is_some());
        // 4 encoders × (5 clean fractions + 1 perturbation) frozen groups + 3 LoRA groups, 3 seeds each.
        let seeds: Vec<_> = e.calibration_stability.axis(StabilityAxis::Seeds).collect();
        assert_eq!(seeds.len(), 4 * 6 + 3);
        assert!(seeds.iter().all(|r| r.members == ["0", "1", "2"]));
        assert_eq!(e.calibration_stability.axis(StabilityAxis::Templates).count(), 0);
    }

    #[test]
    fn stability_design_scales_with_the_panel() {
        let paper = EvaluationOptions::stability_for_panel(1, 15).unwrap();
        assert_eq!(
            (paper.subpanel_sizes.clone(), paper.inserted_per_trial, paper.top_k),
            (vec![12, 10], 3, 3)
        );
        let small = EvaluationOptions::stability_for_panel(1, 4).unwrap();
        assert_eq!((small.subpanel_sizes.clone(), small.inserted_per_trial), (vec![3], 2));
        assert!(EvaluationOptions::stability_for_panel(1, 2).is_none());
    }
}
