//! `--shard I/N`: a deterministic 1/N of the fits, chosen by fit key.
//!
//! Fit `k` belongs to shard `I` of `N` iff `u64(first 16 hex digits of k) mod N == I`. The key is a
//! SHA-256 of the fit's configuration, so shards are balanced in expectation, identical on every
//! machine, and independent of the grid's order: the N shards partition the grid exactly.

use crate::error::RunError;
use crate::run_key::FitKey;

/// Shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
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

    /// Whether fit `key` belongs to this shard.
    pub fn contains(&self, key: &FitKey) -> bool {
        key.prefix_u64() % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
        for bad in ["4/4", "1/0", "x/2", "1", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn every_key_is_in_exactly_one_shard(seed in any::<u64>(), n in 1u64..9) {
            let key = FitKey::of(&seed);
            let owners = (0..n).filter(|&i| Shard { index: i, count: n }.contains(&key)).count();
            prop_assert_eq!(owners, 1);
        }
    }
}
