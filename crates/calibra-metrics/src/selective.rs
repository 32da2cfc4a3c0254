//! Selective prediction: the risk–coverage curve and its areas AURC, E-AURC and AUGRC, risk at a fixed
//! coverage and coverage at a fixed risk, as torch-uncertainty 0.13 defines them
//! (`torch_uncertainty/metrics/classification/risk_coverage.py`: `AURC`, `AUGRC`, `RiskAtxCov`,
//! `CovAtxRisk`, `_aurc_rejection_rate_compute`).
//!
//! Samples are sorted by descending confidence (ties keep their row order: a stable sort, which is
//! what `Tensor.argsort(descending=True)` does on the CPU; the golden vectors include tied scores).
//! After the `k` most confident samples the error rate (selective risk) is
//! `r_k = (errors among them) / k` at coverage `c_k = k / n`, `k = 1..n`. Then
//!
//! - `AURC  = trapz(c, r) / (1 − 1/n)`,
//! - `AUGRC = trapz(c, r · c) / (1 − 1/n)` (Traub et al., NeurIPS 2024: the generalised risk
//!   `r_k · c_k` = errors among the accepted / n),
//!
//! both NaN for `n < 2` (torch-uncertainty returns NaN there). **E-AURC** (Geifman et al., ICLR 2019)
//! is `AURC − AURC*`, where `AURC*` is the same estimator on the oracle ranking (every correct sample
//! before every error); torch-uncertainty 0.13 has no E-AURC, so this is calibra's definition on its
//! AURC estimator, which makes `E-AURC ≥ 0` exact (`r_k ≥ r*_k` for every `k`).
//!
//! Bounds: `AURC ∈ [0, 1]`. The trapezoid area of the generalised risk is in `[0, 1/2)`; after the
//! `1/(1 − 1/n)` normalisation AUGRC is in `[0, (n + 1) / (2n)]`, the upper end reached when every
//! prediction is wrong, so it tends to `[0, 1/2]` as `n` grows.

use serde::Serialize;

use crate::MetricsError;

/// One point of the risk–coverage curve: the `k` most confident samples are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RiskCoveragePoint {
    /// `k / n`.
    pub coverage: f64,
    /// Errors among the accepted / `k`.
    pub risk: f64,
}

/// Checks lengths and finiteness of a confidence vector against its error flags.
fn validate(confidence: &[f64], errors: &[bool]) -> Result<(), MetricsError> {
    if confidence.len() != errors.len() {
        return Err(MetricsError::Shape {
            what: format!("{} confidence scores for {} error flags", confidence.len(), errors.len()),
        });
    }
    if confidence.is_empty() {
        return Err(MetricsError::Empty);
    }
    if let Some(row) = confidence.iter().position(|c| !c.is_finite()) {
        return Err(MetricsError::NonFinite { row, col: 0, value: confidence[row] });
    }
    Ok(())
}

/// Row order by descending confidence, ties by ascending row (the stable descending sort).
/// The key `(confidence desc, row asc)` is a total order, so the parallel unstable sort is
/// deterministic and equals the stable sort.
pub(crate) fn descending_order(confidence: &[f64]) -> Vec<u32> {
    use rayon::slice::ParallelSliceMut;
    let mut order: Vec<(f64, u32)> = confidence.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect();
    let cmp = |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if order.len() > 1 << 16 {
        order.par_sort_unstable_by(cmp);
    } else {
        order.sort_unstable_by(cmp);
    }
    order.into_iter().map(|(_, i)| i).collect()
}

/// Cumulative error counts `E_k`, `k = 1..n`, of the errors taken in descending-confidence order.
fn cumulative_errors(confidence: &[f64], errors: &[bool]) -> Vec<u32> {
    let mut total = 0u32;
    descending_order(confidence)
        .into_iter()
        .map(|i| {
            total += u32::from(errors[i as usize]);
            total
        })
        .collect()
}

/// The selective risk `r_k = E_k / k` for `k = 1..n` (torch-uncertainty `_aurc_rejection_rate_compute`).
///
/// # Errors
/// Length mismatch, no samples, or a non-finite confidence.
pub fn selective_risks(confidence: &[f64], errors: &[bool]) -> Result<Vec<f64>, MetricsError> {
    validate(confidence, errors)?;
    Ok(risks_of(&cumulative_errors(confidence, errors)))
}

fn risks_of(cumulative: &[u32]) -> Vec<f64> {
    cumulative.iter().enumerate().map(|(i, &e)| f64::from(e) / (i + 1) as f64).collect()
}

/// The points `(k/n, r_k)`, `k = 1..n`, of the risk–coverage curve.
///
/// # Errors
/// As [`selective_risks`].
pub fn risk_coverage_curve(
    confidence: &[f64],
    errors: &[bool],
) -> Result<Vec<RiskCoveragePoint>, MetricsError> {
    let risks = selective_risks(confidence, errors)?;
    let n = risks.len() as f64;
    Ok(risks
        .into_iter()
        .enumerate()
        .map(|(i, risk)| RiskCoveragePoint { coverage: (i + 1) as f64 / n, risk })
        .collect())
}

/// `trapz(c, y) / (1 − 1/n)` over `c_k = k/n` (torchmetrics `_auc_compute` on increasing x).
fn normalised_trapezoid(y: impl Iterator<Item = f64>, n: usize) -> f64 {
    if n < 2 {
        return f64::NAN;
    }
    let nf = n as f64;
    let mut area = 0.0;
    let mut prev: Option<(f64, f64)> = None;
    for (i, v) in y.enumerate() {
        let c = (i + 1) as f64 / nf;
        if let Some((pc, pv)) = prev {
            area += (c - pc) * (v + pv) / 2.0;
        }
        prev = Some((c, v));
    }
    area / (1.0 - 1.0 / nf)
}

fn aurc_of(cumulative: &[u32]) -> f64 {
    normalised_trapezoid(
        cumulative.iter().enumerate().map(|(i, &e)| f64::from(e) / (i + 1) as f64),
        cumulative.len(),
    )
}

fn augrc_of(cumulative: &[u32]) -> f64 {
    let n = cumulative.len();
    // r_k · c_k = (E_k / k) · (k / n), computed in that order as torch-uncertainty does.
    normalised_trapezoid(
        cumulative
            .iter()
            .enumerate()
            .map(|(i, &e)| (f64::from(e) / (i + 1) as f64) * ((i + 1) as f64 / n as f64)),
        n,
    )
}

/// Cumulative errors of the oracle ranking: all correct samples first.
fn oracle_cumulative(errors: &[bool]) -> Vec<u32> {
    let wrong = errors.iter().filter(|&&e| e).count();
    let right = errors.len() - wrong;
    (1..=errors.len()).map(|k| k.saturating_sub(right) as u32).collect()
}

/// Area under the risk–coverage curve (torch-uncertainty `AURC`); NaN for fewer than 2 samples.
///
/// # Errors
/// As [`selective_risks`].
pub fn aurc(confidence: &[f64], errors: &[bool]) -> Result<f64, MetricsError> {
    validate(confidence, errors)?;
    Ok(aurc_of(&cumulative_errors(confidence, errors)))
}

/// AURC of the oracle ranking (every correct sample before every error): the least AURC any
/// confidence score can reach with these errors.
///
/// # Errors
/// No samples.
pub fn optimal_aurc(errors: &[bool]) -> Result<f64, MetricsError> {
    if errors.is_empty() {
        return Err(MetricsError::Empty);
    }
    Ok(aurc_of(&oracle_cumulative(errors)))
}

/// Excess AURC: `AURC − AURC*` (see the module doc).
///
/// # Errors
/// As [`selective_risks`].
pub fn eaurc(confidence: &[f64], errors: &[bool]) -> Result<f64, MetricsError> {
    Ok(aurc(confidence, errors)? - optimal_aurc(errors)?)
}

/// Area under the generalised risk–coverage curve (torch-uncertainty `AUGRC`); NaN for fewer than 2
/// samples.
///
/// # Errors
/// As [`selective_risks`].
pub fn augrc(confidence: &[f64], errors: &[bool]) -> Result<f64, MetricsError> {
    validate(confidence, errors)?;
    Ok(augrc_of(&cumulative_errors(confidence, errors)))
}

fn check_level(what: &str, value: f64) -> Result<(), MetricsError> {
    if !(value > 0.0 && value <= 1.0) {
        return Err(MetricsError::InvalidArgument(format!("{what} must be in (0, 1], got {value}")));
    }
    Ok(())
}

/// Risk at coverage `c` ∈ (0, 1]: `r_k` with `k = ⌈n·c⌉` (torch-uncertainty `RiskAtxCov`, which also
/// accepts `c = 0` but then reads the last element through a negative index; calibra refuses it).
///
/// # Errors
/// As [`selective_risks`], or `c` outside (0, 1].
pub fn risk_at_coverage(confidence: &[f64], errors: &[bool], coverage: f64) -> Result<f64, MetricsError> {
    check_level("the coverage", coverage)?;
    let risks = selective_risks(confidence, errors)?;
    let k = ((risks.len() as f64 * coverage).ceil() as usize).clamp(1, risks.len());
    Ok(risks[k - 1])
}

/// Coverage at risk `r` ∈ (0, 1]: the largest `k/n` with `r_k ≤ r` (the risk curve need not be
/// monotone), NaN if no `k` qualifies (torch-uncertainty `CovAtxRisk`).
///
/// # Errors
/// As [`selective_risks`], or `r` outside (0, 1].
pub fn coverage_at_risk(confidence: &[f64], errors: &[bool], risk: f64) -> Result<f64, MetricsError> {
    check_level("the risk", risk)?;
    let risks = selective_risks(confidence, errors)?;
    Ok(match risks.iter().rposition(|&r| r <= risk) {
        Some(i) => (i + 1) as f64 / risks.len() as f64,
        None => f64::NAN,
    })
}

/// The selective-prediction numbers of one (confidence, error) pair from one sort.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectiveAreas {
    pub aurc: f64,
    pub eaurc: f64,
    pub augrc: f64,
    /// Risk at 80 % coverage (torch-uncertainty `RiskAt80Cov`).
    pub risk_at_80_coverage: f64,
    /// Coverage at 5 % risk (torch-uncertainty `CovAt5Risk`); NaN where no coverage qualifies.
    pub coverage_at_5_risk: f64,
}

/// AURC, E-AURC, AUGRC, risk at 80 % coverage and coverage at 5 % risk with a single sort; each value
/// is bit-identical to the function of the same name.
///
/// # Errors
/// As [`selective_risks`].
pub fn selective_areas(confidence: &[f64], errors: &[bool]) -> Result<SelectiveAreas, MetricsError> {
    validate(confidence, errors)?;
    let cumulative = cumulative_errors(confidence, errors);
    let aurc = aurc_of(&cumulative);
    let risks = risks_of(&cumulative);
    let n = risks.len();
    let k80 = ((n as f64 * 0.8).ceil() as usize).clamp(1, n);
    Ok(SelectiveAreas {
        aurc,
        eaurc: aurc - aurc_of(&oracle_cumulative(errors)),
        augrc: augrc_of(&cumulative),
        risk_at_80_coverage: risks[k80 - 1],
        coverage_at_5_risk: risks
            .iter()
            .rposition(|&r| r <= 0.05)
            .map_or(f64::NAN, |i| (i + 1) as f64 / n as f64),
    })
}

/// Top-label confidence (MSP) and the error flag `argmax ≠ label` of each row of a validated
/// probability matrix (argmax ties → lowest index).
pub fn top_label_errors(probs: &[f64], k: usize, labels: &[usize]) -> (Vec<f64>, Vec<bool>) {
    probs
        .chunks_exact(k)
        .zip(labels)
        .map(|(row, &y)| {
            let (best, conf) = crate::ece::argmax(row);
            (conf, best != y)
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn torch_uncertainty_docstring_example() {
        // AURC docstring: probs [[.7,.3],[.6,.4],[.8,.2]], targets [0,1,0] → 0.0833.
        // Order .8 (right), .7 (right), .6 (wrong): r = 0, 0, 1/3; trapz = 1/18; / (2/3) = 1/12.
        let a = aurc(&[0.7, 0.6, 0.8], &[false, true, false]).unwrap();
        assert!((a - 1.0 / 12.0).abs() < 1e-15, "{a}");
        // RiskAtxCov docstring (8 samples, coverage 0.5) → 0.25; rows 1 and 3 are the errors, and the
        // tie at 0.8 between row 3 (wrong) and row 7 (right) must keep row order to give 0.25.
        let conf = [0.9, 0.7, 0.95, 0.8, 0.6, 0.7, 0.85, 0.8];
        let err = [false, true, false, true, false, false, false, false];
        assert_eq!(risk_at_coverage(&conf, &err, 0.5).unwrap(), 0.25);
        // CovAtxRisk docstring: conf .9 .6 .8 .5 .7, errors at .6 and .5, risk .3 → 0.8.
        let c =
            coverage_at_risk(&[0.9, 0.6, 0.8, 0.5, 0.7], &[false, true, false, true, false], 0.3).unwrap();
        assert_eq!(c, 0.8);
    }

    #[test]
    fn bad_input_is_refused() {
        assert_eq!(aurc(&[], &[]), Err(MetricsError::Empty));
        assert!(matches!(aurc(&[0.5], &[true, false]), Err(MetricsError::Shape { .. })));
        assert!(matches!(
            aurc(&[0.5, f64::NAN], &[true, false]),
            Err(MetricsError::NonFinite { row: 1, .. })
        ));
        assert!(aurc(&[0.5], &[true]).unwrap().is_nan());
        assert!(matches!(risk_at_coverage(&[0.5], &[true], 0.0), Err(MetricsError::InvalidArgument(_))));
        assert!(matches!(coverage_at_risk(&[0.5], &[true], 1.5), Err(MetricsError::InvalidArgument(_))));
        assert!(coverage_at_risk(&[0.5, 0.4], &[true, true], 0.5).unwrap().is_nan());
    }

    fn cases() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
        (2usize..200).prop_flat_map(|n| {
            // Few distinct confidence values so that ties are common.
            (prop::collection::vec(0u8..12, n), prop::collection::vec(any::<bool>(), n))
                .prop_map(|(c, e)| (c.into_iter().map(|v| f64::from(v) / 11.0).collect(), e))
        })
    }

    proptest! {
        #[test]
        fn aurc_is_at_least_the_optimal_aurc_and_augrc_is_bounded((conf, err) in cases()) {
            let n = conf.len() as f64;
            let s = selective_areas(&conf, &err).unwrap();
            let opt = optimal_aurc(&err).unwrap();
            prop_assert!(s.aurc >= opt - 1e-15, "AURC {} < optimal {}", s.aurc, opt);
            prop_assert!(s.eaurc >= -1e-15);
            prop_assert!((0.0..=1.0).contains(&s.aurc));
            // The trapezoid area itself is in [0, 1/2); the normalised AUGRC in [0, (n+1)/(2n)].
            let raw = s.augrc * (1.0 - 1.0 / n);
            prop_assert!((0.0..0.5).contains(&raw), "raw AUGRC area {raw}");
            prop_assert!(s.augrc >= 0.0 && s.augrc <= (n + 1.0) / (2.0 * n) + 1e-15);
            prop_assert_eq!(s.aurc, aurc(&conf, &err).unwrap());
            prop_assert_eq!(s.augrc, augrc(&conf, &err).unwrap());
            prop_assert_eq!(s.eaurc, eaurc(&conf, &err).unwrap());
            prop_assert_eq!(s.risk_at_80_coverage, risk_at_coverage(&conf, &err, 0.8).unwrap());
            let c5 = coverage_at_risk(&conf, &err, 0.05).unwrap();
            prop_assert!(s.coverage_at_5_risk == c5 || (c5.is_nan() && s.coverage_at_5_risk.is_nan()));
            // The oracle confidence (1 for correct, 0 for wrong) reaches the optimum.
            let oracle: Vec<f64> = err.iter().map(|&e| if e { 0.0 } else { 1.0 }).collect();
            prop_assert_eq!(aurc(&oracle, &err).unwrap(), opt);
        }
    }

    #[test]
    fn augrc_upper_end_is_reached_when_every_prediction_is_wrong() {
        let n = 10;
        let a = augrc(&vec![0.5; n], &vec![true; n]).unwrap();
        assert!((a - (n as f64 + 1.0) / (2.0 * n as f64)).abs() < 1e-15, "{a}");
    }
}
