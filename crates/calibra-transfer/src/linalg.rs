//! The few dense linear-algebra kernels the estimators share, on faer with sequential execution
//! (`Par::Seq`), so a result never depends on the number of threads.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatRef, Par, Side};

use crate::TransferError;

/// `Xᵀ X` for row-major `x` (`n × d`), symmetric, both triangles filled.
pub(crate) fn gram(x: &[f64], n: usize, d: usize) -> Mat<f64> {
    let mut out = Mat::<f64>::zeros(d, d);
    if n == 0 {
        return out;
    }
    let xm = MatRef::from_row_major_slice(x, n, d);
    triangular::matmul(
        out.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        xm.transpose(),
        BlockStructure::Rectangular,
        xm,
        BlockStructure::Rectangular,
        1.0,
        Par::Seq,
    );
    for j in 0..d {
        for i in 0..j {
            out[(i, j)] = out[(j, i)];
        }
    }
    out
}

/// `X Xᵀ` for row-major `x` (`n × d`): the `n × n` Gram of the rows.
pub(crate) fn row_gram(x: &[f64], n: usize, d: usize) -> Mat<f64> {
    let mut out = Mat::<f64>::zeros(n, n);
    let xm = MatRef::from_row_major_slice(x, n, d);
    triangular::matmul(
        out.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        xm,
        BlockStructure::Rectangular,
        xm.transpose(),
        BlockStructure::Rectangular,
        1.0,
        Par::Seq,
    );
    for j in 0..n {
        for i in 0..j {
            out[(i, j)] = out[(j, i)];
        }
    }
    out
}

/// `A B` for row-major `a` (`n × k`) and a faer matrix `b` (`k × m`), returned row-major `n × m`.
pub(crate) fn mul_row_major(a: &[f64], n: usize, k: usize, b: MatRef<'_, f64>) -> Vec<f64> {
    let m = b.ncols();
    let mut out = vec![0.0; n * m];
    if n == 0 || m == 0 {
        return out;
    }
    let am = MatRef::from_row_major_slice(a, n, k);
    let mut om = faer::MatMut::from_row_major_slice_mut(&mut out, n, m);
    faer::linalg::matmul::matmul(om.as_mut(), Accum::Replace, am, b, 1.0, Par::Seq);
    out
}

/// Eigen-decomposition of a symmetric matrix: eigenvalues ascending, eigenvectors as columns.
pub(crate) struct SymEig {
    pub values: Vec<f64>,
    pub vectors: Mat<f64>,
}

pub(crate) fn sym_eig(m: &Mat<f64>, what: &'static str) -> Result<SymEig, TransferError> {
    let evd = m
        .self_adjoint_eigen(Side::Lower)
        .map_err(|e| TransferError::Numerical { what, why: format!("eigendecomposition failed: {e:?}") })?;
    let s = evd.S();
    let values: Vec<f64> = (0..m.nrows()).map(|i| s[i]).collect();
    Ok(SymEig { values, vectors: evd.U().to_owned() })
}

/// `ln det(A)` of a symmetric positive-definite matrix by Cholesky.
pub(crate) fn logdet_spd(m: &Mat<f64>, what: &'static str) -> Result<f64, TransferError> {
    let llt = m
        .llt(Side::Lower)
        .map_err(|e| TransferError::Numerical { what, why: format!("Cholesky failed: {e:?}") })?;
    let l = llt.L();
    Ok(2.0 * (0..m.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>())
}

/// Pseudo-inverse spectrum as numpy's `pinv(rcond)`: reciprocal of each eigenvalue whose magnitude
/// exceeds `rcond · max|λ|`, zero for the others.
pub(crate) fn pinv_spectrum(values: &[f64], rcond: f64) -> Vec<f64> {
    let max = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let cutoff = rcond * max;
    values.iter().map(|&v| if v.abs() > cutoff { 1.0 / v } else { 0.0 }).collect()
}

/// `Vᵀ x` for the eigenvector matrix `v` (columns) and a vector `x`.
pub(crate) fn project(v: &Mat<f64>, x: &[f64]) -> Vec<f64> {
    (0..v.ncols()).map(|j| (0..v.nrows()).map(|i| v[(i, j)] * x[i]).sum()).collect()
}
