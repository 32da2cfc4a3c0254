//! Benjamini–Hochberg adjustment of a family of p-values (spec §6: "Benjamini–Hochberg correction
//! within each metric family").

/// Benjamini–Hochberg adjusted p-values (= `scipy.stats.false_discovery_control(p, method="bh")`):
/// with the `m` p-values sorted ascending `p_(1) ≤ … ≤ p_(m)`,
///
/// `q_(i) = min_{j ≥ i} min(1, m · p_(j) / j)`,
///
/// returned in the input order. Rejecting every hypothesis with `q ≤ α` controls the false discovery
/// rate at `α` (independent or positively dependent tests).
///
/// Edge cases: an empty family gives an empty result; ties keep their shared adjusted value; NaN
/// p-values are not part of the family (they stay NaN and do not count in `m`).
///
/// # Panics
/// If a p-value is outside [0, 1].
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    assert!(p_values.iter().all(|p| p.is_nan() || (0.0..=1.0).contains(p)), "p-values must lie in [0, 1]");
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| !p_values[i].is_nan()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]).then(a.cmp(&b)));
    let m = order.len() as f64;
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p_values[i] * m / (rank + 1) as f64).min(1.0);
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_small_family() {
        // m = 4, sorted p = 0.01, 0.02, 0.03, 0.5 → 4p/i = 0.04, 0.04, 0.04, 0.5 (exact up to rounding).
        let q = benjamini_hochberg(&[0.5, 0.03, 0.01, 0.02]);
        let expected = [0.5, 0.04, 0.04, 0.04];
        for (a, b) in q.iter().zip(expected) {
            assert!((a - b).abs() < 1e-15, "{q:?}");
        }
        assert!(benjamini_hochberg(&[]).is_empty());
        let q = benjamini_hochberg(&[f64::NAN, 0.2]);
        assert!(q[0].is_nan() && q[1] == 0.2);
    }

    proptest! {
        #[test]
        fn adjusted_values_are_monotone_and_not_below_raw(p in prop::collection::vec(0.0f64..=1.0, 1..40)) {
            let q = benjamini_hochberg(&p);
            for i in 0..p.len() {
                prop_assert!(q[i] >= p[i] - 1e-15 && q[i] <= 1.0);
                for j in 0..p.len() {
                    if p[i] <= p[j] { prop_assert!(q[i] <= q[j] + 1e-15); }
                }
            }
        }
    }
}
