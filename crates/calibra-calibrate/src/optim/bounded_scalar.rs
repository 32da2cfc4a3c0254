//! Bounded 1-D minimisation: a line-by-line port of scipy's `_minimize_scalar_bounded` (Brent's
//! method with golden-section fallback on a closed interval, `scipy.optimize.fminbound`).
//!
//! It is what sklearn 1.9's `_TemperatureScaling` calls on log β with bounds (−10, 10) and
//! `xatol = 64·eps`; porting the exact algorithm (same initial point, same step rules, same stopping
//! test) makes the temperature found here agree with sklearn to the last few ulps rather than only
//! to the tolerance. The result is the best point evaluated; it never leaves `[lower, upper]`.

/// Outcome of [`minimize_scalar_bounded`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundedScalarResult {
    /// The minimiser found.
    pub x: f64,
    /// The objective at `x`.
    pub value: f64,
    /// Number of objective evaluations.
    pub evaluations: usize,
    /// False when `max_evaluations` was reached before the interval test was met, or a NaN appeared.
    pub converged: bool,
}

/// Minimise `f` on `[lower, upper]` with absolute tolerance `xatol` on x (scipy default 1e-5; sklearn
/// uses `64·f64::EPSILON`) and at most `max_evaluations` evaluations (scipy `maxiter`, default 500).
///
/// # Panics
/// If `lower > upper` or a bound is not finite.
pub fn minimize_scalar_bounded<F: FnMut(f64) -> f64>(
    mut f: F,
    lower: f64,
    upper: f64,
    xatol: f64,
    max_evaluations: usize,
) -> BoundedScalarResult {
    assert!(lower.is_finite() && upper.is_finite() && lower <= upper, "invalid bounds [{lower}, {upper}]");
    let sqrt_eps = 2.2e-16f64.sqrt();
    let golden_mean = 0.5 * (3.0 - 5.0f64.sqrt());
    let (mut a, mut b) = (lower, upper);
    let mut fulc = a + golden_mean * (b - a);
    let (mut nfc, mut xf) = (fulc, fulc);
    let (mut rat, mut e) = (0.0f64, 0.0f64);
    let mut x = xf;
    let mut fx = f(x);
    let mut num = 1usize;
    let mut fu = f64::INFINITY;
    let (mut ffulc, mut fnfc) = (fx, fx);
    let mut xm = 0.5 * (a + b);
    let mut tol1 = sqrt_eps * xf.abs() + xatol / 3.0;
    let mut tol2 = 2.0 * tol1;
    let mut converged = true;
    let sign = |v: f64| -> f64 {
        if v > 0.0 {
            1.0
        } else if v < 0.0 {
            -1.0
        } else {
            0.0
        }
    };
    while (xf - xm).abs() > (tol2 - 0.5 * (b - a)) {
        let mut golden = true;
        if e.abs() > tol1 {
            golden = false;
            let mut r = (xf - nfc) * (fx - ffulc);
            let mut q = (xf - fulc) * (fx - fnfc);
            let mut p = (xf - fulc) * q - (xf - nfc) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            r = e;
            e = rat;
            if p.abs() < (0.5 * q * r).abs() && p > q * (a - xf) && p < q * (b - xf) {
                rat = (p + 0.0) / q;
                x = xf + rat;
                if (x - a) < tol2 || (b - x) < tol2 {
                    let si = sign(xm - xf) + if xm - xf == 0.0 { 1.0 } else { 0.0 };
                    rat = tol1 * si;
                }
            } else {
                golden = true;
            }
        }
        if golden {
            e = if xf >= xm { a - xf } else { b - xf };
            rat = golden_mean * e;
        }
        let si = sign(rat) + if rat == 0.0 { 1.0 } else { 0.0 };
        x = xf + si * rat.abs().max(tol1);
        fu = f(x);
        num += 1;
        if fu <= fx {
            if x >= xf {
                a = xf;
            } else {
                b = xf;
            }
            fulc = nfc;
            ffulc = fnfc;
            nfc = xf;
            fnfc = fx;
            xf = x;
            fx = fu;
        } else {
            if x < xf {
                a = x;
            } else {
                b = x;
            }
            if fu <= fnfc || nfc == xf {
                fulc = nfc;
                ffulc = fnfc;
                nfc = x;
                fnfc = fu;
            } else if fu <= ffulc || fulc == xf || fulc == nfc {
                fulc = x;
                ffulc = fu;
            }
        }
        xm = 0.5 * (a + b);
        tol1 = sqrt_eps * xf.abs() + xatol / 3.0;
        tol2 = 2.0 * tol1;
        if num >= max_evaluations {
            converged = false;
            break;
        }
    }
    if xf.is_nan() || fx.is_nan() || fu.is_nan() {
        converged = false;
    }
    BoundedScalarResult { x: xf, value: fx, evaluations: num, converged }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_vertex_of_a_parabola() {
        // (x − 1.25)² has its exact minimiser at 1.25, inside the bounds.
        let r = minimize_scalar_bounded(|x| (x - 1.25) * (x - 1.25), -10.0, 10.0, 1e-12, 500);
        assert!(r.converged);
        assert!((r.x - 1.25).abs() < 1e-7, "{r:?}");
    }

    #[test]
    fn a_minimiser_outside_the_interval_ends_at_the_nearest_bound() {
        let r = minimize_scalar_bounded(|x| x, -3.0, 2.0, 1e-10, 500);
        assert!((r.x + 3.0).abs() < 1e-6, "{r:?}");
        assert!(r.x >= -3.0);
    }
}
