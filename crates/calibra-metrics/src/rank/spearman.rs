//! Spearman's ρ: the Pearson correlation of average ranks (spec §C14, `scipy.stats.spearmanr`).

use super::rankdata::average_ranks;

/// Spearman's rank correlation `ρ = Pearson(rank(x), rank(y))` with average (mid-)ranks for ties
/// (`scipy.stats.spearmanr`). With ties this is NOT `1 − 6 Σ d² / (n (n² − 1))`.
///
/// Every average rank is a multiple of ½ and their mean is exactly `(n + 1) / 2`, so the centred
/// doubled ranks `2 r_i − (n + 1)` are integers and the cross and square sums are accumulated exactly
/// in `i128`; the only roundings are the final `Sxy / sqrt(Sxx · Syy)`. The result is clipped to
/// [−1, 1].
///
/// Edge cases (scipy parity): constant x or y (including n < 2) → NaN; any NaN in x or y → NaN
/// (`nan_policy="propagate"`).
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn spearman_rho(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "Spearman's rho needs x and y of equal length");
    if x.iter().chain(y).any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let n = x.len() as i64;
    let centred = |ranks: Vec<f64>| -> Vec<i64> {
        // 2 r is an integer (exact in f64 for any realistic n), so the cast is exact.
        ranks.into_iter().map(|r| (2.0 * r) as i64 - (n + 1)).collect()
    };
    let (a, b) = (centred(average_ranks(x)), centred(average_ranks(y)));
    let (mut sxy, mut sxx, mut syy) = (0i128, 0i128, 0i128);
    for (&u, &v) in a.iter().zip(&b) {
        let (u, v) = (i128::from(u), i128::from(v));
        sxy += u * v;
        sxx += u * u;
        syy += v * v;
    }
    if sxx == 0 || syy == 0 {
        return f64::NAN;
    }
    let rho = sxy as f64 / ((sxx as f64) * (syy as f64)).sqrt();
    rho.clamp(-1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Textbook Pearson on f64 ranks: the reference for the exact-integer evaluation.
    fn pearson(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len() as f64;
        let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
        let sab: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let saa: f64 = a.iter().map(|x| (x - ma) * (x - ma)).sum();
        let sbb: f64 = b.iter().map(|y| (y - mb) * (y - mb)).sum();
        sab / (saa * sbb).sqrt()
    }

    #[test]
    fn identical_and_reversed_orderings() {
        // Exact by construction: identical ranks give ρ = 1, mirrored ranks ρ = −1.
        let x: Vec<f64> = (0..50).map(|i| f64::from(i).powi(3)).collect();
        let y: Vec<f64> = x.iter().map(|v| v.cbrt().exp()).collect();
        let rev: Vec<f64> = x.iter().map(|v| -v).collect();
        assert_eq!(spearman_rho(&x, &y), 1.0);
        assert_eq!(spearman_rho(&x, &rev), -1.0);
    }

    #[test]
    fn edge_cases() {
        assert!(spearman_rho(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_nan());
        assert!(spearman_rho(&[1.0], &[2.0]).is_nan());
        assert!(spearman_rho(&[], &[]).is_nan());
        assert!(spearman_rho(&[1.0, 2.0, f64::NAN], &[1.0, 2.0, 3.0]).is_nan());
    }

    #[test]
    #[should_panic(expected = "equal length")]
    fn length_mismatch_panics() {
        spearman_rho(&[1.0], &[]);
    }

    proptest! {
        #[test]
        fn symmetric_bounded_and_pearson_of_ranks(
            (x, y) in (0usize..200).prop_flat_map(|n| (
                prop::collection::vec((-5i32..5).prop_map(f64::from), n),
                prop::collection::vec(-1e3f64..1e3, n),
            ))
        ) {
            let rho = spearman_rho(&x, &y);
            prop_assert_eq!(rho.to_bits(), spearman_rho(&y, &x).to_bits());
            prop_assert!(rho.is_nan() || (-1.0..=1.0).contains(&rho));
            let reference = pearson(&average_ranks(&x), &average_ranks(&y));
            prop_assert_eq!(rho.is_nan(), reference.is_nan());
            prop_assert!(rho.is_nan() || (rho - reference).abs() <= 1e-12, "{} vs {}", rho, reference);
        }
    }
}
