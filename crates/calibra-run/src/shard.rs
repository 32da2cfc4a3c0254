//! `--shard I/N`: a deterministic 1/N of the fits, balanced by estimated cost.
//!
//! # Assignment
//!
//! The fits of the whole grid are assigned to the N shards greedily, **longest first**, with the
//! recipe's cost model ([`crate::cost`]):
//!
//! 1. every fit is weighed alone: its own cost plus the feature passes it needs, plus
//!    [`FIT_FLOOR`] (a frozen probe or a zero-shot fit costs ~0 in the model, but not nothing);
//! 2. the fits are sorted by that weight, heaviest first, ties by fit key (ascending);
//! 3. each fit in turn goes to the shard whose estimated cost *after* taking it is lowest — the fit's
//!    own cost plus the feature passes that shard does not compute yet (so frozen fits that share
//!    features gather on the shards that already pay for those features) plus the floor — ties to
//!    the shard with fewer fits, then to the lower index.
//!
//! Only fit keys and the cost model enter, both computed from the recipe, so the assignment is the
//! same on every machine and every call for the same recipe and N, whatever the order of the grid;
//! the N shards partition the grid exactly. Changing the recipe (adding a seed, an encoder) may move
//! fits between shards: a shard store then holds fits another shard also runs, which `calibra merge`
//! drops as identical duplicates.

use crate::cost::{CostModel, SetCost};
use crate::error::RunError;
use crate::grid::FitSpec;
use crate::recipe::Recipe;

/// The weight every fit carries in the assignment on top of its modelled cost (passes).
pub const FIT_FLOOR: f64 = 0.01;

/// Shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// One shard of an assignment: its fits, records and estimated cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardLoad {
    pub index: u64,
    pub fits: usize,
    pub records: usize,
    /// Estimated cost (passes), as `calibra run --dry-run --shard I/N` gives for that shard alone.
    pub passes: f64,
}

impl Shard {
    /// Parses `I/N` with `0 <= I < N`.
    pub fn parse(text: &str) -> Result<Shard, RunError> {
        let err = || RunError::Shard(text.to_string());
        let (i, n) = text.split_once('/').ok_or_else(err)?;
        let index: u64 = i.trim().parse().map_err(|_| err())?;
        let count: u64 = n.trim().parse().map_err(|_| err())?;
        if count == 0 || index >= count {
            return Err(err());
        }
        Ok(Shard { index, count })
    }

    /// The fits of `grid` (the whole grid of `recipe`) that belong to this shard, in grid order.
    pub fn select(&self, recipe: &Recipe, grid: Vec<FitSpec>) -> Vec<FitSpec> {
        let owner = assign(recipe, &grid, self.count);
        grid.into_iter().zip(owner).filter(|(_, s)| *s == self.index).map(|(f, _)| f).collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard (in `0..count`) of each fit of `grid`, the whole grid of `recipe` (see the module docs).
pub fn assign(recipe: &Recipe, grid: &[FitSpec], count: u64) -> Vec<u64> {
    assign_with_costs(recipe, grid, count).0
}

fn assign_with_costs(recipe: &Recipe, grid: &[FitSpec], count: u64) -> (Vec<u64>, Vec<SetCost>) {
    let model = CostModel::of(recipe);
    let alone = SetCost::default();
    let mut order: Vec<(f64, usize)> =
        grid.iter().enumerate().map(|(i, f)| (alone.added_by(&model, f) + FIT_FLOOR, i)).collect();
    order.sort_by(|(wa, a), (wb, b)| wb.total_cmp(wa).then_with(|| grid[*a].key.cmp(&grid[*b].key)));
    let n = usize::try_from(count.max(1)).unwrap_or(usize::MAX).min(grid.len().max(1));
    let mut costs = vec![SetCost::default(); n];
    let mut fits = vec![0usize; n];
    let mut owner = vec![0u64; grid.len()];
    for (_, i) in order {
        let fit = &grid[i];
        let after =
            |s: usize| costs[s].total() + costs[s].added_by(&model, fit) + (fits[s] + 1) as f64 * FIT_FLOOR;
        let best = (0..n)
            .min_by(|&a, &b| after(a).total_cmp(&after(b)).then(fits[a].cmp(&fits[b])).then(a.cmp(&b)))
            .expect("at least one shard");
        costs[best].add(&model, fit);
        fits[best] += 1;
        owner[i] = best as u64;
    }
    (owner, costs)
}

/// The balance of an assignment: the number of shards and the load of each.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardBalance {
    pub count: u64,
    /// Shards `0..min(count, fits)`, in order; with more shards than fits the others are empty.
    pub loads: Vec<ShardLoad>,
}

impl ShardBalance {
    /// Largest over smallest estimated shard cost (infinite when some shard has no estimated cost).
    pub fn max_over_min(&self) -> f64 {
        let max = self.loads.iter().map(|l| l.passes).fold(0.0, f64::max);
        let min = if (self.loads.len() as u64) < self.count {
            0.0
        } else {
            self.loads.iter().map(|l| l.passes).fold(f64::INFINITY, f64::min)
        };
        if min > 0.0 { max / min } else { f64::INFINITY }
    }
}

/// Every shard's fits, records and estimated cost when `grid` (the whole grid of `recipe`) is split
/// into `count` shards.
pub fn balance(recipe: &Recipe, grid: &[FitSpec], count: u64) -> ShardBalance {
    let (owner, costs) = assign_with_costs(recipe, grid, count);
    let loads = costs
        .iter()
        .enumerate()
        .map(|(s, cost)| {
            let mine = || grid.iter().zip(&owner).filter(move |(_, o)| **o == s as u64).map(|(f, _)| f);
            ShardLoad {
                index: s as u64,
                fits: mine().count(),
                records: mine().map(|f| f.slots.len()).sum(),
                passes: cost.total(),
            }
        })
        .collect();
    ShardBalance { count, loads }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::summarize;
    use crate::grid::expand;
    use crate::recipe::ValidationOptions;
    use proptest::prelude::*;

    /// Frozen probes (cost ~0 beyond their shared feature passes) plus LoRA fits whose cost grows
    /// with the label fraction: 2 encoders × (2 probes × 2 fractions × 3 seeds frozen + 3 fractions ×
    /// 3 seeds LoRA) = 42 fits.
    const SKEWED: &str = r#"seeds = [0, 1, 2]
label_fractions = [0.1, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
source = "hf:org/alpha"

[[encoders]]
source = "hf:org/beta"

[[datasets]]
spec = "synth:derm?n=40"

[perturbations]
names = ["jpeg"]
severities = [1, 3]

[regimes.frozen]
probes = ["logistic", "prior"]

[regimes.lora]
r = 4
alpha = 8.0
dropout = 0.0
lr = 1e-4
epochs = 2
targets = ["query", "value"]
label_fractions = [0.1, 0.25, 1.0]

[[losses]]
name = "ce"
"#;

    fn skewed() -> Recipe {
        Recipe::parse(SKEWED, "skewed.toml", ValidationOptions { check_paths: false }).unwrap()
    }

    #[test]
    fn parses_and_rejects() {
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
        for bad in ["4/4", "1/0", "x/2", "1", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cost_skewed_grid_over_4_shards_is_balanced_within_1_5() {
        let recipe = skewed();
        let grid = expand(&recipe);
        assert_eq!(grid.len(), 42);
        let b = balance(&recipe, &grid, 4);
        let ratio = b.max_over_min();
        assert!(ratio < 1.5, "max/min estimated shard cost {ratio}: {:?}", b.loads);
        // Each shard's load is what the dry run of that shard alone estimates.
        for load in &b.loads {
            let mine = Shard { index: load.index, count: 4 }.select(&recipe, grid.clone());
            let s = summarize(&recipe, &mine);
            assert_eq!((load.fits, load.records), (s.fits, s.records));
            assert!((load.passes - s.total_passes).abs() < 1e-9, "{} vs {}", load.passes, s.total_passes);
        }
        // The old rule (key hash mod N) on the same grid, for scale: far less even.
        let hashed: Vec<f64> = (0..4u64)
            .map(|i| {
                let mine: Vec<_> = grid.iter().filter(|f| f.key.prefix_u64() % 4 == i).cloned().collect();
                summarize(&recipe, &mine).total_passes
            })
            .collect();
        let hashed_ratio =
            hashed.iter().copied().fold(0.0, f64::max) / hashed.iter().copied().fold(f64::INFINITY, f64::min);
        eprintln!(
            "max/min estimated shard cost over 4 shards: {ratio:.3} (key hash mod N: {hashed_ratio:.3})"
        );
        assert!(ratio < hashed_ratio, "balanced {ratio} vs hashed {hashed_ratio}");
    }

    #[test]
    fn more_shards_than_fits_leaves_the_extra_shards_empty() {
        let recipe = skewed();
        let grid = expand(&recipe);
        let b = balance(&recipe, &grid, 100);
        assert_eq!((b.count, b.loads.len()), (100, 42));
        assert!(b.loads.iter().all(|l| l.fits == 1));
        assert!(b.max_over_min().is_infinite());
        assert!(Shard { index: 99, count: 100 }.select(&recipe, grid).is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Every fit is in exactly one shard, and the assignment depends on the fits alone, not on
        /// the order of the grid: the same recipe and N give the same shards.
        #[test]
        fn shards_partition_the_grid_whatever_its_order(n in 1u64..9, rotate in 0usize..42, reverse: bool) {
            let recipe = skewed();
            let grid = expand(&recipe);
            let owner = assign(&recipe, &grid, n);
            prop_assert!(owner.iter().all(|&s| s < n));
            let mut shuffled = grid.clone();
            shuffled.rotate_left(rotate % grid.len());
            if reverse {
                shuffled.reverse();
            }
            let again = assign(&recipe, &shuffled, n);
            let by_key: std::collections::BTreeMap<_, _> = grid.iter().map(|f| &f.key).zip(&owner).collect();
            for (fit, s) in shuffled.iter().zip(&again) {
                prop_assert_eq!(by_key[&fit.key], s);
            }
            let total: usize = (0..n).map(|i| Shard { index: i, count: n }.select(&recipe, grid.clone()).len()).sum();
            prop_assert_eq!(total, grid.len());
        }
    }
}
