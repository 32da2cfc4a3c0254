//! Branch-free f32 `exp` and normal CDF that the compiler turns into SIMD loops, for the fused GELU.
//!
//! flex's exact GELU calls the scalar `libm::erff` per element, a branchy function the compiler
//! cannot vectorise: it was a sixth of a ViT-B/16 block's time on N(0, 1) activations
//! (benches/RESULTS.md, "The exact GELU, vectorised"). These functions use only arithmetic,
//! comparisons turned into selects, `round` and bit casts, so a loop over a slice vectorises.
//! Each element's result depends on that element alone, so the thread count cannot change it.
//!
//! - [`exp`]: Cody–Waite range reduction `x = n·ln 2 + r`, `|r| ≤ ln 2 / 2` (ln 2 split in a
//!   short high part and a low part), the degree-7 Taylor polynomial of `eʳ` (truncation below
//!   6e-9 relative), and `2ⁿ` built from exponent bits. Subnormal results are produced (not
//!   flushed); below −104, 0; above 89, +∞; NaN gives NaN. [`exp_of_sum`] is the same function of
//!   a sum given in two parts, reduced as one, so that a product of two exponentials costs one.
//! - [`normal_cdf`]: `Φ(x) = erfc(−x/√2)/2`. For `|x|/√2 < 0.75`, `1/2 + erf(x/√2)/2` with erf's
//!   Taylor series to the 15th power; beyond, the Chebyshev fit of Numerical Recipes (Press et
//!   al., 2nd ed., §6.2, `erfcc`): `erfc(z) ≈ t·exp(−z² + P(t))`, `t = 1/(1 + z/2)`, `z ≥ 0`,
//!   fractional error below 1.2e-7, with `erfc(−z) = 2 − erfc(z)`. The lower tail is computed as
//!   such, not as `1 + erf(x)`, so it keeps its relative accuracy where `1 + erf` cancels (the
//!   GELU of a negative `x`), and `z²` is formed from `x` exactly (see the code), so the error does
//!   not grow with `|x|`; its two exponentials (that split, and the fit's `P(t)`) are taken as
//!   one [`exp_of_sum`]. Relative error below 6e-7 over the normal range (about 5 ulps; the
//!   worst measured is in the fit's range, the series keeps about 1 ulp).
//!
//! Measured against f64 references over the whole f32 range in the tests below.

use core::f32::consts::LOG2_E;

/// ln 2 split for the range reduction: the high part has 9 significant bits (355/512), so
/// `n · LN_2_HIGH` is exact for every `n` used here; the low part is ln 2 − 355/512 rounded to f32.
const LN_2_HIGH: f32 = 355.0 / 512.0;
const LN_2_LOW: f32 = -2.121_944_4e-4;
/// 1.5 · 2²³: adding and subtracting it rounds an f32 of magnitude below 2²² to an integer.
const ROUNDING_SHIFT: f32 = 12_582_912.0;

/// `eˣ` in f32 (see the module docs for its range and accuracy).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    exp_of_sum(x, 0.0)
}

/// `e^(high + low)` with one range reduction over both parts: `n = round((high + low) / ln 2)`, then
/// `r = ((high − n·ln 2_high) + low) − n·ln 2_low`. Where `high` carries the magnitude and is exact
/// (the Gaussian exponent of [`normal_cdf`]), `high − n·ln 2_high` is exact too (two f32 on a
/// common grid, their difference below 2 + ln 2 / 2), so `low` enters the reduced argument at full
/// accuracy: the same result as `exp(high) · exp(low)` to within an ulp, for one exponential's
/// work. With `low = 0` this is [`exp`].
#[inline(always)]
pub(crate) fn exp_of_sum(high: f32, low: f32) -> f32 {
    let x = high + low;
    // Past these bounds eˣ is 0 (below half the smallest subnormal) or +∞ in f32; the clamp keeps
    // `n` in [−150, 128] and the selects below restore the limits. NaN passes through the arithmetic.
    let clamped = x.clamp(-104.0, 89.0);
    // n = round(x / ln 2) by the 1.5·2²³ trick (round to nearest even, exact for |n| < 2²²): plain
    // additions, where `f32::round` would need SSE4.1 and becomes a library call without it.
    let shifted = clamped * LOG2_E + ROUNDING_SHIFT;
    let n_float = shifted - ROUNDING_SHIFT;
    // Inside the clamp, `high + low` is `x` and the reduction is exact as above; outside it, the
    // selects below replace whatever `r` gives.
    let r = ((high - n_float * LN_2_HIGH) + low) - n_float * LN_2_LOW;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // The integer n from the shifted value's low mantissa bits; 2ⁿ as two normal powers of two,
    // 2^⌊n/2⌋ · 2^⌈n/2⌉, so that a subnormal or overflowing result comes out of the multiplications
    // rather than from an exponent field out of range. (Wrapping arithmetic: a NaN's bits are
    // garbage here, and its result is NaN through `p` anyway.)
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUNDING_SHIFT.to_bits() as i32);
    let half = n >> 1;
    let power_of_two = |k: i32| f32::from_bits((k.wrapping_add(127) as u32) << 23);
    let value = p * power_of_two(half) * power_of_two(n.wrapping_sub(half));
    let value = if x < -104.0 { 0.0 } else { value };
    if x > 89.0 { f32::INFINITY } else { value }
}

const SERIES_LIMIT: f32 = 0.75 * core::f32::consts::SQRT_2;

/// `erf(z)` for `|z| < 0.75`: `2/√π · Σₙ (−1)ⁿ z²ⁿ⁺¹ / (n! (2n+1))` up to n = 7 (the first term
/// left out is below 1.3e-8 of erf there).
#[inline(always)]
fn erf_series(z: f32) -> f32 {
    use core::f32::consts::FRAC_2_SQRT_PI as C;
    let s = z * z;
    let sum = C + s
        * (-C / 3.0
            + s * (C / 10.0
                + s * (-C / 42.0
                    + s * (C / 216.0 + s * (-C / 1320.0 + s * (C / 9360.0 + s * (-C / 75600.0)))))));
    z * sum
}

/// `Φ(x) = erfc(−x/√2) / 2`, the standard normal CDF, in f32 (see the module docs).
#[inline(always)]
pub(crate) fn normal_cdf(x: f32) -> f32 {
    let a = x.abs();
    // Beyond 20 the tail, e^(−200)-small, is 0 in f32; NaN stays NaN (the comparison is false).
    let a = if a > 20.0 { 20.0 } else { a };
    let t = 1.0 / (1.0 + 0.5 * core::f32::consts::FRAC_1_SQRT_2 * a);
    // The book's coefficients, each written with the digits that give the same f32.
    let poly = -1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    // The Gaussian exponent −z² = −a²/2 from `a` itself (rounding a/√2 first would cost 2z² times
    // its own error), split so that its rounding does not grow with a²: a = a_high + a_low with
    // a_high keeping 12 significant bits, so a_high²/2 is exact in f32 and the rest,
    // a_low·(a + a_high)/2, is small next to it.
    let a_high = f32::from_bits(a.to_bits() & 0xFFFF_F000);
    let a_low = a - a_high;
    let upper_tail = 0.5 * t * exp_of_sum(-0.5 * (a_high * a_high), -0.5 * (a_low * (a + a_high)) + poly);
    let fitted = if x < 0.0 { upper_tail } else { 1.0 - upper_tail };
    // Near 0 the fit's polynomial cancels to about 0 and loses a few bits; the series does not.
    let series = 0.5 + 0.5 * erf_series(x * core::f32::consts::FRAC_1_SQRT_2);
    if a < SERIES_LIMIT { series } else { fitted }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `step`-th f32 bit pattern of one sign between `from` and `to` (inclusive), as f32.
    fn sweep(from: f32, to: f32, step: u32) -> impl Iterator<Item = f32> {
        let (lo, hi) = (from.to_bits().min(to.to_bits()), from.to_bits().max(to.to_bits()));
        (lo..=hi).step_by(step as usize).map(f32::from_bits)
    }

    /// Distance in units in the last place between `value` and the f64 `reference` rounded to f32.
    fn ulps(value: f32, reference: f64) -> u32 {
        let reference = reference as f32;
        if value == reference {
            return 0;
        }
        (value.to_bits() as i64 - reference.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_is_within_two_ulps_of_f64_over_the_normal_range() {
        let mut worst = (0, 0.0f32);
        for x in sweep(0.0, 88.7, 997).chain(sweep(-0.0, -87.3, 997)) {
            let error = ulps(exp(x), (x as f64).exp());
            if error > worst.0 {
                worst = (error, x);
            }
        }
        eprintln!("exp: worst error {} ulps at {}", worst.0, worst.1);
        assert!(worst.0 <= 2, "exp({}) is {} ulps from f64", worst.1, worst.0);
    }

    #[test]
    fn exp_saturates_and_keeps_nan() {
        assert_eq!(exp(-105.0), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(88.8), f32::INFINITY);
        assert_eq!(exp(90.0), f32::INFINITY);
        // Subnormal results: within one subnormal step of f64's.
        for x in [-88.0f32, -95.0, -100.0, -103.0] {
            let expected = (x as f64).exp() as f32;
            assert!(expected > 0.0 && expected < f32::MIN_POSITIVE, "{x}");
            assert!((exp(x).to_bits() as i64 - expected.to_bits() as i64).abs() <= 1, "exp({x})");
        }
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn normal_cdf_is_within_six_ten_millionths_relative_of_f64() {
        // Φ leaves the normal f32 range below x ≈ −13.0; beyond, the exp products go subnormal.
        let mut worst = (0.0f64, 0.0f32);
        for x in sweep(-0.0, -13.0, 311).chain(sweep(0.0, 13.0, 311)) {
            let reference = 0.5 * libm::erfc(-(x as f64) / std::f64::consts::SQRT_2);
            let relative = ((normal_cdf(x) as f64 - reference) / reference).abs();
            if relative > worst.0 {
                worst = (relative, x);
            }
        }
        eprintln!("normal_cdf: worst relative error {:.3e} at {}", worst.0, worst.1);
        assert!(worst.0 <= 6e-7, "normal_cdf({}) is off by {:.3e} relative", worst.1, worst.0);
        assert_eq!(normal_cdf(f32::NEG_INFINITY), 0.0);
        assert_eq!(normal_cdf(-40.0), 0.0);
        assert_eq!(normal_cdf(f32::INFINITY), 1.0);
        assert_eq!(normal_cdf(0.0), 0.5);
        assert!(normal_cdf(f32::NAN).is_nan());
    }
}
