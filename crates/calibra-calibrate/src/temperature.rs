//! Temperature scaling (Guo et al. 2017; spec §B1): `q = softmax(z / T)` with the one temperature
//! that minimises the mean NLL of the calibration split.
//!
//! Solver: bounded Brent search on `log β`, β = 1/T, over [−10, 10] with `xatol = 64·eps` — the exact
//! algorithm of sklearn 1.9's `_TemperatureScaling` (scipy `minimize_scalar(method="bounded")`,
//! ported in [`crate::optim::bounded_scalar`]). The NLL is convex in β, so this finds the minimiser,
//! not an early LBFGS iterate (gpleiss' reference stops short; spec §B1, §G.4).
//!
//! Edge cases: a perfectly separated calibration set drives β → ∞ and an anti-correlated one β → 0
//! (optimum β ≤ 0): the search then ends at a bound (T = e^∓10) and the fit report carries a
//! `temperature-at-bound` warning. Argmax and accuracy are unchanged for every T > 0.
//!
//! Inputs: stored logits as they are; stored probabilities as `ln(p + 1e-12)` (sklearn's
//! `_convert_to_logits`).

use crate::CalibrateError;
use crate::calibrator::{Calibrator, FitReport, FitWarning, FittedCalibrator, FittedParams, Method};
use crate::input::{check_min_samples, class_labels, logits_view};
use crate::optim::minimize_scalar_bounded;
use calibra_predictions::Predictions;
use serde::{Deserialize, Serialize};

/// sklearn's bounds on log β.
pub const LOG_BETA_BOUNDS: (f64, f64) = (-10.0, 10.0);

/// Distance to a bound of log β under which the fit is reported as clamped.
const AT_BOUND_MARGIN: f64 = 1e-4;

/// Temperature scaling with its search interval on `log β`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemperatureScaling {
    pub log_beta_bounds: (f64, f64),
}

impl Default for TemperatureScaling {
    fn default() -> Self {
        TemperatureScaling { log_beta_bounds: LOG_BETA_BOUNDS }
    }
}

/// The fitted temperature. `apply` multiplies logits by `inverse_temperature` (= e^{log β}), as
/// sklearn's `_TemperatureScaling.predict` does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TemperatureParams {
    /// T = 1/β.
    pub temperature: f64,
    /// β = e^{log β}.
    pub inverse_temperature: f64,
    /// The optimised variable, log β.
    pub log_inverse_temperature: f64,
    /// True when log β ended within 1e-4 of a bound of the search interval, or the bound fits the
    /// calibration split as well as the point found (flat NLL toward it).
    pub at_bound: bool,
}

/// Result of [`fit_temperature`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemperatureFit {
    pub params: TemperatureParams,
    pub nll_before: f64,
    pub nll_after: f64,
    pub evaluations: usize,
    pub converged: bool,
}

/// Mean NLL `(1/N) Σ_i [logsumexp(β z_i) − β z_{i,y_i}]` of row-major `logits` (`k` columns), β > 0.
pub fn mean_nll_at(beta: f64, logits: &[f64], k: usize, labels: &[usize]) -> f64 {
    ShiftedLogits::new(logits, k, labels).mean_nll(beta)
}

/// Logits shifted by their row maximum, `d_i = z_i − max_k z_ik ≤ 0`, and `c_i = d_{i,y_i}`: for β > 0
/// the per-row NLL is `ln Σ_k exp(β d_ik) − β c_i` (max-subtracted, one exp per entry).
struct ShiftedLogits {
    shifted: Vec<f64>,
    target: Vec<f64>,
    k: usize,
}

impl ShiftedLogits {
    fn new(logits: &[f64], k: usize, labels: &[usize]) -> Self {
        let mut shifted = Vec::with_capacity(logits.len());
        let mut target = Vec::with_capacity(labels.len());
        for (row, &y) in logits.chunks_exact(k).zip(labels) {
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(z));
            shifted.extend(row.iter().map(|z| z - max));
            target.push(row[y] - max);
        }
        ShiftedLogits { shifted, target, k }
    }

    /// Mean NLL at inverse temperature `beta` (deterministic parallel sum over row blocks).
    fn mean_nll(&self, beta: f64) -> f64 {
        let k = self.k;
        let n = self.target.len();
        let total = crate::blocks::sum_blocks(n, |rows| {
            let mut s = 0.0;
            for i in rows {
                let row = &self.shifted[i * k..(i + 1) * k];
                let sum: f64 = row.iter().map(|&d| (beta * d).exp()).sum();
                s += sum.ln() - beta * self.target[i];
            }
            s
        });
        total / n as f64
    }
}

/// Fit β on `logits` (`k` columns) and `labels` by the bounded search on log β.
pub fn fit_temperature(logits: &[f64], k: usize, labels: &[usize], bounds: (f64, f64)) -> TemperatureFit {
    let data = ShiftedLogits::new(logits, k, labels);
    let result = minimize_scalar_bounded(
        |log_beta| data.mean_nll(log_beta.exp()),
        bounds.0,
        bounds.1,
        64.0 * f64::EPSILON,
        500,
    );
    let log_beta = result.x;
    let beta = log_beta.exp();
    // At a bound: within the margin of it, or the bound itself fits as well as the point found (the
    // NLL is numerically flat toward it, e.g. it underflows to 0 on a perfectly separated split).
    let as_good = |bound: f64| data.mean_nll(bound.exp()) <= result.value;
    let at_bound = log_beta - bounds.0 < AT_BOUND_MARGIN
        || bounds.1 - log_beta < AT_BOUND_MARGIN
        || (log_beta > 0.0 && as_good(bounds.1))
        || (log_beta < 0.0 && as_good(bounds.0));
    TemperatureFit {
        params: TemperatureParams {
            temperature: 1.0 / beta,
            inverse_temperature: beta,
            log_inverse_temperature: log_beta,
            at_bound,
        },
        nll_before: data.mean_nll(1.0),
        nll_after: result.value,
        evaluations: result.evaluations,
        converged: result.converged,
    }
}

/// The `temperature-at-bound` warning text for a fit that hit a bound.
pub fn at_bound_warning(params: &TemperatureParams, what: &str) -> FitWarning {
    let why = if params.log_inverse_temperature > 0.0 {
        "the calibration split is (nearly) perfectly separated, so the NLL keeps falling as T → 0"
    } else {
        "the logits are uninformative or anti-correlated with the labels (optimal 1/T ≤ 0), so T is \
         clamped to its largest value and the outputs are nearly uniform"
    };
    FitWarning::new(
        "temperature-at-bound",
        format!(
            "{what}temperature T = {:e} is at a bound of the search (log(1/T) = {:.6}): {why}",
            params.temperature, params.log_inverse_temperature
        ),
    )
}

impl TemperatureParams {
    /// `softmax(β z)` row by row.
    pub fn apply(&self, predictions: &Predictions) -> Vec<f64> {
        let k = predictions.num_classes();
        let scaled: Vec<f64> =
            logits_view(predictions).iter().map(|z| self.inverse_temperature * z).collect();
        calibra_metrics::input::softmax_rows(&scaled, k)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(self.inverse_temperature.is_finite() && self.inverse_temperature > 0.0) {
            return Err(format!(
                "inverse_temperature must be finite and > 0, found {}",
                self.inverse_temperature
            ));
        }
        Ok(())
    }
}

impl Calibrator for TemperatureScaling {
    fn method(&self) -> Method {
        Method::Temperature
    }

    fn fit(&self, calibration: &Predictions) -> Result<FittedCalibrator, CalibrateError> {
        let labels = class_labels(calibration, Method::Temperature)?;
        check_min_samples(calibration, Method::Temperature)?;
        let k = calibration.num_classes();
        let logits = logits_view(calibration);
        let fit = fit_temperature(&logits, k, labels, self.log_beta_bounds);
        let mut warnings = crate::input::missing_class_warnings(
            labels,
            calibration.class_names(),
            "temperature scaling fits one T on the other classes; the missing class is rescaled like them",
        );
        if fit.params.at_bound {
            warnings.push(at_bound_warning(&fit.params, ""));
        }
        if !fit.converged {
            warnings.push(FitWarning::new(
                "not-converged",
                format!("the bounded search stopped after {} evaluations", fit.evaluations),
            ));
        }
        let report = FitReport {
            samples: calibration.len(),
            nll_before: Some(fit.nll_before),
            nll_after: Some(fit.nll_after),
            iterations: Some(fit.evaluations),
            converged: Some(fit.converged),
            warnings,
            notes: Vec::new(),
        };
        Ok(FittedCalibrator::new(
            Method::Temperature,
            calibration,
            FittedParams::Temperature(fit.params),
            report,
        ))
    }
}
