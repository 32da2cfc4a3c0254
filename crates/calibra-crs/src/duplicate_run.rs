//! Where a run record came from, and a run key that occurs twice (the error that names every duplicate
//! lists them). A leaf of the crate: the errors and the run records both use it.

use std::fmt;

/// Where a record came from: file (or stream name) and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    pub source: String,
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.source, self.line)
    }
}

/// A duplicated run key: where it first occurred and where it occurred again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateRun {
    pub key: String,
    pub first: Location,
    pub duplicate: Location,
}

impl fmt::Display for DuplicateRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: duplicate run key ({}), first at {}", self.duplicate, self.key, self.first)
    }
}

/// How many duplicates an error message lists before summarising the rest.
pub const DUPLICATES_LISTED: usize = 10;

/// The first [`DUPLICATES_LISTED`] duplicates, `; `-separated, then `… and N more` (the full list is
/// in the error value).
pub fn describe_duplicates(duplicates: &[DuplicateRun]) -> String {
    let mut text =
        duplicates.iter().take(DUPLICATES_LISTED).map(ToString::to_string).collect::<Vec<_>>().join("; ");
    if duplicates.len() > DUPLICATES_LISTED {
        text.push_str(&format!("; … and {} more", duplicates.len() - DUPLICATES_LISTED));
    }
    text
}
