//! Value parsers for the numeric options of eval (and of metrics, calibrate, data): a
//! negative number reaches the parser (the options set `allow_negative_numbers`) and gets a message
//! saying what is expected, instead of clap's `to pass '-1' as a value, use '-- -1'` hint.

/// A count >= 0 (`--bootstrap`, `--delta-bootstrap`, `--min-group-size`).
pub fn count(text: &str) -> Result<usize, String> {
    text.trim().parse::<usize>().map_err(|_| format!("`{text}` is not a count: expected a whole number >= 0"))
}

/// A seed: a whole number in 0..=2^64-1.
pub fn seed(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("`{text}` is not a seed: expected a whole number from 0 to {}", u64::MAX))
}

/// A number of bins, 1..=10000.
pub fn bins(text: &str) -> Result<u32, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n as u32),
        _ => Err(format!("`{text}` is not a number of bins: expected a whole number from 1 to 10000")),
    }
}

/// [`bins`] as a usize.
pub fn bins_usize(text: &str) -> Result<usize, String> {
    bins(text).map(|b| b as usize)
}

/// An interval level strictly between 0 and 1.
pub fn level(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{text}` is not an interval level: expected a number strictly between 0 and 1, e.g. 0.95"
        )),
    }
}

/// A miscoverage level α strictly between 0 and 1 (`--conformal-alpha`).
pub fn alpha(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{text}` is not a miscoverage level: α must be a number strictly between 0 and 1, e.g. 0.1 (sets \
             that hold the label 90 % of the time)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_and_out_of_range_values_get_a_real_message() {
        assert!(bins("-1").unwrap_err().contains("from 1 to 10000"));
        assert!(bins("0").is_err() && bins("10001").is_err());
        assert_eq!(bins("15"), Ok(15));
        assert!(seed("-1").unwrap_err().contains("not a seed"));
        assert!(count("-3").unwrap_err().contains(">= 0"));
        assert!(level("1.5").unwrap_err().contains("strictly between 0 and 1"));
        assert!(level("0").is_err() && level("NaN").is_err());
        assert_eq!(level("0.9"), Ok(0.9));
        assert!(alpha("1").unwrap_err().contains("strictly between 0 and 1"));
        assert!(alpha("-0.1").is_err() && alpha("0").is_err() && alpha("NaN").is_err());
        assert_eq!(alpha("0.2"), Ok(0.2));
    }
}
