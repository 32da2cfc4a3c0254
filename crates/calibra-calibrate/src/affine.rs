//! The affine-softmax model shared by vector scaling, matrix scaling and Dirichlet calibration
//! (spec §B2, §B4): `q_i = softmax(W x_i + b)`, fitted by minimising the mean NLL plus a regulariser
//! with L-BFGS and the analytic gradient
//!
//! ```text
//! G = (q − onehot(y)) / N;   ∂/∂W = Gᵀ X;   ∂/∂b = Σ_i G_i;   diagonal W: ∂/∂w = Σ_i G_i ⊙ x_i
//! ```
//!
//! Forms ([`AffineForm`]): `diagonal` (vector scaling: W = diag(w), all K rows free, init w = 1,
//! b = 0) and `full` (matrix scaling, Dirichlet: W ∈ R^{K×K}, init W = I, b = 0). With `ref_row`
//! (dirichletcal's default) the parameters are `[W|b] − [W|b]_K`: the last row is fixed at 0, which
//! leaves unregularised predictions unchanged but changes what the regulariser sees (spec §B4).
//!
//! Regularisers ([`Regulariser`]), on the (re-expressed) weights, as dirichletcal's `_objective`:
//! - ODIR: `λ' Σ_{j≠k} W_jk² + μ' Σ_k b_k²` (diagonal of W free);
//! - L2: `λ' Σ_{j,k} [W|b]_jk²` (toward 0, bias included);
//!
//! with `normalised` (dirichletcal `reg_norm=True`, the paper form) `λ' = λ/(K(K−1))`, `μ' = μ/K`
//! for ODIR and `λ' = λ/(K(K+1))` for L2; otherwise the raw λ, μ.
//!
//! Unlike dirichletcal, the NLL uses an exact log-softmax instead of clipping q to [eps, 1 − eps];
//! the two objectives differ only where q is within 2.2e-16 of 0 or 1.

use crate::input::{log_probabilities_view, logits_view};
use crate::optim::{LbfgsOptions, LbfgsResult, minimize_lbfgs};
use calibra_predictions::Predictions;
use serde::{Deserialize, Serialize};

/// Shape of W.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AffineForm {
    /// W = diag(w) (vector scaling).
    Diagonal,
    /// Full K × K matrix (matrix scaling, Dirichlet calibration).
    Full,
}

/// Penalty added to the mean NLL (see the module doc for the formulas).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Regulariser {
    None,
    /// Off-diagonal and intercept regularisation (Kull et al. 2019).
    Odir {
        lambda: f64,
        mu: f64,
        normalised: bool,
    },
    /// Plain L2 on all weights and biases.
    L2 {
        lambda: f64,
        normalised: bool,
    },
}

impl Regulariser {
    /// Effective (λ', μ') multiplying the off-diagonal/weight and bias sums, and whether the
    /// diagonal of W is penalised.
    fn coefficients(&self, k: usize) -> (f64, f64, bool) {
        let kf = k as f64;
        match *self {
            Regulariser::None => (0.0, 0.0, false),
            Regulariser::Odir { lambda, mu, normalised } => {
                if normalised {
                    let pairs = (kf * (kf - 1.0)).max(1.0);
                    (lambda / pairs, mu / kf, false)
                } else {
                    (lambda, mu, false)
                }
            }
            Regulariser::L2 { lambda, normalised } => {
                let l = if normalised { lambda / (kf * (kf + 1.0)) } else { lambda };
                (l, l, true)
            }
        }
    }
}

/// Which view of the predictions the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AffineInput {
    /// Logits (stored logits, or ln(p + 1e-12) for stored probabilities).
    Logits,
    /// ln(clip(p, tiny, 1 − tiny)) (Dirichlet calibration).
    LogProbabilities,
}

/// A fitted affine-softmax calibrator. `weights` is `diag(W)` (length K) for the diagonal form and
/// row-major `W` (K × K) for the full form; with `ref_row` the last row of `[W|b]` is 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffineParams {
    pub form: AffineForm,
    pub input: AffineInput,
    pub ref_row: bool,
    pub regulariser: Regulariser,
    pub weights: Vec<f64>,
    pub bias: Vec<f64>,
}

/// Result of [`fit_affine`].
#[derive(Debug, Clone, PartialEq)]
pub struct AffineFit {
    pub params: AffineParams,
    /// Regularised objective at the optimum.
    pub objective: f64,
    /// Mean NLL (no regulariser) before (identity) and after.
    pub nll_before: f64,
    pub nll_after: f64,
    pub iterations: usize,
    pub converged: bool,
}

/// The model layout: how the optimisation vector maps to `[W|b]`.
#[derive(Debug, Clone, Copy)]
struct Layout {
    k: usize,
    form: AffineForm,
    ref_row: bool,
}

impl Layout {
    /// Rows of `[W|b]` that are free parameters.
    fn free_rows(&self) -> usize {
        if self.ref_row { self.k - 1 } else { self.k }
    }

    fn len(&self) -> usize {
        match self.form {
            AffineForm::Diagonal => 2 * self.free_rows(),
            AffineForm::Full => self.free_rows() * (self.k + 1),
        }
    }

    /// Identity start: W = I, b = 0, re-expressed relative to the last row under ref_row.
    fn identity(&self) -> Vec<f64> {
        let (k, r) = (self.k, self.free_rows());
        match self.form {
            AffineForm::Diagonal => {
                // Diagonal with ref_row is not offered; the diagonal form keeps all rows.
                let mut theta = vec![0.0; 2 * r];
                theta[..r].iter_mut().for_each(|w| *w = 1.0);
                theta
            }
            AffineForm::Full => {
                let mut theta = vec![0.0; r * (k + 1)];
                for j in 0..r {
                    theta[j * (k + 1) + j] = 1.0;
                    if self.ref_row {
                        theta[j * (k + 1) + (k - 1)] -= 1.0;
                    }
                }
                theta
            }
        }
    }

    /// Output logits of one input row into `out` (length k).
    #[inline]
    fn forward(&self, theta: &[f64], x: &[f64], out: &mut [f64]) {
        let (k, r) = (self.k, self.free_rows());
        match self.form {
            AffineForm::Diagonal => {
                for j in 0..r {
                    out[j] = theta[j] * x[j] + theta[r + j];
                }
            }
            AffineForm::Full => {
                for (j, row) in theta.chunks_exact(k + 1).enumerate() {
                    let mut s = row[k];
                    for (w, xv) in row[..k].iter().zip(x) {
                        s += w * xv;
                    }
                    out[j] = s;
                }
            }
        }
        out[r..].iter_mut().for_each(|v| *v = 0.0);
    }

    /// Penalty value and its gradient (added into `grad`).
    fn penalty(&self, theta: &[f64], reg: &Regulariser, grad: &mut [f64]) -> f64 {
        let (lw, lb, diagonal_too) = reg.coefficients(self.k);
        if lw == 0.0 && lb == 0.0 {
            return 0.0;
        }
        let (k, r) = (self.k, self.free_rows());
        let mut value = 0.0;
        match self.form {
            AffineForm::Diagonal => {
                for j in 0..r {
                    if diagonal_too {
                        value += lw * theta[j] * theta[j];
                        grad[j] += 2.0 * lw * theta[j];
                    }
                    value += lb * theta[r + j] * theta[r + j];
                    grad[r + j] += 2.0 * lb * theta[r + j];
                }
            }
            AffineForm::Full => {
                for j in 0..r {
                    for c in 0..=k {
                        let idx = j * (k + 1) + c;
                        let coef = if c == k {
                            lb
                        } else if c == j && !diagonal_too {
                            0.0
                        } else {
                            lw
                        };
                        value += coef * theta[idx] * theta[idx];
                        grad[idx] += 2.0 * coef * theta[idx];
                    }
                }
            }
        }
        value
    }
}

/// Mean NLL of `softmax(W x + b)` and its gradient with respect to θ (written into `grad`); a
/// deterministic parallel sum over row blocks.
fn mean_nll_and_gradient(
    layout: &Layout,
    theta: &[f64],
    x: &[f64],
    labels: &[usize],
    grad: &mut [f64],
) -> f64 {
    let (k, r) = (layout.k, layout.free_rows());
    let n = labels.len();
    let total = crate::blocks::sum_blocks_with_gradient(n, grad.len(), grad, |rows, grad| {
        let mut z = vec![0.0; k];
        let mut e = vec![0.0; k];
        let mut total = 0.0;
        for i in rows {
            let xi = &x[i * k..(i + 1) * k];
            let y = labels[i];
            layout.forward(theta, xi, &mut z);
            let max = z.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            let mut sum = 0.0;
            for (ej, &zj) in e.iter_mut().zip(&z) {
                *ej = (zj - max).exp();
                sum += *ej;
            }
            // −log q_y = ln Σ_j exp(z_j − max) − (z_y − max).
            total += sum.ln() - (z[y] - max);
            for j in 0..r {
                let g = e[j] / sum - if j == y { 1.0 } else { 0.0 };
                if g == 0.0 {
                    continue;
                }
                match layout.form {
                    AffineForm::Diagonal => {
                        grad[j] += g * xi[j];
                        grad[r + j] += g;
                    }
                    AffineForm::Full => {
                        let row = &mut grad[j * (k + 1)..(j + 1) * (k + 1)];
                        for (gw, xv) in row[..k].iter_mut().zip(xi) {
                            *gw += g * xv;
                        }
                        row[k] += g;
                    }
                }
            }
        }
        total
    });
    let nf = n as f64;
    grad.iter_mut().for_each(|g| *g /= nf);
    total / nf
}

/// What to fit: the form of W, the input view, the reference row and the regulariser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AffineModel {
    pub form: AffineForm,
    pub input: AffineInput,
    /// Fix the last row of `[W|b]` at 0 (full form only; ignored for the diagonal form).
    pub ref_row: bool,
    pub regulariser: Regulariser,
}

/// Fit `softmax(W x + b)` on row-major inputs `x` (`k` columns) and labels.
pub fn fit_affine(
    x: &[f64],
    k: usize,
    labels: &[usize],
    model: &AffineModel,
    options: &LbfgsOptions,
) -> AffineFit {
    let AffineModel { form, input, ref_row, regulariser } = *model;
    let layout = Layout { k, form, ref_row: ref_row && form == AffineForm::Full };
    let start = layout.identity();
    let mut scratch = vec![0.0; layout.len()];
    let nll_before = mean_nll_and_gradient(&layout, &start, x, labels, &mut scratch);
    let objective = |theta: &[f64], grad: &mut [f64]| -> f64 {
        let nll = mean_nll_and_gradient(&layout, theta, x, labels, grad);
        nll + layout.penalty(theta, &regulariser, grad)
    };
    let LbfgsResult { x: theta, value, iterations, converged, .. } =
        minimize_lbfgs(objective, &start, options);
    let nll_after = mean_nll_and_gradient(&layout, &theta, x, labels, &mut scratch);
    let params = AffineParams::from_theta(&layout, &theta, input, regulariser);
    AffineFit { params, objective: value, nll_before, nll_after, iterations, converged }
}

/// L-BFGS settings used by the affine calibrators: tight enough for 1e-6 parity on probabilities.
pub fn default_affine_options() -> LbfgsOptions {
    LbfgsOptions { gradient_tolerance: 1e-9, function_tolerance: 0.0, ..LbfgsOptions::default() }
}

impl AffineParams {
    fn from_theta(layout: &Layout, theta: &[f64], input: AffineInput, regulariser: Regulariser) -> Self {
        let (k, r) = (layout.k, layout.free_rows());
        match layout.form {
            AffineForm::Diagonal => AffineParams {
                form: AffineForm::Diagonal,
                input,
                ref_row: false,
                regulariser,
                weights: theta[..r].to_vec(),
                bias: theta[r..].to_vec(),
            },
            AffineForm::Full => {
                let mut weights = vec![0.0; k * k];
                let mut bias = vec![0.0; k];
                for (j, row) in theta.chunks_exact(k + 1).enumerate() {
                    weights[j * k..(j + 1) * k].copy_from_slice(&row[..k]);
                    bias[j] = row[k];
                }
                AffineParams {
                    form: AffineForm::Full,
                    input,
                    ref_row: layout.ref_row,
                    regulariser,
                    weights,
                    bias,
                }
            }
        }
    }

    /// `softmax(W x + b)` for row-major inputs `x` with `k` columns.
    pub fn predict(&self, x: &[f64], k: usize) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        for (xi, oi) in x.chunks_exact(k).zip(out.chunks_exact_mut(k)) {
            for j in 0..k {
                oi[j] = match self.form {
                    AffineForm::Diagonal => self.weights[j] * xi[j] + self.bias[j],
                    AffineForm::Full => {
                        let mut s = self.bias[j];
                        for (w, xv) in self.weights[j * k..(j + 1) * k].iter().zip(xi) {
                            s += w * xv;
                        }
                        s
                    }
                };
            }
        }
        calibra_metrics::input::softmax_rows(&out, k)
    }

    /// Calibrated probabilities from the logits view (vector and matrix scaling).
    pub fn apply_logits(&self, predictions: &Predictions) -> Vec<f64> {
        self.predict(&logits_view(predictions), predictions.num_classes())
    }

    /// Calibrated probabilities from the log-probability view (Dirichlet calibration).
    pub fn apply_log_probabilities(&self, predictions: &Predictions) -> Vec<f64> {
        self.predict(&log_probabilities_view(predictions), predictions.num_classes())
    }

    /// The inputs this calibrator reads from `predictions`.
    pub fn inputs(&self, predictions: &Predictions) -> Vec<f64> {
        match self.input {
            AffineInput::Logits => logits_view(predictions),
            AffineInput::LogProbabilities => log_probabilities_view(predictions),
        }
    }

    pub(crate) fn validate(&self, k: usize) -> Result<(), String> {
        let expected = match self.form {
            AffineForm::Diagonal => k,
            AffineForm::Full => k * k,
        };
        if self.weights.len() != expected || self.bias.len() != k {
            return Err(format!(
                "{} weights and {} biases for {k} classes, expected {expected} and {k}",
                self.weights.len(),
                self.bias.len()
            ));
        }
        if self.weights.iter().chain(&self.bias).any(|v| !v.is_finite()) {
            return Err("non-finite weight or bias".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central finite differences of the full objective match the analytic gradient.
    #[test]
    fn analytic_gradient_matches_finite_differences() {
        let k = 3;
        let x = [0.3, -1.2, 2.0, 1.0, 0.5, -0.5, -2.0, 0.1, 0.7, 0.0, 0.0, 1.5];
        let labels = [2, 0, 1, 2];
        for (form, ref_row) in
            [(AffineForm::Full, true), (AffineForm::Full, false), (AffineForm::Diagonal, false)]
        {
            let layout = Layout { k, form, ref_row };
            let reg = Regulariser::Odir { lambda: 0.7, mu: 0.3, normalised: true };
            let theta: Vec<f64> = (0..layout.len()).map(|i| 0.1 * (i as f64) - 0.4).collect();
            let f = |t: &[f64], g: &mut [f64]| {
                let v = mean_nll_and_gradient(&layout, t, &x, &labels, g);
                v + layout.penalty(t, &reg, g)
            };
            let mut grad = vec![0.0; theta.len()];
            f(&theta, &mut grad);
            let mut scratch = vec![0.0; theta.len()];
            for i in 0..theta.len() {
                let h = 1e-6;
                let mut tp = theta.clone();
                tp[i] += h;
                let mut tm = theta.clone();
                tm[i] -= h;
                let fd = (f(&tp, &mut scratch) - f(&tm, &mut scratch)) / (2.0 * h);
                assert!((fd - grad[i]).abs() < 1e-8, "{form:?} θ[{i}]: fd {fd} vs {}", grad[i]);
            }
        }
    }
}
