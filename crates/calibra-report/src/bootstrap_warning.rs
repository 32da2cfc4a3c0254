//! The warning for a bootstrap too small for its interval level (`calibra eval --bootstrap`,
//! `--delta-bootstrap`).

/// Replicates per tail a percentile interval needs to be worth reporting: with fewer, the interval
/// is set by a handful of replicates (with 1 it is a single replicate, which can exclude the estimate).
pub const MIN_TAIL_REPLICATES: f64 = 5.0;

/// A warning for `replicates` too few for a `level` interval (`flag` names the option), or `None`.
pub fn bootstrap_warning(replicates: usize, level: f64, flag: &str) -> Option<String> {
    let tail = replicates as f64 * (1.0 - level) / 2.0;
    (replicates > 0 && tail < MIN_TAIL_REPLICATES).then(|| {
        let needed = (MIN_TAIL_REPLICATES * 2.0 / (1.0 - level)).ceil();
        format!(
            "warning: {flag} {replicates} leaves {tail:.2} replicate(s) in each tail of a {}% interval, so the \
             interval is not reliable (it can even exclude the estimate); use at least {needed} (1000 or more \
             recommended), or 0 to skip the bootstrap",
            level * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_bootstraps_are_warned_about() {
        assert!(bootstrap_warning(1, 0.95, "--bootstrap").unwrap().contains("at least 200"));
        assert!(bootstrap_warning(0, 0.95, "--bootstrap").is_none());
        assert!(bootstrap_warning(1000, 0.95, "--bootstrap").is_none());
    }
}
