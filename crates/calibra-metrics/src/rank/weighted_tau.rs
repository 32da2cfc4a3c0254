//! Vigna's weighted Kendall τ with scipy's defaults (spec §C15, `scipy.stats.weightedtau`): additive
//! hyperbolic weights, `rank=True`. O(n log n): a weighted variant of Knight's merge-sort algorithm.

use super::rankdata::order_key;

/// Hyperbolic weigher, scipy's default: rank `r` (0 = most important) weighs `1 / (r + 1)`.
fn hyperbolic(rank: usize) -> f64 {
    1.0 / (rank as f64 + 1.0)
}

/// Weighted Kendall τ (Vigna 2015) exactly as `scipy.stats.weightedtau(x, y)` with its defaults
/// (`rank=True`, `weigher=None` → `h(r) = 1/(r+1)`, `additive=True`):
///
/// For a ranking ρ (ρ(i) = 0 is the most important element) the pair weight is
/// `w_ij = h(ρ(i)) + h(ρ(j))` and
///
/// `τ_w(ρ) = Σ_{i<j} w_ij sgn(x_i − x_j) sgn(y_i − y_j) / sqrt(Σ_{i<j} w_ij [x_i ≠ x_j] · Σ_{i<j} w_ij [y_i ≠ y_j])`.
///
/// The result is `½ [τ_w(ρ_xy) + τ_w(ρ_yx)]`, where `ρ_xy` is the decreasing lexicographic rank by
/// (x, then y) — the largest x gets rank 0 — and `ρ_yx` the same with the roles swapped. How elements
/// tied in both x and y are ordered does not change the value. Each term is clipped to [−1, 1] as in
/// scipy. The result is symmetric in (x, y) bit for bit.
///
/// Complexity: O(n log n) per term (sort by the ranking, then a merge sort of the second variable that
/// accumulates the weights of the exchanged pairs), like scipy's implementation.
///
/// Edge cases: empty input, constant x or constant y (including n = 1) → NaN (scipy parity).
/// Any NaN in x or y → NaN. This deviates from scipy, which replaces NaNs by ranks below every number
/// and returns a value; the framework's policy is that metrics propagate NaN rather than silently
/// treating it as data.
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn weighted_tau(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len(), "weighted tau needs x and y of equal length");
    if x.is_empty() || x.iter().chain(y).any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let x: Vec<u64> = x.iter().map(|&v| order_key(v)).collect();
    let y: Vec<u64> = y.iter().map(|&v| order_key(v)).collect();
    (weighted_tau_ranked_by(&x, &y) + weighted_tau_ranked_by(&y, &x)) / 2.0
}

/// `Σ w(i) (m − 1)` over runs of consecutive equal elements of a sequence of `(key, weight)`: the total
/// additive weight of the pairs inside each run (each element belongs to `m − 1` such pairs).
/// Returns the sum and whether the whole sequence is a single run.
fn tied_weight<T>(v: &[(T, f64)], same: impl Fn(&T, &T) -> bool) -> (f64, bool) {
    let mut weight = 0.0;
    let (mut start, mut group_sum) = (0, 0.0);
    for i in 0..=v.len() {
        if i == v.len() || !same(&v[start].0, &v[i].0) {
            weight += group_sum * (i - start - 1) as f64;
            if i == v.len() {
                return (weight, start == 0);
            }
            start = i;
            group_sum = 0.0;
        }
        group_sum += v[i].1;
    }
    unreachable!("the loop returns at i == v.len()")
}

/// One term `τ_w(ρ)` where ρ is the decreasing lexicographic rank by (`a`, then `b`); `a` and `b` are
/// order keys (equal keys ⇔ equal values), non-empty.
fn weighted_tau_ranked_by(a: &[u64], b: &[u64]) -> f64 {
    let n = a.len();
    // Complemented keys packed as (!a << 64 | !b): one ascending integer sort = decreasing (a, b).
    let mut order: Vec<u128> =
        a.iter().zip(b).map(|(&ka, &kb)| (u128::from(!ka) << 64) | u128::from(!kb)).collect();
    order.sort_unstable();
    // Sorted position r is the rank ρ of that element, so it weighs h(r).
    let ranked: Vec<(u128, f64)> =
        order.into_iter().enumerate().map(|(r, key)| (key, hyperbolic(r))).collect();
    let (joint_tied, _) = tied_weight(&ranked, |p, q| p == q);
    let (a_tied, a_constant) = tied_weight(&ranked, |p, q| p >> 64 == q >> 64);
    if a_constant {
        return f64::NAN;
    }
    // The complemented b keys: ascending order of these is decreasing b.
    let mut second: Vec<Weighted> = ranked.iter().map(|&(key, w)| (key as u64, w)).collect();
    drop(ranked);
    let exchanged = sort_weighing_exchanges(&mut second);
    let (b_tied, b_constant) = tied_weight(&second, |p, q| p == q);
    if b_constant {
        return f64::NAN;
    }
    let weight_sum: f64 = second.iter().map(|&(_, w)| w).sum();
    let total = weight_sum * (n - 1) as f64;
    let tau = ((total - (b_tied + a_tied - joint_tied)) - 2.0 * exchanged)
        / (total - a_tied).sqrt()
        / (total - b_tied).sqrt();
    tau.clamp(-1.0, 1.0)
}

/// Runs shorter than this are sorted by insertion sort before merging.
const INSERTION_RUN: usize = 16;

/// A `(key, weight)` element of the weighted merge sort.
type Weighted = (u64, f64);

/// Sorts `(key, weight)` by key ascending (stable) and returns the summed additive weight
/// `w_i + w_j` of the exchanged pairs: `i < j` with `key_i > key_j` (strict).
fn sort_weighing_exchanges(v: &mut [Weighted]) -> f64 {
    let n = v.len();
    let mut exchanged = 0.0;
    for run in v.chunks_mut(INSERTION_RUN) {
        for i in 1..run.len() {
            let current = run[i];
            let mut j = i;
            while j > 0 && run[j - 1].0 > current.0 {
                exchanged += run[j - 1].1 + current.1;
                run[j] = run[j - 1];
                j -= 1;
            }
            run[j] = current;
        }
    }
    if n <= INSERTION_RUN {
        return exchanged;
    }
    let mut scratch = vec![(0, 0.0); n];
    let mut left_suffix = vec![0.0; n];
    let mut sorted_in_scratch = false;
    let mut width = INSERTION_RUN;
    while width < n {
        let (src, dst): (&[Weighted], &mut [Weighted]) =
            if sorted_in_scratch { (&scratch, v) } else { (v, &mut scratch) };
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            exchanged += merge_weighing(
                &src[start..mid],
                &src[mid..end],
                &mut dst[start..end],
                &mut left_suffix[start..mid],
            );
        }
        sorted_in_scratch = !sorted_in_scratch;
        width *= 2;
    }
    if sorted_in_scratch {
        v.copy_from_slice(&scratch);
    }
    exchanged
}

/// Stable ascending merge. When an element of `right` overtakes the `k` remaining elements of `left`
/// (strictly smaller key), the exchanged pairs weigh `k · w_right + Σ w_remaining_left`.
fn merge_weighing(left: &[Weighted], right: &[Weighted], out: &mut [Weighted], suffix: &mut [f64]) -> f64 {
    let mut acc = 0.0;
    for (s, &(_, w)) in suffix.iter_mut().zip(left).rev() {
        acc += w;
        *s = acc;
    }
    let (mut i, mut j) = (0, 0);
    let mut exchanged = 0.0;
    for slot in out.iter_mut() {
        if j < right.len() && (i == left.len() || right[j].0 < left[i].0) {
            *slot = right[j];
            exchanged += (left.len() - i) as f64 * right[j].1 + if i < left.len() { suffix[i] } else { 0.0 };
            j += 1;
        } else {
            *slot = left[i];
            i += 1;
        }
    }
    exchanged
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Direct O(n²) evaluation of one term: ρ from a decreasing lexicographic sort by (a, b).
    fn brute_force_term(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&i, &j| a[j].total_cmp(&a[i]).then(b[j].total_cmp(&b[i])));
        let mut h = vec![0.0; n];
        for (r, &i) in order.iter().enumerate() {
            h[i] = 1.0 / (r as f64 + 1.0);
        }
        let (mut num, mut da, mut db) = (0.0, 0.0, 0.0);
        for i in 0..n {
            for j in i + 1..n {
                let w = h[i] + h[j];
                if a[i] != a[j] && b[i] != b[j] {
                    num += w * (a[i] - a[j]).signum() * (b[i] - b[j]).signum();
                }
                da += if a[i] != a[j] { w } else { 0.0 };
                db += if b[i] != b[j] { w } else { 0.0 };
            }
        }
        num / (da * db).sqrt()
    }

    fn brute_force(x: &[f64], y: &[f64]) -> f64 {
        (brute_force_term(x, y) + brute_force_term(y, x)) / 2.0
    }

    #[test]
    fn identical_and_reversed_orderings() {
        // Exact by construction (τ = ±1); evaluated in floating point, so allow a few ulps.
        let x: Vec<f64> = (0..200).map(|i| f64::from(i % 37) * 1.5 + f64::from(i) * 1e-3).collect();
        let rev: Vec<f64> = x.iter().map(|v| -v).collect();
        assert!((weighted_tau(&x, &x) - 1.0).abs() <= 1e-14);
        assert!((weighted_tau(&x, &rev) + 1.0).abs() <= 1e-14);
    }

    #[test]
    fn scipy_docstring_input_matches_the_direct_definition() {
        // The input of scipy's docstring example; the reference is our O(n²) evaluation of the formula.
        let x = [12.0, 2.0, 1.0, 12.0, 2.0];
        let y = [1.0, 4.0, 7.0, 1.0, 0.0];
        assert!((weighted_tau(&x, &y) - brute_force(&x, &y)).abs() <= 1e-15);
    }

    #[test]
    fn edge_cases() {
        assert!(weighted_tau(&[], &[]).is_nan());
        assert!(weighted_tau(&[1.0], &[1.0]).is_nan());
        assert!(weighted_tau(&[3.0; 4], &[1.0, 2.0, 3.0, 4.0]).is_nan());
        assert!(weighted_tau(&[1.0, 2.0, 3.0, 4.0], &[3.0; 4]).is_nan());
        assert!(weighted_tau(&[1.0, f64::NAN], &[1.0, 2.0]).is_nan());
    }

    #[test]
    #[should_panic(expected = "equal length")]
    fn length_mismatch_panics() {
        weighted_tau(&[1.0], &[]);
    }

    fn tied_pairs_strategy() -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
        (0usize..150).prop_flat_map(|n| {
            (
                prop::collection::vec((-4i32..4).prop_map(f64::from), n),
                prop::collection::vec((-6i32..6).prop_map(f64::from), n),
            )
        })
    }

    proptest! {
        #[test]
        fn merge_sort_equals_the_direct_definition((x, y) in tied_pairs_strategy()) {
            let fast = weighted_tau(&x, &y);
            let reference = if x.is_empty() { f64::NAN } else { brute_force(&x, &y) };
            prop_assert_eq!(fast.is_nan(), reference.is_nan());
            prop_assert!(fast.is_nan() || (fast - reference).abs() <= 1e-12, "{} vs {}", fast, reference);
        }

        #[test]
        fn symmetric_and_bounded((x, y) in tied_pairs_strategy()) {
            let t = weighted_tau(&x, &y);
            prop_assert_eq!(t.to_bits(), weighted_tau(&y, &x).to_bits());
            prop_assert!(t.is_nan() || (-1.0..=1.0).contains(&t));
        }
    }
}
