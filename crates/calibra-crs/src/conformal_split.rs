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

    /// ln C(n, i) p^i (1 − p)^(n − i) summed for i < c: P(Binomial(n, p) < c).
    fn lower_tail(n: usize, p: f64, c: usize) -> f64 {
        let ln_fact: Vec<f64> = (0..=n)
            .scan(0.0, |acc, i| {
                if i > 0 {
                    *acc += (i as f64).ln();
                }
                Some(*acc)
            })
            .collect();
        (0..c)
            .map(|i| {
                (ln_fact[n] - ln_fact[i] - ln_fact[n - i]
                    + i as f64 * p.ln()
                    + (n - i) as f64 * (1.0 - p).ln())
                .exp()
            })
            .sum()
    }

    /// The evaluator's split keeps split conformal valid: over `S` seeds, each a fresh exchangeable test
    /// set split into halves, ONE evaluation-half row per seed is covered by the calibration half's LAC
    /// set with probability ≥ 1 − α, so the count is Binomial(S, p ≥ 1 − α). The test fails below the
    /// critical value `c` with `P(Binomial(S, 1 − α) < c) ≤ 1e-6` (the false-alarm rate for a valid
    /// split); fixed seeds make it deterministic.
    #[test]
    fn marginal_coverage_of_the_halves_passes_a_binomial_test() {
        use calibra_calibrate::{ConformalMethod, ConformalPredictor};
        const SEEDS: usize = 2000;
        const N: usize = 41;
        const K: usize = 3;
        let alpha = 0.2;
        let mut c = 0;
        while lower_tail(SEEDS, 1.0 - alpha, c + 1) <= 1e-6 {
            c += 1;
        }
        assert!(((1.0 - alpha - 0.05) * SEEDS as f64) < c as f64, "critical value {c} gives no power");
        let mut covered = 0;
        for s in 0..SEEDS as u64 {
            // Miscalibrated synthetic rows: probabilities softmax(z), labels drawn from softmax(2z).
            let u = uniform_draws(1_000_003 * s + 11, N * (K + 1));
            let (mut probs, mut labels, mut ids) = (Vec::new(), Vec::new(), Vec::new());
            for r in 0..N {
                let z: Vec<f64> = (0..K).map(|k| 3.0 * (u[r * (K + 1) + k] - 0.5)).collect();
                let soft = |t: f64| {
                    let e: Vec<f64> = z.iter().map(|v| (t * v).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    e.into_iter().map(|v| v / sum).collect::<Vec<f64>>()
                };
                probs.push(soft(1.0));
                let (truth, draw) = (soft(2.0), u[r * (K + 1) + K]);
                let mut acc = 0.0;
                labels.push(
                    (0..K)
                        .find(|&k| {
                            acc += truth[k];
                            draw < acc
                        })
                        .unwrap_or(K - 1),
                );
                ids.push(format!("id{r:02}"));
            }
            let halves = ConformalHalves::split(&ids, split_seed(s, 0));
            let pick = |half: &HashSet<String>| -> Vec<usize> {
                (0..N).filter(|&r| half.contains(&ids[r])).collect()
            };
            let (cal, eval) = (pick(&halves.calibration), pick(&halves.evaluation));
            let flat: Vec<f64> = cal.iter().flat_map(|&r| probs[r].clone()).collect();
            let y: Vec<usize> = cal.iter().map(|&r| labels[r]).collect();
            let fitted =
                ConformalPredictor::fit(ConformalMethod::Lac, &flat, K, &y, alpha, &vec![0.0; cal.len()])
                    .unwrap();
            let test = eval[0];
            let set = &fitted.predict(&probs[test], K, &[0.0]).unwrap()[0];
            covered += usize::from(set.contains(&labels[test]));
        }
        assert!(
            covered >= c,
            "{covered} of {SEEDS} covered, below the critical value {c} (false-alarm rate 1e-6)"
        );
    }

    #[test]
    fn split_seed_wraps() {
        assert_eq!(split_seed(0, 7), 7);
        assert_eq!(split_seed(2, 1), SEED_MULTIPLIER.wrapping_mul(2).wrapping_add(1));
    }
}
