//! APS conformity scores and the APS / RAPS set rule (MAPIE 1.6 `APSConformityScore`,
//! `NaiveConformityScore._get_last_included_proba`, `sets/utils.py::get_last_index_included`).
//! See [`crate::conformal`].
//!
//! Score of a calibration row: the probabilities summed in descending order up to and including the
//! true class, minus `u · p̂_y`. Set of a row at quantile `q̂`: with `C_c` the (RAPS: regularised by
//! `λ · max(0, j − k_reg)` at 1-based rank `j`) cumulated score at class `c`, the "last" class is
//! - include / randomized: the class with the least `C_c − q̂` among those with `C_c − q̂ ≥ −1e-8`;
//! - exclude: the class with the largest `C_c − t` among those with `C_c − t ≤ 1e-8`,
//!   `t = max(q̂, min_c C_c)`;
//!
//! (ties to the lowest class index, as numpy's masked argmin / argmax). Its probability `p_last`
//! (replaced by the row's least probability ≥ 1e-8 when it is ≤ 1e-8) sets the threshold: the set
//! is `{c : p̂_c − p_last ≥ −1e-8}`. Randomized: with `L` the set size,
//! `V = (C_last − q̂) / d`, `d = p_last` (APS) or `p_last − λ·max(0, L − k_reg) + λ·[L > k_reg]`
//! (RAPS), the last class is kept iff `V − u ≤ 1e-8`.

use crate::conformal::{EPSILON, LastLabel, descending_classes};

/// Randomised APS scores of the calibration rows (inputs validated by the caller).
pub fn scores(probs: &[f64], k: usize, labels: &[usize], draws: &[f64]) -> Vec<f64> {
    probs
        .chunks_exact(k)
        .zip(labels)
        .zip(draws)
        .map(|((row, &y), &u)| {
            let mut cum = 0.0;
            for c in descending_classes(row) {
                cum += row[c];
                if c == y {
                    break;
                }
            }
            cum - u * row[y]
        })
        .collect()
}

/// APS (`regularisation = None`) or RAPS (`Some((λ, k_reg))`) sets of every row.
pub fn sets(
    probs: &[f64],
    k: usize,
    quantile: f64,
    last_label: LastLabel,
    draws: &[f64],
    regularisation: Option<(f64, usize)>,
) -> Vec<Vec<usize>> {
    probs
        .chunks_exact(k)
        .zip(draws)
        .map(|(row, &u)| row_set(row, quantile, last_label, u, regularisation))
        .collect()
}

fn row_set(
    row: &[f64],
    q: f64,
    last_label: LastLabel,
    u: f64,
    regularisation: Option<(f64, usize)>,
) -> Vec<usize> {
    let k = row.len();
    let order = descending_classes(row);
    let mut cum = vec![0.0; k];
    let mut running = 0.0;
    for (j, &c) in order.iter().enumerate() {
        running += row[c];
        let reg =
            regularisation.map_or(0.0, |(lambda, k_reg)| lambda * ((j + 1) as f64 - k_reg as f64).max(0.0));
        cum[c] = running + reg;
    }
    let last = match last_label {
        LastLabel::Include | LastLabel::Randomized => {
            let mut best: Option<usize> = None;
            for c in 0..k {
                let d = cum[c] - q;
                if d >= -EPSILON && best.is_none_or(|b| d < cum[b] - q) {
                    best = Some(c);
                }
            }
            // numpy's argmin of an all-masked array is 0.
            best.unwrap_or(0)
        }
        LastLabel::Exclude => {
            let t = q.max(cum.iter().copied().fold(f64::INFINITY, f64::min));
            let mut best: Option<usize> = None;
            for c in 0..k {
                let d = cum[c] - t;
                if d <= EPSILON && best.is_none_or(|b| d > cum[b] - t) {
                    best = Some(c);
                }
            }
            best.unwrap_or(0)
        }
    };
    let mut p_last = row[last];
    if p_last <= EPSILON {
        p_last = row.iter().copied().filter(|&p| p >= EPSILON).fold(f64::INFINITY, f64::min);
    }
    let mut included: Vec<bool> = row.iter().map(|&p| p - p_last >= -EPSILON).collect();
    if last_label == LastLabel::Randomized {
        let size = included.iter().filter(|&&b| b).count() as f64;
        let denominator = match regularisation {
            None => p_last,
            Some((lambda, k_reg)) => {
                let kr = k_reg as f64;
                p_last - lambda * (size - kr).max(0.0) + lambda * f64::from(u8::from(size > kr))
            }
        };
        let v = (cum[last] - q) / denominator;
        included[last] = v - u <= EPSILON;
    }
    (0..k).filter(|&c| included[c]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_exclude_and_randomized_on_one_row() {
        // p = [.5, .3, .2]; cumulated .5, .8, 1.0; q̂ = .7.
        let p = [0.5, 0.3, 0.2];
        assert_eq!(sets(&p, 3, 0.7, LastLabel::Include, &[0.0], None), vec![vec![0, 1]]);
        assert_eq!(sets(&p, 3, 0.7, LastLabel::Exclude, &[0.0], None), vec![vec![0]]);
        // V = (.8 − .7) / .3 = 1/3: kept for u ≥ 1/3, dropped below.
        assert_eq!(sets(&p, 3, 0.7, LastLabel::Randomized, &[0.5], None), vec![vec![0, 1]]);
        assert_eq!(sets(&p, 3, 0.7, LastLabel::Randomized, &[0.1], None), vec![vec![0]]);
        // RAPS with a heavy penalty after rank 1: cumulated .5, .8 + 1, 1 + 2 → the last is class 1
        // (least C − q̂ ≥ 0), so its set is still {0, 1} by the probability threshold.
        assert_eq!(sets(&p, 3, 0.7, LastLabel::Include, &[0.0], Some((1.0, 1))), vec![vec![0, 1]]);
        assert_eq!(scores(&p, 3, &[1], &[0.5]), vec![0.8 - 0.5 * 0.3]);
    }
}
