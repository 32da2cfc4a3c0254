//! calibra patch (vendor/README.md, "softmax: a vectorisable exp"): the exponential pass of the f32
//! softmax rows (`activation::softmax` and the naive `attention`).
//!
//! Both called the scalar `f32::exp` per element in a loop that also accumulated the row sum in
//! order, which the compiler can neither vectorise nor reorder. Here `exp` is branch-free (only
//! arithmetic, selects and bit casts), and the sum is kept in [`LANES`] partial sums (element `i`
//! goes to partial `i % LANES`) added pairwise at the end. The loops then vectorise wherever they
//! are inlined into a `#[macerator::with_simd]` kernel, and the result depends on the row alone:
//! not on the thread count, and not on the instruction set (the partial sums are the same on every
//! SIMD width, and nothing is fused into a multiply-add).
//!
//! `exp_f32`: Cody–Waite range reduction `x = n·ln 2 + r`, `|r| ≤ ln 2 / 2`, the degree-7 Taylor
//! polynomial of `eʳ`, and `2ⁿ` from exponent bits; within 2 ulps of the correctly rounded result
//! over the normal range (tested), subnormal results produced, 0 below −104, +∞ above 89, NaN kept.

/// Partial sums per row; a multiple of every f32 SIMD width (4, 8, 16).
const LANES: usize = 16;

/// ln 2 in two parts: the high one has 9 significant bits, so `n · LN_2_HIGH` is exact here.
const LN_2_HIGH: f32 = 355.0 / 512.0;
const LN_2_LOW: f32 = -2.121_944_4e-4;
/// 1.5 · 2²³: adding and subtracting it rounds an f32 below 2²² in magnitude to an integer.
const ROUNDING_SHIFT: f32 = 12_582_912.0;

/// `eˣ` in f32, branch-free (see the module docs).
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    let clamped = x.clamp(-104.0, 89.0);
    let shifted = clamped * core::f32::consts::LOG2_E + ROUNDING_SHIFT;
    let n_float = shifted - ROUNDING_SHIFT;
    let r = (clamped - n_float * LN_2_HIGH) - n_float * LN_2_LOW;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // n from the shifted value's low mantissa bits; 2ⁿ as 2^⌊n/2⌋ · 2^⌈n/2⌉ so that subnormal and
    // overflowing results come out of the products, not from an exponent field out of range.
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUNDING_SHIFT.to_bits() as i32);
    let half = n >> 1;
    let power_of_two = |k: i32| f32::from_bits((k.wrapping_add(127) as u32) << 23);
    let value = p * power_of_two(half) * power_of_two(n.wrapping_sub(half));
    let value = if x < -104.0 { 0.0 } else { value };
    if x > 89.0 { f32::INFINITY } else { value }
}

/// The partial sums added pairwise, in a fixed order.
#[inline(always)]
fn total(mut partial: [f32; LANES]) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for j in 0..width {
            partial[j] += partial[j + width];
        }
        width /= 2;
    }
    partial[0]
}

/// `output[i] = exp(input[i] − max)`; returns the sum of `output`.
#[inline(always)]
pub(crate) fn exp_shifted_sum_f32(input: &[f32], output: &mut [f32], max: f32) -> f32 {
    debug_assert_eq!(input.len(), output.len());
    let mut partial = [0.0f32; LANES];
    let mut inputs = input.chunks_exact(LANES);
    let mut outputs = output.chunks_exact_mut(LANES);
    for (x, y) in (&mut inputs).zip(&mut outputs) {
        for j in 0..LANES {
            let e = exp_f32(x[j] - max);
            y[j] = e;
            partial[j] += e;
        }
    }
    for (j, (x, y)) in inputs.remainder().iter().zip(outputs.into_remainder()).enumerate() {
        let e = exp_f32(*x - max);
        *y = e;
        partial[j] += e;
    }
    total(partial)
}

/// `row[i] = exp(row[i] − max)` in place; returns the sum of the new `row`.
#[inline(always)]
pub(crate) fn exp_shifted_sum_in_place_f32(row: &mut [f32], max: f32) -> f32 {
    let mut partial = [0.0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for x in &mut chunks {
        for j in 0..LANES {
            let e = exp_f32(x[j] - max);
            x[j] = e;
            partial[j] += e;
        }
    }
    for (j, x) in chunks.into_remainder().iter_mut().enumerate() {
        let e = exp_f32(*x - max);
        *x = e;
        partial[j] += e;
    }
    total(partial)
}

/// [`exp_shifted_sum_in_place_f32`] compiled for the best instruction set the CPU has.
#[cfg(feature = "simd")]
#[macerator::with_simd]
fn exp_shifted_sum_in_place_dispatched<S: macerator::Simd>(row: &mut [f32], max: f32) -> f32 {
    exp_shifted_sum_in_place_f32(row, max)
}

/// [`exp_shifted_sum_in_place_f32`] with run-time SIMD dispatch (with the `simd` feature).
pub(crate) fn exp_shifted_sum_in_place(row: &mut [f32], max: f32) -> f32 {
    #[cfg(feature = "simd")]
    return exp_shifted_sum_in_place_dispatched(row, max);
    #[cfg(not(feature = "simd"))]
    return exp_shifted_sum_in_place_f32(row, max);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn exp_is_within_two_ulps_of_f64_over_the_normal_range() {
        let positives = (0..=88.7f32.to_bits()).step_by(997).map(f32::from_bits);
        let negatives = (0x8000_0000..=(-87.3f32).to_bits()).step_by(997).map(f32::from_bits);
        for x in positives.chain(negatives) {
            let reference = (x as f64).exp() as f32;
            let ulps = (exp_f32(x).to_bits() as i64 - reference.to_bits() as i64).abs();
            assert!(ulps <= 2, "exp({x}) = {} is {ulps} ulps from {reference}", exp_f32(x));
        }
    }

    #[test]
    fn exp_saturates_and_keeps_nan() {
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-105.0), 0.0);
        assert_eq!(exp_f32(90.0), f32::INFINITY);
        assert_eq!(exp_f32(0.0), 1.0);
        assert!(exp_f32(f32::NAN).is_nan());
    }

    #[test]
    fn sums_are_the_same_in_place_and_out_of_place() {
        for len in [1usize, 15, 16, 17, 197, 1000] {
            let input: Vec<f32> = (0..len).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
            let mut output = vec![0.0; len];
            let sum = exp_shifted_sum_f32(&input, &mut output, 7.0);
            let mut row = input.clone();
            assert_eq!(exp_shifted_sum_in_place(&mut row, 7.0).to_bits(), sum.to_bits());
            assert_eq!(row, output);
            let reference: f64 = input.iter().map(|&x| (x as f64 - 7.0).exp()).sum();
            assert!(((sum as f64 - reference) / reference).abs() < 1e-6, "{len}: {sum} vs {reference}");
        }
    }
}
