//! [`evaluate`]: the whole reliability evaluation of a run set (`calibra eval`) — metric rows,
//! profiles, CRS with bootstrap intervals, rank comparisons, stability, the FOCUS and selective
//! analyses — and, with an output directory, its files ([`crate::eval_output`]), written whole
//! ([`crate::output_dir`]).
//!
//! A run set that cannot give a CRS as a whole (e.g. the records of `calibra zero-shot`: one label
//! fraction, no perturbations; or a single encoder) is still evaluated: metric rows, calibration
//! stability and the analyses that apply are written, `profiles.csv` and `crs.csv` hold their header
//! only, and the reason is logged, stated at the top of `report.md` and stored as
//! `crs_not_computed` in `evaluation.json`. Asking for what needs the CRS (`reference`,
//! `save_reference`) on such a set is an error.

use crate::bootstrap_warning::bootstrap_warning;
use crate::eval_output::output_files;
use crate::frozen_weights::check_frozen_weights;
use crate::output_dir::write_output_dir;
use crate::prediction_check::{check_against_predictions, report_disagreements};
use crate::reliability_figures::reliability_figures;
use crate::run_records::{describe, read_records, record_files};
use crate::{EvalError, EvalOptions, ReportOptions};
use calibra_crs::{
    AxisConfig, BootstrapConfig, EncoderAnalysisOptions, Evaluation, EvaluationOptions, FocusOptions,
    PairedBootstrapConfig, Reference, RunRecordSet, SampleMetric, ScoreWeights, SelectiveOptions,
    SelectiveReport, focus_analyses, selective_analyses,
};
use std::borrow::Cow;
use std::time::Instant;

/// Evaluates the run records of `o.inputs` as `o` asks, writes `o.out` when given and saves the
/// reference when asked; progress, warnings and notes go to `log` (one message per call).
pub fn evaluate(o: &EvalOptions, log: &mut dyn FnMut(&str)) -> Result<Evaluation, EvalError> {
    let files = record_files(&o.inputs)?;
    let what = describe(&files);
    let mut notes = Vec::new();
    let set = read_records(&files, &mut notes)?;
    for n in &notes {
        log(&format!("note: {n}"));
    }
    report_disagreements(&check_against_predictions(&set), o.strict, log)?;
    for (flag, b) in [("--bootstrap", o.bootstrap), ("--delta-bootstrap", o.delta_bootstrap)] {
        if let Some(w) = bootstrap_warning(b, o.level, flag) {
            log(&w);
        }
    }
    let reference = match &o.reference {
        Some(path) => {
            let reference = Reference::load(path)?;
            check_frozen_weights(path, &reference, o.weights, o.axis_weights)?;
            Some(reference)
        }
        None => None,
    };
    // Five axis weights turn on the selective axis: it is computed from the selective analyses'
    // per-run AUGRC (attached to the records as metrics), so those analyses run first.
    let five_weights = o.axis_weights.is_some_and(|w| w.has_selective());
    let selective_axis =
        five_weights || reference.as_ref().is_some_and(|r| r.estimators().selective.is_some());
    let selective_options =
        o.selective.map(|c| SelectiveOptions { alpha: c.alpha, method: c.method, seed: o.seed });
    if selective_axis && selective_options.is_none() {
        let why = if five_weights { "five axis weights" } else { "the saved reference has a selective axis" };
        return Err(EvalError::SelectiveAxisAlone { why });
    }
    let run_selective = |options: &SelectiveOptions| -> Result<SelectiveReport, EvalError> {
        selective_analyses(&set, options)
            .map_err(|source| EvalError::Selective { what: what.clone(), source })
    };
    // Without the selective axis the analyses run where they always did (after the FOCUS analyses).
    let mut selective_report = match (&selective_options, selective_axis) {
        (Some(options), true) => Some(run_selective(options)?),
        _ => None,
    };
    let axis_set = match (&selective_report, selective_axis) {
        (Some(report), true) => Cow::Owned(calibra_crs::with_selective_metrics(&set, report)?),
        _ => Cow::Borrowed(&set),
    };
    let options = evaluation_options(o, reference, selective_axis);
    let started = Instant::now();
    if o.bootstrap > 0 {
        log(&format!(
            "evaluating {} run records from {what}; paired-seed bootstrap with {} replicates (seed {})…",
            set.len(),
            o.bootstrap,
            o.seed
        ));
    }
    let mut evaluation = Evaluation::build(&axis_set, &options)
        .map_err(|source| EvalError::Build { what: what.clone(), source })?;
    if o.focus {
        let report = focus_analyses(&set, &focus_options(o))
            .map_err(|source| EvalError::Focus { what: what.clone(), source })?;
        evaluation = evaluation.with_focus(report);
    } else if !o.group_columns.is_empty() || o.groups.is_some() {
        return Err(EvalError::FocusOff);
    }
    if let (None, Some(options)) = (&selective_report, &selective_options) {
        selective_report = Some(run_selective(options)?);
    }
    if let Some(report) = selective_report {
        evaluation = evaluation.with_selective(report);
    }
    if o.bootstrap > 0 {
        log(&format!("evaluation done in {:.2} s", started.elapsed().as_secs_f64()));
    }
    write_outputs(o, &set, &evaluation, log)?;
    if let Some(why) = &evaluation.crs_not_computed {
        log(&format!("note: {why}"));
    }
    Ok(evaluation)
}

/// The output directory and the saved reference, as `o` asks.
fn write_outputs(
    o: &EvalOptions,
    set: &RunRecordSet,
    evaluation: &Evaluation,
    log: &mut dyn FnMut(&str),
) -> Result<(), EvalError> {
    let figures = match &o.out {
        Some(_) if o.reliability => reliability_figures(set, o.bins)?,
        _ => Vec::new(),
    };
    let reference = evaluation.reference_used.as_ref();
    if let (Some(path), None) = (&o.save_reference, reference) {
        let why = evaluation.crs_not_computed.as_deref().unwrap_or("CRS not computed").to_string();
        return Err(EvalError::NothingToSave { path: path.clone(), why });
    }
    if let Some(out) = &o.out {
        let layout = ReportOptions { all_diagrams: o.all_diagrams, ..ReportOptions::default() };
        let files = output_files(evaluation, &figures, reference, &layout, o.png)?;
        write_output_dir(out, &files, o.force, log)?;
        log(&format!("wrote {} files to {}", files.len(), out.display()));
    }
    if let (Some(path), Some(reference)) = (&o.save_reference, reference) {
        reference.save(path)?;
        log(&format!("saved the reference to {}", path.display()));
    }
    Ok(())
}

/// The evaluator's options: which runs define the axes, the weights, the reference, the bootstrap,
/// the stability seed and the encoder-analysis declarations.
fn evaluation_options(
    o: &EvalOptions,
    reference: Option<Reference>,
    selective_axis: bool,
) -> EvaluationOptions {
    EvaluationOptions {
        axes: AxisConfig {
            regime: o.regime,
            probe: o.probe.clone(),
            calibrator: Some(o.calibrator.clone()),
            discrimination_metric: o.discrimination_metric.clone(),
            calibration_metric: o.calibration_metric.clone(),
            robustness: o.robustness,
            selective_metric: selective_axis.then(|| calibra_crs::SELECTIVE_METRIC.to_string()),
            ..AxisConfig::default()
        },
        weights: ScoreWeights {
            axis: o.axis_weights.unwrap_or_default(),
            component: o.weights.unwrap_or_default(),
        },
        reference,
        bootstrap: (o.bootstrap > 0).then(|| BootstrapConfig {
            replicates: o.bootstrap,
            seed: o.seed,
            level: o.level,
            ..BootstrapConfig::default()
        }),
        stability_seed: o.stability.then_some(o.seed),
        encoder_analyses: EncoderAnalysisOptions {
            specialists: o.specialists.clone(),
            crossover_reference: o.crossover_reference.clone(),
        },
    }
}

/// The FOCUS analyses' options: the declared columns and group table, every sample metric, and the
/// adaptation deltas' paired bootstrap (seeded and levelled as the CRS bootstrap).
fn focus_options(o: &EvalOptions) -> FocusOptions {
    FocusOptions {
        columns: o.group_columns.clone(),
        groups_file: o.groups.clone(),
        min_group_size: o.min_group_size,
        metrics: SampleMetric::ALL.to_vec(),
        bootstrap: PairedBootstrapConfig {
            replicates: o.delta_bootstrap,
            seed: o.seed,
            level: o.level,
            ..PairedBootstrapConfig::default()
        },
    }
}
