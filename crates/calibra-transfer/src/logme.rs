//! LogME (You et al., ICML 2021; the fixed-point form of the 2021 arXiv follow-up), exactly as
//! `thuml/LogME LogME.py::LogME._fit_fixed_point` (spec §D1): per target column a Bayesian linear
//! regression `t ~ N(Fw, β⁻¹)`, `w ~ N(0, α⁻¹I)`, whose log evidence per sample is maximised by at
//! most 11 fixed-point updates (stop when `|Δ(α/β)|/(α/β) ≤ 1e-3`); the score is the mean evidence.
//!
//! Classification: one-vs-rest indicator targets for every class `0..C` (`C` = largest label + 1; an
//! absent class contributes an all-zero target, as the reference does). Regression: every column of a
//! continuous target. Higher is better.
//!
//! Basis: for `N > D` the eigen-decomposition of `FᵀF` (the reference's "truncated SVD", keeping
//! `s = √λ > 1e-10`), else the thin SVD of `F`. `FᵀF` is taken from the shared [`Covariance`] as
//! `ZᵀZ + N μμᵀ` when one is given.

use faer::{Mat, MatRef};

use crate::linalg::{gram, sym_eig};
use crate::{ClassStats, Covariance, Features, TransferError};

/// The spectral basis of `F` that every LogME target reuses.
pub struct LogmeBasis {
    n: usize,
    d: usize,
    /// `σ_j = s_j²` for the kept singular values.
    sigma: Vec<f64>,
    kind: Basis,
}

enum Basis {
    /// `N > D`: eigenvectors `v_j` of `FᵀF` and `s_j = √λ_j`; `x_j = v_jᵀ(Fᵀt)/s_j`.
    Eig { v: Mat<f64>, s: Vec<f64> },
    /// `N ≤ D`: left singular vectors; `x = Uᵀt`.
    Svd { u: Mat<f64> },
}

impl LogmeBasis {
    pub fn new(features: &Features, cov: Option<(&ClassStats, &Covariance)>) -> Result<Self, TransferError> {
        let (n, d) = (features.n(), features.d());
        if n > d {
            let g = match cov {
                Some((stats, cov)) => {
                    let mut g = cov.scatter.clone();
                    for j in 0..d {
                        for i in 0..d {
                            g[(i, j)] += n as f64 * stats.mean[i] * stats.mean[j];
                        }
                    }
                    g
                }
                None => gram(features.data(), n, d),
            };
            let eig = sym_eig(&g, "LogME Gram matrix")?;
            // Descending order, as numpy's SVD of FᵀF returns; keep s = sqrt(|λ|) > 1e-10.
            let mut keep = Vec::new();
            for j in (0..d).rev() {
                let s = eig.values[j].abs().sqrt();
                if s > 1e-10 {
                    keep.push((j, s));
                }
            }
            let v = Mat::from_fn(d, keep.len(), |i, k| eig.vectors[(i, keep[k].0)]);
            let s: Vec<f64> = keep.iter().map(|k| k.1).collect();
            let sigma = s.iter().map(|s| s * s).collect();
            Ok(Self { n, d, sigma, kind: Basis::Eig { v, s } })
        } else {
            let f = MatRef::from_row_major_slice(features.data(), n, d);
            let svd = f
                .thin_svd()
                .map_err(|e| TransferError::Numerical { what: "LogME SVD", why: format!("{e:?}") })?;
            let sv = svd.S();
            let sigma = (0..n.min(d)).map(|j| sv[j] * sv[j]).collect();
            Ok(Self { n, d, sigma, kind: Basis::Svd { u: svd.U().to_owned() } })
        }
    }

    /// Evidence of one target given `Fᵀt` (`ft`, length `d`), the target itself (`t`, length `n`,
    /// only read for `N ≤ D`) and `‖t‖²`.
    fn evidence_of(&self, ft: &[f64], t: &dyn Fn(usize) -> f64, t2: f64) -> f64 {
        let x: Vec<f64> = match &self.kind {
            Basis::Eig { v, s } => (0..s.len())
                .map(|k| {
                    let dot: f64 = (0..self.d).map(|i| v[(i, k)] * ft[i]).sum();
                    dot / s[k]
                })
                .collect(),
            Basis::Svd { u } => (0..u.ncols()).map(|k| (0..self.n).map(|i| u[(i, k)] * t(i)).sum()).collect(),
        };
        let x2: Vec<f64> = x.iter().map(|v| v * v).collect();
        let res_x2 = t2 - x2.iter().sum::<f64>();
        fixed_point_evidence(&self.sigma, &x2, res_x2, self.n as f64, self.d as f64)
    }

    /// Mean evidence over the one-vs-rest targets of classes `0..C`.
    pub fn classification(&self, features: &Features, stats: &ClassStats, y: &[usize]) -> f64 {
        let mut total = 0.0;
        for c in 0..stats.num_classes {
            let nc = stats.counts[c] as f64;
            let ft: Vec<f64> =
                stats.centred_sums[c].iter().zip(&stats.mean).map(|(s, m)| s + nc * m).collect();
            let ft = match self.kind {
                Basis::Eig { .. } => ft,
                Basis::Svd { .. } => class_sum(features, y, c),
            };
            total += self.evidence_of(&ft, &|i| if y[i] == c { 1.0 } else { 0.0 }, nc);
        }
        total / stats.num_classes as f64
    }

    /// Mean evidence over continuous target columns (`targets[k]` has one value per row).
    pub fn regression(&self, features: &Features, targets: &[Vec<f64>]) -> f64 {
        let mut total = 0.0;
        for t in targets {
            let mut ft = vec![0.0; self.d];
            for (i, &ti) in t.iter().enumerate() {
                for (a, &x) in ft.iter_mut().zip(features.row(i)) {
                    *a += x * ti;
                }
            }
            let t2 = t.iter().map(|v| v * v).sum();
            total += self.evidence_of(&ft, &|i| t[i], t2);
        }
        total / targets.len() as f64
    }
}

fn class_sum(features: &Features, y: &[usize], c: usize) -> Vec<f64> {
    let mut s = vec![0.0; features.d()];
    for (i, _) in y.iter().enumerate().filter(|(_, l)| **l == c) {
        for (a, &x) in s.iter_mut().zip(features.row(i)) {
            *a += x;
        }
    }
    s
}

/// The reference's fixed point; the evidence uses the α, β of the last update with the m², r² of
/// that same pass (spec §D1).
pub(crate) fn fixed_point_evidence(sigma: &[f64], x2: &[f64], res_x2: f64, n: f64, d: f64) -> f64 {
    let (mut alpha, mut beta) = (1.0f64, 1.0f64);
    let (mut m2, mut res2) = (0.0, 0.0);
    for _ in 0..11 {
        let t = alpha / beta;
        let gamma: f64 = sigma.iter().map(|s| s / (s + t)).sum();
        m2 = sigma.iter().zip(x2).map(|(s, x)| s * x / ((t + s) * (t + s))).sum();
        res2 = x2.iter().zip(sigma).map(|(x, s)| x / ((1.0 + s / t) * (1.0 + s / t))).sum::<f64>() + res_x2;
        alpha = gamma / (m2 + 1e-5);
        beta = (n - gamma) / (res2 + 1e-5);
        let t_new = alpha / beta;
        if (t_new - t).abs() / t <= 1e-3 {
            break;
        }
    }
    let log_det: f64 = sigma.iter().map(|s| (alpha + beta * s).ln()).sum();
    let evidence = d / 2.0 * alpha.ln() + n / 2.0 * beta.ln()
        - 0.5 * log_det
        - beta / 2.0 * res2
        - alpha / 2.0 * m2
        - n / 2.0 * (2.0 * std::f64::consts::PI).ln();
    evidence / n
}

/// LogME of class labels (computes its own basis).
pub fn logme_classes(features: &Features, y: &[usize]) -> Result<f64, TransferError> {
    let stats = ClassStats::new(features, y)?;
    Ok(LogmeBasis::new(features, None)?.classification(features, &stats, y))
}

/// LogME of continuous targets (one or more columns).
pub fn logme_regression(features: &Features, targets: &[Vec<f64>]) -> Result<f64, TransferError> {
    for t in targets {
        if t.len() != features.n() {
            return Err(TransferError::LengthMismatch { labels: t.len(), rows: features.n() });
        }
    }
    Ok(LogmeBasis::new(features, None)?.regression(features, targets))
}
