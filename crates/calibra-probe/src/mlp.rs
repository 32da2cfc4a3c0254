//! Two-layer MLP probe: `z = W₂ ReLU(W₁ x + b₁) + b₂`, trained with Adam on softmax cross-entropy
//! (classes) or masked binary cross-entropy with logits (multilabel).
//!
//! # Training (matches torch float64 `nn.Linear → ReLU → nn.Linear` with
//! `torch.optim.Adam(params, lr, betas, eps, weight_decay)` over all parameters)
//! - loss: classes → mean over the batch of `logsumexp(z_i) − z_{i,y_i}`; labels → mean of
//!   `softplus(z_il) − y_il z_il` over the *observed* (non-blank) entries of the batch (a batch with
//!   none contributes no loss gradient);
//! - ReLU'(0) = 0 (as torch);
//! - weight decay is torch Adam's coupled L2: `g ← g + wd·θ` for every parameter, biases included;
//! - Adam: `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, `θ ← θ − (lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε)`;
//! - batches: full batch when `batch_size` is `None` (or ≥ n), else each epoch visits a fresh
//!   permutation of the rows (Fisher–Yates with a ChaCha8 stream seeded by `seed`; the last batch may
//!   be smaller). Steps = epochs × batches per epoch.
//!
//! Products run single-threaded (matrixmultiply kernels), so training is deterministic for a seed
//! whatever the thread pool.
//!
//! # Initialisation
//! [`MlpParams::init`] draws every weight and bias of a layer from U(−1/√fan_in, 1/√fan_in) — the
//! distribution of torch's default `nn.Linear` init — with ChaCha8 seeded by `seed` (not torch's
//! generator; torch parity is checked from the same explicit initial weights via
//! [`MlpProbe::fit_from`]).
//!
//! # Defaults ([`MlpOptions::default`])
//! hidden 256, lr 1e-3, β = (0.9, 0.999), ε = 1e-8, weight decay 1e-4, 100 epochs, full batch, seed 0.

use crate::error::ProbeError;
use crate::features::Features;
use crate::linalg::{matmul_a_b, matmul_a_bt, matmul_at_b};
use crate::logistic::{sigmoid, softmax_rows};
use crate::targets::{Targets, select_rows};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Settings of [`MlpProbe`]; see the module docs for the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MlpOptions {
    pub hidden: usize,
    pub learning_rate: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub epsilon: f64,
    pub weight_decay: f64,
    pub epochs: usize,
    /// `None` = full batch.
    pub batch_size: Option<usize>,
    pub seed: u64,
}

impl Default for MlpOptions {
    fn default() -> Self {
        MlpOptions {
            hidden: 256,
            learning_rate: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            weight_decay: 1e-4,
            epochs: 100,
            batch_size: None,
            seed: 0,
        }
    }
}

impl MlpOptions {
    fn validate(&self) -> Result<(), ProbeError> {
        let bad = |what: &str| Err(ProbeError::InvalidOptions(what.to_string()));
        if self.hidden == 0 {
            return bad("hidden must be ≥ 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return bad("learning_rate must be finite and > 0");
        }
        if !((0.0..1.0).contains(&self.beta1) && (0.0..1.0).contains(&self.beta2)) {
            return bad("beta1 and beta2 must be in [0, 1)");
        }
        if !(self.epsilon >= 0.0 && self.weight_decay >= 0.0) {
            return bad("epsilon and weight_decay must be ≥ 0");
        }
        if self.batch_size == Some(0) {
            return bad("batch_size must be ≥ 1");
        }
        Ok(())
    }
}

/// Parameters in torch's layout: `w1` is `hidden × inputs`, `w2` is `outputs × hidden`, row-major.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpParams {
    pub inputs: usize,
    pub hidden: usize,
    pub outputs: usize,
    pub w1: Vec<f64>,
    pub b1: Vec<f64>,
    pub w2: Vec<f64>,
    pub b2: Vec<f64>,
}

impl MlpParams {
    /// Seeded init: each layer's weights and biases ~ U(−1/√fan_in, 1/√fan_in) (ChaCha8).
    pub fn init(inputs: usize, hidden: usize, outputs: usize, seed: u64) -> MlpParams {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut draw = |len: usize, fan_in: usize| -> Vec<f64> {
            let bound = 1.0 / (fan_in as f64).sqrt();
            (0..len).map(|_| rng.random_range(-bound..bound)).collect()
        };
        let w1 = draw(hidden * inputs, inputs);
        let b1 = draw(hidden, inputs);
        let w2 = draw(outputs * hidden, hidden);
        let b2 = draw(outputs, hidden);
        MlpParams { inputs, hidden, outputs, w1, b1, w2, b2 }
    }

    fn check(&self) -> Result<(), ProbeError> {
        let (d, h, k) = (self.inputs, self.hidden, self.outputs);
        let ok = self.w1.len() == h * d && self.b1.len() == h && self.w2.len() == k * h && self.b2.len() == k;
        if !ok {
            return Err(ProbeError::InvalidInit(format!(
                "expected w1 {h}×{d}, b1 {h}, w2 {k}×{h}, b2 {k}; got lengths {}, {}, {}, {}",
                self.w1.len(),
                self.b1.len(),
                self.w2.len(),
                self.b2.len()
            )));
        }
        if [&self.w1, &self.b1, &self.w2, &self.b2].iter().any(|v| v.iter().any(|x| !x.is_finite())) {
            return Err(ProbeError::InvalidInit("non-finite parameter".into()));
        }
        Ok(())
    }

    fn flatten(&self) -> Vec<f64> {
        [&self.w1[..], &self.b1, &self.w2, &self.b2].concat()
    }

    fn unflatten(&mut self, theta: &[f64]) {
        let (a, rest) = theta.split_at(self.w1.len());
        let (b, rest) = rest.split_at(self.b1.len());
        let (c, e) = rest.split_at(self.w2.len());
        self.w1.copy_from_slice(a);
        self.b1.copy_from_slice(b);
        self.w2.copy_from_slice(c);
        self.b2.copy_from_slice(e);
    }

    /// Hidden pre-activations and output logits for `rows` rows of `x`.
    fn forward(&self, x: &[f64], rows: usize) -> (Vec<f64>, Vec<f64>) {
        let mut pre = Vec::with_capacity(rows * self.hidden);
        for _ in 0..rows {
            pre.extend_from_slice(&self.b1);
        }
        matmul_a_bt(x, rows, self.inputs, &self.w1, self.hidden, 1.0, &mut pre);
        let act: Vec<f64> = pre.iter().map(|v| v.max(0.0)).collect();
        let mut z = Vec::with_capacity(rows * self.outputs);
        for _ in 0..rows {
            z.extend_from_slice(&self.b2);
        }
        matmul_a_bt(&act, rows, self.hidden, &self.w2, self.outputs, 1.0, &mut z);
        (pre, z)
    }
}

/// Output head of the MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MlpHead {
    /// K mutually exclusive classes (softmax; K = 2 included).
    Softmax,
    /// L independent labels (sigmoid each).
    Sigmoid,
}

/// A fitted MLP probe (plain data, serde).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpProbe {
    pub options: MlpOptions,
    pub head: MlpHead,
    pub params: MlpParams,
    /// Loss of the last optimisation step's batch (before that step's update).
    pub final_loss: f64,
    pub steps: usize,
}

/// Training targets, borrowed.
enum Batchable<'a> {
    Classes(&'a [usize]),
    Labels(&'a [Option<bool>]),
}

/// Loss and gradient (w.r.t. the flattened parameters) of one batch.
fn loss_grad(p: &MlpParams, x: &[f64], rows: usize, target: &Batchable<'_>, grad: &mut [f64]) -> f64 {
    let (h, k, d) = (p.hidden, p.outputs, p.inputs);
    let (pre, mut z) = p.forward(x, rows);
    let loss = match target {
        Batchable::Classes(y) => {
            let mut loss = 0.0;
            let inv = 1.0 / rows as f64;
            for (zi, &yi) in z.chunks_exact_mut(k).zip(y.iter()) {
                let m = zi.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                let zy = zi[yi] - m;
                let mut s = 0.0;
                zi.iter_mut().for_each(|v| {
                    *v = (*v - m).exp();
                    s += *v;
                });
                loss += s.ln() - zy;
                zi.iter_mut().for_each(|v| *v /= s);
                zi[yi] -= 1.0;
                zi.iter_mut().for_each(|v| *v *= inv);
            }
            loss * inv
        }
        Batchable::Labels(y) => {
            let observed = y.iter().filter(|v| v.is_some()).count();
            let inv = if observed > 0 { 1.0 / observed as f64 } else { 0.0 };
            let mut loss = 0.0;
            for (zv, t) in z.iter_mut().zip(y.iter()) {
                match t {
                    Some(b) => {
                        let t = if *b { 1.0 } else { 0.0 };
                        loss += zv.max(0.0) + (-zv.abs()).exp().ln_1p() - t * *zv;
                        *zv = (sigmoid(*zv) - t) * inv;
                    }
                    None => *zv = 0.0,
                }
            }
            loss * inv
        }
    };
    // z now holds dL/dz (rows × k).
    let act: Vec<f64> = pre.iter().map(|v| v.max(0.0)).collect();
    let (gw1, rest) = grad.split_at_mut(h * d);
    let (gb1, rest) = rest.split_at_mut(h);
    let (gw2, gb2) = rest.split_at_mut(k * h);
    matmul_at_b(&z, rows, k, &act, h, 0.0, gw2);
    gb2.iter_mut().for_each(|v| *v = 0.0);
    for zi in z.chunks_exact(k) {
        gb2.iter_mut().zip(zi).for_each(|(a, v)| *a += v);
    }
    let mut dh = vec![0.0; rows * h];
    matmul_a_b(&z, rows, k, &p.w2, h, 0.0, &mut dh);
    dh.iter_mut().zip(&pre).for_each(|(g, v)| {
        if *v <= 0.0 {
            *g = 0.0
        }
    });
    matmul_at_b(&dh, rows, h, x, d, 0.0, gw1);
    gb1.iter_mut().for_each(|v| *v = 0.0);
    for di in dh.chunks_exact(h) {
        gb1.iter_mut().zip(di).for_each(|(a, v)| *a += v);
    }
    loss
}

impl MlpProbe {
    /// Fit from the seeded init of [`MlpParams::init`] with `options.seed`.
    pub fn fit(
        features: Features<'_>,
        targets: Targets<'_>,
        options: &MlpOptions,
    ) -> Result<MlpProbe, ProbeError> {
        let init = MlpParams::init(features.cols(), options.hidden, targets.n_outputs(), options.seed);
        MlpProbe::fit_from(features, targets, options, init)
    }

    /// Fit from explicit initial parameters (their `hidden` overrides `options.hidden`).
    pub fn fit_from(
        features: Features<'_>,
        targets: Targets<'_>,
        options: &MlpOptions,
        init: MlpParams,
    ) -> Result<MlpProbe, ProbeError> {
        options.validate()?;
        targets.validate(features.rows())?;
        init.check()?;
        features.expect_cols(init.inputs)?;
        if init.outputs != targets.n_outputs() {
            return Err(ProbeError::InvalidInit(format!(
                "init has {} outputs, the targets need {}",
                init.outputs,
                targets.n_outputs()
            )));
        }
        let (n, d) = (features.rows(), features.cols());
        let head = match targets {
            Targets::Classes { .. } => MlpHead::Softmax,
            Targets::Labels { .. } => MlpHead::Sigmoid,
        };
        let mut params = init;
        let mut theta = params.flatten();
        let mut m = vec![0.0; theta.len()];
        let mut v = vec![0.0; theta.len()];
        let mut grad = vec![0.0; theta.len()];
        let batch = options.batch_size.unwrap_or(n).min(n);
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
        rng.set_stream(1);
        let (mut step, mut final_loss) = (0usize, f64::NAN);
        for _ in 0..options.epochs {
            if batch < n {
                order.shuffle(&mut rng);
            }
            for chunk in order.chunks(batch) {
                let full = chunk.len() == n && batch == n;
                let xb_owned;
                let xb: &[f64] = if full {
                    features.values()
                } else {
                    xb_owned = select_rows(features.values(), d, chunk);
                    &xb_owned
                };
                let yb_classes: Vec<usize>;
                let yb_labels: Vec<Option<bool>>;
                let target = match targets {
                    Targets::Classes { labels, .. } if full => Batchable::Classes(labels),
                    Targets::Classes { labels, .. } => {
                        yb_classes = chunk.iter().map(|&i| labels[i]).collect();
                        Batchable::Classes(&yb_classes)
                    }
                    Targets::Labels { labels, .. } if full => Batchable::Labels(labels),
                    Targets::Labels { labels, n_labels } => {
                        yb_labels = select_labels(labels, n_labels, chunk);
                        Batchable::Labels(&yb_labels)
                    }
                };
                final_loss = loss_grad(&params, xb, chunk.len(), &target, &mut grad);
                if !final_loss.is_finite() {
                    return Err(ProbeError::FitFailed {
                        probe: "mlp".into(),
                        why: format!("non-finite loss at step {step}"),
                    });
                }
                step += 1;
                adam_step(&mut theta, &grad, &mut m, &mut v, step, options);
                params.unflatten(&theta);
            }
        }
        Ok(MlpProbe { options: *options, head, params, final_loss, steps: step })
    }

    /// Output logits `z`, row-major `rows × outputs` (softmax / sigmoid of them = `predict_proba`).
    pub fn predict_logits(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        features.expect_cols(self.params.inputs)?;
        Ok(self.params.forward(features.values(), features.rows()).1)
    }

    /// Probabilities: softmax rows (classes) or per-entry sigmoid (labels).
    pub fn predict_proba(&self, features: Features<'_>) -> Result<Vec<f64>, ProbeError> {
        let z = self.predict_logits(features)?;
        Ok(match self.head {
            MlpHead::Softmax => softmax_rows(z, self.params.outputs),
            MlpHead::Sigmoid => z.into_iter().map(sigmoid).collect(),
        })
    }
}

fn select_labels(labels: &[Option<bool>], n_labels: usize, rows: &[usize]) -> Vec<Option<bool>> {
    let mut out = Vec::with_capacity(rows.len() * n_labels);
    for &i in rows {
        out.extend_from_slice(&labels[i * n_labels..(i + 1) * n_labels]);
    }
    out
}

/// One torch-style Adam update (coupled weight decay) of `theta` with gradient `grad`.
fn adam_step(theta: &mut [f64], grad: &[f64], m: &mut [f64], v: &mut [f64], t: usize, o: &MlpOptions) {
    let bc1 = 1.0 - o.beta1.powi(t as i32);
    let bc2_sqrt = (1.0 - o.beta2.powi(t as i32)).sqrt();
    let step_size = o.learning_rate / bc1;
    for (((th, g), m), v) in theta.iter_mut().zip(grad.iter()).zip(m.iter_mut()).zip(v.iter_mut()) {
        let g = g + o.weight_decay * *th;
        *m += (g - *m) * (1.0 - o.beta1);
        *v = *v * o.beta2 + (1.0 - o.beta2) * g * g;
        let denom = v.sqrt() / bc2_sqrt + o.epsilon;
        *th -= step_size * *m / denom;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_matches_finite_differences() {
        let (n, d, h, k) = (6, 3, 4, 3);
        let x: Vec<f64> = (0..n * d).map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0).collect();
        let y: Vec<usize> = (0..n).map(|i| i % k).collect();
        let labels: Vec<Option<bool>> =
            (0..n * k).map(|i| if i % 5 == 0 { None } else { Some(i % 3 == 0) }).collect();
        let p = MlpParams::init(d, h, k, 3);
        for target in [Batchable::Classes(&y), Batchable::Labels(&labels)] {
            let theta = p.flatten();
            let mut g = vec![0.0; theta.len()];
            loss_grad(&p, &x, n, &target, &mut g);
            for j in 0..theta.len() {
                let eps = 1e-6;
                let mut q = p.clone();
                let mut tp = theta.clone();
                tp[j] += eps;
                q.unflatten(&tp);
                let mut scratch = vec![0.0; theta.len()];
                let fp = loss_grad(&q, &x, n, &target, &mut scratch);
                tp[j] -= 2.0 * eps;
                q.unflatten(&tp);
                let fm = loss_grad(&q, &x, n, &target, &mut scratch);
                let fd = (fp - fm) / (2.0 * eps);
                assert!((fd - g[j]).abs() < 1e-7, "param {j}: fd {fd} vs {}", g[j]);
            }
        }
    }
}
