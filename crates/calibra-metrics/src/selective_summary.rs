//! The selective-prediction and smooth-calibration metric set of one predictions table, which
//! `calibra metrics` adds to [`crate::MetricSummary`] (JSON keys are the field names):
//!
//! - `aurc`, `eaurc`, `augrc`, `risk_at_80_coverage`, `coverage_at_5_risk`: [`crate::selective`] with
//!   the MSP as the confidence and `argmax ≠ label` as the error (torch-uncertainty's `AURC` input);
//! - `smooth_ece`: [`crate::smooth_ece`] (relplot `smECE`) of the top-label confidence;
//! - `debiased_ece`: [`crate::debiased_ece`] (Kumar et al. 2019, L2, 15 equal-mass bins), top-label;
//! - `selective_by_score`: AURC, E-AURC and AUGRC with each [`ConfidenceScore`] the table supports
//!   (`max-logit` and `energy` need logits) as the ranking, the errors unchanged.
//!
//! Multilabel: every label is a binary problem on its observed rows, with the two-column
//! probabilities `[1 − p, p]` (torch-uncertainty stacks a 1-D input the same way, so the prediction
//! is 1 iff `p > 0.5`); each value is the mean over labels where it is defined; smooth and debiased
//! ECE are positive-class (`p` against the label). Undefined values are `None`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::input::{validate_labels, validate_probabilities, validate_unit_interval};
use crate::{
    ConfidenceScore, DEBIASED_ECE_DEFAULT_BINS, MetricsError, debiased_ece, selective_areas, smooth_ece,
};

/// AURC, E-AURC and AUGRC of one confidence score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScoreAreas {
    pub aurc: Option<f64>,
    pub eaurc: Option<f64>,
    pub augrc: Option<f64>,
}

/// The selective-prediction metric set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectiveSummary {
    pub aurc: Option<f64>,
    pub eaurc: Option<f64>,
    pub augrc: Option<f64>,
    pub risk_at_80_coverage: Option<f64>,
    pub coverage_at_5_risk: Option<f64>,
    pub smooth_ece: Option<f64>,
    pub debiased_ece: Option<f64>,
    /// Keyed by the score's name (`msp`, `max-logit`, `energy`, `entropy`, `margin`).
    pub selective_by_score: BTreeMap<String, ScoreAreas>,
}

fn defined(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

fn mean_defined(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.filter(|x| !x.is_nan()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The set for a single-label table (`probs` validated probabilities, `logits` when the file has
/// them).
///
/// # Errors
/// Malformed probabilities, logits or labels, or no rows.
pub fn summarize_selective_single_label(
    probs: &[f64],
    logits: Option<&[f64]>,
    k: usize,
    labels: &[usize],
) -> Result<SelectiveSummary, MetricsError> {
    let n = validate_probabilities(probs, k)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    validate_labels(labels, n, k)?;
    let (conf, errors) = crate::top_label_errors(probs, k, labels);
    let correct: Vec<f64> = errors.iter().map(|&e| if e { 0.0 } else { 1.0 }).collect();
    let (ranking, calibration) = rayon::join(
        || -> Result<_, MetricsError> {
            // The scores are independent: one task each, results taken back in ALL order (so the
            // first error is always the same one). MSP is the confidence `conf` already holds, so
            // its areas are the main ones rather than a second sort of the same values.
            use rayon::prelude::*;
            let main = selective_areas(&conf, &errors)?;
            let others: Vec<Option<Result<(ConfidenceScore, crate::SelectiveAreas), MetricsError>>> =
                ConfidenceScore::ALL
                    .par_iter()
                    .map(|&score| {
                        if score.needs_logits() && logits.is_none() {
                            return None;
                        }
                        if score == ConfidenceScore::Msp {
                            return Some(Ok((score, main)));
                        }
                        Some(
                            score
                                .scores(probs, logits, k)
                                .and_then(|s| Ok((score, selective_areas(&s, &errors)?))),
                        )
                    })
                    .collect();
            let mut by_score = BTreeMap::new();
            for result in others.into_iter().flatten() {
                let (score, a) = result?;
                by_score.insert(
                    score.name().to_string(),
                    ScoreAreas { aurc: defined(a.aurc), eaurc: defined(a.eaurc), augrc: defined(a.augrc) },
                );
            }
            Ok((main, by_score))
        },
        || -> Result<_, MetricsError> {
            Ok((smooth_ece(&conf, &correct)?, debiased_ece(&conf, &correct, DEBIASED_ECE_DEFAULT_BINS)?))
        },
    );
    let (main, by_score) = ranking?;
    let (smooth, debiased) = calibration?;
    Ok(SelectiveSummary {
        aurc: defined(main.aurc),
        eaurc: defined(main.eaurc),
        augrc: defined(main.augrc),
        risk_at_80_coverage: defined(main.risk_at_80_coverage),
        coverage_at_5_risk: defined(main.coverage_at_5_risk),
        smooth_ece: defined(smooth),
        debiased_ece: defined(debiased),
        selective_by_score: by_score,
    })
}

/// The set for a multilabel table: `probs` row-major `n × l`, `targets` the same shape with `None`
/// for blank cells.
///
/// # Errors
/// Malformed probabilities, a shape mismatch, or no rows.
pub fn summarize_selective_multilabel(
    probs: &[f64],
    l: usize,
    targets: &[Option<bool>],
) -> Result<SelectiveSummary, MetricsError> {
    let n = validate_unit_interval(probs, l)?;
    if n == 0 {
        return Err(MetricsError::Empty);
    }
    if targets.len() != probs.len() {
        return Err(MetricsError::Shape {
            what: format!("{} target cells for {n} rows × {l} labels", targets.len()),
        });
    }
    struct Label {
        areas: crate::SelectiveAreas,
        by_score: Vec<(ConfidenceScore, crate::SelectiveAreas)>,
        smooth: f64,
        debiased: f64,
    }
    let mut per_label = Vec::new();
    for j in 0..l {
        let (p, t): (Vec<f64>, Vec<bool>) =
            (0..n).filter_map(|i| targets[i * l + j].map(|t| (probs[i * l + j], t))).unzip();
        if p.is_empty() {
            continue;
        }
        let two: Vec<f64> = p.iter().flat_map(|&x| [1.0 - x, x]).collect();
        let labels: Vec<usize> = t.iter().map(|&b| usize::from(b)).collect();
        let (conf, errors) = crate::top_label_errors(&two, 2, &labels);
        let y: Vec<f64> = t.iter().map(|&b| f64::from(u8::from(b))).collect();
        let mut by_score = Vec::new();
        for score in ConfidenceScore::ALL.into_iter().filter(|s| !s.needs_logits()) {
            by_score.push((score, selective_areas(&score.scores(&two, None, 2)?, &errors)?));
        }
        per_label.push(Label {
            areas: selective_areas(&conf, &errors)?,
            by_score,
            smooth: smooth_ece(&p, &y)?,
            debiased: debiased_ece(&p, &y, DEBIASED_ECE_DEFAULT_BINS)?,
        });
    }
    let mean = |f: &dyn Fn(&Label) -> f64| mean_defined(per_label.iter().map(f));
    let mut selective_by_score = BTreeMap::new();
    for (idx, score) in ConfidenceScore::ALL.into_iter().filter(|s| !s.needs_logits()).enumerate() {
        let m = |f: &dyn Fn(&crate::SelectiveAreas) -> f64| {
            mean_defined(per_label.iter().map(|x| f(&x.by_score[idx].1)))
        };
        selective_by_score.insert(
            score.name().to_string(),
            ScoreAreas { aurc: m(&|a| a.aurc), eaurc: m(&|a| a.eaurc), augrc: m(&|a| a.augrc) },
        );
    }
    Ok(SelectiveSummary {
        aurc: mean(&|x| x.areas.aurc),
        eaurc: mean(&|x| x.areas.eaurc),
        augrc: mean(&|x| x.areas.augrc),
        risk_at_80_coverage: mean(&|x| x.areas.risk_at_80_coverage),
        coverage_at_5_risk: mean(&|x| x.areas.coverage_at_5_risk),
        smooth_ece: mean(&|x| x.smooth),
        debiased_ece: mean(&|x| x.debiased),
        selective_by_score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_label_set_reuses_the_metric_functions() {
        let z: Vec<f64> = (0..60).map(|i| ((i * 37 % 11) as f64) / 3.0).collect();
        let p = crate::input::softmax_rows(&z, 3);
        let y: Vec<usize> = (0..20).map(|i| i % 3).collect();
        let s = summarize_selective_single_label(&p, Some(&z), 3, &y).unwrap();
        let (conf, err) = crate::top_label_errors(&p, 3, &y);
        assert_eq!(s.aurc, Some(crate::aurc(&conf, &err).unwrap()));
        assert_eq!(s.augrc, Some(crate::augrc(&conf, &err).unwrap()));
        assert_eq!(s.smooth_ece, Some(crate::smooth_ece_top_label(&p, 3, &y).unwrap()));
        assert_eq!(s.debiased_ece, Some(crate::debiased_ece_top_label(&p, 3, &y, 15).unwrap()));
        assert_eq!(s.selective_by_score.len(), 5);
        assert_eq!(s.selective_by_score["msp"].aurc, s.aurc);
        let no_logits = summarize_selective_single_label(&p, None, 3, &y).unwrap();
        assert_eq!(no_logits.selective_by_score.len(), 3);
    }

    #[test]
    fn multilabel_set_skips_blank_labels() {
        let p = [0.9, 0.2, 0.4, 0.7, 0.6, 0.1];
        let t = [Some(true), None, Some(false), None, Some(true), None];
        let s = summarize_selective_multilabel(&p, 2, &t).unwrap();
        let a = crate::aurc(&[0.9, 0.6, 0.6], &[false, false, false]).unwrap();
        assert_eq!(s.aurc, Some(a));
        assert!(summarize_selective_multilabel(&p, 2, &t[..4]).is_err());
    }
}
