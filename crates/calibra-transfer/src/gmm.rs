//! A full-covariance Gaussian mixture fitted by EM, after scikit-learn's `GaussianMixture` defaults
//! (`covariance_type="full"`, `init_params="kmeans"`, `n_init=1`, `tol=1e-3`, `reg_covar=1e-6`,
//! `max_iter=100`): responsibilities start one-hot from a seeded [`kmeans`]; each iteration is an
//! E-step (log responsibilities through the Cholesky factor of each covariance) then an M-step
//! (`n_k = Σ r + 10 ε`, weighted means, weighted covariances + `reg_covar · I`); EM stops when the mean
//! log-likelihood changes by less than `tol`. Posteriors are computed with the final parameters.
//!
//! Rayon runs over components (M-step) and fixed row blocks (E-step); every sum over rows is
//! sequential in row order, so results are bit-identical at any thread count. Because the k-means
//! random stream differs from numpy's, a fit can land in a different local optimum than
//! scikit-learn's for the same seed (see the NLEEP tolerance in the crate README section).

use faer::Mat;
use rayon::prelude::*;

use crate::TransferError;
use crate::kmeans::kmeans;
use crate::linalg::gram;

const ROWS: usize = 512;

/// One mixture component's M-step result: its effective sample count, mean, precision matrix (inverse
/// covariance) and the log-determinant of the precision.
type ComponentFit = (f64, Vec<f64>, Mat<f64>, f64);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GmmOptions {
    pub components: usize,
    pub seed: u64,
    pub tol: f64,
    pub reg_covar: f64,
    pub max_iter: usize,
}

impl GmmOptions {
    pub fn sklearn_defaults(components: usize, seed: u64) -> Self {
        Self { components, seed, tol: 1e-3, reg_covar: 1e-6, max_iter: 100 }
    }
}

/// A fitted mixture.
pub struct GaussianMixture {
    d: usize,
    weights: Vec<f64>,
    means: Vec<Vec<f64>>,
    /// Inverse of the lower Cholesky factor of each covariance (`L⁻¹`, lower triangular).
    inv_chol: Vec<Mat<f64>>,
    /// `ln det L⁻¹ = −½ ln det Σ`.
    log_det_inv: Vec<f64>,
    /// EM iterations run and whether `tol` was met.
    pub iterations: usize,
    pub converged: bool,
}

impl GaussianMixture {
    /// Fit on row-major `x` (`n × d`); needs `components ≤ n`.
    pub fn fit(x: &[f64], n: usize, d: usize, options: GmmOptions) -> Result<Self, TransferError> {
        let k = options.components;
        if k == 0 || k > n {
            return Err(TransferError::Numerical {
                what: "Gaussian mixture",
                why: format!("{k} components for {n} samples (need 1 ≤ components ≤ samples)"),
            });
        }
        let labels = kmeans(x, n, d, k, options.seed);
        let mut resp = vec![0.0; n * k];
        for (i, &c) in labels.iter().enumerate() {
            resp[i * k + c] = 1.0;
        }
        let mut gmm = Self {
            d,
            weights: vec![],
            means: vec![],
            inv_chol: vec![],
            log_det_inv: vec![],
            iterations: 0,
            converged: false,
        };
        gmm.m_step(x, n, &resp, k, options.reg_covar)?;
        let mut lower = f64::NEG_INFINITY;
        for it in 1..=options.max_iter {
            let prev = lower;
            let (norm, r) = gmm.e_step(x, n);
            gmm.m_step(x, n, &r, k, options.reg_covar)?;
            lower = norm.iter().sum::<f64>() / n as f64;
            gmm.iterations = it;
            if (lower - prev).abs() < options.tol {
                gmm.converged = true;
                break;
            }
        }
        Ok(gmm)
    }

    /// Posterior responsibilities (`n × components`, row-major).
    pub fn predict_proba(&self, x: &[f64], n: usize) -> Vec<f64> {
        self.e_step(x, n).1
    }

    fn m_step(&mut self, x: &[f64], n: usize, resp: &[f64], k: usize, reg: f64) -> Result<(), TransferError> {
        let d = self.d;
        let parts: Vec<Result<ComponentFit, TransferError>> = (0..k)
            .into_par_iter()
            .map(|c| {
                let nk: f64 = (0..n).map(|i| resp[i * k + c]).sum::<f64>() + 10.0 * f64::EPSILON;
                let mut mean = vec![0.0; d];
                for i in 0..n {
                    let r = resp[i * k + c];
                    for (m, v) in mean.iter_mut().zip(&x[i * d..(i + 1) * d]) {
                        *m += r * v;
                    }
                }
                mean.iter_mut().for_each(|m| *m /= nk);
                let mut w = Vec::with_capacity(n * d);
                for i in 0..n {
                    let s = resp[i * k + c].sqrt();
                    w.extend(x[i * d..(i + 1) * d].iter().zip(&mean).map(|(v, m)| s * (v - m)));
                }
                let mut cov = gram(&w, n, d);
                for a in 0..d {
                    for b in 0..d {
                        cov[(a, b)] /= nk;
                    }
                    cov[(a, a)] += reg;
                }
                let llt = cov.llt(faer::Side::Lower).map_err(|_| TransferError::Numerical {
                    what: "Gaussian mixture",
                    why: format!("covariance of component {c} is not positive definite; increase reg_covar"),
                })?;
                let l = llt.L().to_owned();
                let inv = lower_inverse(&l);
                let log_det_inv = -0.5 * logdet_from_chol(&l);
                Ok((nk, mean, inv, log_det_inv))
            })
            .collect();
        self.weights.clear();
        self.means.clear();
        self.inv_chol.clear();
        self.log_det_inv.clear();
        for p in parts {
            let (nk, mean, inv, ld) = p?;
            self.weights.push(nk);
            self.means.push(mean);
            self.inv_chol.push(inv);
            self.log_det_inv.push(ld);
        }
        let total: f64 = self.weights.iter().sum();
        self.weights.iter_mut().for_each(|w| *w /= total);
        Ok(())
    }

    /// Per row: log of the mixture density, and the responsibilities.
    fn e_step(&self, x: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
        let (d, k) = (self.d, self.weights.len());
        let log_2pi = (2.0 * std::f64::consts::PI).ln();
        let starts: Vec<usize> = (0..n).step_by(ROWS).collect();
        let blocks: Vec<(Vec<f64>, Vec<f64>)> = starts
            .par_iter()
            .map(|&s| {
                let rows = (s + ROWS).min(n) - s;
                let mut lp = vec![0.0; rows * k];
                let mut diff = vec![0.0; d];
                for c in 0..k {
                    let inv = &self.inv_chol[c];
                    let base = self.weights[c].ln() + self.log_det_inv[c] - 0.5 * d as f64 * log_2pi;
                    for r in 0..rows {
                        let row = &x[(s + r) * d..(s + r + 1) * d];
                        for ((t, v), m) in diff.iter_mut().zip(row).zip(&self.means[c]) {
                            *t = v - m;
                        }
                        let mut q = 0.0;
                        for a in 0..d {
                            let mut y = 0.0;
                            for b in 0..=a {
                                y += inv[(a, b)] * diff[b];
                            }
                            q += y * y;
                        }
                        lp[r * k + c] = base - 0.5 * q;
                    }
                }
                let mut norm = vec![0.0; rows];
                for r in 0..rows {
                    let row = &mut lp[r * k..(r + 1) * k];
                    let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                    let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
                    norm[r] = lse;
                    row.iter_mut().for_each(|v| *v = (*v - lse).exp());
                }
                (norm, lp)
            })
            .collect();
        let mut norm = Vec::with_capacity(n);
        let mut resp = Vec::with_capacity(n * k);
        for (a, b) in blocks {
            norm.extend(a);
            resp.extend(b);
        }
        (norm, resp)
    }
}

fn logdet_from_chol(l: &Mat<f64>) -> f64 {
    2.0 * (0..l.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>()
}

/// Inverse of a lower-triangular matrix by forward substitution.
fn lower_inverse(l: &Mat<f64>) -> Mat<f64> {
    let d = l.nrows();
    let mut inv = Mat::<f64>::zeros(d, d);
    for j in 0..d {
        inv[(j, j)] = 1.0 / l[(j, j)];
        for i in j + 1..d {
            let mut s = 0.0;
            for m in j..i {
                s += l[(i, m)] * inv[(m, j)];
            }
            inv[(i, j)] = -s / l[(i, i)];
        }
    }
    inv
}
