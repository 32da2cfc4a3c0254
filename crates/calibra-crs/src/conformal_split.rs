//! Where the conformal calibration set of `calibra eval --selective` comes from.
//!
//! Run records carry the test-split predictions only (the runner's calibration split is consumed by
//! the post-hoc calibrators and not written), so each fit's **clean test predictions are split in two
//! halves** by a seeded, deterministic draw:
//!
//! 1. the sample ids of the clean predictions file are sorted (byte order), giving rows `0..n`;
//! 2. `u = uniform_draws(s, n)` (calibra-calibrate's SplitMix64 stream) with the split seed
//!    `s = eval_seed · 0x9E3779B97F4A7C15 + record_seed` (wrapping, u64);
//! 3. rows are ordered by ascending `u` (ties by row); the first `⌊n/2⌋` are the **conformal
//!    calibration half**, the rest the **evaluation half**.
//!
//! The split depends only on the ids, the eval seed and the fit's seed: fits of the same dataset and
//! seed (every encoder, regime, probe, calibrator and label fraction) calibrate on the same images,
//! so their coverages are paired. The quantile from the calibration half is applied to the clean
//! evaluation half, to each perturbed condition and to each shift target of the same fit; rows of
//! those whose id is in the calibration half are excluded (perturbed copies of calibration images
//! would not be exchangeable test points).

use std::collections::HashSet;

use calibra_calibrate::uniform_draws;

/// The multiplier of the eval seed in the split seed (the SplitMix64 increment).
const SEED_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// The split seed of a fit: `eval_seed · 0x9E3779B97F4A7C15 + record_seed` (wrapping).
pub fn split_seed(eval_seed: u64, record_seed: u64) -> u64 {
    eval_seed.wrapping_mul(SEED_MULTIPLIER).wrapping_add(record_seed)
}

/// The two halves of a clean test set, as sets of sample ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConformalHalves {
    /// Ids of the conformal calibration half (`⌊n/2⌋` samples).
    pub calibration: HashSet<String>,
    /// Ids of the evaluation half (`n − ⌊n/2⌋` samples).
    pub evaluation: HashSet<String>,
}

impl ConformalHalves {
    /// Splits `ids` (unique) with `seed` (from [`split_seed`]) as the module documentation says.
    pub fn split(ids: &[String], seed: u64) -> Self {
        let mut sorted: Vec<&String> = ids.iter().collect();
        sorted.sort();
        let u = uniform_draws(seed, sorted.len());
        let mut order: Vec<usize> = (0..sorted.len()).collect();
        order.sort_by(|&a, &b| u[a].total_cmp(&u[b]).then(a.cmp(&b)));
        let n_cal = sorted.len() / 2;
        let pick = |rows: &[usize]| rows.iter().map(|&r| sorted[r].clone()).collect::<HashSet<String>>();
        ConformalHalves { calibration: pick(&order[..n_cal]), evaluation: pick(&order[n_cal..]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i:03}")).collect()
    }

    #[test]
    fn halves_partition_the_ids_and_ignore_row_order() {
        let a = ids(101);
        let h = ConformalHalves::split(&a, split_seed(0, 3));
        assert_eq!((h.calibration.len(), h.evaluation.len()), (50, 51));
        assert!(h.calibration.is_disjoint(&h.evaluation));
        let mut reversed = a.clone();
        reversed.reverse();
        assert_eq!(ConformalHalves::split(&reversed, split_seed(0, 3)), h);
        // Another fit seed (or eval seed) draws another split.
        assert_ne!(ConformalHalves::split(&a, split_seed(0, 4)), h);
        assert_ne!(ConformalHalves::split(&a, split_seed(1, 3)), h);
    }

    #[test]
    fn split_seed_wraps() {
        assert_eq!(split_seed(0, 7), 7);
        assert_eq!(split_seed(2, 1), SEED_MULTIPLIER.wrapping_mul(2).wrapping_add(1));
    }
}
