//! Adaptation deltas (spec §6; FOCUS §K): adapted − base on the same test set, with paired bootstrap
//! intervals and p-values, and Benjamini–Hochberg adjustment within each metric family.
//!
//! For a base run (regime `frozen`) and an adapted run (`lora`, `coop` or `full`) predicting the same
//! test samples (rows aligned by sample id), and a metric `M`:
//!
//! - point delta `Δ = M(adapted) − M(base)` on all samples (positive favours AUROC and accuracy,
//!   negative favours ECE and Brier);
//! - **paired bootstrap**: replicate `r` draws `n` row indices uniformly with replacement (the SAME
//!   indices for both runs) and computes `Δ*_r = M(adapted[idx]) − M(base[idx])`; replicates where either
//!   value is undefined (an AUROC resample with one class) are left out and counted;
//! - interval: numpy's linear percentiles of the defined `Δ*` at `(1 − level)/2` and `(1 + level)/2`;
//! - two-sided bootstrap p-value of `Δ = 0`:
//!   `p = min(1, 2 · min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0}) / (B_def + 1))`, `B_def` the defined replicates
//!   (the `+1` keeps p > 0 with finitely many replicates);
//! - `p_adjusted`: [`benjamini_hochberg`] over every pair's p-value of the same metric (one family per
//!   metric), see [`adjust_within_metric_families`].
//!
//! **Cost**: each run is prepared once per pair ([`ResampledMetrics`]: scores sorted per column, rows
//! validated, per-row ECE bin / Brier / accuracy terms computed), and a replicate then costs `O(n·K)`
//! per metric and run with no sorting, validation or per-row allocation; its values are those of
//! [`SampleTable::metric`] on the materialised resample, bit for bit (issue 9: the bootstrap dominated
//! `calibra eval` / `calibra report`).
//!
//! **Determinism**: replicate `r` draws from its own `ChaCha8Rng` seeded with `seed` on stream `r`;
//! replicates run in parallel (rayon) and are collected in replicate order, so results are identical
//! for any thread count.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::bootstrap::percentile_sorted;
use crate::multiple_testing::benjamini_hochberg;
use crate::sample_metrics::{Resample, ResampledMetrics, SampleMetric, SampleTable};

/// Settings of the paired bootstrap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedBootstrapConfig {
    /// Replicates (default 2,000).
    pub replicates: usize,
    pub seed: u64,
    /// Interval level in (0, 1) (default 0.95).
    pub level: f64,
    /// ECE bins (default 15).
    pub n_bins: usize,
}

impl Default for PairedBootstrapConfig {
    fn default() -> Self {
        PairedBootstrapConfig { replicates: 2_000, seed: 0, level: 0.95, n_bins: 15 }
    }
}

/// One metric's adapted − base delta with its paired bootstrap uncertainty.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeltaEstimate {
    pub metric: SampleMetric,
    pub base: Option<f64>,
    pub adapted: Option<f64>,
    /// `adapted − base`; `None` when either is undefined.
    pub delta: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    pub p_value: Option<f64>,
    /// Benjamini–Hochberg adjusted within the metric's family (set by
    /// [`adjust_within_metric_families`]).
    pub p_adjusted: Option<f64>,
    /// Replicates where both values were defined.
    pub replicates_defined: usize,
}

/// The row indices of replicate `r`: `n` uniform draws from `0..n` with replacement.
pub fn replicate_indices(seed: u64, r: u64, n: usize) -> Vec<usize> {
    let mut rows = Vec::with_capacity(n);
    fill_replicate_indices(seed, r, n, &mut rows);
    rows
}

/// Appends the row indices of replicate `r` ([`replicate_indices`]) to `rows`.
fn fill_replicate_indices(seed: u64, r: u64, n: usize, rows: &mut Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(r);
    rows.extend((0..n).map(|_| rng.random_range(0..n)));
}

/// Summarises point values and replicate deltas into a [`DeltaEstimate`] (`p_adjusted` unset).
fn summarise(
    metric: SampleMetric,
    base: Option<f64>,
    adapted: Option<f64>,
    mut replicate_deltas: Vec<f64>,
    level: f64,
) -> DeltaEstimate {
    let delta = base.zip(adapted).map(|(b, a)| a - b);
    let b = replicate_deltas.len();
    let (lower, upper, p_value) = if b == 0 || delta.is_none() {
        (None, None, None)
    } else {
        replicate_deltas.sort_by(f64::total_cmp);
        let le = replicate_deltas.iter().filter(|&&d| d <= 0.0).count();
        let ge = replicate_deltas.iter().filter(|&&d| d >= 0.0).count();
        let p = (2.0 * (1 + le.min(ge)) as f64 / (b + 1) as f64).min(1.0);
        (
            Some(percentile_sorted(&replicate_deltas, (1.0 - level) / 2.0)),
            Some(percentile_sorted(&replicate_deltas, (1.0 + level) / 2.0)),
            Some(p),
        )
    };
    DeltaEstimate {
        metric,
        base,
        adapted,
        delta,
        lower,
        upper,
        p_value,
        p_adjusted: None,
        replicates_defined: b,
    }
}

/// Per replicate, the delta of every metric (`None` where undefined).
fn replicate_deltas(
    base: &ResampledMetrics<'_>,
    adapted: &ResampledMetrics<'_>,
    metrics: &[SampleMetric],
    resample: &Resample,
) -> Vec<Option<f64>> {
    metrics.iter().map(|&m| Some(adapted.metric(m, resample)? - base.metric(m, resample)?)).collect()
}

fn collect(
    base: &ResampledMetrics<'_>,
    adapted: &ResampledMetrics<'_>,
    metrics: &[SampleMetric],
    per_replicate: Vec<Vec<Option<f64>>>,
    level: f64,
) -> Vec<DeltaEstimate> {
    let all = Resample::all(base.table().len());
    metrics
        .iter()
        .enumerate()
        .map(|(j, &m)| {
            let deltas: Vec<f64> = per_replicate.iter().filter_map(|r| r[j]).collect();
            summarise(m, base.metric(m, &all), adapted.metric(m, &all), deltas, level)
        })
        .collect()
}

/// Paired bootstrap deltas with explicit replicate draws (each a list of row indices): the
/// deterministic core of [`paired_bootstrap_deltas`], also used to check it against an oracle.
///
/// # Panics
/// If the tables differ in length, a draw holds an out-of-range index or `n_bins == 0`.
pub fn paired_deltas_with_draws(
    base: &SampleTable,
    adapted: &SampleTable,
    metrics: &[SampleMetric],
    draws: &[Vec<usize>],
    level: f64,
    n_bins: usize,
) -> Vec<DeltaEstimate> {
    assert_eq!(base.len(), adapted.len(), "paired runs need the same test rows");
    let (base, adapted) = (ResampledMetrics::new(base, n_bins), ResampledMetrics::new(adapted, n_bins));
    let n = base.table().len();
    let per_replicate: Vec<Vec<Option<f64>>> = draws
        .par_iter()
        .map_init(Resample::default, |resample, rows| {
            resample.refill(n, |buffer| buffer.extend_from_slice(rows));
            replicate_deltas(&base, &adapted, metrics, resample)
        })
        .collect();
    collect(&base, &adapted, metrics, per_replicate, level)
}

/// Paired bootstrap deltas with seeded draws ([`replicate_indices`]); rows of `base` and `adapted` must
/// be aligned (row `i` is the same test sample in both).
///
/// Each table is prepared once ([`ResampledMetrics`]: sorted, validated, per-row terms computed); a
/// replicate then costs `O(n·K)` per metric and run, with the values [`SampleTable::metric`] gives on
/// the materialised resample, bit for bit.
///
/// # Panics
/// If the tables differ in length or `config.n_bins == 0`.
pub fn paired_bootstrap_deltas(
    base: &SampleTable,
    adapted: &SampleTable,
    metrics: &[SampleMetric],
    config: &PairedBootstrapConfig,
) -> Vec<DeltaEstimate> {
    assert_eq!(base.len(), adapted.len(), "paired runs need the same test rows");
    let n = base.len();
    let (base, adapted) =
        (ResampledMetrics::new(base, config.n_bins), ResampledMetrics::new(adapted, config.n_bins));
    let per_replicate: Vec<Vec<Option<f64>>> = (0..config.replicates as u64)
        .into_par_iter()
        .map_init(Resample::default, |resample, r| {
            resample.refill(n, |buffer| fill_replicate_indices(config.seed, r, n, buffer));
            replicate_deltas(&base, &adapted, metrics, resample)
        })
        .collect();
    collect(&base, &adapted, metrics, per_replicate, config.level)
}

/// Sets `p_adjusted` of every estimate: Benjamini–Hochberg over the p-values of the same metric
/// (estimates without a p-value are not part of the family).
pub fn adjust_within_metric_families<'a>(estimates: impl IntoIterator<Item = &'a mut DeltaEstimate>) {
    let mut estimates: Vec<&mut DeltaEstimate> = estimates.into_iter().collect();
    for metric in SampleMetric::ALL {
        let idx: Vec<usize> = (0..estimates.len())
            .filter(|&i| estimates[i].metric == metric && estimates[i].p_value.is_some())
            .collect();
        let p: Vec<f64> = idx.iter().map(|&i| estimates[i].p_value.unwrap_or(f64::NAN)).collect();
        for (&i, q) in idx.iter().zip(benjamini_hochberg(&p)) {
            estimates[i].p_adjusted = Some(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample_metrics::SampleTargets;

    fn table(p1: &[f64], labels: &[usize]) -> SampleTable {
        let ids = (0..p1.len()).map(|i| i.to_string()).collect();
        SampleTable::new(
            ids,
            2,
            p1.iter().flat_map(|&p| [1.0 - p, p]).collect(),
            SampleTargets::Classes(labels.to_vec()),
        )
    }

    fn pair(n: usize) -> (SampleTable, SampleTable) {
        let labels: Vec<usize> = (0..n).map(|i| i % 2).collect();
        // Base: weak scores; adapted: a clearly better separation.
        let base: Vec<f64> = (0..n).map(|i| 0.5 + 0.1 * ((i * 7 % 11) as f64 / 11.0 - 0.5)).collect();
        let adapted: Vec<f64> =
            (0..n).map(|i| if i % 2 == 1 { 0.8 } else { 0.2 } + 0.05 * ((i * 3 % 5) as f64 / 5.0)).collect();
        (table(&base, &labels), table(&adapted, &labels))
    }

    #[test]
    fn seeded_bootstrap_is_deterministic_across_thread_counts() {
        let (b, a) = pair(60);
        let config = PairedBootstrapConfig { replicates: 200, seed: 9, ..Default::default() };
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| paired_bootstrap_deltas(&b, &a, &SampleMetric::ALL, &config))
        };
        assert_eq!(run(1), run(3));
        // The seeded draws are exactly what the explicit-draw core sees.
        let draws: Vec<Vec<usize>> = (0..200).map(|r| replicate_indices(9, r, 60)).collect();
        assert_eq!(run(2), paired_deltas_with_draws(&b, &a, &SampleMetric::ALL, &draws, 0.95, 15));
    }

    /// Today's definition of the bootstrap, kept as the oracle: every replicate materialises its rows
    /// and evaluates [`SampleTable::metric`] on both runs.
    fn materialising_oracle(
        base: &SampleTable,
        adapted: &SampleTable,
        config: &PairedBootstrapConfig,
    ) -> Vec<DeltaEstimate> {
        let n = base.len();
        let all: Vec<usize> = (0..n).collect();
        SampleMetric::ALL
            .iter()
            .map(|&m| {
                let deltas: Vec<f64> = (0..config.replicates as u64)
                    .filter_map(|r| {
                        let rows = replicate_indices(config.seed, r, n);
                        Some(
                            adapted.metric(m, &rows, config.n_bins)?
                                - base.metric(m, &rows, config.n_bins)?,
                        )
                    })
                    .collect();
                summarise(
                    m,
                    base.metric(m, &all, config.n_bins),
                    adapted.metric(m, &all, config.n_bins),
                    deltas,
                    config.level,
                )
            })
            .collect()
    }

    #[test]
    fn equals_the_materialising_oracle() {
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        for case in 0..40 {
            let n = rng.random_range(2..30usize);
            let k = rng.random_range(2..5usize);
            let ids: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            // Scores on a coarse grid (many ties); small n gives single-class (undefined) resamples.
            let mut scores = |k: usize| -> Vec<f64> {
                (0..n)
                    .flat_map(|_| {
                        let w: Vec<f64> = (0..k).map(|_| f64::from(rng.random_range(1u32..4))).collect();
                        let s: f64 = w.iter().sum();
                        w.into_iter().map(move |x| x / s)
                    })
                    .collect()
            };
            let (pb, pa) = (scores(k), scores(k));
            let (base, adapted) = if case % 2 == 0 {
                let classes: Vec<usize> = (0..n).map(|i| (i * 7 + case) % k).collect();
                (
                    SampleTable::new(ids.clone(), k, pb, SampleTargets::Classes(classes.clone())),
                    SampleTable::new(ids, k, pa, SampleTargets::Classes(classes)),
                )
            } else {
                let labels: Vec<Option<bool>> =
                    (0..n * k).map(|c| [None, Some(true), Some(false)][(c * 5 + case) % 3]).collect();
                (
                    SampleTable::new(ids.clone(), k, pb, SampleTargets::Labels(labels.clone())),
                    SampleTable::new(ids, k, pa, SampleTargets::Labels(labels)),
                )
            };
            let config = PairedBootstrapConfig { replicates: 60, seed: case as u64, ..Default::default() };
            let fast = paired_bootstrap_deltas(&base, &adapted, &SampleMetric::ALL, &config);
            // Bit-for-bit equal: the fast path sums the same terms in the same order.
            assert_eq!(fast, materialising_oracle(&base, &adapted, &config), "case {case}");
        }
    }

    #[test]
    fn a_clear_improvement_has_a_positive_interval_and_small_p() {
        let (b, a) = pair(80);
        let config = PairedBootstrapConfig { replicates: 400, seed: 1, ..Default::default() };
        let d = paired_bootstrap_deltas(&b, &a, &[SampleMetric::MacroAuroc], &config);
        let d = &d[0];
        // Adapted separates perfectly: AUROC 1 (exact), so Δ = 1 − AUROC(base) > 0.
        assert_eq!(d.adapted, Some(1.0));
        assert!(d.lower.unwrap() > 0.0 && d.lower <= d.delta && d.delta <= d.upper, "{d:?}");
        // Every replicate delta is > 0: p = 2 / (B + 1).
        assert_eq!(d.p_value, Some(2.0 / (d.replicates_defined + 1) as f64));
    }

    #[test]
    fn identical_runs_have_zero_delta_and_p_one() {
        let (b, _) = pair(40);
        let d = paired_bootstrap_deltas(
            &b,
            &b,
            &SampleMetric::ALL,
            &PairedBootstrapConfig { replicates: 50, ..Default::default() },
        );
        for e in &d {
            assert_eq!((e.delta, e.lower, e.upper, e.p_value), (Some(0.0), Some(0.0), Some(0.0), Some(1.0)));
        }
    }

    #[test]
    fn bh_runs_within_each_metric_family() {
        let mk = |metric, p| DeltaEstimate {
            metric,
            base: None,
            adapted: None,
            delta: None,
            lower: None,
            upper: None,
            p_value: Some(p),
            p_adjusted: None,
            replicates_defined: 1,
        };
        let mut v =
            [mk(SampleMetric::Ece, 0.01), mk(SampleMetric::MacroAuroc, 0.01), mk(SampleMetric::Ece, 0.04)];
        adjust_within_metric_families(v.iter_mut());
        // ECE family m = 2: 0.01·2/1 = 0.02, 0.04·2/2 = 0.04; AUROC family m = 1: unchanged.
        assert_eq!(v[0].p_adjusted, Some(0.02));
        assert_eq!(v[1].p_adjusted, Some(0.01));
        assert_eq!(v[2].p_adjusted, Some(0.04));
    }

    proptest::proptest! {
        /// Swapping base and adapted negates every delta, mirrors the interval and keeps the p-value.
        #[test]
        fn swapping_the_runs_mirrors_the_deltas(
            p in proptest::collection::vec((0.01f64..0.99, 0.01f64..0.99), 12..30),
            seed in 0u64..1000,
        ) {
            let labels: Vec<usize> = (0..p.len()).map(|i| i % 2).collect();
            let b = table(&p.iter().map(|x| x.0).collect::<Vec<_>>(), &labels);
            let a = table(&p.iter().map(|x| x.1).collect::<Vec<_>>(), &labels);
            let config = PairedBootstrapConfig { replicates: 40, seed, ..Default::default() };
            let fwd = paired_bootstrap_deltas(&b, &a, &SampleMetric::ALL, &config);
            let back = paired_bootstrap_deltas(&a, &b, &SampleMetric::ALL, &config);
            let near = |x: Option<f64>, y: Option<f64>| match (x, y) {
                (Some(x), Some(y)) => (x + y).abs() <= 1e-12,
                (None, None) => true,
                _ => false,
            };
            for (f, r) in fwd.iter().zip(&back) {
                proptest::prop_assert!(near(f.delta, r.delta));
                proptest::prop_assert!(near(f.lower, r.upper) && near(f.upper, r.lower));
                proptest::prop_assert_eq!(f.p_value, r.p_value);
                proptest::prop_assert_eq!(f.replicates_defined, r.replicates_defined);
            }
        }
    }
}
