//! ℓ2-regularised logistic regression fitted with L-BFGS: multinomial for K ≥ 3 classes, a single
//! sigmoid for K = 2, one-vs-rest sigmoids for multilabel targets — the model and objective of
//! scikit-learn 1.9.1 `LogisticRegression(C, solver="lbfgs")`.
//!
//! # Objective (sklearn's `LinearModelLoss`, `_logistic_regression_path`)
//! With N training rows, weights `W` and an **unpenalised** intercept `b`:
//!
//! - multinomial (K ≥ 3, `HalfMultinomialLoss`): `f = (1/N) Σ_i [logsumexp(z_i) − z_{i,y_i}] +
//!   ‖W‖²_F / (2·C·N)`, `z_i = W x_i + b`, `W ∈ R^{K×d}` (all K rows kept, no reference class);
//! - binary (K = 2, `HalfBinomialLoss`, positive class 1): `f = (1/N) Σ_i [log(1 + e^{z_i}) − y_i z_i]
//!   + ‖w‖² / (2·C·N)`, `z_i = w·x_i + b`;
//! - multilabel: one binary fit per label on the rows where that label is observed (N = that count).
//!
//! sklearn minimises `C·Σ loss + ½‖W‖²`, which it rescales to the mean loss plus `‖W‖²/(2·C·N)`
//! (`l2_reg_strength = 1/(C·sw_sum)`), so C = 1 is "λ = 1/N on the mean loss".
//!
//! # Optimiser and stopping rule
//! L-BFGS with 10 correction pairs from `W = 0, b = 0` (calibra-calibrate's strong-Wolfe L-BFGS; the
//! path differs from scipy's L-BFGS-B but the optimum is the same strictly convex problem, up to the
//! common shift of multinomial intercepts, which leaves probabilities unchanged). Stops like scipy as
//! called by sklearn: `‖∇f‖_∞ ≤ tol` (scipy's `gtol`), or a relative decrease
//! `(f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) ≤ 64·ε` (sklearn's `ftol`), or `max_iterations`.
//! Defaults differ from sklearn's on purpose: `tol = 1e-6` (sklearn 1e-4) and 1000 iterations
//! (sklearn 100, which often ends with a ConvergenceWarning on wide features). With sklearn's 1e-4 the
//! answer depends on the solver's path: on the golden multinomial case sklearn's own tol = 1e-4 fit is
//! 7e-3 (in probability) away from its tol = 1e-10 fit. Pass `tolerance: 1e-4, max_iterations: 100`
//! to mimic sklearn's defaults.
//! Whether it converged is recorded in [`FitDiagnostics`], not an error (sklearn warns).
//!
//! The loss and gradient are summed over fixed chunks of rows in parallel (rayon) and reduced in
//! chunk order: results are bit-identical for any number of threads.

use crate::error::ProbeError;
use crate::features::Features;
use crate::linalg::{chunked_sum, matmul_a_bt, matmul_at_b};
use crate::targets::{Targets, observed_rows, select_rows};
use calibra_calibrate::optim::{LbfgsOptions, LbfgsTermination, minimize_lbfgs};
use serde::{Deserialize, Serialize};

/// Settings of [`LogisticRegression`]. Defaults: `c = 1`, `tolerance = 1e-6`,
/// `function_tolerance = 64·ε`, `max_iterations = 1000`, `memory = 10`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogisticOptions {
    /// Inverse regularisation strength C (> 0): penalty `‖W‖²/(2·C·N)` on the mean loss.
    pub c: f64,
    /// Stop when the largest gradient component is at most this (sklearn's `tol`, scipy's `gtol`).
    pub tolerance: f64,
    /// Relative decrease of f below which to stop (scipy's `ftol`; sklearn passes 64·ε).
    pub function_tolerance: f64,
    pub max_iterations: usize,
    /// L-BFGS correction pairs (scipy's `maxcor`, default 10).
    pub memory: usize,
}

impl Default for LogisticOptions {
    fn default() -> Self {
        LogisticOptions {
            c: 1.0,
            tolerance: 1e-6,
            function_tolerance: 64.0 * f64::EPSILON,
            max_iterations: 1000,
            memory: 10,
        }
    }
}

impl LogisticOptions {
    fn validate(&self) -> Result<(), ProbeError> {
        if !(self.c.is_finite() && self.c > 0.0) {
            return Err(ProbeError::InvalidOptions(format!("c = {} must be finite and > 0", self.c)));
        }
        if !(self.tolerance >= 0.0 && self.function_tolerance >= 0.0) {
            return Err(ProbeError::InvalidOptions("tolerances must be ≥ 0".into()));
        }
        if self.max_iterations == 0 || self.memory == 0 {
            return Err(ProbeError::InvalidOptions("max_iterations and memory must be ≥ 1".into()));
        }
        Ok(())
    }
}

/// An affine map `z = W x + b` with `outputs` rows; plain data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearHead {
    pub inputs: usize,
    pub outputs: usize,
    /// Row-major `outputs × inputs`.
    pub weights: Vec<f64>,
    pub bias: Vec<f64>,
}

impl LinearHead {
    /// `z = X Wᵀ + b`, row-major `rows × outputs`.
    pub fn apply(&self, x: &[f64], rows: usize) -> Vec<f64> {
        let mut z = Vec::with_capacity(rows * self.outputs);
        for _ in 0..rows {
            z.extend_from_slice(&self.bias);
        }
        matmul_a_bt(x, rows, self.inputs, &self.weights, self.outputs, 1.0, &mut z);
        z
    }
}

/// How one L-BFGS fit ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitDiagnostics {
    pub iterations: usize,
    pub evaluations: usize,
    /// Objective value at the solution.
    pub objective: f64,
    /// `‖∇f‖_∞` at the solution.
    pub gradient_norm: f64,
    pub converged: bool,
}

/// The fitted heads of a [`LogisticRegression`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LogisticModel {
    /// K ≥ 3 classes: one head with K outputs, probabilities `softmax(z)`.
    Multinomial(LinearHead),
    /// K = 2: one head with 1 output `z`, probabilities `[1 − σ(z), σ(z)]`.
    Binary(LinearHead),
    /// L labels: one single-output head per label, probabilities `σ(z_l)`.
    OneVsRest(Vec<LinearHead>),
}

/// A fitted logistic-regression probe (plain data, serde).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogisticRegression {
    pub options: LogisticOptions,
    pub model: LogisticModel,
    /// One entry per L-BFGS fit (one for multinomial/binary, one per label for one-vs-rest).
    pub diagnostics: Vec<FitDiagnostics>,
}

/// What the rows of one linear fit are trained on.
#[derive(Clone, Copy)]
enum LinearTarget<'a> {
    /// Class index per row; softmax cross-entropy over `outputs` classes.
    Classes(&'a [usize]),
    /// 0/1 per row; sigmoid cross-entropy on a single output.
    Binary(&'a [f64]),
}

#[inline]
fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

#[inline]
pub(crate) fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// In place: `z ← softmax(z) − onehot(y)`; returns `logsumexp(z) − z_y` (max-shifted).
#[inline]
fn softmax_residual(z: &mut [f64], y: usize) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let zy = z[y] - m;
    let mut s = 0.0;
    for v in z.iter_mut() {
        *v = (*v - m).exp();
        s += *v;
    }
    let inv = 1.0 / s;
    z.iter_mut().for_each(|v| *v *= inv);
    z[y] -= 1.0;
    s.ln() - zy
}

/// Objective and gradient of one linear fit; `theta = [W (outputs × d), b (outputs)]`.
#[allow(clippy::too_many_arguments)]
fn objective(
    x: &[f64],
    n: usize,
    d: usize,
    outputs: usize,
    target: LinearTarget<'_>,
    penalty: f64,
    theta: &[f64],
    grad: &mut [f64],
) -> f64 {
    let (w, b) = theta.split_at(outputs * d);
    let loss = chunked_sum(n, theta.len(), grad, |rows, g| {
        let m = rows.len();
        let xc = &x[rows.start * d..rows.end * d];
        let mut z = Vec::with_capacity(m * outputs);
        for _ in 0..m {
            z.extend_from_slice(b);
        }
        matmul_a_bt(xc, m, d, w, outputs, 1.0, &mut z);
        let mut loss = 0.0;
        match target {
            LinearTarget::Classes(y) => {
                for (r, zi) in z.chunks_exact_mut(outputs).enumerate() {
                    loss += softmax_residual(zi, y[rows.start + r]);
                }
            }
            LinearTarget::Binary(y) => {
                for (r, zi) in z.iter_mut().enumerate() {
                    let t = y[rows.start + r];
                    loss += softplus(*zi) - t * *zi;
                    *zi = sigmoid(*zi) - t;
                }
            }
        }
        let (gw, gb) = g.split_at_mut(outputs * d);
        matmul_at_b(&z, m, outputs, xc, d, 0.0, gw);
        for zi in z.chunks_exact(outputs) {
            gb.iter_mut().zip(zi).for_each(|(a, v)| *a += v);
        }
        loss
    });
    let inv_n = 1.0 / n as f64;
    grad.iter_mut().for_each(|g| *g *= inv_n);
    let mut norm2 = 0.0;
    for (g, wi) in grad[..outputs * d].iter_mut().zip(w) {
        *g += penalty * wi;
        norm2 += wi * wi;
    }
    loss * inv_n + 0.5 * penalty * norm2
}

/// Fit one linear head (`outputs` = K for classes, 1 for binary) on `n × d` features.
fn fit_linear(
    x: &[f64],
    n: usize,
    d: usize,
    outputs: usize,
    target: LinearTarget<'_>,
    options: &LogisticOptions,
) -> Result<(LinearHead, FitDiagnostics), ProbeError> {
    let penalty = 1.0 / (options.c * n as f64);
    let lbfgs = LbfgsOptions {
        memory: options.memory,
        max_iterations: options.max_iterations,
        gradient_tolerance: options.tolerance,
        function_tolerance: options.function_tolerance,
        max_line_search: 50,
    };
    let theta0 = vec![0.0; outputs * (d + 1)];
    let r = minimize_lbfgs(|t, g| objective(x, n, d, outputs, target, penalty, t, g), &theta0, &lbfgs);
    if r.termination == LbfgsTermination::NonFinite || !r.value.is_finite() {
        return Err(ProbeError::FitFailed {
            probe: "logistic".into(),
            why: format!("the objective is not finite (value {})", r.value),
        });
    }
    let mut weights = r.x;
    let bias = weights.split_off(outputs * d);
    let diagnostics = FitDiagnostics {
        iterations: r.iterations,
        evaluations: r.evaluations,
        objective: r.value,
        gradient_norm: r.gradient_norm,
        converged: r.converged,
    };
    Ok((LinearHead { inputs: d, outputs, weights, bias }, diagnostics))
}

impl LogisticRegression {
    /// Fit on (already standardised, if wanted) features. Classes with K = 2 give the binary
    /// sigmoid model, K ≥ 3 the multinomial one; labels give one-vs-rest sigmoids.
    pub fn fit(
        features: Features<'_>,
        targets: Targets<'_>,
        options: &LogisticOptions,
    ) -> Result<LogisticRegression, ProbeError> {
        options.validate()?;
        targets.validate(features.rows())?;
        let (n, d) = (features.rows(), features.cols());
        let x = features.values();
        let (model, diagnostics) = match targets {
            Targets::Classes { labels, n_classes: 2 } => {
                let y: Vec<f64> = labels.iter().map(|&c| c as f64).collect();
                let (head, diag) = fit_linear(x, n, d, 1, LinearTarget::Binary(&y), options)?;
                (LogisticModel::Binary(head), vec![diag])
            }
            Targets::Classes { labels, n_classes } => {
                let (head, diag) = fit_linear(x, n, d, n_classes, LinearTarget::Classes(labels), options)?;
                (LogisticModel::Multinomial(head), vec![diag])
            }
            Targets::Labels { labels, n_labels } => {
                let mut heads = Vec::with_capacity(n_labels);
                let mut diags = Vec::with_capacity(n_labels);
                for l in 0..n_labels {
                    let (rows, y) = observed_rows(labels, n_labels, l);
                    let xl = select_rows(x, d, &rows);
                    let (head, diag) = fit_linear(&xl, rows.len(), d, 1, LinearTarget::Binary(&y), options)?;
                    heads.push(head);
                    diags.push(diag);
                }
                (LogisticModel::OneVsRest(heads), diags)
            }
        };
        Ok(LogisticRegression { options: *options, model, diagnostics })
    }

    /// Feature dimension the model was fitted on.
    pub fn inputs(&self) -> usize {
        match &self.model {
            LogisticModel::Multinomial(h) | LogisticModel::Binary(h) => h.inputs,
            LogisticModel::OneVsRest(hs) => hs[0].inputs,
        }
    }

    /// Number of `predict_proba` columns (K, or L labels).
    pub fn outputs(&self) -> usize {
        match &self.model {
            LogisticModel::Multinomial(h) => h.outputs,
            LogisticModel::Binary(_) => 2,
            LogisticModel::OneVsRest(hs) => hs.len(),
        }
    }

    /// Logits for the predictions file, row-major `rows × outputs`: multinomial `z = Wx + b`
    /// (softmax gives the probabilities; shifting a row by a constant changes nothing); binary
    /// `[0, z]` (softmax of it is `[1 − σ(z), σ(z)]` exactly as `predict_proba`); one-vs-rest the
    /// per-label `z_l` (sigmoid gives the probability).
    pub fn predict_logits(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        features.expect_cols(self.inputs())?;
        let (x, n) = (features.values(), features.rows());
        Ok(match &self.model {
            LogisticModel::Multinomial(h) => h.apply(x, n),
            LogisticModel::Binary(h) => h.apply(x, n).into_iter().flat_map(|z| [0.0, z]).collect(),
            LogisticModel::OneVsRest(hs) => {
                let per: Vec<Vec<f64>> = hs.iter().map(|h| h.apply(x, n)).collect();
                (0..n).flat_map(|i| per.iter().map(move |p| p[i])).collect()
            }
        })
    }

    /// Probabilities, row-major `rows × outputs` (sklearn's `predict_proba`; for one-vs-rest the
    /// independent per-label `σ(z_l)`, not renormalised).
    pub fn predict_proba(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        let z = self.predict_logits(features)?;
        Ok(match &self.model {
            LogisticModel::Multinomial(h) => softmax_rows(z, h.outputs),
            LogisticModel::Binary(_) => {
                z.chunks_exact(2).flat_map(|r| [sigmoid(-r[1]), sigmoid(r[1])]).collect()
            }
            LogisticModel::OneVsRest(_) => z.into_iter().map(sigmoid).collect(),
        })
    }
}

/// Row-wise softmax (max-shifted).
pub(crate) fn softmax_rows(mut z: Vec<f64>, k: usize) -> Vec<f64> {
    for row in z.chunks_exact_mut(k) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let mut s = 0.0;
        row.iter_mut().for_each(|v| {
            *v = (*v - m).exp();
            s += *v;
        });
        row.iter_mut().for_each(|v| *v /= s);
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central finite differences of the objective agree with the analytic gradient.
    #[test]
    fn gradient_matches_finite_differences() {
        let (n, d, k) = (7, 3, 3);
        let x: Vec<f64> = (0..n * d).map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0).collect();
        let y: Vec<usize> = (0..n).map(|i| i % k).collect();
        let yb: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
        for (outputs, target) in [(k, LinearTarget::Classes(&y)), (1, LinearTarget::Binary(&yb))] {
            let theta: Vec<f64> = (0..outputs * (d + 1)).map(|i| ((i * 7 % 5) as f64 - 2.0) / 4.0).collect();
            let mut g = vec![0.0; theta.len()];
            objective(&x, n, d, outputs, target, 0.3, &theta, &mut g);
            for j in 0..theta.len() {
                let h = 1e-6;
                let mut tp = theta.clone();
                tp[j] += h;
                let mut tm = theta.clone();
                tm[j] -= h;
                let mut scratch = vec![0.0; theta.len()];
                let fp = objective(&x, n, d, outputs, target, 0.3, &tp, &mut scratch);
                let fm = objective(&x, n, d, outputs, target, 0.3, &tm, &mut scratch);
                let fd = (fp - fm) / (2.0 * h);
                assert!((fd - g[j]).abs() < 1e-8, "param {j}: fd {fd} vs {}", g[j]);
            }
        }
    }
}
