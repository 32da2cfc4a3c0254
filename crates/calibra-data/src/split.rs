//! Train / calibration / test splits and nested label fractions: stratified, seeded, and keyed by
//! sample id, so the same ids land in the same split whatever the manifest order or thread count.
//!
//! **Order key.** Every sample gets `key = first 8 bytes of SHA-256("calibra-split", seed, id)`
//! (fractions use the tag `"calibra-fraction"`); within a stratum samples are ordered by `(key, id)`.
//!
//! **Strata.** Multiclass/ordinal: the class. Multilabel: the rarest positive label of the sample
//! (rarity counted over the samples being split), or a "no positive label" stratum.
//!
//! **Splits.** For a stratum of `n` samples in key order with proportions `(t, c, s)` normalised to sum
//! 1, train is positions `[0, round(n t))`, calibration `[round(n t), round(n (t + c)))`, test the
//! rest. Official splits are respected: a sample whose source assigns a split keeps it; when the
//! source has no official calibration (or test) split, it is carved from the official train samples
//! with the same rule (train keeps the remaining share), so a format with only train/test (CheXpert)
//! or only train still yields three splits.
//!
//! **Label fractions.** For ρ ∈ (0, 1], within each stratum of the train split the first
//! `max(1, round(ρ n))` samples in fraction-key order are kept (every class keeps ≥ 1 example).
//! Multilabel adds a guarantee set: for every label, the first sample (in key order over the whole
//! pool) with a positive and the first with a negative value. Because the order does not depend on ρ
//! and the counts are monotone in ρ, the subsets are nested: ρ₁ < ρ₂ ⇒ S(ρ₁) ⊆ S(ρ₂) for one seed.

use crate::dataset::{Dataset, Split, Target};
use crate::error::DataError;
use crate::hashing::sha256_key;
use serde::Serialize;
use std::collections::BTreeMap;

/// The label fractions of the protocol.
pub const PROTOCOL_FRACTIONS: [f64; 5] = [0.01, 0.05, 0.10, 0.25, 1.0];

/// Split proportions and seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitConfig {
    pub train: f64,
    pub calibration: f64,
    pub test: f64,
    pub seed: u64,
    /// Respect the source's official splits (default true).
    pub use_official: bool,
}

impl Default for SplitConfig {
    /// 70 / 15 / 15, seed 0, official splits respected.
    fn default() -> Self {
        Self { train: 0.70, calibration: 0.15, test: 0.15, seed: 0, use_official: true }
    }
}

/// Sample indices (into `Dataset::samples`, ascending) of each split.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SplitAssignment {
    pub train: Vec<usize>,
    pub calibration: Vec<usize>,
    pub test: Vec<usize>,
}

impl SplitAssignment {
    /// The indices of one split.
    pub fn get(&self, split: Split) -> &[usize] {
        match split {
            Split::Train => &self.train,
            Split::Calibration => &self.calibration,
            Split::Test => &self.test,
        }
    }

    fn get_mut(&mut self, split: Split) -> &mut Vec<usize> {
        match split {
            Split::Train => &mut self.train,
            Split::Calibration => &mut self.calibration,
            Split::Test => &mut self.test,
        }
    }
}

/// The stratum of each sample among `pool` (see the module docs), as a map stratum → indices.
fn strata(dataset: &Dataset, pool: &[usize]) -> BTreeMap<usize, Vec<usize>> {
    let counts = dataset.class_counts(pool);
    let none = dataset.labels.len();
    let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &i in pool {
        let stratum = match &dataset.samples[i].target {
            Target::Class(c) => *c,
            Target::Labels(v) => v
                .iter()
                .enumerate()
                .filter(|(_, l)| **l == Some(true))
                .min_by_key(|(j, _)| (counts[*j], *j))
                .map_or(none, |(j, _)| j),
        };
        out.entry(stratum).or_default().push(i);
    }
    out
}

/// Sorts indices by their SHA-256 key for `(tag, seed, id)`, ties by id.
fn order_by_key(dataset: &Dataset, indices: &mut [usize], tag: &str, seed: u64) {
    let seed = seed.to_string();
    indices.sort_by_cached_key(|&i| {
        let id = &dataset.samples[i].id;
        (sha256_key(&[tag, &seed, id]), id.clone())
    });
}

/// Splits `pool` stratified into consecutive shares with the given weights (one output per weight).
fn stratified_shares(dataset: &Dataset, pool: &[usize], weights: &[f64], seed: u64) -> Vec<Vec<usize>> {
    let total: f64 = weights.iter().sum();
    let mut out = vec![Vec::new(); weights.len()];
    for (_, mut members) in strata(dataset, pool) {
        order_by_key(dataset, &mut members, "calibra-split", seed);
        let n = members.len() as f64;
        let mut start = 0;
        let mut cumulative = 0.0;
        for (k, w) in weights.iter().enumerate() {
            cumulative += w / total;
            let end = if k + 1 == weights.len() { members.len() } else { (n * cumulative).round() as usize };
            out[k].extend_from_slice(&members[start..end.max(start)]);
            start = end.max(start);
        }
    }
    out.iter_mut().for_each(|v| v.sort_unstable());
    out
}

/// Assigns every sample to train, calibration or test (see the module docs).
pub fn split_dataset(dataset: &Dataset, config: &SplitConfig) -> Result<SplitAssignment, DataError> {
    let w = [config.train, config.calibration, config.test];
    if w.iter().any(|x| !x.is_finite() || *x < 0.0) || config.train <= 0.0 {
        return Err(DataError::Invalid(format!(
            "split proportions must be finite and non-negative with train > 0, got {w:?}"
        )));
    }
    let mut out = SplitAssignment::default();
    let mut official: BTreeMap<Split, Vec<usize>> = BTreeMap::new();
    let mut free = Vec::new();
    for (i, s) in dataset.samples.iter().enumerate() {
        match s.official_split.filter(|_| config.use_official) {
            Some(split) => official.entry(split).or_default().push(i),
            None => free.push(i),
        }
    }
    // Free samples: the plain three-way rule.
    let shares = stratified_shares(dataset, &free, &w, config.seed);
    for (split, share) in Split::ALL.into_iter().zip(shares) {
        out.get_mut(split).extend(share);
    }
    // Official samples: keep their split, carve missing splits out of official train.
    if let Some(train) = official.remove(&Split::Train) {
        let missing: Vec<Split> =
            [Split::Calibration, Split::Test].into_iter().filter(|s| !official.contains_key(s)).collect();
        let mut weights = vec![config.train];
        weights.extend(missing.iter().map(|s| w[*s as usize]));
        let shares = stratified_shares(dataset, &train, &weights, config.seed);
        for (split, share) in std::iter::once(Split::Train).chain(missing).zip(shares) {
            out.get_mut(split).extend(share);
        }
    }
    for (split, members) in official {
        out.get_mut(split).extend(members);
    }
    for split in Split::ALL {
        out.get_mut(split).sort_unstable();
    }
    Ok(out)
}

/// The stratified, nested ρ-fraction of `pool` (normally the train split), as ascending indices.
/// `fraction` must be in (0, 1]; `1.0` returns the whole pool.
pub fn label_fraction(
    dataset: &Dataset,
    pool: &[usize],
    fraction: f64,
    seed: u64,
) -> Result<Vec<usize>, DataError> {
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(DataError::Invalid(format!("a label fraction must be in (0, 1], got {fraction}")));
    }
    let mut keep = Vec::new();
    for (_, mut members) in strata(dataset, pool) {
        order_by_key(dataset, &mut members, "calibra-fraction", seed);
        let k = ((fraction * members.len() as f64).round() as usize).clamp(1, members.len());
        keep.extend_from_slice(&members[..k]);
    }
    if matches!(dataset.labels.kind, crate::dataset::TaskKind::Multilabel) {
        let mut ordered = pool.to_vec();
        order_by_key(dataset, &mut ordered, "calibra-fraction", seed);
        for j in 0..dataset.labels.len() {
            for want in [true, false] {
                let first = ordered.iter().find(|&&i| match &dataset.samples[i].target {
                    Target::Labels(v) => v[j] == Some(want),
                    Target::Class(_) => false,
                });
                if let Some(&i) = first {
                    keep.push(i);
                }
            }
        }
    }
    keep.sort_unstable();
    keep.dedup();
    Ok(keep)
}
