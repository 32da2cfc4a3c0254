//! The debiased L2 calibration error of Kumar, Liang & Ma, "Verified Uncertainty Calibration",
//! NeurIPS 2019, as their package `uncertainty-calibration` 0.1.4 computes it
//! (`calibration/utils.py::lower_bound_scaling_ce(probs, labels, p=2, debias=True, num_bins=15,
//! binning_scheme=get_equal_bins, mode="top-label")`):
//!
//! - bins of equal mass: the sorted values are split into `B' = min(B, n)` parts by
//!   `numpy.array_split` (the first `n mod B'` parts one longer); the bin boundaries are the midpoints
//!   between the last value of a part and the first of the next, then 1.0, deduplicated; a value goes
//!   to the first boundary ≥ it (`searchsorted`, left);
//! - per bin with `n_b ≥ 2`: `(mean_b f − mean_b y)² − ȳ_b (1 − ȳ_b) / (n_b − 1)` (the plug-in squared
//!   gap minus the variance of the label mean); bins with fewer than 2 values contribute 0;
//! - `debiased_ece = sqrt(max(0, Σ_b (n_b / n) · term_b))`.
//!
//! It is an L2 error (comparable to the square root of a squared ECE), not the L1 ECE of §C2.
//! Top-label form: `f` is the top-label confidence and `y` its correctness; binary form: `f` the
//! positive-class probability, `y ∈ {0, 1}`.

use crate::MetricsError;

/// Kumar et al.'s default number of bins.
pub const DEBIASED_ECE_DEFAULT_BINS: usize = 15;

/// Bin boundaries of `get_equal_bins(f, num_bins)`.
fn equal_mass_boundaries(f: &[f64], num_bins: usize) -> Vec<f64> {
    let mut sorted = f.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let parts = num_bins.min(n);
    let (base, extra) = (n / parts, n % parts);
    let mut starts = Vec::with_capacity(parts + 1);
    let mut s = 0;
    for p in 0..parts {
        starts.push(s);
        s += base + usize::from(p < extra);
    }
    starts.push(n);
    let mut bounds: Vec<f64> =
        (0..parts - 1).map(|p| (sorted[starts[p + 1] - 1] + sorted[starts[p + 1]]) / 2.0).collect();
    bounds.push(1.0);
    bounds.sort_by(f64::total_cmp);
    bounds.dedup();
    bounds
}

/// Debiased L2 calibration error of predictions `f` ∈ [0, 1] against outcomes `y` ∈ {0, 1} with
/// `num_bins` equal-mass bins.
///
/// # Errors
/// Length mismatch, no samples, `num_bins == 0`, `f` outside [0, 1], or an outcome that is not 0 or 1.
pub fn debiased_ece(f: &[f64], y: &[f64], num_bins: usize) -> Result<f64, MetricsError> {
    if f.len() != y.len() {
        return Err(MetricsError::Shape {
            what: format!("{} predictions for {} outcomes", f.len(), y.len()),
        });
    }
    if f.is_empty() {
        return Err(MetricsError::Empty);
    }
    if num_bins == 0 {
        return Err(MetricsError::InvalidArgument("the number of bins must be at least 1".into()));
    }
    if let Some(row) = f.iter().position(|v| !(0.0..=1.0).contains(v)) {
        return Err(MetricsError::ProbabilityOutOfRange { row, col: 0, value: f[row] });
    }
    if let Some(row) = y.iter().position(|&v| v != 0.0 && v != 1.0) {
        return Err(MetricsError::InvalidArgument(format!("row {row}: outcome {} is not 0 or 1", y[row])));
    }
    let bounds = equal_mass_boundaries(f, num_bins);
    let nb = bounds.len();
    let (mut count, mut sum_f, mut sum_y) = (vec![0usize; nb], vec![0.0; nb], vec![0.0; nb]);
    for (&p, &t) in f.iter().zip(y) {
        let b = bounds.partition_point(|&e| e < p).min(nb - 1);
        count[b] += 1;
        sum_f[b] += p;
        sum_y[b] += t;
    }
    let n = f.len() as f64;
    let mut total = 0.0;
    for b in 0..nb {
        if count[b] < 2 {
            continue;
        }
        let m = count[b] as f64;
        let (mf, my) = (sum_f[b] / m, sum_y[b] / m);
        let term = (mf - my) * (mf - my) - my * (1.0 - my) / (m - 1.0);
        total += (m / n) * term;
    }
    Ok(total.max(0.0).sqrt())
}

/// Top-label debiased L2 calibration error of a probability matrix (`mode="top-label"`).
///
/// # Errors
/// Malformed probabilities or labels, no rows, or `num_bins == 0`.
pub fn debiased_ece_top_label(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    num_bins: usize,
) -> Result<f64, MetricsError> {
    crate::ece::validate_classification(probs, k, labels)?;
    let (conf, errors) = crate::selective::top_label_errors(probs, k, labels);
    let correct: Vec<f64> = errors.iter().map(|&e| if e { 0.0 } else { 1.0 }).collect();
    debiased_ece(&conf, &correct, num_bins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_follow_array_split() {
        // 5 values in 2 parts: [.1 .2 .3] [.4 .5] → boundary (.3 + .4) / 2, then 1.
        assert_eq!(equal_mass_boundaries(&[0.5, 0.1, 0.4, 0.3, 0.2], 2), vec![(0.3 + 0.4) / 2.0, 1.0]);
        // Fewer values than bins: one per value; duplicates merge.
        assert_eq!(equal_mass_boundaries(&[0.2, 0.2], 15), vec![0.2, 1.0]);
    }

    #[test]
    fn known_values_and_errors() {
        // One bin (B = 1) of 4 values with mean f = 0.5 and mean y = 0.5: (0)² − .25/3 < 0 → 0.
        assert_eq!(debiased_ece(&[0.5; 4], &[1.0, 0.0, 1.0, 0.0], 1).unwrap(), 0.0);
        // mean f = 0.75, outcomes all 0: 0.5625 − 0 → 0.75.
        assert_eq!(debiased_ece(&[0.75; 4], &[0.0; 4], 1).unwrap(), 0.75);
        assert!(matches!(debiased_ece(&[0.5], &[0.5], 1), Err(MetricsError::InvalidArgument(_))));
        assert!(matches!(debiased_ece(&[0.5], &[1.0], 0), Err(MetricsError::InvalidArgument(_))));
        assert!(matches!(debiased_ece(&[], &[], 15), Err(MetricsError::Empty)));
    }
}
