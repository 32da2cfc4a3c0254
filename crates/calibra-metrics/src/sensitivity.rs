//! Sensitivity (true-positive rate) at a minimum specificity (spec §C11): the conservative operating
//! point on the ROC curve, and the linearly interpolated variant.

use crate::score_groups::ScoreGroups;

/// The chosen operating point: predict positive iff `score >= threshold`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SensitivityAtSpecificity {
    /// TPR at the chosen threshold.
    pub sensitivity: f64,
    /// The threshold; `+∞` (predict nothing positive) when no finite threshold reaches the
    /// specificity.
    pub threshold: f64,
}

/// One ROC point per threshold, as sklearn `roc_curve(drop_intermediate=False)`: the first threshold is
/// `+∞` (TPR = FPR = 0), then every distinct score in decreasing order.
struct RocPoint {
    threshold: f64,
    tpr: f64,
    fpr: f64,
}

/// The full ROC curve, or `None` if it is undefined (one class only, no samples, or a NaN score).
fn roc_curve(scores: &[f64], targets: &[bool]) -> Option<Vec<RocPoint>> {
    assert_eq!(scores.len(), targets.len(), "sensitivity at specificity needs one target per score");
    let groups = ScoreGroups::from_items(scores.iter().copied().zip(targets.iter().copied()));
    let (positives, negatives) = (groups.positives(), groups.negatives());
    if positives == 0 || negatives == 0 || groups.has_nan() {
        return None;
    }
    let mut curve = vec![RocPoint { threshold: f64::INFINITY, tpr: 0.0, fpr: 0.0 }];
    let (mut tp, mut fp) = (0u64, 0u64);
    for g in groups.descending() {
        tp += g.positives;
        fp += g.negatives;
        curve.push(RocPoint {
            threshold: g.score,
            tpr: tp as f64 / positives as f64,
            fpr: fp as f64 / negatives as f64,
        });
    }
    Some(curve)
}

/// Sensitivity at specificity ≥ `min_specificity`, conservative (spec §C11, no interpolation):
///
/// over the thresholds τ of sklearn `roc_curve(targets, scores, drop_intermediate=False)` (`+∞` first,
/// then each distinct score; predict positive iff `score >= τ`), returns
/// `max { TPR(τ) : 1 − FPR(τ) ≥ min_specificity }` and the τ attaining it. When several thresholds attain
/// the maximum the highest one (the highest specificity) is returned, as `np.argmax` over the curve in
/// sklearn's order would. Tied scores move TPR and FPR together (no tie splitting).
///
/// Edge cases: only one class present, no samples, a NaN score, or `min_specificity` outside [0, 1]
/// (or NaN) → sensitivity and threshold NaN. `min_specificity = 1` may give sensitivity 0 at
/// threshold `+∞`.
///
/// # Panics
/// If `scores` and `targets` differ in length.
pub fn sensitivity_at_specificity(
    scores: &[f64],
    targets: &[bool],
    min_specificity: f64,
) -> SensitivityAtSpecificity {
    let undefined = SensitivityAtSpecificity { sensitivity: f64::NAN, threshold: f64::NAN };
    let curve = roc_curve(scores, targets);
    let Some(curve) = curve.filter(|_| (0.0..=1.0).contains(&min_specificity)) else { return undefined };
    let mut best = &curve[0];
    for point in &curve[1..] {
        if 1.0 - point.fpr < min_specificity {
            break; // specificity only decreases along the curve
        }
        if point.tpr > best.tpr {
            best = point;
        }
    }
    SensitivityAtSpecificity { sensitivity: best.tpr, threshold: best.threshold }
}

/// Sensitivity at specificity `min_specificity` by linear interpolation of the ROC curve at
/// `FPR = 1 − min_specificity`: `np.interp(1 − s*, fpr, tpr)` over sklearn's `roc_curve` (spec §C11,
/// the variant some papers report).
///
/// Where several ROC points share the FPR (vertical segments) numpy's `interp` uses the last of them,
/// i.e. the highest TPR; between two FPR values it interpolates
/// `tpr₀ + (tpr₁ − tpr₀) / (fpr₁ − fpr₀) · (x − fpr₀)` as numpy does. Dropping collinear points
/// (`drop_intermediate=True`) does not change the result beyond rounding.
///
/// Edge cases: as [`sensitivity_at_specificity`] (NaN when undefined).
///
/// # Panics
/// If `scores` and `targets` differ in length.
pub fn sensitivity_at_specificity_interp(scores: &[f64], targets: &[bool], min_specificity: f64) -> f64 {
    let Some(curve) = roc_curve(scores, targets) else { return f64::NAN };
    if !(0.0..=1.0).contains(&min_specificity) {
        return f64::NAN;
    }
    let x = 1.0 - min_specificity;
    // Last point with fpr <= x (fpr starts at 0 <= x); the next one, if any, has fpr > x.
    let j = curve.partition_point(|p| p.fpr <= x) - 1;
    let lower = &curve[j];
    match curve.get(j + 1) {
        Some(upper) if lower.fpr != x => {
            let slope = (upper.tpr - lower.tpr) / (upper.fpr - lower.fpr);
            slope * (x - lower.fpr) + lower.tpr
        }
        _ => lower.tpr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_cases() {
        // Scores descending: P(0.9) N(0.8) P(0.7) N(0.6) P(0.5) N(0.4); 3 positives, 3 negatives.
        let s = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4];
        let t = [true, false, true, false, true, false];
        // Specificity 1 allows τ = 0.9 only (FPR 0): TPR 1/3.
        let r = sensitivity_at_specificity(&s, &t, 1.0);
        assert_eq!((r.sensitivity, r.threshold), (1.0 / 3.0, 0.9));
        // Specificity ≥ 2/3 allows up to τ = 0.7 (FPR 1/3): TPR 2/3.
        let r = sensitivity_at_specificity(&s, &t, 0.6);
        assert_eq!((r.sensitivity, r.threshold), (2.0 / 3.0, 0.7));
        // Specificity 0 allows everything: TPR 1 first reached at τ = 0.5.
        let r = sensitivity_at_specificity(&s, &t, 0.0);
        assert_eq!((r.sensitivity, r.threshold), (1.0, 0.5));
        // FPR 0.5 lies on the horizontal segment from (1/3, 2/3) to (2/3, 2/3).
        assert_eq!(sensitivity_at_specificity_interp(&s, &t, 0.5), 2.0 / 3.0);
        // A tied positive/negative pair makes a diagonal segment (0, ½) → (½, 1); at FPR ¼: ¾.
        let tied = [0.9, 0.5, 0.5, 0.1];
        let tt = [true, true, false, false];
        assert_eq!(sensitivity_at_specificity_interp(&tied, &tt, 0.75), 0.75);
        // The conservative point cannot split the tie: TPR ½ at τ = 0.9.
        let r = sensitivity_at_specificity(&tied, &tt, 0.75);
        assert_eq!((r.sensitivity, r.threshold), (0.5, 0.9));
        // N P P N: a vertical segment at FPR ½ from TPR 0 to 1; at FPR exactly ½ its top is used.
        let vertical = [0.9, 0.8, 0.7, 0.6];
        let tv = [false, true, true, false];
        assert_eq!(sensitivity_at_specificity_interp(&vertical, &tv, 0.5), 1.0);
        let r = sensitivity_at_specificity(&vertical, &tv, 0.5);
        assert_eq!((r.sensitivity, r.threshold), (1.0, 0.7));
        // Negatives above every positive: nothing reaches specificity 1 except τ = +∞.
        let r = sensitivity_at_specificity(&[0.1, 0.9], &[true, false], 1.0);
        assert_eq!((r.sensitivity, r.threshold), (0.0, f64::INFINITY));
    }

    #[test]
    fn undefined_cases() {
        assert!(sensitivity_at_specificity(&[0.1, 0.2], &[true, true], 0.9).sensitivity.is_nan());
        assert!(sensitivity_at_specificity(&[0.1, 0.2], &[true, false], 1.5).threshold.is_nan());
        assert!(sensitivity_at_specificity_interp(&[0.1, f64::NAN], &[true, false], 0.9).is_nan());
        assert!(sensitivity_at_specificity_interp(&[], &[], 0.9).is_nan());
    }

    proptest! {
        #[test]
        fn conservative_never_exceeds_interpolated_and_meets_the_constraint(
            pairs in prop::collection::vec(((-10i32..10).prop_map(f64::from), any::<bool>()), 2..100),
            s_star in 0.0f64..=1.0,
        ) {
            let (s, t): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
            let r = sensitivity_at_specificity(&s, &t, s_star);
            let interp = sensitivity_at_specificity_interp(&s, &t, s_star);
            prop_assert_eq!(r.sensitivity.is_nan(), interp.is_nan());
            if !interp.is_nan() {
                prop_assert!(r.sensitivity <= interp + 1e-15);
                let predicted = |i: usize| s[i] >= r.threshold;
                let tp = (0..s.len()).filter(|&i| t[i] && predicted(i)).count() as f64;
                let fp = (0..s.len()).filter(|&i| !t[i] && predicted(i)).count() as f64;
                let (p, n) = (t.iter().filter(|&&b| b).count() as f64, t.iter().filter(|&&b| !b).count() as f64);
                prop_assert_eq!(r.sensitivity, tp / p);
                prop_assert!(1.0 - fp / n >= s_star);
            }
        }
    }
}
