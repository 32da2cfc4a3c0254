//! Limited-memory BFGS (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Alg. 7.4/7.5) with a
//! strong-Wolfe line search (Alg. 3.5/3.6, cubic interpolation in `zoom`), which also accepts
//! Hager–Zhang approximate Wolfe points so that the gradient can be driven below the level where
//! function decreases are lost in rounding.
//!
//! Used for every smooth convex calibration objective (vector/matrix/Dirichlet scaling, Platt).
//! The objective is a closure `f(x, grad) -> value` that writes the gradient into `grad`.
//!
//! Stopping rules, checked after every accepted step:
//! - `‖∇f‖_∞ ≤ gradient_tolerance` → [`LbfgsTermination::Gradient`] (converged);
//! - `f_prev − f ≤ function_tolerance · max(|f_prev|, |f|, 1)` (scipy's `factr` rule) →
//!   [`LbfgsTermination::Function`] (converged);
//! - the line search cannot find a decrease even along the steepest descent (the objective is flat
//!   to machine precision in that direction) → [`LbfgsTermination::LineSearch`], reported as
//!   converged only if the gradient is already below `100 × gradient_tolerance`;
//! - `max_iterations` reached → [`LbfgsTermination::MaxIterations`] (not converged).
//!
//! A non-finite objective at a trial point is treated as "step too long" (the step is shortened);
//! a non-finite objective at the start point is [`LbfgsTermination::NonFinite`].

/// Settings of [`minimize_lbfgs`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LbfgsOptions {
    /// Number of correction pairs kept (m).
    pub memory: usize,
    pub max_iterations: usize,
    /// Absolute tolerance on the largest gradient component.
    pub gradient_tolerance: f64,
    /// Relative tolerance on the decrease of f per iteration (0 disables the rule).
    pub function_tolerance: f64,
    /// Maximum objective evaluations per line search.
    pub max_line_search: usize,
}

impl Default for LbfgsOptions {
    fn default() -> Self {
        LbfgsOptions {
            memory: 10,
            max_iterations: 5000,
            gradient_tolerance: 1e-10,
            function_tolerance: 4.0 * f64::EPSILON,
            max_line_search: 50,
        }
    }
}

/// Why [`minimize_lbfgs`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LbfgsTermination {
    Gradient,
    Function,
    LineSearch,
    MaxIterations,
    NonFinite,
}

/// Outcome of [`minimize_lbfgs`].
#[derive(Debug, Clone, PartialEq)]
pub struct LbfgsResult {
    pub x: Vec<f64>,
    pub value: f64,
    /// `‖∇f(x)‖_∞` at the returned point.
    pub gradient_norm: f64,
    pub iterations: usize,
    pub evaluations: usize,
    pub termination: LbfgsTermination,
    pub converged: bool,
}

const C1: f64 = 1e-4;
const C2: f64 = 0.9;
/// Relative allowance on f of the approximate Wolfe conditions (Hager & Zhang 2005 use 1e-6; we stay
/// closer to the rounding noise of a mean over many samples).
const APPROX_WOLFE_EPSILON: f64 = 1e-10;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn inf_norm(a: &[f64]) -> f64 {
    a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// Minimise `f` from `x0`. `f(x, grad)` returns f(x) and writes ∇f(x) into `grad`.
pub fn minimize_lbfgs<F>(mut f: F, x0: &[f64], options: &LbfgsOptions) -> LbfgsResult
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    let n = x0.len();
    let mut x = x0.to_vec();
    let mut g = vec![0.0; n];
    let mut value = f(&x, &mut g);
    let mut evaluations = 1;
    let finish = |x: Vec<f64>, value: f64, g: &[f64], iterations, evaluations, termination| {
        let gradient_norm = inf_norm(g);
        let converged = match termination {
            LbfgsTermination::Gradient | LbfgsTermination::Function => true,
            LbfgsTermination::LineSearch => gradient_norm <= 100.0 * options.gradient_tolerance,
            LbfgsTermination::MaxIterations | LbfgsTermination::NonFinite => false,
        };
        LbfgsResult { x, value, gradient_norm, iterations, evaluations, termination, converged }
    };
    if !value.is_finite() || g.iter().any(|v| !v.is_finite()) {
        return finish(x, value, &g, 0, evaluations, LbfgsTermination::NonFinite);
    }
    let m = options.memory.max(1);
    let mut s_hist: Vec<Vec<f64>> = Vec::with_capacity(m);
    let mut y_hist: Vec<Vec<f64>> = Vec::with_capacity(m);
    let mut rho_hist: Vec<f64> = Vec::with_capacity(m);
    let mut alpha_buf = vec![0.0; m];
    let mut d = vec![0.0; n];
    let mut x_new = vec![0.0; n];
    let mut g_new = vec![0.0; n];

    for iteration in 0..options.max_iterations {
        if inf_norm(&g) <= options.gradient_tolerance {
            return finish(x, value, &g, iteration, evaluations, LbfgsTermination::Gradient);
        }
        // Two-loop recursion: d = −H g.
        d.iter_mut().zip(&g).for_each(|(di, gi)| *di = -gi);
        let h = s_hist.len();
        for j in (0..h).rev() {
            let a = rho_hist[j] * dot(&s_hist[j], &d);
            alpha_buf[j] = a;
            d.iter_mut().zip(&y_hist[j]).for_each(|(di, yi)| *di -= a * yi);
        }
        if h > 0 {
            let gamma = dot(&s_hist[h - 1], &y_hist[h - 1]) / dot(&y_hist[h - 1], &y_hist[h - 1]);
            d.iter_mut().for_each(|di| *di *= gamma);
        }
        for j in 0..h {
            let beta = rho_hist[j] * dot(&y_hist[j], &d);
            let a = alpha_buf[j];
            d.iter_mut().zip(&s_hist[j]).for_each(|(di, si)| *di += (a - beta) * si);
        }
        let mut slope = dot(&g, &d);
        if slope.is_nan() || slope >= 0.0 {
            // Not a descent direction (numerical trouble): restart from steepest descent.
            s_hist.clear();
            y_hist.clear();
            rho_hist.clear();
            d.iter_mut().zip(&g).for_each(|(di, gi)| *di = -gi);
            slope = dot(&g, &d);
        }
        let alpha0 = if s_hist.is_empty() { (1.0 / dot(&g, &g).sqrt()).min(1.0) } else { 1.0 };
        let search = strong_wolfe(
            &mut f,
            &x,
            value,
            &d,
            slope,
            alpha0,
            options.max_line_search,
            &mut x_new,
            &mut g_new,
        );
        evaluations += search.evaluations;
        let Some(new_value) = search.value else {
            if !s_hist.is_empty() {
                // Retry along the steepest descent with a fresh memory before giving up.
                s_hist.clear();
                y_hist.clear();
                rho_hist.clear();
                continue;
            }
            return finish(x, value, &g, iteration, evaluations, LbfgsTermination::LineSearch);
        };
        let mut s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
        let mut y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > f64::EPSILON * dot(&y, &y) && sy > 0.0 {
            if s_hist.len() == m {
                // Recycle the oldest pair's storage.
                let mut old_s = s_hist.remove(0);
                let mut old_y = y_hist.remove(0);
                rho_hist.remove(0);
                old_s.copy_from_slice(&s);
                old_y.copy_from_slice(&y);
                std::mem::swap(&mut s, &mut old_s);
                std::mem::swap(&mut y, &mut old_y);
            }
            s_hist.push(s);
            y_hist.push(y);
            rho_hist.push(1.0 / sy);
        }
        let decrease = value - new_value;
        std::mem::swap(&mut x, &mut x_new);
        std::mem::swap(&mut g, &mut g_new);
        let previous = value;
        value = new_value;
        if inf_norm(&g) <= options.gradient_tolerance {
            return finish(x, value, &g, iteration + 1, evaluations, LbfgsTermination::Gradient);
        }
        if options.function_tolerance > 0.0
            && decrease <= options.function_tolerance * previous.abs().max(value.abs()).max(1.0)
        {
            return finish(x, value, &g, iteration + 1, evaluations, LbfgsTermination::Function);
        }
    }
    finish(x, value, &g, options.max_iterations, evaluations, LbfgsTermination::MaxIterations)
}

struct SearchOutcome {
    /// f at the accepted point (x_out / g_out hold it), or None when no acceptable step was found.
    value: Option<f64>,
    evaluations: usize,
}

/// A point on the search line: step, φ(step), φ'(step).
#[derive(Clone, Copy)]
struct LinePoint {
    step: f64,
    value: f64,
    slope: f64,
}

/// Strong-Wolfe line search along `d` from `x` (N&W Alg. 3.5 + zoom Alg. 3.6). On success `x_out`,
/// `g_out` hold the accepted point and its gradient.
#[allow(clippy::too_many_arguments)]
fn strong_wolfe<F>(
    f: &mut F,
    x: &[f64],
    f0: f64,
    d: &[f64],
    slope0: f64,
    alpha_init: f64,
    max_evaluations: usize,
    x_out: &mut [f64],
    g_out: &mut [f64],
) -> SearchOutcome
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    let mut evaluations = 0usize;
    // Evaluate φ(step), leaving the point and gradient in x_out / g_out.
    let mut eval = |step: f64, x_out: &mut [f64], g_out: &mut [f64]| -> LinePoint {
        x_out.iter_mut().zip(x.iter().zip(d)).for_each(|(xo, (xi, di))| *xo = xi + step * di);
        let value = f(x_out, g_out);
        let slope = dot(g_out, d);
        LinePoint { step, value, slope }
    };
    let ok = |p: &LinePoint| p.value.is_finite() && p.slope.is_finite();
    let armijo = |p: &LinePoint| p.value <= f0 + C1 * p.step * slope0;
    let curvature = |p: &LinePoint| p.slope.abs() <= -C2 * slope0;
    // Hager–Zhang approximate Wolfe conditions: near the optimum, decreases fall below the rounding
    // noise of f while the gradient is still accurate; accept a point whose slope shows the progress
    // of a Wolfe point and whose value is not above f0 by more than the noise allowance.
    let noise = APPROX_WOLFE_EPSILON * f0.abs();
    let approx_wolfe = |p: &LinePoint| {
        p.value <= f0 + noise && p.slope >= C2 * slope0 && p.slope <= (1.0 - 2.0 * C1) * -slope0
    };

    let mut prev = LinePoint { step: 0.0, value: f0, slope: slope0 };
    let mut step = alpha_init;
    // The point currently held in x_out/g_out.
    let mut held: Option<f64>;
    let mut first = true;
    let (mut lo, mut hi) = loop {
        if evaluations >= max_evaluations {
            return SearchOutcome { value: None, evaluations };
        }
        let p = eval(step, x_out, g_out);
        evaluations += 1;
        held = Some(p.step);
        if !ok(&p) {
            step = prev.step + 0.5 * (step - prev.step);
            if step - prev.step <= f64::EPSILON * prev.step.max(1e-300) {
                return SearchOutcome { value: None, evaluations };
            }
            continue;
        }
        if (curvature(&p) || !armijo(&p)) && approx_wolfe(&p) {
            return SearchOutcome { value: Some(p.value), evaluations };
        }
        if !armijo(&p) || (!first && p.value >= prev.value) {
            break (prev, p);
        }
        if curvature(&p) {
            return SearchOutcome { value: Some(p.value), evaluations };
        }
        if p.slope >= 0.0 {
            break (p, prev);
        }
        prev = p;
        step *= 2.0;
        first = false;
    };
    loop {
        if evaluations >= max_evaluations || (hi.step - lo.step).abs() <= 1e-16 * lo.step.abs().max(1e-300) {
            break;
        }
        let trial = interpolate(&lo, &hi);
        let p = eval(trial, x_out, g_out);
        evaluations += 1;
        held = Some(p.step);
        if ok(&p) && approx_wolfe(&p) {
            return SearchOutcome { value: Some(p.value), evaluations };
        }
        if !ok(&p) || !armijo(&p) || p.value >= lo.value {
            if ok(&p) || p.step != lo.step {
                hi = if ok(&p) {
                    p
                } else {
                    LinePoint { step: p.step, value: f64::INFINITY, slope: f64::NAN }
                };
            }
            if !ok(&p) && p.step == lo.step {
                break;
            }
        } else {
            if curvature(&p) {
                return SearchOutcome { value: Some(p.value), evaluations };
            }
            if p.slope * (hi.step - lo.step) >= 0.0 {
                hi = lo;
            }
            lo = p;
        }
    }
    // Zoom ran out of room: accept lo if it decreased f (weak acceptance at machine precision).
    if lo.step > 0.0 && lo.value < f0 {
        if held != Some(lo.step) {
            let p = eval(lo.step, x_out, g_out);
            evaluations += 1;
            return SearchOutcome { value: Some(p.value), evaluations };
        }
        return SearchOutcome { value: Some(lo.value), evaluations };
    }
    SearchOutcome { value: None, evaluations }
}

/// Minimiser of the cubic through (lo, hi) with their slopes, safeguarded to the inner 80 % of the
/// interval; bisection when the cubic has no usable minimiser.
fn interpolate(lo: &LinePoint, hi: &LinePoint) -> f64 {
    let (a, b) = (lo.step, hi.step);
    let (left, right) = if a < b { (a, b) } else { (b, a) };
    let margin = 0.1 * (right - left);
    let mid = 0.5 * (a + b);
    if !hi.value.is_finite() || !hi.slope.is_finite() {
        return mid;
    }
    let d1 = lo.slope + hi.slope - 3.0 * (lo.value - hi.value) / (a - b);
    let disc = d1 * d1 - lo.slope * hi.slope;
    if disc.is_nan() || disc < 0.0 {
        return mid;
    }
    let d2 = (b - a).signum() * disc.sqrt();
    let t = b - (b - a) * (hi.slope + d2 - d1) / (hi.slope - lo.slope + 2.0 * d2);
    if t.is_finite() { t.clamp(left + margin, right - margin) } else { mid }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rosenbrock: exact minimiser (1, 1) with value 0 (by construction).
    fn rosenbrock(x: &[f64], g: &mut [f64]) -> f64 {
        let (a, b) = (x[0], x[1]);
        g[0] = -2.0 * (1.0 - a) - 400.0 * a * (b - a * a);
        g[1] = 200.0 * (b - a * a);
        (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2)
    }

    #[test]
    fn minimises_rosenbrock() {
        let r = minimize_lbfgs(rosenbrock, &[-1.2, 1.0], &LbfgsOptions::default());
        assert!(r.converged, "{r:?}");
        assert!((r.x[0] - 1.0).abs() < 1e-8 && (r.x[1] - 1.0).abs() < 1e-8, "{r:?}");
    }

    #[test]
    fn minimises_an_ill_conditioned_quadratic() {
        // f = Σ c_i (x_i − i)², minimiser x_i = i exactly.
        let c = [1.0, 10.0, 1e3, 1e5];
        let f = |x: &[f64], g: &mut [f64]| -> f64 {
            let mut v = 0.0;
            for i in 0..4 {
                let r = x[i] - i as f64;
                v += c[i] * r * r;
                g[i] = 2.0 * c[i] * r;
            }
            v
        };
        let r = minimize_lbfgs(f, &[10.0, -5.0, 3.0, 0.0], &LbfgsOptions::default());
        assert!(r.converged, "{r:?}");
        for (i, xi) in r.x.iter().enumerate() {
            assert!((xi - i as f64).abs() < 1e-9, "{r:?}");
        }
    }

    #[test]
    fn a_non_finite_start_is_reported() {
        let r = minimize_lbfgs(
            |_x, g| {
                g[0] = 0.0;
                f64::NAN
            },
            &[0.0],
            &LbfgsOptions::default(),
        );
        assert_eq!(r.termination, LbfgsTermination::NonFinite);
        assert!(!r.converged);
    }
}
