//! How many cases a fuzz target runs. Each target states its CI-sized default; `PROPTEST_CASES=N`
//! sets every target to N, and `CALIBRA_FUZZ_SCALE=K` multiplies every default by K (the longer,
//! time-bounded fuzz step of `.ci/run` uses it). proptest's own `ProptestConfig::with_cases` ignores
//! `PROPTEST_CASES`; this is why the targets use [`fuzz_config`] instead.

use proptest::test_runner::Config;

/// The environment variable that multiplies every fuzz target's default case count.
pub const FUZZ_SCALE_VAR: &str = "CALIBRA_FUZZ_SCALE";

fn positive(var: &str) -> Option<u32> {
    std::env::var(var).ok().and_then(|v| v.trim().parse::<u32>().ok()).filter(|&n| n > 0)
}

/// The case count of a target whose CI default is `default`: `PROPTEST_CASES` when set, else
/// `default × CALIBRA_FUZZ_SCALE` (scale 1 when unset). Unparsable or zero values are ignored.
pub fn fuzz_cases(default: u32) -> u32 {
    positive("PROPTEST_CASES")
        .unwrap_or_else(|| default.saturating_mul(positive(FUZZ_SCALE_VAR).unwrap_or(1)))
}

/// proptest's configuration with [`fuzz_cases`]`(default)` cases.
pub fn fuzz_config(default: u32) -> Config {
    Config { cases: fuzz_cases(default), ..Config::default() }
}
