//! Deterministic parallel reductions over rows: rows are cut into fixed blocks of [`BLOCK_ROWS`], each
//! block is reduced on any thread, and the block results are combined in block order. The result is
//! therefore the same bit for bit whatever the number of threads.

use rayon::prelude::*;

/// Rows per block (fixed, so the summation order never depends on the thread count).
pub const BLOCK_ROWS: usize = 4096;

/// `Σ_blocks f(start..end)` with blocks reduced in parallel and summed in order.
pub fn sum_blocks<F>(rows: usize, f: F) -> f64
where
    F: Fn(std::ops::Range<usize>) -> f64 + Sync,
{
    let blocks = rows.div_ceil(BLOCK_ROWS);
    let partial: Vec<f64> =
        (0..blocks).into_par_iter().map(|b| f(b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(rows))).collect();
    partial.iter().sum()
}

/// Like [`sum_blocks`] for a (value, gradient) pair: each block returns its value and writes its
/// gradient of length `dim`; values and gradients are summed in block order.
pub fn sum_blocks_with_gradient<F>(rows: usize, dim: usize, grad: &mut [f64], f: F) -> f64
where
    F: Fn(std::ops::Range<usize>, &mut [f64]) -> f64 + Sync,
{
    let blocks = rows.div_ceil(BLOCK_ROWS);
    let partial: Vec<(f64, Vec<f64>)> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let mut g = vec![0.0; dim];
            let v = f(b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(rows), &mut g);
            (v, g)
        })
        .collect();
    grad.iter_mut().for_each(|g| *g = 0.0);
    let mut value = 0.0;
    for (v, g) in &partial {
        value += v;
        grad.iter_mut().zip(g).for_each(|(a, b)| *a += b);
    }
    value
}
