//! Neighbour-outcome agreement (seed 001 §4.4 "R"): do the nearest neighbours of a sample, in cosine
//! distance over the frozen features, share its outcome? Leave-one-out over the whole set with
//! `k` = [`DEFAULT_K`] = 10 neighbours (`min(k, n − 1)`); ties in similarity go to the lower row index.
//!
//! - classes: the mean, over samples, of the fraction of its `k` neighbours with the same label
//!   (in `[0, 1]`; chance level is `Σ_c p_c²`);
//! - ordinal grades and continuous outcomes: Spearman ρ between each sample's outcome and the mean
//!   outcome of its neighbours (the paper uses Spearman for regression).
//!
//! The paper scores binary labels by the AUROC of the neighbour-positive fraction instead; we use one
//! definition for every class count so that binary and multiclass tasks stay comparable.
//!
//! Rows with zero norm have no direction: their cosine similarity to everything is taken as 0.
//! Cost `O(n² d)`; similarities are computed in fixed blocks of rows (rayon over blocks).

use faer::MatRef;
use rayon::prelude::*;

use crate::Features;
use crate::linalg::mul_row_major;

/// Default number of neighbours.
pub const DEFAULT_K: usize = 10;

const BLOCK: usize = 256;

/// The `min(k, n−1)` nearest neighbours (cosine) of every row, nearest first.
pub fn cosine_neighbours(features: &Features, k: usize) -> Vec<Vec<usize>> {
    let (n, d) = (features.n(), features.d());
    let k = k.min(n.saturating_sub(1));
    let mut unit = features.data().to_vec();
    for row in unit.chunks_mut(d) {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|v| *v /= norm);
        }
    }
    let all_t = MatRef::from_row_major_slice(&unit, n, d).transpose();
    let starts: Vec<usize> = (0..n).step_by(BLOCK).collect();
    let blocks: Vec<Vec<Vec<usize>>> = starts
        .par_iter()
        .map(|&s| {
            let rows = (s + BLOCK).min(n) - s;
            let sims = mul_row_major(&unit[s * d..(s + rows) * d], rows, d, all_t);
            (0..rows).map(|r| top_k(&sims[r * n..(r + 1) * n], s + r, k)).collect()
        })
        .collect();
    blocks.into_iter().flatten().collect()
}

/// Indices of the `k` largest similarities, excluding `me`; ties to the lower index.
fn top_k(sims: &[f64], me: usize, k: usize) -> Vec<usize> {
    let better = |a: usize, b: usize| sims[a] > sims[b] || (sims[a] == sims[b] && a < b);
    let mut best: Vec<usize> = Vec::with_capacity(k + 1);
    for j in 0..sims.len() {
        if j == me {
            continue;
        }
        if best.len() == k && !better(j, best[k - 1]) {
            continue;
        }
        let pos = best.iter().position(|&b| better(j, b)).unwrap_or(best.len());
        best.insert(pos, j);
        best.truncate(k);
    }
    best
}

/// Mean fraction of neighbours sharing the sample's class.
pub fn label_agreement(neighbours: &[Vec<usize>], y: &[usize]) -> Option<f64> {
    let mut total = 0.0;
    for (i, nb) in neighbours.iter().enumerate() {
        if nb.is_empty() {
            return None;
        }
        total += nb.iter().filter(|&&j| y[j] == y[i]).count() as f64 / nb.len() as f64;
    }
    Some(total / neighbours.len() as f64)
}

/// Spearman ρ between each outcome and its neighbours' mean outcome (NaN → `None`).
pub fn outcome_agreement(neighbours: &[Vec<usize>], y: &[f64]) -> Option<f64> {
    let mut mean = Vec::with_capacity(y.len());
    for nb in neighbours {
        if nb.is_empty() {
            return None;
        }
        mean.push(nb.iter().map(|&j| y[j]).sum::<f64>() / nb.len() as f64);
    }
    let rho = calibra_metrics::spearman_rho(y, &mean);
    rho.is_finite().then_some(rho)
}
