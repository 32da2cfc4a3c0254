//! Branch-free `ln` and `cos(2π u)`, `sin(2π u)` kernels for the Rician fast path: plain `f64` arithmetic and bit
//! manipulation with no table look-ups and no calls into the platform libm, so that a loop over many
//! values can be vectorised by the compiler.
//!
//! They are NOT bit-identical to the libm functions the noise definition uses (those are correctly
//! rounded or within 1 ulp, and so are these, but the two can differ by an ulp). The Rician kernel
//! therefore uses them only where the final 8-bit level cannot depend on such a difference, and
//! recomputes with libm otherwise (see [`super::rician`]). The tests bound the difference to libm.
//!
//! Coefficients: `ln` uses fdlibm / musl's (`e_log.c`, Sun Microsystems, freely redistributable):
//! a minimax polynomial in `s = f / (2 + f)` for `ln(1 + f)` on `[√2/2 − 1, √2 − 1]`; `cos(2π u)`
//! and `sin(2π u)` use the Taylor series of sin, exact rationals.

/// 2⁵²: adding it to a value in [0, 2⁵¹) rounds the value to an integer held in the low mantissa
/// bits.
const MAGIC: f64 = 4_503_599_627_370_496.0;
const MAGIC_BITS: u64 = 0x4330_0000_0000_0000;

const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
const LG1: f64 = 0.6666666666666735;
const LG2: f64 = 0.3999999999940942;
const LG3: f64 = 0.2857142874366239;
const LG4: f64 = 0.22222198432149784;
const LG5: f64 = 0.1818357216161805;
const LG6: f64 = 0.15313837699209373;
const LG7: f64 = 0.14798198605116586;

/// Taylor coefficients of sin: (−1)ᵏ / (2k+1)!, k = 1…9 (correctly rounded by constant evaluation).
const T3: f64 = -1.0 / 6.0;
const T5: f64 = 1.0 / 120.0;
const T7: f64 = -1.0 / 5040.0;
const T9: f64 = 1.0 / 362_880.0;
const T11: f64 = -1.0 / 39_916_800.0;
const T13: f64 = 1.0 / 6_227_020_800.0;
const T15: f64 = -1.0 / 1_307_674_368_000.0;
const T17: f64 = 1.0 / 355_687_428_096_000.0;
const T19: f64 = -1.0 / 121_645_100_408_832_000.0;

/// `ln(x)` for a positive, finite, normal `x` (no checks: zero, subnormals, infinities and NaN give
/// meaningless results). Error within about 1 ulp (fdlibm's algorithm without its special cases).
///
/// `x = 2^k · m` with `m ∈ [√2/2, √2)`, `f = m − 1`, `s = f / (2 + f)`,
/// `ln(1 + f) = f − f²/2 + s (f²/2 + R(s²))`, `ln x = k ln 2 + ln(1 + f)`.
#[inline(always)]
pub fn ln_positive_normal(x: f64) -> f64 {
    let bits = x.to_bits();
    // Shift the high word so that the exponent field counts from √2/2 rather than from 1.
    let hx = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    // k = (hx >> 20) − 1023, converted exactly through the 2⁵² magic number (no int → float
    // instruction, which baseline x86-64 lacks in packed form).
    let k = f64::from_bits(MAGIC_BITS | u64::from(hx >> 20)) - (MAGIC + 1023.0);
    let hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let m = f64::from_bits((u64::from(hx) << 32) | (bits & 0xffff_ffff));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    s * (hfsq + r) + k * LN2_LO - hfsq + f + k * LN2_HI
}

/// `(cos(2π u), sin(2π u))` for `u ∈ [0, 1)` a multiple of 2⁻⁵³ (what a 53-bit uniform draw is).
///
/// `v = u − round(u) ∈ [−½, ½)`, exact for such `u`. Cosine: `cos(2π u) = cos(2π |v|) = sin(2π w)`
/// with `w = ¼ − |v| ∈ [−¼, ¼]`. Sine: `sin(2π u) = sin(2π v) = sin(2π w')` with `w' = v` when
/// `|v| ≤ ¼` and `w' = sign(v) (½ − |v|)` otherwise (`sin(π − a) = sin a`), `w' ∈ [−¼, ¼]`. Every
/// reduction step is exact (the operands are multiples of 2⁻⁵³ below 1), so both reduce to
/// [`sin_taylor`] on `[−π/2, π/2]`, within about 3·10⁻¹⁶ of the true values. Selects, no branches.
#[inline(always)]
pub fn cos_sin_two_pi(u: f64) -> (f64, f64) {
    let v = if u >= 0.5 { u - 1.0 } else { u };
    let a = v.abs();
    let w_sin = if a > 0.25 { (0.5 - a).copysign(v) } else { v };
    (sin_taylor(std::f64::consts::TAU * (0.25 - a)), sin_taylor(std::f64::consts::TAU * w_sin))
}

/// `cos(2π u)` for `u ∈ [0, 1)` a multiple of 2⁻⁵³: the first half of [`cos_sin_two_pi`].
#[cfg(test)]
pub fn cos_two_pi(u: f64) -> f64 {
    cos_sin_two_pi(u).0
}

/// `sin z` for `z ∈ [−π/2, π/2]` by its Taylor series to degree 19, whose truncation error there is
/// below (π/2)²¹/21! ≈ 2.6·10⁻¹⁶. One polynomial in Horner form.
#[inline(always)]
fn sin_taylor(z: f64) -> f64 {
    let zz = z * z;
    let p = T17 + zz * T19;
    let p = T15 + zz * p;
    let p = T13 + zz * p;
    let p = T11 + zz * p;
    let p = T9 + zz * p;
    let p = T7 + zz * p;
    let p = T5 + zz * p;
    let p = T3 + zz * p;
    z + z * zz * p
}

/// `k as f64` for `k < 2⁵³`, exactly, with integer and float arithmetic only (the packed
/// u64 → f64 conversion needs AVX-512, so the cast would keep a loop scalar).
#[inline(always)]
pub fn u53_to_f64(k: u64) -> f64 {
    let half = f64::from_bits(MAGIC_BITS | (k >> 1)) - MAGIC;
    let low = f64::from_bits(MAGIC_BITS | (k & 1)) - MAGIC;
    2.0 * half + low
}

/// For `0 ≤ v < 2⁵¹`: `(n, |v − n|)` with `n` the nearest integer to `v` (ties to even), `n` as a
/// `u64`; NaN gives a NaN distance. The Rician kernel decides a level with it.
#[inline(always)]
pub fn nearest_integer(v: f64) -> (u64, f64) {
    let t = v + MAGIC;
    let n = t - MAGIC;
    (t.to_bits() & ((1 << 52) - 1), (v - n).abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Distance in units in the last place (0 when equal).
    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn ln_is_within_an_ulp_or_two_of_libm() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let mut worst = 0;
        for i in 0..200_000u64 {
            // Uniform draws the way the Rician kernel makes them, plus the extremes.
            let x = match i {
                0 => 1.0,
                1 => 2f64.powi(-53),
                2 => 0.5,
                _ => 1.0 - (rng.random::<u64>() >> 11) as f64 * 2f64.powi(-53),
            };
            worst = worst.max(ulps(ln_positive_normal(x), x.ln()));
        }
        assert!(worst <= 2, "worst ln error {worst} ulps");
        // Far outside the draw range, still a normal number.
        for x in [1e-300, 3.7, 1e10, std::f64::consts::FRAC_1_SQRT_2, std::f64::consts::SQRT_2] {
            assert!(ulps(ln_positive_normal(x), x.ln()) <= 2, "{x}");
        }
    }

    #[test]
    fn cos_two_pi_is_within_a_few_ulp_of_the_definition() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mut worst = 0f64;
        for i in 0..200_000u64 {
            let u = match i {
                0 => 0.0,
                1 => 0.125,
                2 => 0.25,
                3 => 0.375,
                4 => 0.5,
                5 => 0.75,
                6 => 1.0 - 2f64.powi(-53),
                _ => (rng.random::<u64>() >> 11) as f64 * 2f64.powi(-53),
            };
            worst = worst.max((cos_two_pi(u) - (std::f64::consts::TAU * u).cos()).abs());
        }
        // The definition rounds 2πu first (up to 4.4e-16 of argument error); allow a few 1e-16.
        assert!(worst < 1e-15, "worst cos error {worst:e}");
    }

    #[test]
    fn sin_two_pi_is_within_a_few_ulp_of_the_definition() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let mut worst = 0f64;
        let edges = [0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 2f64.powi(-53)];
        let near_edges = edges.iter().flat_map(|&e| [e - 2f64.powi(-53), e + 2f64.powi(-53)]);
        let draws = (0..200_000).map(|_| (rng.random::<u64>() >> 11) as f64 * 2f64.powi(-53));
        for u in edges.into_iter().chain(near_edges).filter(|u| (0.0..1.0).contains(u)).chain(draws) {
            let (c, s) = cos_sin_two_pi(u);
            worst = worst.max((s - (std::f64::consts::TAU * u).sin()).abs());
            worst = worst.max((c - (std::f64::consts::TAU * u).cos()).abs());
        }
        assert!(worst < 1e-15, "worst sin/cos error {worst:e}");
    }

    #[test]
    fn exact_integer_conversions() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for i in 0..100_000u64 {
            let k = match i {
                0 => 0,
                1 => 1,
                2 => (1 << 53) - 1,
                _ => rng.random::<u64>() >> 11,
            };
            assert_eq!(u53_to_f64(k), k as f64, "{k}");
        }
        for (v, n) in
            [(0.0, 0), (0.49, 0), (0.51, 1), (254.4, 254), (254.6, 255), (300.2, 300), (1.5, 2), (2.5, 2)]
        {
            let (got, d) = nearest_integer(v);
            assert_eq!(got, n, "{v}");
            assert!((d - (v - n as f64).abs()).abs() < 1e-12, "{v}");
        }
        assert!(nearest_integer(f64::NAN).1.is_nan());
    }
}
