//! Smooth ECE (Błasiok & Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel
//! Smoothing", 2023) exactly as `relplot` 1.0.3 computes it (`relplot/metrics.py::smECE`, default
//! `ReflectedGaussianKernel`, `config.smECE_mesh_pts = 200`):
//!
//! 1. `smooth_ece(f, y, σ)`: the residuals `f − y` and the constant 1 are splatted linearly onto a
//!    grid of `G = ⌊max(2000, round(20/σ)) / 2⌋ + 1` points of [0, 1] (`smooth_round_to_grid`),
//!    convolved with the Gaussian `exp(−(t − ½)² / 2σ²) / (√(2π) σ)` sampled on the same grid with the
//!    data reflected at both ends, and interpolated linearly at `T = max(round(10/σ), 200)` points
//!    `t_j = linspace(0, 1, T)`. With the smoothed residual `r̂_j = R_j / (D_j + 10⁻⁴)` and density
//!    `d_j = D_j + 10⁻⁴`, `smooth_ece = Σ_j |r̂_j| d_j / Σ_j d_j`.
//! 2. The bandwidth is the fixed point `σ* ≈ smooth_ece(σ*)`, found by `search_param`: `σ = 1` if
//!    `1 < smooth_ece(1)`, else 10 bisection steps on [0, 1] keeping the upper end of the bracket
//!    (`σ` counts as "small enough" when `σ < 0.001` or `σ < smooth_ece(σ)`); the result is
//!    `smooth_ece(f, y, σ*)`.
//!
//! For a single-label task `f` is the top-label confidence and `y` its correctness
//! (`relplot.multiclass_logits_to_confidences`); for a binary outcome `f` is the positive-class
//! probability.

use crate::MetricsError;

/// Weight of the density floor in `relplot`'s `BaseKernelMixin.smooth`.
const DENSITY_EPS: f64 = 1e-4;

/// `numpy.linspace(0, 1, num)`: `i · (1/(num − 1))`, the last point exactly 1.
fn linspace01(num: usize) -> Vec<f64> {
    if num == 1 {
        return vec![0.0];
    }
    let step = 1.0 / (num - 1) as f64;
    let mut t: Vec<f64> = (0..num).map(|i| i as f64 * step).collect();
    t[num - 1] = 1.0;
    t
}

/// Python's `round` (ties to even) of a positive float, as an integer.
fn py_round(x: f64) -> usize {
    x.round_ties_even() as usize
}

/// `smooth_round_to_grid`: linear splatting of weights `w` at positions `f` onto `g` grid points.
fn round_to_grid(f: &[f64], w: &[f64], g: usize) -> Vec<f64> {
    let mut values = vec![0.0; g];
    let scale = (g - 1) as f64;
    for (&x, &y) in f.iter().zip(w) {
        let pos = x * scale;
        // numpy `astype(int)` truncates toward zero, then `clip(0, g − 2)`.
        let bin = (pos.trunc().max(0.0) as usize).min(g - 2);
        let frac = pos - bin as f64;
        values[bin] += (1.0 - frac) * y;
        values[bin + 1] += frac * y;
    }
    values
}

/// `GaussianKernel.kernel_ev(g)`.
fn kernel(sigma: f64, g: usize) -> Vec<f64> {
    let var = sigma * sigma;
    let norm = (2.0 * std::f64::consts::PI).sqrt() * sigma;
    linspace01(g).into_iter().map(|t| (-(t - 0.5) * (t - 0.5) / (2.0 * var)).exp() / norm).collect()
}

/// `ReflectedGaussianKernel.convolve`: reflect, `np.convolve(ext, ker, "valid")`, keep `g` values.
fn reflected_convolve(values: &[f64], ker: &[f64]) -> Vec<f64> {
    let g = values.len();
    // ext = flip(values)[:-1] ++ values ++ flip(values)[1:], length 3g − 2.
    let mut ext = Vec::with_capacity(3 * g - 2);
    ext.extend(values[1..].iter().rev());
    ext.extend_from_slice(values);
    ext.extend(values[..g - 1].iter().rev());
    let offset = g / 2;
    (offset..offset + g)
        .map(|j| {
            // valid-mode convolution: out[j] = Σ_m ext[j + m] · ker[g − 1 − m].
            let window = &ext[j..j + g];
            window.iter().zip(ker.iter().rev()).map(|(a, b)| a * b).sum()
        })
        .collect()
}

/// `interpolate(t, y)`: linear interpolation of `i/(len − 1) ↦ y_i` at `t`.
fn interpolate(t: &[f64], y: &[f64]) -> Vec<f64> {
    let len = y.len();
    let bucket = 1.0 / (len - 1) as f64;
    t.iter()
        .map(|&x| {
            let i = ((x * (len - 1) as f64).trunc().max(0.0) as usize).min(len - 2);
            let r = (x - i as f64 * bucket) / bucket;
            y[i] * (1.0 - r) + y[i + 1] * r
        })
        .collect()
}

/// `GaussianKernel.apply(f, w, t)`.
fn apply(f: &[f64], w: &[f64], t: &[f64], sigma: f64) -> Vec<f64> {
    let g = py_round(20.0 / sigma).max(2000) / 2 + 1;
    let values = round_to_grid(f, w, g);
    let smoothed = reflected_convolve(&values, &kernel(sigma, g));
    interpolate(t, &smoothed)
}

/// Smooth ECE at a fixed bandwidth `σ` (`relplot.smECE_sigma`), on validated inputs.
fn smooth_ece_at(f: &[f64], y: &[f64], sigma: f64) -> f64 {
    let t = linspace01(py_round(10.0 / sigma).max(200));
    let residual: Vec<f64> = f.iter().zip(y).map(|(a, b)| a - b).collect();
    let ones = vec![1.0; f.len()];
    let ys = apply(f, &residual, &t, sigma);
    let dens: Vec<f64> = apply(f, &ones, &t, sigma).into_iter().map(|d| d + DENSITY_EPS).collect();
    let (mut num, mut den) = (0.0, 0.0);
    for (r, d) in ys.iter().zip(&dens) {
        num += (r / d).abs() * d;
        den += d;
    }
    num / den
}

fn validate(f: &[f64], y: &[f64]) -> Result<(), MetricsError> {
    if f.len() != y.len() {
        return Err(MetricsError::Shape {
            what: format!("{} predictions for {} outcomes", f.len(), y.len()),
        });
    }
    if f.is_empty() {
        return Err(MetricsError::Empty);
    }
    if let Some(row) = f.iter().position(|v| !v.is_finite()) {
        return Err(MetricsError::NonFinite { row, col: 0, value: f[row] });
    }
    if let Some(row) = f.iter().position(|v| !(0.0..=1.0).contains(v)) {
        return Err(MetricsError::ProbabilityOutOfRange { row, col: 0, value: f[row] });
    }
    if let Some(row) = y.iter().position(|v| !v.is_finite()) {
        return Err(MetricsError::NonFinite { row, col: 1, value: y[row] });
    }
    Ok(())
}

/// Smooth ECE at a fixed bandwidth `sigma` > 0 (`relplot.smECE_sigma(f, y, sigma)`).
///
/// # Errors
/// Length mismatch, no samples, `f` outside [0, 1] or non-finite, or `sigma` not positive.
pub fn smooth_ece_sigma(f: &[f64], y: &[f64], sigma: f64) -> Result<f64, MetricsError> {
    validate(f, y)?;
    if !(sigma > 0.0 && sigma.is_finite()) {
        return Err(MetricsError::InvalidArgument(format!("the bandwidth must be positive, got {sigma}")));
    }
    Ok(smooth_ece_at(f, y, sigma))
}

/// Smooth ECE with the automatic bandwidth (`relplot.smECE(f, y)`, `eps = 0.001`); returns the value
/// and the bandwidth used.
///
/// # Errors
/// As [`smooth_ece_sigma`].
pub fn smooth_ece_with_bandwidth(f: &[f64], y: &[f64]) -> Result<(f64, f64), MetricsError> {
    validate(f, y)?;
    let small_enough = |alpha: f64| alpha < 0.001 || alpha < smooth_ece_at(f, y, alpha);
    let sigma = if small_enough(1.0) {
        1.0
    } else {
        let (mut start, mut end) = (1.0f64, 0.0f64);
        for _ in 0..10 {
            let mid = (start + end) / 2.0;
            if small_enough(mid) {
                end = mid;
            } else {
                start = mid;
            }
        }
        start
    };
    Ok((smooth_ece_at(f, y, sigma), sigma))
}

/// Smooth ECE with the automatic bandwidth (`relplot.smECE`).
///
/// # Errors
/// As [`smooth_ece_sigma`].
pub fn smooth_ece(f: &[f64], y: &[f64]) -> Result<f64, MetricsError> {
    Ok(smooth_ece_with_bandwidth(f, y)?.0)
}

/// Top-label smooth ECE of a probability matrix: `relplot.smECE(*multiclass_logits_to_confidences(
/// probs, labels, probs=True))`.
///
/// # Errors
/// Malformed probabilities or labels, or no rows.
pub fn smooth_ece_top_label(probs: &[f64], k: usize, labels: &[usize]) -> Result<f64, MetricsError> {
    crate::ece::validate_classification(probs, k, labels)?;
    let (conf, errors) = crate::selective::top_label_errors(probs, k, labels);
    let correct: Vec<f64> = errors.iter().map(|&e| if e { 0.0 } else { 1.0 }).collect();
    smooth_ece(&conf, &correct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfectly_calibrated_constant_prediction_is_near_zero_and_bad_input_is_refused() {
        // f = 0.5 everywhere, half the outcomes 1: the smoothed residual is 0 at every point.
        let f = vec![0.5; 100];
        let y: Vec<f64> = (0..100).map(|i| f64::from(i % 2 == 0)).collect();
        let (v, sigma) = smooth_ece_with_bandwidth(&f, &y).unwrap();
        assert!(v.abs() < 1e-12, "{v}");
        assert!(sigma < 0.002, "{sigma}");
        // Always-wrong confident predictions: smooth ECE is large.
        let bad = smooth_ece(&[0.99; 50], &[0.0; 50]).unwrap();
        assert!(bad > 0.5, "{bad}");
        assert!(matches!(smooth_ece(&[], &[]), Err(MetricsError::Empty)));
        assert!(matches!(
            smooth_ece(&[1.5], &[1.0]),
            Err(MetricsError::ProbabilityOutOfRange { row: 0, .. })
        ));
        assert!(matches!(smooth_ece_sigma(&[0.5], &[1.0], 0.0), Err(MetricsError::InvalidArgument(_))));
    }

    #[test]
    fn numpy_linspace_and_python_round() {
        assert_eq!(linspace01(3), vec![0.0, 0.5, 1.0]);
        assert_eq!(py_round(2.5), 2);
        assert_eq!(py_round(3.5), 4);
    }
}
