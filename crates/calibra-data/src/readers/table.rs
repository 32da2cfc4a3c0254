//! CSV plumbing shared by the readers: open (plain or gzip), locate columns, parse cells, with
//! errors that name the file, line and column.

use crate::dataset::{Sex, SkippedSample};
use crate::error::DataError;
use flate2::read::MultiGzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};

/// An open CSV table: its header and records, each with its 1-based line number.
pub struct Table {
    pub path: PathBuf,
    pub headers: Vec<String>,
    pub rows: Vec<(u64, csv::StringRecord)>,
}

impl Table {
    /// Reads a whole CSV file; a name ending in `.gz` is gunzipped first.
    pub fn read(path: &Path) -> Result<Table, DataError> {
        if path.is_dir() {
            return Err(DataError::file(path, "is a directory; expected a CSV file"));
        }
        let file = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
        let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")) {
            Box::new(MultiGzDecoder::new(std::io::BufReader::new(file)))
        } else {
            Box::new(std::io::BufReader::new(file))
        };
        // Physical line numbers: the csv crate's own count skips blank lines.
        let lines = calibra_core::LineIndex::default();
        let mut csv = csv::ReaderBuilder::new().flexible(false).from_reader(lines.reader(reader));
        let headers: Vec<String> = csv
            .headers()
            .map_err(|e| DataError::file(path, format!("cannot read the CSV header: {e}")))?
            .iter()
            .map(|h| h.trim().trim_start_matches('\u{feff}').to_string())
            .collect();
        let mut rows = Vec::new();
        for record in csv.records() {
            let record = record.map_err(|e| {
                let line = e.position().map_or(0, |p| lines.line_of(p.byte()));
                DataError::row(path, line, format!("malformed CSV record: {e}"))
            })?;
            let line = record.position().map_or(0, |p| lines.line_of(p.byte()));
            rows.push((line, record));
        }
        Ok(Table { path: path.to_path_buf(), headers, rows })
    }

    /// The index of a column, if present (exact name).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name)
    }

    /// The index of a required column, or an error naming the file, the column and the header.
    pub fn require(&self, name: &str) -> Result<usize, DataError> {
        self.find(name).ok_or_else(|| {
            DataError::file(
                &self.path,
                format!("missing required column `{name}` (header: {})", self.headers.join(",")),
            )
        })
    }

    /// An error at a line.
    pub fn error(&self, line: u64, message: impl Into<String>) -> DataError {
        DataError::row(&self.path, line, message)
    }
}

/// How an uncertain (−1) multilabel value is read (CheXpert's U-policies, Irvin et al. 2019).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UncertaintyPolicy {
    /// U-Ignore (default): missing, excluded from that label's loss and metrics.
    Ignore,
    /// U-Zeros: negative.
    Zeros,
    /// U-Ones: positive.
    Ones,
}

impl UncertaintyPolicy {
    /// Parses `ignore`, `zeros`, `ones`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "ignore" => Some(Self::Ignore),
            "zeros" => Some(Self::Zeros),
            "ones" => Some(Self::Ones),
            _ => None,
        }
    }
}

/// How to read the cells of a multilabel column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelCellRules {
    pub uncertain: UncertaintyPolicy,
    /// Blank cell (observation not mentioned): `true` = missing, `false` = negative (default).
    pub blank_is_missing: bool,
}

/// One multilabel cell: `1`/`1.0` positive, `0`/`0.0` negative, `-1`/`-1.0` uncertain (per policy),
/// blank per `blank_is_missing`; anything else is an error message.
pub fn parse_label_cell(value: &str, rules: LabelCellRules) -> Result<Option<bool>, String> {
    match value.trim() {
        "" => Ok(if rules.blank_is_missing { None } else { Some(false) }),
        "1" | "1.0" => Ok(Some(true)),
        "0" | "0.0" => Ok(Some(false)),
        "-1" | "-1.0" => Ok(match rules.uncertain {
            UncertaintyPolicy::Ignore => None,
            UncertaintyPolicy::Zeros => Some(false),
            UncertaintyPolicy::Ones => Some(true),
        }),
        other => Err(format!("label value `{other}` is not one of 1, 0, -1 or blank")),
    }
}

/// Parses an optional number cell (blank → `None`); a non-number is an error message.
pub fn parse_optional_f64(value: &str, column: &str) -> Result<Option<f64>, String> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(Some)
        .ok_or_else(|| format!("column `{column}`: `{v}` is not a number"))
}

/// Parses an optional sex cell: recognised names give `Some`, blank/unknown give `None`.
pub fn parse_sex(value: &str) -> Option<Sex> {
    Sex::parse(value)
}

/// What to do with a manifest entry whose image is missing or cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BadImagePolicy {
    /// Stop with an error naming the file and row (default).
    #[default]
    Fail,
    /// Leave the entry out, record it in [`crate::Dataset::skipped`], and report the count.
    Skip,
}

impl std::str::FromStr for BadImagePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fail" => Ok(Self::Fail),
            "skip" => Ok(Self::Skip),
            other => Err(format!("bad-image policy `{other}`: expected `skip` or `fail`")),
        }
    }
}

/// Checks that `image` exists as a file. `Ok(true)`: keep the entry; `Ok(false)`: skipped (recorded
/// in `skipped`); `Err`: the policy is `Fail`.
pub fn check_image_exists(
    image: &Path,
    manifest: &Path,
    line: u64,
    policy: BadImagePolicy,
    skipped: &mut Vec<SkippedSample>,
) -> Result<bool, DataError> {
    if image.is_file() {
        return Ok(true);
    }
    let reason = format!("image file {} does not exist", image.display());
    match policy {
        BadImagePolicy::Fail => Err(DataError::row(manifest, line, reason)),
        BadImagePolicy::Skip => {
            skipped.push(SkippedSample { location: format!("{}, line {line}", manifest.display()), reason });
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 20: a directory given as a CSV was reported by the OS error of reading it.
    #[test]
    fn a_directory_given_as_a_csv_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let e = Table::read(dir.path()).err().unwrap().to_string();
        assert!(e.contains("is a directory; expected a CSV file"), "{e}");
    }

    /// Issue 20: rows after a blank line were given the csv crate's line count, which skips blank
    /// lines, so errors named the wrong line of a manifest.
    #[test]
    fn rows_carry_their_physical_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        std::fs::write(&path, "image,label\na.png,0\n\nb.png,1\r\n\r\nc.png,0\n").unwrap();
        let t = Table::read(&path).unwrap();
        let lines: Vec<u64> = t.rows.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [2, 4, 6]);
        std::fs::write(&path, "image,label\na.png,0\n\nb.png,1,extra\n").unwrap();
        let e = Table::read(&path).err().unwrap().to_string();
        assert!(e.contains("line 4"), "{e}");
    }

    #[test]
    fn label_cells_follow_the_policies() {
        let ignore = LabelCellRules { uncertain: UncertaintyPolicy::Ignore, blank_is_missing: false };
        let ones = LabelCellRules { uncertain: UncertaintyPolicy::Ones, blank_is_missing: true };
        let zeros = LabelCellRules { uncertain: UncertaintyPolicy::Zeros, blank_is_missing: false };
        assert_eq!(parse_label_cell("1.0", ignore), Ok(Some(true)));
        assert_eq!(parse_label_cell("0", ignore), Ok(Some(false)));
        assert_eq!(parse_label_cell("-1.0", ignore), Ok(None));
        assert_eq!(parse_label_cell("-1", ones), Ok(Some(true)));
        assert_eq!(parse_label_cell("-1", zeros), Ok(Some(false)));
        assert_eq!(parse_label_cell("", ignore), Ok(Some(false)));
        assert_eq!(parse_label_cell(" ", ones), Ok(None));
        assert!(parse_label_cell("2", ignore).unwrap_err().contains("`2`"));
    }
}
