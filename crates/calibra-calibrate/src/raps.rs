//! RAPS conformity scores (MAPIE 1.6 `RAPSConformityScore` with a given `λ` and `k_reg`, MAPIE's
//! `lambda_star` and `k_star`): the randomised APS score plus `max(λ · (rank_y − k_reg), 0)`, with
//! `rank_y` the 1-based rank of the true class. The sets are [`crate::aps::sets`] with the same
//! regularisation of the cumulated scores. MAPIE itself picks `k_reg` as a quantile of the true-class
//! ranks and `λ` from {0.001, 0.01, 0.1, 0.2, 0.5} on a 20 % sub-split; calibra takes both as given.

/// Regularised APS scores of the calibration rows (inputs validated by the caller).
pub fn scores(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    draws: &[f64],
    lambda: f64,
    k_reg: usize,
) -> Vec<f64> {
    let base = crate::aps::scores(probs, k, labels, draws);
    probs
        .chunks_exact(k)
        .zip(labels)
        .zip(base)
        .map(|((row, &y), s)| {
            let rank =
                crate::conformal::descending_classes(row).iter().position(|&c| c == y).unwrap_or(0) + 1;
            s + (lambda * (rank as f64 - k_reg as f64)).max(0.0)
        })
        .collect()
}
