//! Which split a feature pass embeds: one split, or all three in one file with each row's split
//! recorded (`calibra features --split all`).

use calibra_data::{Split, SplitAssignment};

use super::FeatureError;

/// One split, or every split in protocol order (train, calibration, test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitSelection {
    One(Split),
    All,
}

impl SplitSelection {
    /// `all`, or a split name as [`Split::parse`] reads it (`train`, `calibration`/`val`, `test`).
    pub fn parse(text: &str) -> Result<Self, FeatureError> {
        if text.trim().eq_ignore_ascii_case("all") {
            return Ok(SplitSelection::All);
        }
        Split::parse(text).map(SplitSelection::One).ok_or_else(|| {
            FeatureError::Invalid(format!("split `{text}`: expected train, calibration, test or all"))
        })
    }

    /// `train`, `calibration`, `test` or `all`.
    pub fn name(self) -> &'static str {
        match self {
            SplitSelection::One(split) => split.name(),
            SplitSelection::All => "all",
        }
    }

    /// The selected rows as (dataset index, split), in split order then the split's own order.
    pub fn rows(self, assignment: &SplitAssignment) -> Vec<(usize, Split)> {
        let splits: &[Split] = match self {
            SplitSelection::One(ref split) => std::slice::from_ref(split),
            SplitSelection::All => &Split::ALL,
        };
        splits.iter().flat_map(|&s| assignment.get(s).iter().map(move |&i| (i, s))).collect()
    }
}

impl From<Split> for SplitSelection {
    fn from(split: Split) -> Self {
        SplitSelection::One(split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_and_every_split_name() {
        assert_eq!(SplitSelection::parse("all").unwrap(), SplitSelection::All);
        assert_eq!(SplitSelection::parse("ALL").unwrap(), SplitSelection::All);
        assert_eq!(SplitSelection::parse("val").unwrap(), SplitSelection::One(Split::Calibration));
        assert_eq!(SplitSelection::parse("test").unwrap().name(), "test");
        let err = SplitSelection::parse("dev").unwrap_err().to_string();
        assert!(err.contains("`dev`") && err.contains("all"), "{err}");
    }
}
