//! Average (mid-)ranks of a vector, `scipy.stats.rankdata(x, method="average")`.

/// Maps a non-NaN `f64` to a `u64` whose unsigned order is the numeric order, with `-0.0` and `0.0`
/// mapped to the same key: equal keys ⇔ equal values. Integer keys sort and compare faster than
/// `f64::total_cmp`.
pub(crate) fn order_key(v: f64) -> u64 {
    let bits = (v + 0.0).to_bits(); // + 0.0 turns -0.0 into 0.0
    if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
}

/// Inverse of [`order_key`] (`0.0` for the key of `±0.0`).
pub(crate) fn value_of_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 { key & !(1 << 63) } else { !key })
}

/// 1-based average ranks of `x` (spec §C14, scipy `rankdata(method="average")`).
///
/// The values of `x` are sorted ascending; a run of `t` equal values occupying the sorted positions
/// `a+1 ..= a+t` all get the mid-rank `a + (t + 1) / 2`. Consequently the ranks always sum to
/// `n (n + 1) / 2`. `-0.0` and `+0.0` are equal, hence tied.
///
/// Edge cases: an empty input gives an empty vector; if any value is NaN every rank is NaN
/// (scipy's `nan_policy="propagate"`). Infinities are ordinary, ordered values.
pub fn average_ranks(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    if x.iter().any(|v| v.is_nan()) {
        return vec![f64::NAN; n];
    }
    // (key << 64 | index): one integer sort orders by value; the index rides along.
    let mut sorted: Vec<u128> =
        x.iter().enumerate().map(|(i, &v)| (u128::from(order_key(v)) << 64) | i as u128).collect();
    sorted.sort_unstable();
    let mut ranks = vec![0.0; n];
    let mut start = 0;
    while start < n {
        let key = sorted[start] >> 64;
        let mut end = start + 1;
        while end < n && sorted[end] >> 64 == key {
            end += 1;
        }
        // Positions start+1 ..= end (1-based): their mean is (start + 1 + end) / 2, exact in f64.
        let mid_rank = (start + 1 + end) as f64 / 2.0;
        for &packed in &sorted[start..end] {
            ranks[packed as u64 as usize] = mid_rank;
        }
        start = end;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn order_keys_follow_numeric_order_and_invert() {
        let values = [f64::NEG_INFINITY, -2.0, -1e-300, 0.0, 1e-300, 3.5, f64::MAX, f64::INFINITY];
        let keys: Vec<u64> = values.iter().map(|&v| order_key(v)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        for (&v, &k) in values.iter().zip(&keys) {
            assert_eq!(value_of_key(k).to_bits(), v.to_bits());
        }
        assert_eq!(order_key(-0.0), order_key(0.0));
    }

    #[test]
    fn ties_get_the_mid_rank() {
        // Exact by construction: sorted values 1, 2, 2, 2, 5 occupy ranks 1, 2..=4, 5.
        assert_eq!(average_ranks(&[2.0, 5.0, 2.0, 1.0, 2.0]), vec![3.0, 5.0, 3.0, 1.0, 3.0]);
        // -0.0 == 0.0: one tie group at positions 1 and 2.
        assert_eq!(average_ranks(&[0.0, -0.0, f64::INFINITY]), vec![1.5, 1.5, 3.0]);
        assert!(average_ranks(&[]).is_empty());
        assert!(average_ranks(&[1.0, f64::NAN]).iter().all(|r| r.is_nan()));
    }

    proptest! {
        #[test]
        fn ranks_sum_to_n_n_plus_1_over_2(x in prop::collection::vec(-5i32..5, 0..200)) {
            let x: Vec<f64> = x.into_iter().map(f64::from).collect();
            let n = x.len() as f64;
            let sum: f64 = average_ranks(&x).iter().sum();
            prop_assert_eq!(sum, n * (n + 1.0) / 2.0);
        }

        #[test]
        fn ranks_preserve_order(x in prop::collection::vec(-1e3f64..1e3, 0..100)) {
            let r = average_ranks(&x);
            for i in 0..x.len() {
                for j in 0..x.len() {
                    prop_assert_eq!(x[i].partial_cmp(&x[j]), r[i].partial_cmp(&r[j]));
                }
            }
        }
    }
}
