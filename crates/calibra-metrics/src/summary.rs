//! The full metric set of one predictions table, as `calibra metrics` reports it.
//!
//! Definitions per task (every metric's formula is in its own module):
//! - **multiclass** (K ≥ 3) and **binary** (K = 2, mutually exclusive classes, `label` column):
//!   top-label accuracy; macro one-vs-rest AUROC and average precision (sklearn parity: K = 2 uses the
//!   class-1 column; a class with a single label value makes the macro value undefined → `null`);
//!   top-label ECE / MCE and the reliability bins (equal width, `n_bins`, the chosen bin-edge
//!   convention); class-wise ECE; Mukhoti's adaptive ECE (`n_bins` equal-mass bins); Nixon's ACE
//!   (30 ranges, threshold 0); Brier in the multiclass sum form (binary task: the one-column binary
//!   form); NLL from logits when the file has logits (exact log-softmax), else from probabilities
//!   clipped to [eps, 1 − eps]; macro F1 of the argmax. The binary task also reports
//!   `ece_binary_positive` (class-1 probability against the label).
//! - **multilabel** (`label_<name>` columns, blanks masked per label): each label is a binary problem
//!   on its observed rows. AUROC and AP: mean over labels where they are defined (a label whose
//!   observed rows hold a single class is skipped); ECE: mean over labels
//!   of the positive-class ECE (the CRS calibration axis); MCE, Brier and NLL: mean over labels of the
//!   binary forms; accuracy: fraction of observed (row, label) cells where `p ≥ 0.5` matches the label;
//!   macro F1: mean over labels of the positive-class F1 at 0.5; reliability bins: positive-class
//!   probability of all observed cells pooled. Top-label-only metrics (adaptive ECE, ACE, class-wise
//!   ECE) are undefined (`null`).
//! - `--ordinal` adds quadratic weighted kappa and ordinal MAE of the argmax (single-label tasks only).
//!
//! Values that are undefined for the input are `None` (JSON `null`), never a made-up number.

use crate::ace::class_error_sorted;
use crate::auroc::{MacroAverage, auroc_defined, auroc_of_groups};
use crate::average_precision::{ap_defined, average_precision_of_groups};
use crate::input::{top_label, validate_labels, validate_probabilities, validate_unit_interval};
use crate::score_groups::ScoreGroups;
use crate::{
    ACE_DEFAULT_RANGES, Binning, MetricsError, ReliabilityBin, UndefinedPolicy, accuracy, adaptive_ece,
    binary_nll, brier_binary, brier_multiclass, classwise_ece, ece_binary_positive,
    expected_calibration_error, macro_f1, maximum_calibration_error, multilabel_macro_auroc,
    multilabel_macro_average_precision, nll_from_logits, nll_from_probabilities, ordinal_mae,
    quadratic_weighted_kappa, reliability_bins, top_label_reliability_bins,
};
use rayon::prelude::*;
use serde::Serialize;

/// Options of the metric set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SummaryOptions {
    /// Equal-width bins for ECE, MCE, class-wise ECE and the reliability diagram; also the number of
    /// equal-mass bins of adaptive ECE. Default 15.
    pub n_bins: usize,
    pub binning: Binning,
    /// Also compute quadratic weighted kappa and ordinal MAE (classes are ordered grades).
    pub ordinal: bool,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { n_bins: 15, binning: Binning::RightClosed, ordinal: false }
    }
}

/// The task a metric set was computed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SummaryTask {
    Multiclass,
    Binary,
    Multilabel,
}

/// Ordinal metrics, present only when requested.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrdinalMetrics {
    pub qwk: Option<f64>,
    pub ordinal_mae: Option<f64>,
}

/// The metric set of one predictions table (JSON keys are the field names).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    pub n: usize,
    pub num_classes: usize,
    pub task: SummaryTask,
    pub n_bins: usize,
    pub binning: Binning,
    pub accuracy: Option<f64>,
    pub macro_auroc: Option<f64>,
    /// Per class (or label) AUROC; `None` where undefined.
    pub auroc_per_class: Vec<Option<f64>>,
    pub macro_auprc: Option<f64>,
    pub ece: Option<f64>,
    /// Positive-class ECE (binary and multilabel tasks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ece_binary_positive: Option<f64>,
    pub adaptive_ece: Option<f64>,
    pub ace: Option<f64>,
    pub mce: Option<f64>,
    pub classwise_ece: Option<f64>,
    pub brier: Option<f64>,
    pub nll: Option<f64>,
    pub macro_f1: Option<f64>,
    pub reliability: Vec<ReliabilityBin>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<OrdinalMetrics>,
}

/// `NaN` (undefined) becomes `None`.
fn defined(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

/// Metric set of a single-label (binary or multiclass) table. `probs` are validated probabilities;
/// `logits`, when the source had them, give the exact NLL.
pub fn summarize_single_label(
    probs: &[f64],
    logits: Option<&[f64]>,
    k: usize,
    labels: &[usize],
    options: &SummaryOptions,
) -> Result<MetricSummary, MetricsError> {
    let n = validate_probabilities(probs, k)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    validate_labels(labels, n, k)?;
    if k < 2 {
        return Err(MetricsError::InvalidArgument(format!(
            "a single-label task needs K ≥ 2 classes, got {k}"
        )));
    }
    let nb = options.n_bins;
    if nb == 0 {
        return Err(MetricsError::InvalidArgument("the number of bins must be at least 1".into()));
    }
    let task = if k == 2 { SummaryTask::Binary } else { SummaryTask::Multiclass };
    // The ranking family (one sort per class) and the calibration family are independent: they run
    // side by side. Each value is computed by one deterministic function, so the result does not
    // depend on the number of threads.
    let ((auroc, auprc, ace), calibration) = rayon::join(
        || ranking_and_ace(probs, k, labels),
        || -> Result<_, MetricsError> {
            let bins = top_label_reliability_bins(probs, k, labels, nb, options.binning)?;
            let ece = expected_calibration_error(&bins, n);
            let mce = maximum_calibration_error(&bins);
            let adaptive = adaptive_ece(probs, k, labels, nb)?;
            let classwise = classwise_ece(probs, k, labels, nb, options.binning)?;
            Ok((bins, ece, mce, adaptive, classwise))
        },
    );
    let (reliability, ece, mce, adaptive, classwise) = calibration?;
    let (_, pred) = top_label(probs, k);
    let (brier, ece_positive) = if k == 2 {
        let pos: Vec<f64> = probs.chunks_exact(2).map(|r| r[1]).collect();
        let y: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
        (brier_binary(&pos, &y), Some(ece_binary_positive(&pos, &y, nb, options.binning)))
    } else {
        (brier_multiclass(probs, k, labels)?, None)
    };
    let nll = match logits {
        Some(z) => nll_from_logits(z, k, labels)?,
        None => nll_from_probabilities(probs, k, labels)?,
    };
    let ordinal = options.ordinal.then(|| OrdinalMetrics {
        qwk: defined(quadratic_weighted_kappa(labels, &pred, k)),
        ordinal_mae: defined(ordinal_mae(labels, &pred)),
    });
    Ok(MetricSummary {
        n,
        num_classes: k,
        task,
        n_bins: nb,
        binning: options.binning,
        accuracy: defined(accuracy(probs, k, labels)?),
        macro_auroc: defined(auroc.mean),
        auroc_per_class: auroc.per_class.iter().copied().map(defined).collect(),
        macro_auprc: defined(auprc.mean),
        ece: defined(ece),
        ece_binary_positive: ece_positive.and_then(defined),
        adaptive_ece: defined(adaptive),
        ace: defined(ace),
        mce: defined(mce),
        classwise_ece: defined(classwise),
        brier: defined(brier),
        nll: defined(nll),
        macro_f1: defined(macro_f1(labels, &pred, k)),
        reliability,
        ordinal,
    })
}

/// Macro one-vs-rest AUROC and AP (strict, sklearn parity) and Nixon's ACE (30 ranges, threshold 0)
/// from ONE sort per class column: ACE needs each column sorted, AUROC and AP need it sorted and split
/// by label, so the summary sorts once and derives all three. The values are bit-identical to
/// [`crate::macro_auroc_ovr`], [`crate::macro_average_precision_ovr`] and
/// [`adaptive_calibration_error`] (the same functions of the same sorted values; a test checks it).
/// Inputs must already be validated.
fn ranking_and_ace(probs: &[f64], k: usize, labels: &[usize]) -> (MacroAverage, MacroAverage, f64) {
    struct Column {
        auroc: f64,
        auroc_defined: bool,
        ap: f64,
        ap_defined: bool,
        ace_term: f64,
    }
    let columns: Vec<Column> = (0..k)
        .into_par_iter()
        .map(|c| {
            let groups =
                ScoreGroups::from_items(probs.chunks_exact(k).zip(labels).map(|(row, &y)| (row[c], y == c)));
            let (sorted, positive) = groups.ascending_above(0.0);
            let positives = sorted.iter().zip(&positive).filter(|(_, p)| **p).map(|(v, _)| *v);
            Column {
                auroc: auroc_of_groups(&groups),
                auroc_defined: auroc_defined(groups.positives(), groups.negatives()),
                ap: average_precision_of_groups(&groups),
                ap_defined: ap_defined(groups.positives(), groups.negatives()),
                ace_term: class_error_sorted(&sorted, positives, ACE_DEFAULT_RANGES),
            }
        })
        .collect();
    // K = 2 is binary on column 1 (sklearn); otherwise every column, one-vs-rest.
    let ranked: &[Column] = if k == 2 { &columns[1..] } else { &columns };
    let macro_of = |value: fn(&Column) -> (f64, bool)| {
        let (values, defined): (Vec<f64>, Vec<bool>) = ranked.iter().map(value).unzip();
        MacroAverage::new(values, &defined, UndefinedPolicy::Strict)
    };
    let auroc = macro_of(|c| (c.auroc, c.auroc_defined));
    let ap = macro_of(|c| (c.ap, c.ap_defined));
    let mut ace = 0.0;
    for column in &columns {
        ace += column.ace_term / k as f64;
    }
    (auroc, ap, ace)
}

/// Metric set of a multilabel table: `probs` row-major `n × l` positive-class probabilities, `targets`
/// the same shape with `None` for blank (masked) cells.
pub fn summarize_multilabel(
    probs: &[f64],
    l: usize,
    targets: &[Option<bool>],
    options: &SummaryOptions,
) -> Result<MetricSummary, MetricsError> {
    let n = validate_unit_interval(probs, l)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    if targets.len() != probs.len() {
        return Err(MetricsError::Shape {
            what: format!("{} target cells for {n} rows × {l} labels", targets.len()),
        });
    }
    if options.ordinal {
        return Err(MetricsError::InvalidArgument("ordinal metrics need a single-label task".into()));
    }
    let nb = options.n_bins;
    if nb == 0 {
        return Err(MetricsError::InvalidArgument("the number of bins must be at least 1".into()));
    }
    // Observed (score, target) pairs of each label.
    let per_label: Vec<(Vec<f64>, Vec<bool>)> = (0..l)
        .map(|j| (0..n).filter_map(|i| targets[i * l + j].map(|t| (probs[i * l + j], t))).unzip())
        .collect();
    let observed: Vec<&(Vec<f64>, Vec<bool>)> = per_label.iter().filter(|(s, _)| !s.is_empty()).collect();
    let mean_over_labels = |f: &dyn Fn(&[f64], &[bool]) -> f64| -> f64 {
        let values: Vec<f64> = observed.iter().map(|(s, t)| f(s, t)).filter(|v| !v.is_nan()).collect();
        if values.is_empty() { f64::NAN } else { values.iter().sum::<f64>() / values.len() as f64 }
    };
    let (mut hits, mut cells) = (0usize, 0usize);
    let (mut pooled_p, mut pooled_y) = (Vec::new(), Vec::new());
    for (s, t) in &observed {
        for (&p, &y) in s.iter().zip(t.iter()) {
            hits += usize::from((p >= 0.5) == y);
            pooled_p.push(p);
            pooled_y.push(f64::from(u8::from(y)));
        }
        cells += s.len();
    }
    let reliability = reliability_bins(&pooled_p, &pooled_y, nb, options.binning);
    let ece = mean_over_labels(&|s, t| ece_binary_positive(s, t, nb, options.binning));
    let mce = mean_over_labels(&|s, t| {
        let y: Vec<f64> = t.iter().map(|&b| f64::from(u8::from(b))).collect();
        maximum_calibration_error(&reliability_bins(s, &y, nb, options.binning))
    });
    let auroc = multilabel_macro_auroc(probs, l, targets, UndefinedPolicy::SkipUndefined);
    let auprc = multilabel_macro_average_precision(probs, l, targets, UndefinedPolicy::SkipUndefined);
    Ok(MetricSummary {
        n,
        num_classes: l,
        task: SummaryTask::Multilabel,
        n_bins: nb,
        binning: options.binning,
        accuracy: (cells > 0).then(|| hits as f64 / cells as f64),
        macro_auroc: defined(auroc.mean),
        auroc_per_class: auroc.per_class.iter().copied().map(defined).collect(),
        macro_auprc: defined(auprc.mean),
        ece: defined(ece),
        ece_binary_positive: defined(ece),
        adaptive_ece: None,
        ace: None,
        mce: defined(mce),
        classwise_ece: None,
        brier: defined(mean_over_labels(&brier_binary)),
        nll: defined(mean_over_labels(&binary_nll)),
        macro_f1: defined(mean_over_labels(&binary_f1_at_half)),
        reliability,
        ordinal: None,
    })
}

/// Positive-class F1 at threshold 0.5 (sklearn `f1_score` of `p >= 0.5` with zero_division = 0).
fn binary_f1_at_half(scores: &[f64], targets: &[bool]) -> f64 {
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    for (&s, &t) in scores.iter().zip(targets) {
        match (s >= 0.5, t) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fneg += 1,
            (false, false) => {}
        }
    }
    let denom = 2 * tp + fp + fneg;
    if denom == 0 { 0.0 } else { 2.0 * tp as f64 / denom as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::softmax_rows;

    /// A pseudo-random but fixed logit matrix (a linear congruential stream; no RNG crate needed).
    fn logits(n: usize, k: usize) -> (Vec<f64>, Vec<usize>) {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let labels: Vec<usize> = (0..n).map(|_| (next() * k as f64) as usize).collect();
        let z = labels
            .iter()
            .flat_map(|&y| (0..k).map(move |j| if j == y { 1.5 } else { 0.0 }))
            .collect::<Vec<_>>();
        (z.into_iter().map(|v| v + 3.0 * next()).collect(), labels)
    }

    #[test]
    fn the_metric_set_does_not_depend_on_the_thread_count() {
        let (z, y) = logits(2000, 6);
        let p = softmax_rows(&z, 6);
        let options = SummaryOptions { ordinal: true, ..SummaryOptions::default() };
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| summarize_single_label(&p, Some(&z), 6, &y, &options).unwrap())
        };
        let one = serde_json::to_string(&run(1)).unwrap();
        assert_eq!(one, serde_json::to_string(&run(4)).unwrap());
        assert_eq!(one, serde_json::to_string(&run(3)).unwrap());
    }

    #[test]
    fn summary_reuses_the_single_metric_functions() {
        let (z, y) = logits(500, 4);
        let p = softmax_rows(&z, 4);
        let s = summarize_single_label(&p, Some(&z), 4, &y, &SummaryOptions::default()).unwrap();
        assert_eq!(s.ece, Some(crate::ece_top_label(&p, 4, &y, 15, Binning::RightClosed).unwrap()));
        assert_eq!(s.mce, Some(crate::mce_top_label(&p, 4, &y, 15, Binning::RightClosed).unwrap()));
        assert_eq!(
            s.macro_auroc,
            Some(crate::macro_auroc_ovr(&p, 4, &y, UndefinedPolicy::Strict).unwrap().mean)
        );
        assert_eq!(
            s.macro_auprc,
            Some(crate::macro_average_precision_ovr(&p, 4, &y, UndefinedPolicy::Strict).unwrap().mean)
        );
        assert_eq!(s.ace, Some(crate::adaptive_calibration_error(&p, 4, &y, 30, 0.0).unwrap()));
        assert_eq!(s.classwise_ece, Some(crate::classwise_ece(&p, 4, &y, 15, Binning::RightClosed).unwrap()));
        assert_eq!(s.adaptive_ece, Some(crate::adaptive_ece(&p, 4, &y, 15).unwrap()));
        assert_eq!(s.reliability.iter().map(|b| b.count).sum::<usize>(), 500);
        // K = 2: binary AUROC / AP on column 1, ACE over both columns.
        let (z2, y2) = logits(300, 2);
        let p2 = softmax_rows(&z2, 2);
        let s2 = summarize_single_label(&p2, None, 2, &y2, &SummaryOptions::default()).unwrap();
        assert_eq!(
            s2.macro_auroc,
            Some(crate::macro_auroc_ovr(&p2, 2, &y2, UndefinedPolicy::Strict).unwrap().mean)
        );
        assert_eq!(s2.ace, Some(crate::adaptive_calibration_error(&p2, 2, &y2, 30, 0.0).unwrap()));
    }

    #[test]
    fn bad_input_is_an_error_naming_the_row() {
        let err = summarize_single_label(&[0.5, 0.4], None, 2, &[0], &SummaryOptions::default()).unwrap_err();
        assert!(matches!(err, MetricsError::RowSum { row: 0, .. }), "{err}");
        let err =
            summarize_multilabel(&[0.5, 0.4], 2, &[Some(true)], &SummaryOptions::default()).unwrap_err();
        assert!(matches!(err, MetricsError::Shape { .. }), "{err}");
    }
}
