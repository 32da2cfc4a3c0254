//! Shift detection with a confidence score: how well does low confidence tell shift-target samples
//! from clean test samples? The shift samples are the positives and the detection score is the
//! negated confidence (torch-uncertainty's OOD convention: higher = more likely shifted).
//!
//! - AUROC: [`crate::binary_auroc`] (Mann–Whitney, ties count ½; sklearn `roc_auc_score`).
//! - FPR at 95 % TPR: torch-uncertainty 0.13 `metrics/classification/fpr.py::_fprx_compute`
//!   (tie-aware): thresholds only after complete groups of tied scores (descending), the first
//!   threshold whose recall (TPR) reaches the level gives the FPR; NaN without positives or without
//!   negatives, 0 at recall level 0.

use crate::{MetricsError, binary_auroc};

/// FPR at the first tie-complete threshold whose TPR is at least `recall_level` ∈ [0, 1]
/// (torch-uncertainty `FPRx`; higher `scores` = more positive).
///
/// # Errors
/// Length mismatch, a non-finite score, or a level outside [0, 1].
pub fn fpr_at_tpr(scores: &[f64], positives: &[bool], recall_level: f64) -> Result<f64, MetricsError> {
    if scores.len() != positives.len() {
        return Err(MetricsError::Shape {
            what: format!("{} scores for {} targets", scores.len(), positives.len()),
        });
    }
    if !(0.0..=1.0).contains(&recall_level) {
        return Err(MetricsError::InvalidArgument(format!(
            "the recall level must be in [0, 1], got {recall_level}"
        )));
    }
    if let Some(row) = scores.iter().position(|v| !v.is_finite()) {
        return Err(MetricsError::NonFinite { row, col: 0, value: scores[row] });
    }
    let n_pos = positives.iter().filter(|&&p| p).count();
    let n_neg = positives.len() - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return Ok(f64::NAN);
    }
    if recall_level == 0.0 {
        return Ok(0.0);
    }
    let order = crate::selective::descending_order(scores);
    let (mut tp, mut seen) = (0usize, 0usize);
    for (pos, &i) in order.iter().enumerate() {
        let i = i as usize;
        tp += usize::from(positives[i]);
        seen += 1;
        let group_ends = pos + 1 == order.len() || scores[order[pos + 1] as usize] != scores[i];
        if group_ends && tp as f64 / n_pos as f64 >= recall_level {
            return Ok((seen - tp) as f64 / n_neg as f64);
        }
    }
    // Unreachable: at the last threshold the recall is 1.
    Ok(1.0)
}

/// Shift-detection quality of a confidence score: AUROC and FPR at 95 % TPR.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ShiftDetection {
    pub auroc: f64,
    pub fpr_at_95_tpr: f64,
}

/// AUROC and FPR@95 %TPR of `−confidence` at flagging the `shifted` samples against the `clean` ones.
///
/// # Errors
/// A non-finite confidence.
pub fn shift_detection(clean: &[f64], shifted: &[f64]) -> Result<ShiftDetection, MetricsError> {
    let scores: Vec<f64> = clean.iter().chain(shifted).map(|&c| -c).collect();
    let targets: Vec<bool> =
        std::iter::repeat_n(false, clean.len()).chain(std::iter::repeat_n(true, shifted.len())).collect();
    let fpr = fpr_at_tpr(&scores, &targets, 0.95)?;
    Ok(ShiftDetection { auroc: binary_auroc(&scores, &targets), fpr_at_95_tpr: fpr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_uncertainty_docstring_example() {
        // FPRx docstring: confidences [.9 .8 .7 .6 .4 .2 .1], targets [1 0 1 0 0 1 0] → 0.75.
        let s = [0.9, 0.8, 0.7, 0.6, 0.4, 0.2, 0.1];
        let t = [true, false, true, false, false, true, false];
        assert_eq!(fpr_at_tpr(&s, &t, 0.95).unwrap(), 0.75);
        assert!(fpr_at_tpr(&s, &[false; 7], 0.95).unwrap().is_nan());
        assert_eq!(fpr_at_tpr(&s, &t, 0.0).unwrap(), 0.0);
        assert!(fpr_at_tpr(&s, &t, 1.5).is_err());
    }

    #[test]
    fn ties_are_never_split() {
        // All scores tied: the only threshold takes everything → FPR 1.
        assert_eq!(fpr_at_tpr(&[0.5; 4], &[true, false, true, false], 0.5).unwrap(), 1.0);
        // Perfect separation: shifted samples have lower confidence.
        let d = shift_detection(&[0.9, 0.8, 0.95], &[0.3, 0.2]).unwrap();
        assert_eq!(d.auroc, 1.0);
        assert_eq!(d.fpr_at_95_tpr, 0.0);
    }
}
