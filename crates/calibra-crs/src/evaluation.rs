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

use serde::Serialize;

use crate::axes::{AxisConfig, CellAxes, CellValues, LE_FRACTIONS, RobustnessVariant, SELECTIVE_METRIC};
use crate::bootstrap::{BootstrapConfig, BootstrapResult, paired_seed_bootstrap};
use crate::calibration_stability::{CalibrationStability, calibration_stability};
use crate::convergence::ConvergenceReport;
use crate::encoder_analyses::{EncoderAnalyses, EncoderAnalysisOptions, encoder_analyses};
use crate::encoder_profile::encoder_profiles;
use crate::error::CrsError;
use crate::focus_analyses::FocusReport;
use crate::metric_rows::SeedTable;
use crate::panel_profiles::{PanelPlan, profiles_or_why_not};
use crate::per_domain::per_domain_crs;
use crate::profile::{Axis, Profile};
use crate::rank_compare::compare_rankings;
use crate::reference::{AxisEstimators, Reference, ReferenceConfig, ValueScale, panel_crs};
use crate::regime_comparison::RegimeComparison;
use crate::run_record::RunRecordSet;
use crate::score::{ComponentWeights, ScoreWeights};
use crate::selective_analyses::SelectiveReport;
use crate::stability::{StabilityConfig, StabilityReport, stability};
use crate::transfer_prediction::{
    OutcomeMetrics, TransferPrediction, prediction_targets, transfer_prediction,
};

pub use crate::axis_correlation::Correlation;
use crate::axis_correlation::axis_correlations;
pub use crate::encoder_crs::EncoderCrs;
use crate::encoder_crs::encoder_crs;
pub use crate::encoder_profile::EncoderProfile;
pub use crate::input_summary::InputSummary;
pub use crate::metric_row_record::MetricRowRecord;
pub use crate::per_domain::DomainCrs;
pub use crate::rank_compare::NamedComparison;
pub use crate::substitution::Substitution;
use crate::substitution::substitutions;

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

/// The metric names behind the transfer-prediction outcomes.
fn outcome_metrics(axes: &AxisConfig) -> OutcomeMetrics {
    OutcomeMetrics {
        discrimination: axes.discrimination_metric.clone(),
        calibration: axes.calibration_metric.clone(),
    }
}

/// What the configured regime's panel gives: the reference in force and steps 2–9 of the module docs.
struct Panel {
    reference: Reference,
    /// `panel` or `saved`.
    origin: &'static str,
    weights: ScoreWeights,
    analyses: PanelAnalyses,
}

/// Steps 2–9 of the module docs; empty for a run set without a CRS.
#[derive(Default)]
struct PanelAnalyses {
    cells: Vec<CellAxes>,
    profiles: Vec<EncoderProfile>,
    crs: Vec<EncoderCrs>,
    bootstrap: Option<BootstrapResult>,
    rank_comparisons: Vec<NamedComparison>,
    regime_comparisons: Vec<RegimeComparison>,
    substitutions: Vec<Substitution>,
    correlations: Vec<Correlation>,
    per_domain: Vec<DomainCrs>,
    stability: Option<StabilityReport>,
}

/// An empty run set, or axis weights whose count does not match the axis configuration.
fn check_request(set: &RunRecordSet, options: &EvaluationOptions) -> Result<(), CrsError> {
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
    Ok(())
}

/// `reason` when a run set without a CRS is acceptable; an error when the request asked for a CRS (a
/// saved reference to score against, or five axis weights).
fn accept_without_crs(options: &EvaluationOptions, reason: String) -> Result<String, CrsError> {
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
    Ok(reason)
}

/// The convergence check of the adapted fits, with a note naming those that did not converge.
fn convergence_of(fits: &RunRecordSet, notes: &mut Vec<String>) -> ConvergenceReport {
    let convergence = crate::convergence::check_convergence(
        &fits.records().iter().map(|r| r.record.clone()).collect::<Vec<_>>(),
    );
    if !convergence.not_converged.is_empty() {
        notes.push(crate::convergence::note(&convergence));
    }
    convergence
}

/// The saved reference (checked against the estimators) or one built on the panel's profiles, with its
/// origin (`saved` or `panel`).
fn reference_for(
    options: &EvaluationOptions,
    profiles: &[Profile],
    estimators: &AxisEstimators,
) -> Result<(Reference, &'static str), CrsError> {
    Ok(match &options.reference {
        Some(saved) => {
            saved.check_compatible(estimators, ValueScale::Oriented)?;
            (saved.clone(), "saved")
        }
        None => {
            let config = ReferenceConfig {
                weights: options.weights,
                estimators: estimators.clone(),
                ..Default::default()
            };
            (Reference::build(profiles, config)?, "panel")
        }
    })
}

/// The paired-seed bootstrap with the weights in force, when configured and the panel has 2 encoders.
fn bootstrap_of(
    options: &EvaluationOptions,
    table: &SeedTable,
    panel_size: usize,
    weights: ScoreWeights,
    notes: &mut Vec<String>,
) -> Result<Option<BootstrapResult>, CrsError> {
    Ok(match &options.bootstrap {
        Some(config) if panel_size >= 2 => {
            let config = BootstrapConfig { weights, ..config.clone() };
            Some(paired_seed_bootstrap(table, &options.axes, &config)?)
        }
        Some(_) => {
            notes.push("bootstrap skipped: the panel has fewer than 2 encoders".into());
            None
        }
        None => None,
    })
}

/// Clean discrimination vs CRS over the encoders observed on discrimination (at least 2).
fn discrimination_vs_crs(
    profiles: &[Profile],
    crs: &[(String, f64)],
    axes: &AxisConfig,
) -> Result<Option<NamedComparison>, CrsError> {
    let disc: Vec<(String, f64)> =
        profiles.iter().filter_map(|p| p.get(Axis::Discrimination).map(|v| (p.encoder.clone(), v))).collect();
    if disc.len() < 2 {
        return Ok(None);
    }
    Ok(Some(NamedComparison {
        name: "auroc_vs_crs".into(),
        a: format!("clean {} ({})", axes.discrimination_metric, axes.regime),
        b: "CRS".into(),
        comparison: compare_rankings(&disc, crs)?,
    }))
}

/// The ranking stability analyses on the panel, with the design scaled to its size (at least 3).
fn stability_of(
    options: &EvaluationOptions,
    profiles: &[Profile],
    panel_config: &ReferenceConfig,
    notes: &mut Vec<String>,
) -> Result<Option<StabilityReport>, CrsError> {
    let Some(seed) = options.stability_seed else { return Ok(None) };
    match EvaluationOptions::stability_for_panel(seed, profiles.len()) {
        Some(config) => Ok(Some(stability(profiles, panel_config, &config)?)),
        None => {
            notes.push("stability analyses skipped: they need at least 3 encoders".into());
            Ok(None)
        }
    }
}

/// Steps 2–9 of the module docs on the configured regime's `plan`, `cells` and (possibly incomplete)
/// `profiles`.
fn panel(
    table: &SeedTable,
    means: &[f64],
    options: &EvaluationOptions,
    input: &InputSummary,
    estimators: &AxisEstimators,
    (plan, cells, profiles): PanelPlan,
    notes: &mut Vec<String>,
) -> Result<Panel, CrsError> {
    let values: Vec<CellValues> = plan.evaluate_values(means);
    let aulc = plan.encoder_means(&values, |c| c.aulc);
    let encoder_profiles = encoder_profiles(&plan, &values, &aulc, &cells, &profiles);
    for p in &profiles {
        p.require_complete()?;
    }

    let (reference, origin) = reference_for(options, &profiles, estimators)?;
    let weights = *reference.weights();
    let scores = reference.score(&profiles)?;
    let bootstrap = bootstrap_of(options, table, profiles.len(), weights, notes)?;
    let crs = encoder_crs(&scores, bootstrap.as_ref());
    if origin == "saved" && bootstrap.is_some() {
        notes.push(
            "bootstrap intervals describe the run set's own panel CRS (anchors recomputed per replicate), \
             not the CRS against the saved reference"
                .into(),
        );
    }

    let crs_named: Vec<(String, f64)> =
        scores.iter().map(|s| (s.encoder.clone(), s.components.crs)).collect();
    let mut rank_comparisons: Vec<NamedComparison> =
        discrimination_vs_crs(&profiles, &crs_named, &options.axes)?.into_iter().collect();
    let regime_comparisons = crate::regime_comparison::regime_comparisons(
        table,
        means,
        &options.axes,
        &cells,
        &input.regimes,
        &mut rank_comparisons,
        notes,
    )?;

    // Estimator substitutions, correlations and per-domain CRS rebuild references on the panel.
    let panel_config =
        ReferenceConfig { weights, estimators: estimators.clone(), ..ReferenceConfig::default() };
    let primary = match origin {
        "panel" => Ok(crs_named),
        _ => panel_crs(&profiles, &panel_config),
    };
    let substitutions = substitutions(table, means, &options.axes, &input.metrics, &primary, &panel_config);
    let correlations = axis_correlations(&profiles, &cells, &options.axes, &aulc);
    let per_domain = per_domain_crs(&cells, &options.axes, &panel_config, notes);
    let stability = stability_of(options, &profiles, &panel_config, notes)?;
    Ok(Panel {
        reference,
        origin,
        weights,
        analyses: PanelAnalyses {
            cells,
            profiles: encoder_profiles,
            crs,
            bootstrap,
            rank_comparisons,
            regime_comparisons,
            substitutions,
            correlations,
            per_domain,
            stability,
        },
    })
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
        check_request(set, options)?;
        let records = set.len();
        // Estimate records are predictions, not fits: nothing but the transfer prediction sees them.
        let (fits, estimates) = set.split_estimates();
        let table = SeedTable::from_records(&fits);
        let rows = table.rows();
        let means = rows.means();
        let estimators = estimators_for(&options.axes);
        let mut notes = Vec::new();
        let convergence = convergence_of(&fits, &mut notes);
        let metric_rows = MetricRowRecord::all(&rows);
        let input = InputSummary::new(records, &table, metric_rows.len(), !estimates.is_empty());
        let calibration_stability = calibration_stability(&fits);

        let saved = options.reference.is_some();
        let (panel, crs_not_computed) =
            match profiles_or_why_not(&table, means, &options.axes, saved, &input.regimes)? {
                Ok(plan) => {
                    (Some(panel(&table, means, options, &input, &estimators, plan, &mut notes)?), None)
                }
                Err(reason) => (None, Some(accept_without_crs(options, reason)?)),
            };
        let (reference, origin, weights, analyses) = match panel {
            Some(Panel { reference, origin, weights, analyses }) => {
                (Some(reference), origin, weights, analyses)
            }
            None => (None, "none", options.weights, PanelAnalyses::default()),
        };

        let encoder_analyses = encoder_analyses(
            &metric_rows,
            &analyses.per_domain,
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
            &analyses.cells,
            &analyses.per_domain,
            &analyses.crs,
            &mut transfer_notes,
        );
        let transfer_prediction =
            transfer_prediction(&estimates, &fits, &targets, &outcome_metrics(&options.axes), transfer_notes);
        let reference_json = match &reference {
            Some(reference) => {
                serde_json::from_str(&reference.to_json()).map_err(|e| CrsError::InvalidParameter {
                    name: "reference",
                    message: format!("reference JSON did not round-trip: {e}"),
                })?
            }
            None => serde_json::Value::Null,
        };
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
            reference_used: reference,
            crs_not_computed,
            metric_rows,
            cells: analyses.cells,
            profiles: analyses.profiles,
            crs: analyses.crs,
            bootstrap: analyses.bootstrap,
            rank_comparisons: analyses.rank_comparisons,
            regime_comparisons: analyses.regime_comparisons,
            substitutions: analyses.substitutions,
            correlations: analyses.correlations,
            per_domain: analyses.per_domain,
            stability: analyses.stability,
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
    use crate::run_record::{Condition, Regime, RunRecord};
    use std::collections::BTreeMap;

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

    /// CoOp's methods (`calibra train --method`, `[regimes.coop] methods`) write the probe
    /// `<method>+<loss>`; each is its own method of the comparison, under its own name.
    #[test]
    fn every_coop_method_is_compared_with_frozen_under_its_own_name() {
        let mut records: Vec<RunRecord> = set(None).records().iter().map(|l| l.record.clone()).collect();
        for seed in 0..3u64 {
            for (enc, probe, auroc) in [
                ("a", "ce", 0.8),
                ("b", "ce", 0.85),
                ("a", "kgcoop+ce", 0.82),
                ("b", "kgcoop+ce", 0.78),
                ("a", "prograd+ce", 0.81),
                ("b", "prograd+ce", 0.83),
            ] {
                let mut r = rec(enc, Regime::Coop, 1.0, seed, Condition::Clean, auroc, 0.05);
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
                (Regime::Coop, "kgcoop+ce"),
                (Regime::Coop, "prograd+ce")
            ]
        );
        let kg = &e.regime_comparisons[2];
        assert_eq!(kg.selection, "probe `kgcoop+ce`");
        assert!((kg.encoders[1].adapted_discrimination.unwrap() - 0.78).abs() < 1e-12);
        for name in ["frozen_vs_coop_kgcoop+ce_discrimination", "frozen_vs_coop_prograd+ce_calibration"] {
            assert!(e.rank_comparisons.iter().any(|c| c.name == name), "{name}");
        }
        // Calibration stability keeps the methods apart too (one seed group per method and encoder).
        let stability = crate::calibration_stability::calibration_stability(&set);
        for method in ["ce", "kgcoop+ce", "prograd+ce"] {
            let groups = stability.rows.iter().filter(|r| r.regime == Regime::Coop && r.method == method);
            assert_eq!(groups.count(), 2, "{method}");
        }
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
