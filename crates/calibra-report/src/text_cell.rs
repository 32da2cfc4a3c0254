//! The one number format of the terminal tables (`calibra metrics`, `calibrate --report`,
//! `transfer score`, ...): six decimals, `n/a` where undefined.

/// A number for a terminal table cell: 6 decimals, `n/a` where undefined.
pub fn cell(x: Option<f64>) -> String {
    match x {
        Some(v) => format!("{v:.6}"),
        None => "n/a".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn six_decimals_or_not_available() {
        assert_eq!(cell(Some(0.5)), "0.500000");
        assert_eq!(cell(None), "n/a");
    }
}
