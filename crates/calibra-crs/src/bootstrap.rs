//! The paired-seed bootstrap of the CRS (spec §5.1).
//!
//! Each replicate `r` draws `S` seed indices with replacement from the `S` seeds of the run set (the
//! sorted union, `SeedTable::seeds`) — the **same draw for every encoder and cell** (paired). It then
//! recomputes, in order: the metric-row means under the drawn seed multiplicities
//! (`SeedTable::weighted_means_of_into`, for the metrics the axes read), the per-cell axes and encoder profiles (`AxisPlan`), the anchors
//! (min and max of the replicate panel on each oriented axis: every encoder of the run set is a panel
//! member) and the CRS of every encoder. It reports per encoder:
//!
//! - the point CRS (all seeds, weight 1 each);
//! - the percentile interval of the replicate CRS at `(1 − level)/2` and `(1 + level)/2` (default
//!   level 0.95), with numpy's default (linear) percentile interpolation: for sorted values `x_0 ≤ … ≤
//!   x_{R−1}` and quantile `q`, `h = (R − 1)q`, value `x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋)`;
//! - `P(rank 1)` and `P(top 3)`: the fraction of replicates in which the encoder's CRS is the highest /
//!   among the three highest (ties broken by encoder order, so exactly one encoder has rank 1 in every
//!   replicate and the `P(rank 1)` sum to 1).
//!
//! A replicate in which some encoder has no observed value on an axis (possible only when a group lacks
//! every drawn seed), or whose panel has no spread on an axis, cannot be scored; it is dropped and counted in `dropped_replicates`, and the
//! statistics use the remaining replicates.
//!
//! **Determinism**: replicate `r` uses its own `ChaCha8Rng` seeded with `seed` on stream `r`, so its draw
//! does not depend on which thread runs it. The draws are made in parallel with rayon; a replicate's CRS
//! depends only on its seed multiplicities, so each distinct draw (at most `C(2S−1, S)`, 126 for 5
//! seeds) is scored once, in parallel, and counted with its multiplicity. Distinct draws are numbered
//! in replicate order and every reduction (ranks, sorted samples, percentiles) is exact on counts, so
//! the output is bit-identical to scoring every replicate on its own, at any thread count.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::axes::{AxisConfig, AxisPlan};
use crate::error::CrsError;
use crate::metric_rows::SeedTable;
use crate::normalize::Anchors;
use crate::profile::Profile;
use crate::score::{ScoreWeights, crs_components};

/// Default number of bootstrap replicates.
pub const DEFAULT_REPLICATES: usize = 10_000;

/// Bootstrap settings.
#[derive(Debug, Clone, PartialEq)]
pub struct BootstrapConfig {
    /// Number of replicates (≥ 1).
    pub replicates: usize,
    /// Seed of the replicate random streams.
    pub seed: u64,
    /// Interval level in (0, 1).
    pub level: f64,
    /// CRS axis and component weights.
    pub weights: ScoreWeights,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            replicates: DEFAULT_REPLICATES,
            seed: 0,
            level: 0.95,
            weights: ScoreWeights::default(),
        }
    }
}

/// One encoder's bootstrap summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderBootstrap {
    pub encoder: String,
    /// CRS of the full data (every seed once).
    pub crs: f64,
    pub lower: f64,
    pub upper: f64,
    pub p_rank1: f64,
    pub p_top3: f64,
}

/// The bootstrap result, encoders in sorted-name order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BootstrapResult {
    pub replicates: usize,
    pub dropped_replicates: usize,
    pub seed: u64,
    pub level: f64,
    pub encoders: Vec<EncoderBootstrap>,
}

/// The seed multiplicities of replicate `r`: `n_seeds` uniform draws with replacement.
pub fn replicate_weights(seed: u64, r: u64, n_seeds: usize) -> Vec<u32> {
    let mut weights = vec![0u32; n_seeds];
    replicate_weights_into(seed, r, &mut weights);
    weights
}

/// [`replicate_weights`] written into `weights` (one entry per seed, overwritten).
pub fn replicate_weights_into(seed: u64, r: u64, weights: &mut [u32]) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(r);
    let n_seeds = weights.len();
    weights.fill(0);
    for _ in 0..n_seeds {
        weights[rng.random_range(0..n_seeds)] += 1;
    }
}

/// numpy's default (linear) percentile of sorted values at quantile `q ∈ [0, 1]`.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// [`percentile_sorted`] of the multiset whose sorted distinct values are `counted` (value, count),
/// `n` values in all (the sum of the counts, ≥ 1): the same two order statistics and the same
/// interpolation, so the result is bit-identical to expanding the multiset and calling
/// [`percentile_sorted`].
fn percentile_counted(counted: &[(f64, usize)], n: usize, q: f64) -> f64 {
    let h = (n - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let at = |index: usize| {
        let mut seen = 0;
        for &(v, c) in counted {
            seen += c;
            if index < seen {
                return v;
            }
        }
        unreachable!("index {index} below the total count {n}")
    };
    let (x_lo, x_hi) = (at(lo), at(hi));
    x_lo + (h - lo as f64) * (x_hi - x_lo)
}

/// CRS of every panel member (k ∈ R) with anchors = the panel's min/max per axis, through the crate's
/// one CRS implementation ([`Anchors::from_panel`], [`crs_components`]).
///
/// Errors: [`CrsError::DegenerateAnchor`] when the panel has no spread on an axis.
pub fn panel_crs<P: AsRef<[f64]>>(profiles: &[P], weights: &ScoreWeights) -> Result<Vec<f64>, CrsError> {
    let anchors = Anchors::from_panel(profiles)?;
    let normalized: Vec<Vec<f64>> = profiles.iter().map(|p| anchors.normalize(p.as_ref())).collect();
    Ok(normalized
        .iter()
        .enumerate()
        .map(|(k, s)| crs_components(s, &normalized, Some(k), weights).crs)
        .collect())
}

/// The CRS of every encoder (in `plan.encoders()` order) for one set of seed multiplicities:
/// weighted metric means → cell axes → encoder profiles → panel anchors → CRS. `None` when an encoder
/// has no value on some axis or the panel has no spread on an axis (the replicate cannot be scored).
/// `means` is a scratch buffer.
pub fn replicate_crs(
    table: &SeedTable,
    plan: &AxisPlan,
    seed_weights: &[u32],
    weights: &ScoreWeights,
    means: &mut Vec<f64>,
) -> Option<Vec<f64>> {
    table.weighted_means_of_into(seed_weights, &plan.metric_indices(), means);
    crs_of_means(plan, means, weights)
}

/// Cell axes → encoder profiles → panel anchors → CRS from `[group][metric]` means (the tail of
/// [`replicate_crs`]).
fn crs_of_means(plan: &AxisPlan, means: &[f64], weights: &ScoreWeights) -> Option<Vec<f64>> {
    let values = plan.aggregate_values(&plan.evaluate_values(means));
    let complete: Option<Vec<Vec<f64>>> = values.iter().map(|v| v.iter().copied().collect()).collect();
    panel_crs(&complete?, weights).ok()
}

/// Runs the paired-seed bootstrap (see the module docs).
///
/// Errors: zero replicates, a level outside (0, 1), an axis plan that cannot be resolved, an encoder
/// whose full-data profile misses an axis, fewer than two encoders, or no scorable replicate.
pub fn paired_seed_bootstrap(
    table: &SeedTable,
    axes: &AxisConfig,
    config: &BootstrapConfig,
) -> Result<BootstrapResult, CrsError> {
    let plan = bootstrap_plan(table, axes, config)?;
    let n_seeds = table.seeds().len();
    let mut point_means = Vec::new();
    table.weighted_means_into(&vec![1; n_seeds], &mut point_means);
    let point_profiles = plan.profiles(&point_means);
    let complete = point_profiles.iter().map(Profile::require_complete).collect::<Result<Vec<_>, _>>()?;
    let point = panel_crs(&complete, &config.weights)?;

    // Replicate r's CRS is a function of its seed multiplicities only, and with few seeds many
    // replicates draw the same multiplicities (5 seeds: at most 126 distinct draws). Each distinct draw
    // is scored once, by the same `replicate_crs`, so every replicate's values are bit-identical to
    // scoring it on its own; the reduction below runs in replicate order over the multiplicities.
    let (distinct, multiplicity) = distinct_draws(config, n_seeds);
    let slots = plan.metric_slots();
    let scored: Vec<Option<Vec<f64>>> = distinct
        .par_iter()
        .map_init(Vec::new, |means, draw| {
            // `replicate_crs` restricted to the slots the plan reads (the others are never read).
            table.weighted_means_at_into(draw, &slots, means);
            crs_of_means(&plan, means, &config.weights)
        })
        .collect();

    // (CRS per encoder, multiplicity) of every scorable distinct draw, in first-replicate order.
    let valid: Vec<(&[f64], usize)> =
        scored.iter().zip(&multiplicity).filter_map(|(crs, &m)| Some((crs.as_deref()?, m))).collect();
    let n_valid: usize = valid.iter().map(|v| v.1).sum();
    if n_valid == 0 {
        return Err(CrsError::InvalidParameter {
            name: "bootstrap",
            message: "no replicate could be scored (every draw left an encoder without an axis)".to_string(),
        });
    }
    Ok(BootstrapResult {
        replicates: config.replicates,
        dropped_replicates: config.replicates - n_valid,
        seed: config.seed,
        level: config.level,
        encoders: encoder_intervals(plan.encoders(), &point, &valid, n_valid, config.level),
    })
}

/// The axis plan of a valid bootstrap request: replicates ≥ 1, a level in (0, 1), as many axis weights
/// as axes and at least 2 encoders.
fn bootstrap_plan(
    table: &SeedTable,
    axes: &AxisConfig,
    config: &BootstrapConfig,
) -> Result<AxisPlan, CrsError> {
    if config.replicates == 0 || !(config.level > 0.0 && config.level < 1.0) {
        return Err(CrsError::InvalidParameter {
            name: "bootstrap",
            message: format!(
                "need replicates ≥ 1 and a level in (0, 1), got {} and {}",
                config.replicates, config.level
            ),
        });
    }
    let plan = AxisPlan::new(table.groups(), table.metrics(), axes)?;
    if config.weights.axis.len() != plan.n_axes() {
        return Err(CrsError::InvalidParameter {
            name: "bootstrap",
            message: format!(
                "{} axis weights for a CRS of {} axes",
                config.weights.axis.len(),
                plan.n_axes()
            ),
        });
    }
    let n_encoders = plan.encoders().len();
    if n_encoders < 2 {
        return Err(CrsError::InvalidParameter {
            name: "bootstrap",
            message: format!("the CRS panel needs at least 2 encoders, the run set has {n_encoders}"),
        });
    }
    Ok(plan)
}

/// Every replicate's seed multiplicities, deduplicated: the distinct draws in first-replicate order
/// and how many replicates drew each.
fn distinct_draws(config: &BootstrapConfig, n_seeds: usize) -> (Vec<Vec<u32>>, Vec<usize>) {
    let mut draws = vec![0u32; config.replicates * n_seeds];
    draws
        .par_chunks_mut(n_seeds.max(1))
        .enumerate()
        .for_each(|(r, draw)| replicate_weights_into(config.seed, r as u64, draw));
    let mut distinct_index: HashMap<&[u32], usize> = HashMap::new();
    let mut distinct: Vec<Vec<u32>> = Vec::new();
    let mut multiplicity: Vec<usize> = Vec::new();
    for draw in draws.chunks(n_seeds.max(1)) {
        let d = *distinct_index.entry(draw).or_insert_with(|| {
            distinct.push(draw.to_vec());
            multiplicity.push(0);
            distinct.len() - 1
        });
        multiplicity[d] += 1;
    }
    (distinct, multiplicity)
}

/// Each encoder's point CRS with its percentile interval and rank-1 / top-3 probabilities over the
/// `valid` draws (CRS per encoder, multiplicity; `n_valid` replicates in all).
fn encoder_intervals(
    encoders: &[String],
    point: &[f64],
    valid: &[(&[f64], usize)],
    n_valid: usize,
    level: f64,
) -> Vec<EncoderBootstrap> {
    let n_encoders = encoders.len();
    let mut rank1 = vec![0usize; n_encoders];
    let mut top3 = vec![0usize; n_encoders];
    let mut order: Vec<usize> = (0..n_encoders).collect();
    for &(crs, m) in valid {
        order.sort_by(|&i, &j| crs[j].total_cmp(&crs[i]).then(i.cmp(&j)));
        rank1[order[0]] += m;
        for &e in order.iter().take(3) {
            top3[e] += m;
        }
    }
    let total = n_valid as f64;
    let (q_lo, q_hi) = ((1.0 - level) / 2.0, (1.0 + level) / 2.0);
    let mut samples: Vec<(f64, usize)> = Vec::with_capacity(valid.len());
    encoders
        .iter()
        .enumerate()
        .map(|(e, encoder)| {
            samples.clear();
            samples.extend(valid.iter().map(|&(crs, m)| (crs[e], m)));
            samples.sort_by(|a, b| a.0.total_cmp(&b.0));
            EncoderBootstrap {
                encoder: encoder.clone(),
                crs: point[e],
                lower: percentile_counted(&samples, n_valid, q_lo),
                upper: percentile_counted(&samples, n_valid, q_hi),
                p_rank1: rank1[e] as f64 / total,
                p_top3: top3[e] as f64 / total,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicate_weights_are_a_resample_and_depend_only_on_seed_and_index() {
        for r in 0..50 {
            let w = replicate_weights(7, r, 5);
            assert_eq!(w.iter().sum::<u32>(), 5);
            assert_eq!(w, replicate_weights(7, r, 5));
        }
        let distinct: std::collections::BTreeSet<Vec<u32>> =
            (0..50).map(|r| replicate_weights(7, r, 5)).collect();
        assert!(distinct.len() > 10, "streams must differ between replicates");
    }

    #[test]
    fn percentile_matches_linear_interpolation() {
        // Exact by construction: h = 3·0.5 = 1.5 → halfway between 1 and 2.
        assert_eq!(percentile_sorted(&[0.0, 1.0, 2.0, 3.0], 0.5), 1.5);
        assert_eq!(percentile_sorted(&[0.0, 1.0, 2.0, 3.0], 0.0), 0.0);
        assert_eq!(percentile_sorted(&[0.0, 1.0, 2.0, 3.0], 1.0), 3.0);
        assert_eq!(percentile_sorted(&[5.0], 0.975), 5.0);
    }

    proptest::proptest! {
        #[test]
        fn counted_percentile_is_the_percentile_of_the_expanded_multiset(
            mut counted in proptest::collection::vec((-1.0f64..1.0, 1usize..5), 1..20),
            q in 0.0f64..=1.0,
        ) {
            counted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let expanded: Vec<f64> =
                counted.iter().flat_map(|&(v, c)| std::iter::repeat_n(v, c)).collect();
            let n = expanded.len();
            proptest::prop_assert_eq!(
                percentile_counted(&counted, n, q).to_bits(),
                percentile_sorted(&expanded, q).to_bits()
            );
        }
    }
}
