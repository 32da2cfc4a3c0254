//! Dense f64 matrix products on row-major slices (ndarray's `general_mat_mul`, i.e. the
//! `matrixmultiply` kernels with run-time SIMD detection, single-threaded and deterministic), and a
//! deterministic chunked parallel sum over rows.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;
use std::ops::Range;

fn view(values: &[f64], rows: usize, cols: usize) -> ArrayView2<'_, f64> {
    ArrayView2::from_shape((rows, cols), values).expect("matrix shape matches its length")
}

fn view_mut(values: &mut [f64], rows: usize, cols: usize) -> ArrayViewMut2<'_, f64> {
    ArrayViewMut2::from_shape((rows, cols), values).expect("matrix shape matches its length")
}

/// `out (m × p) = beta·out + A (m × q) · Bᵀ` with `B` stored `p × q`.
pub(crate) fn matmul_a_bt(a: &[f64], m: usize, q: usize, b: &[f64], p: usize, beta: f64, out: &mut [f64]) {
    general_mat_mul(1.0, &view(a, m, q), &view(b, p, q).t(), beta, &mut view_mut(out, m, p));
}

/// `out (q × p) = beta·out + Aᵀ · B` with `A` stored `m × q` and `B` stored `m × p`.
pub(crate) fn matmul_at_b(a: &[f64], m: usize, q: usize, b: &[f64], p: usize, beta: f64, out: &mut [f64]) {
    general_mat_mul(1.0, &view(a, m, q).t(), &view(b, m, p), beta, &mut view_mut(out, q, p));
}

/// `out (m × p) = beta·out + A (m × q) · B (q × p)`.
pub(crate) fn matmul_a_b(a: &[f64], m: usize, q: usize, b: &[f64], p: usize, beta: f64, out: &mut [f64]) {
    general_mat_mul(1.0, &view(a, m, q), &view(b, q, p), beta, &mut view_mut(out, m, p));
}

/// Rows per chunk of [`chunked_sum`]. Fixed, so results never depend on the number of threads.
pub(crate) const CHUNK_ROWS: usize = 512;

/// Σ over fixed row chunks of `f(chunk, grad_out) -> value`, evaluated in parallel with rayon and
/// reduced in chunk order, so the result is bit-identical for any thread count. Returns the summed
/// value and writes the summed vector (length `len`) into `total`.
pub(crate) fn chunked_sum<F>(rows: usize, len: usize, total: &mut [f64], f: F) -> f64
where
    F: Fn(Range<usize>, &mut [f64]) -> f64 + Sync,
{
    let starts: Vec<usize> = (0..rows).step_by(CHUNK_ROWS).collect();
    let parts: Vec<(f64, Vec<f64>)> = starts
        .par_iter()
        .map(|&start| {
            let mut g = vec![0.0; len];
            let v = f(start..(start + CHUNK_ROWS).min(rows), &mut g);
            (v, g)
        })
        .collect();
    total.iter_mut().for_each(|t| *t = 0.0);
    let mut value = 0.0;
    for (v, g) in &parts {
        value += v;
        total.iter_mut().zip(g).for_each(|(t, x)| *t += x);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_match_the_definition() {
        // Small integer matrices: products are exact in f64.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2 × 3
        let b = [1.0, 0.0, -1.0, 2.0, 1.0, 0.0]; // 2 × 3
        let mut out = [0.0; 4];
        matmul_a_bt(&a, 2, 3, &b, 2, 0.0, &mut out);
        assert_eq!(out, [-2.0, 4.0, -2.0, 13.0]);
        let mut out = [0.0; 9];
        matmul_at_b(&a, 2, 3, &b, 3, 0.0, &mut out);
        // Aᵀ B: (3 × 2)(2 × 3).
        assert_eq!(out, [9.0, 4.0, -1.0, 12.0, 5.0, -2.0, 15.0, 6.0, -3.0]);
        let c = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3 × 2
        let mut out = [0.0; 4];
        matmul_a_b(&a, 2, 3, &c, 2, 0.0, &mut out);
        assert_eq!(out, [4.0, 5.0, 10.0, 11.0]);
    }
}
