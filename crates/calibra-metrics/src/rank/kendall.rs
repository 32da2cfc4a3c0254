//! Kendall's τ-a and τ-b in O(n log n) with Knight's (1966) merge-sort algorithm (spec §C13).

use super::rankdata::order_key;

/// Pair counts of Knight's algorithm over the `n (n - 1) / 2` unordered pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PairCounts {
    /// `n (n - 1) / 2`.
    total: u64,
    /// Pairs tied in x: `Σ t (t - 1) / 2` over the tie groups of x.
    x_ties: u64,
    /// Pairs tied in y.
    y_ties: u64,
    /// Pairs tied in both x and y.
    joint_ties: u64,
    /// Discordant pairs: `sign(x_i - x_j) · sign(y_i - y_j) = -1`.
    discordant: u64,
}

impl PairCounts {
    /// `C - D`: the concordant pairs are the pairs tied in neither variable that are not discordant.
    fn concordant_minus_discordant(&self) -> i128 {
        let untied = i128::from(self.total) - i128::from(self.x_ties) - i128::from(self.y_ties)
            + i128::from(self.joint_ties);
        untied - 2 * i128::from(self.discordant)
    }
}

/// `Σ t (t - 1) / 2` over the runs of consecutive equal elements of `v` (as grouped by `same`).
pub(crate) fn tied_pairs<T>(v: &[T], same: impl Fn(&T, &T) -> bool) -> u64 {
    let mut ties = 0u64;
    let mut start = 0;
    for i in 1..=v.len() {
        if i == v.len() || !same(&v[start], &v[i]) {
            let t = (i - start) as u64;
            ties += t * (t - 1) / 2;
            start = i;
        }
    }
    ties
}

/// Knight's algorithm: sort by (x, y); count the tie groups; then a merge sort of the y sequence counts
/// the exchanges it performs, which are exactly the discordant pairs. `None` if any value is NaN.
///
/// # Panics
/// If `x` and `y` differ in length.
fn pair_counts(x: &[f64], y: &[f64]) -> Option<PairCounts> {
    assert_eq!(x.len(), y.len(), "Kendall's tau needs x and y of equal length");
    if x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let n = x.len();
    // (x key << 64 | y key): one integer sort orders the pairs by x, then y.
    let mut pairs: Vec<u128> =
        x.iter().zip(y).map(|(&a, &b)| (u128::from(order_key(a)) << 64) | u128::from(order_key(b))).collect();
    pairs.sort_unstable();
    let x_ties = tied_pairs(&pairs, |a, b| a >> 64 == b >> 64);
    let joint_ties = tied_pairs(&pairs, |a, b| a == b);
    let mut ys: Vec<u64> = pairs.iter().map(|&p| p as u64).collect();
    drop(pairs);
    let discordant = sort_counting_inversions(&mut ys);
    let y_ties = tied_pairs(&ys, |a, b| a == b);
    let n = n as u64;
    Some(PairCounts { total: n * n.saturating_sub(1) / 2, x_ties, y_ties, joint_ties, discordant })
}

/// Runs shorter than this are sorted by insertion sort before merging.
const INSERTION_RUN: usize = 24;

/// Sorts `v` ascending and returns the number of inversions `i < j, v[i] > v[j]` (strict: equal
/// values are not an inversion). Bottom-up merge sort over insertion-sorted runs, O(n log n).
pub(crate) fn sort_counting_inversions(v: &mut [u64]) -> u64 {
    let n = v.len();
    let mut inversions = 0u64;
    for run in v.chunks_mut(INSERTION_RUN) {
        for i in 1..run.len() {
            let current = run[i];
            let mut j = i;
            while j > 0 && run[j - 1] > current {
                run[j] = run[j - 1];
                j -= 1;
            }
            run[j] = current;
            inversions += (i - j) as u64;
        }
    }
    if n <= INSERTION_RUN {
        return inversions;
    }
    let mut scratch = vec![0; n];
    let mut sorted_in_scratch = false;
    let mut width = INSERTION_RUN;
    while width < n {
        let (src, dst): (&[u64], &mut [u64]) =
            if sorted_in_scratch { (&scratch, v) } else { (v, &mut scratch) };
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            inversions += merge_counting(&src[start..mid], &src[mid..end], &mut dst[start..end]);
        }
        sorted_in_scratch = !sorted_in_scratch;
        width *= 2;
    }
    if sorted_in_scratch {
        v.copy_from_slice(&scratch);
    }
    inversions
}

/// Stable merge of two sorted runs into `out`; every time an element of `right` overtakes the `k`
/// remaining elements of `left` (strictly greater), that is `k` inversions.
fn merge_counting(left: &[u64], right: &[u64], out: &mut [u64]) -> u64 {
    let (mut i, mut j) = (0, 0);
    let mut inversions = 0u64;
    for slot in out.iter_mut() {
        if j < right.len() && (i == left.len() || right[j] < left[i]) {
            *slot = right[j];
            inversions += (left.len() - i) as u64;
            j += 1;
        } else {
            *slot = left[i];
            i += 1;
        }
    }
    inversions
}

/// Kendall's τ-a (spec §C13): `(C − D) / (n (n − 1) / 2)`, where C and D count the concordant and
/// discordant pairs and pairs tied in x or y count in neither.
///
/// Edge cases: constant x or y → 0 (every pair is tied, so C = D = 0); fewer than 2 samples → NaN
/// (no pairs); any NaN in x or y → NaN. scipy has no τ-a; the oracle is a direct O(n²) count.
/// Runs in O(n log n) (Knight's merge-sort algorithm).
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn kendall_tau_a(x: &[f64], y: &[f64]) -> f64 {
    match pair_counts(x, y) {
        Some(c) if c.total > 0 => c.concordant_minus_discordant() as f64 / c.total as f64,
        _ => f64::NAN,
    }
}

/// Kendall's τ-b (spec §C13, `scipy.stats.kendalltau`, default `variant="b"`):
///
/// `τ_b = (C − D) / sqrt((n₀ − n₁)(n₀ − n₂))`, with `n₀ = n (n − 1) / 2` and `n₁`, `n₂` the numbers of
/// pairs tied in x and in y (`Σ t (t − 1) / 2` over tie groups). Computed as scipy does,
/// `(C − D) / sqrt(n₀ − n₁) / sqrt(n₀ − n₂)`, clipped to [−1, 1].
///
/// Edge cases (scipy parity): constant x or y (including n < 2) → NaN; any NaN in x or y → NaN
/// (`nan_policy="propagate"`). Runs in O(n log n) (Knight's merge-sort algorithm).
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> f64 {
    let Some(c) = pair_counts(x, y) else { return f64::NAN };
    if c.x_ties == c.total || c.y_ties == c.total {
        return f64::NAN;
    }
    let tau = c.concordant_minus_discordant() as f64
        / ((c.total - c.x_ties) as f64).sqrt()
        / ((c.total - c.y_ties) as f64).sqrt();
    tau.clamp(-1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Direct O(n²) count over all pairs: the reference for Knight's algorithm.
    fn brute_force_counts(x: &[f64], y: &[f64]) -> PairCounts {
        let n = x.len();
        let mut c = PairCounts {
            total: (n * n.saturating_sub(1) / 2) as u64,
            x_ties: 0,
            y_ties: 0,
            joint_ties: 0,
            discordant: 0,
        };
        for i in 0..n {
            for j in i + 1..n {
                let (tx, ty) = (x[i] == x[j], y[i] == y[j]);
                c.x_ties += u64::from(tx);
                c.y_ties += u64::from(ty);
                c.joint_ties += u64::from(tx && ty);
                c.discordant += u64::from((x[i] - x[j]) * (y[i] - y[j]) < 0.0);
            }
        }
        c
    }

    fn brute_force_tau_a(x: &[f64], y: &[f64]) -> f64 {
        let n = x.len();
        let mut s = 0i64;
        for i in 0..n {
            for j in i + 1..n {
                let p = (x[i] - x[j]).signum() * (y[i] - y[j]).signum();
                if x[i] != x[j] && y[i] != y[j] {
                    s += p as i64;
                }
            }
        }
        s as f64 / (n * (n - 1) / 2) as f64
    }

    fn brute_force_tau_b(x: &[f64], y: &[f64]) -> f64 {
        let c = brute_force_counts(x, y);
        let mut s = 0i64;
        for i in 0..x.len() {
            for j in i + 1..x.len() {
                if x[i] != x[j] && y[i] != y[j] {
                    s += ((x[i] - x[j]).signum() * (y[i] - y[j]).signum()) as i64;
                }
            }
        }
        s as f64 / (((c.total - c.x_ties) * (c.total - c.y_ties)) as f64).sqrt()
    }

    #[test]
    fn identical_and_reversed_orderings() {
        // Exact by construction: every pair concordant (τ = 1) or every pair discordant (τ = −1).
        let x: Vec<f64> = (0..100).map(|i| f64::from(i) * 0.37).collect();
        let rev: Vec<f64> = x.iter().map(|v| -v).collect();
        assert_eq!(kendall_tau_a(&x, &x), 1.0);
        assert_eq!(kendall_tau_b(&x, &x), 1.0);
        assert_eq!(kendall_tau_a(&x, &rev), -1.0);
        assert_eq!(kendall_tau_b(&x, &rev), -1.0);
    }

    #[test]
    fn edge_cases() {
        let c = [2.0; 5];
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(kendall_tau_a(&c, &v), 0.0);
        assert!(kendall_tau_b(&c, &v).is_nan());
        assert!(kendall_tau_b(&v, &c).is_nan());
        assert!(kendall_tau_a(&[1.0], &[2.0]).is_nan());
        assert!(kendall_tau_b(&[], &[]).is_nan());
        assert!(kendall_tau_a(&[1.0, f64::NAN], &[1.0, 2.0]).is_nan());
        assert!(kendall_tau_b(&[1.0, 2.0], &[f64::NAN, 2.0]).is_nan());
        // -0.0 and 0.0 are one tie group: exact by construction, the only untied pairs are
        // (0, 2), (1, 2) in x, both concordant, and x-ties = 1, y-ties = 0 of 3 pairs.
        assert_eq!(kendall_tau_a(&[-0.0, 0.0, 1.0], &[1.0, 2.0, 3.0]), 2.0 / 3.0);
    }

    #[test]
    #[should_panic(expected = "equal length")]
    fn length_mismatch_panics() {
        kendall_tau_b(&[1.0, 2.0], &[1.0]);
    }

    #[test]
    fn inversion_count_spans_insertion_runs_and_merges() {
        let y: Vec<f64> = (0..1000).rev().map(|i| f64::from(i % 97)).collect();
        let expected = brute_force_counts(&(0..1000).map(f64::from).collect::<Vec<_>>(), &y).discordant;
        let mut v: Vec<u64> = y.iter().map(|&f| order_key(f)).collect();
        assert_eq!(sort_counting_inversions(&mut v), expected);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    fn tied_pairs_strategy() -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
        (0usize..300).prop_flat_map(|n| {
            (
                prop::collection::vec((-4i32..4).prop_map(f64::from), n),
                prop::collection::vec((-6i32..6).prop_map(f64::from), n),
            )
        })
    }

    proptest! {
        #[test]
        fn knight_equals_brute_force_on_tied_integers((x, y) in tied_pairs_strategy()) {
            prop_assert_eq!(pair_counts(&x, &y).unwrap(), brute_force_counts(&x, &y));
            let (a, b) = (kendall_tau_a(&x, &y), kendall_tau_b(&x, &y));
            if x.len() >= 2 {
                prop_assert!((a - brute_force_tau_a(&x, &y)).abs() <= 1e-12);
            }
            let reference = brute_force_tau_b(&x, &y);
            prop_assert_eq!(b.is_nan(), reference.is_nan());
            if !b.is_nan() {
                prop_assert!((b - reference).abs() <= 1e-12, "{} vs {}", b, reference);
            }
        }

        #[test]
        fn symmetric_and_bounded((x, y) in tied_pairs_strategy()) {
            let (a, b) = (kendall_tau_a(&x, &y), kendall_tau_b(&x, &y));
            // τ-a: C − D and n₀ are symmetric integers, so the result is bit-identical. τ-b divides by
            // the two square roots in scipy's order, which may differ in the last bit when swapped.
            prop_assert_eq!(a.to_bits(), kendall_tau_a(&y, &x).to_bits());
            let b_swapped = kendall_tau_b(&y, &x);
            prop_assert_eq!(b.is_nan(), b_swapped.is_nan());
            prop_assert!(b.is_nan() || (b - b_swapped).abs() <= 1e-15);
            prop_assert!(a.is_nan() || (-1.0..=1.0).contains(&a));
            prop_assert!(b.is_nan() || (-1.0..=1.0).contains(&b));
        }
    }
}
