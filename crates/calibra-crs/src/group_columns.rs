//! Group columns of test samples (age, sex, image quality, site...) and how they split samples into
//! groups (spec §6, FOCUS §I).
//!
//! # Where group values come from
//!
//! A **group table** is a CSV file with a header, an `id` column (the sample ids of the predictions
//! files) and any other columns, one row per sample: `id,age,sex,quality`. Values are strings; an empty
//! cell is a missing value (the sample is left out of that column's groups and counted as `missing`).
//! The same reader takes a predictions file itself: its extra columns (anything besides `id`, `label*`,
//! `logit_*`, `prob_*`) are group columns too.
//!
//! # Splits ([`GroupSplit`])
//!
//! - `categorical`: one group per distinct value (sorted by value);
//! - `median`: numeric values (non-numeric, non-finite → an error naming the file, line and column); the
//!   cut point is the median (numpy `median`: mean of the two middle values for an even count) of the
//!   valid values of the run's test samples; groups `≤ m` and `> m` (FOCUS: "age split at the median
//!   valid age");
//! - `thresholds=t₁,…,t_J` (strictly increasing): right-closed strata `≤ t₁`, `(t₁, t₂]`, …, `> t_J`.
//!
//! A median split is exactly `thresholds=m`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use crate::focus_error::FocusError;

/// How a group column splits samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "split", content = "thresholds")]
pub enum GroupSplit {
    /// One group per distinct value.
    Categorical,
    /// Numeric; two groups at the median of the valid values (`≤ m`, `> m`).
    Median,
    /// Numeric; right-closed strata at the given strictly increasing cut points.
    Thresholds(Vec<f64>),
}

impl GroupSplit {
    /// The declaration syntax of the split: `categorical`, `median` or `thresholds=a,b`.
    pub fn describe(&self) -> String {
        match self {
            GroupSplit::Categorical => "categorical".into(),
            GroupSplit::Median => "median".into(),
            GroupSplit::Thresholds(t) => {
                format!("thresholds={}", t.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
            }
        }
    }
}

/// Whether a column is a demographic subgroup (age, sex...) or an image-quality stratum: the gap is
/// computed the same way (max − min across groups; with two strata, the absolute difference), the
/// report keeps them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    Subgroup,
    Quality,
}

impl GapKind {
    pub fn name(self) -> &'static str {
        match self {
            GapKind::Subgroup => "subgroup",
            GapKind::Quality => "quality",
        }
    }
}

/// A declared group column: `NAME[:categorical|:median|:thresholds=a,b,…]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupColumn {
    pub name: String,
    pub kind: GapKind,
    #[serde(flatten)]
    pub split: GroupSplit,
}

impl GroupColumn {
    /// Parses `NAME`, `NAME:categorical`, `NAME:median` or `NAME:thresholds=a,b,…` (strictly
    /// increasing finite numbers). `NAME` alone is categorical.
    pub fn parse(text: &str, kind: GapKind) -> Result<Self, String> {
        let (name, split) = match text.split_once(':') {
            None => (text, GroupSplit::Categorical),
            Some((name, "categorical")) => (name, GroupSplit::Categorical),
            Some((name, "median")) => (name, GroupSplit::Median),
            Some((name, rest)) => {
                let list = rest.strip_prefix("thresholds=").ok_or_else(|| {
                    format!("`{text}`: expected NAME, NAME:categorical, NAME:median or NAME:thresholds=a,b,…")
                })?;
                let cuts = list
                    .split(',')
                    .map(|v| {
                        v.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| format!("`{text}`: threshold `{v}` is not a finite number"))
                    })
                    .collect::<Result<Vec<f64>, String>>()?;
                if cuts.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(format!("`{text}`: thresholds must be strictly increasing"));
                }
                (name, GroupSplit::Thresholds(cuts))
            }
        };
        if name.trim().is_empty() {
            return Err(format!("`{text}`: the column name is empty"));
        }
        Ok(GroupColumn { name: name.trim().to_string(), kind, split })
    }
}

/// Group values by sample id for some columns, read from a CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupTable {
    source: String,
    columns: Vec<String>,
    /// id → (1-based line, one value per column; `None` = empty cell).
    rows: HashMap<String, (u64, Vec<Option<String>>)>,
}

impl GroupTable {
    /// Reads `id` and the named `columns` of a CSV file (other columns are ignored).
    ///
    /// # Errors
    /// An unreadable file; no `id` column or a named column missing from the header; a ragged row; an
    /// empty or repeated id.
    pub fn read(path: &Path, columns: &[String]) -> Result<Self, FocusError> {
        let source = path.display().to_string();
        let file = std::fs::File::open(path)
            .map_err(|e| FocusError::Io { file: source.clone(), message: e.to_string() })?;
        Self::from_reader(file, &source, columns)
    }

    /// As [`GroupTable::read`] from any reader; `source` names it in errors.
    pub fn from_reader(
        reader: impl std::io::Read,
        source: &str,
        columns: &[String],
    ) -> Result<Self, FocusError> {
        let mut csv = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(reader);
        let mut records = csv.records();
        let header_err = |message: String| FocusError::Header { file: source.to_string(), message };
        let header = match records.next() {
            None => return Err(header_err("the file is empty".into())),
            Some(r) => r.map_err(|e| header_err(e.to_string()))?,
        };
        let names: Vec<String> =
            header.iter().map(|h| h.trim().trim_start_matches('\u{feff}').to_string()).collect();
        let find = |name: &str| names.iter().position(|n| n == name);
        let id_col = find("id").ok_or_else(|| header_err("missing column `id`".into()))?;
        let cols = columns
            .iter()
            .map(|c| {
                find(c).ok_or_else(|| {
                    header_err(format!("missing group column `{c}` (the header has: {})", names.join(", ")))
                })
            })
            .collect::<Result<Vec<usize>, FocusError>>()?;
        let mut rows = HashMap::new();
        for record in records {
            let record = record.map_err(|e| FocusError::Row {
                file: source.to_string(),
                line: e.position().map_or(0, |p| p.line()),
                message: e.to_string(),
            })?;
            let line = record.position().map_or(0, |p| p.line());
            if record.len() == 1 && record[0].trim().is_empty() {
                continue;
            }
            let row_err = |message: String| FocusError::Row { file: source.to_string(), line, message };
            if record.len() != names.len() {
                return Err(row_err(format!("{} fields, the header has {}", record.len(), names.len())));
            }
            let id = record[id_col].trim();
            if id.is_empty() {
                return Err(row_err("empty id".into()));
            }
            let values =
                cols.iter().map(|&c| Some(record[c].trim().to_string()).filter(|v| !v.is_empty())).collect();
            if let Some((first, _)) = rows.insert(id.to_string(), (line, values)) {
                return Err(row_err(format!("id `{id}` repeats line {first}")));
            }
        }
        Ok(GroupTable { source: source.to_string(), columns: columns.to_vec(), rows })
    }

    /// Where the table was read from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The values of `column` for `ids` (in order) with their lines: `None` where the cell is empty.
    ///
    /// # Errors
    /// An id the table does not list ([`FocusError::UnknownSample`], naming `predictions`).
    pub fn values_for(
        &self,
        column: &str,
        ids: &[String],
        predictions: &str,
    ) -> Result<Vec<(u64, Option<&str>)>, FocusError> {
        let c = self.columns.iter().position(|n| n == column).ok_or_else(|| FocusError::Header {
            file: self.source.clone(),
            message: format!("group column `{column}` was not read"),
        })?;
        ids.iter()
            .map(|id| {
                let (line, values) = self.rows.get(id).ok_or_else(|| FocusError::UnknownSample {
                    file: predictions.to_string(),
                    id: id.clone(),
                    groups: self.source.clone(),
                })?;
                Ok((*line, values[c].as_deref()))
            })
            .collect()
    }
}

/// Samples split into groups by one column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupAssignment {
    /// Group names, in order (categorical: sorted values; numeric: ascending strata).
    pub groups: Vec<String>,
    /// Row indices of each group.
    #[serde(skip)]
    pub rows: Vec<Vec<usize>>,
    /// Samples with a missing value.
    pub missing: usize,
    /// Cut points used (the median, or the thresholds); empty for categorical splits.
    pub cuts: Vec<f64>,
}

/// numpy `median` of a non-empty slice.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) }
}

fn stratum_names(cuts: &[f64]) -> Vec<String> {
    let mut names = Vec::with_capacity(cuts.len() + 1);
    names.push(format!("<= {}", cuts[0]));
    for w in cuts.windows(2) {
        names.push(format!("({}, {}]", w[0], w[1]));
    }
    names.push(format!("> {}", cuts[cuts.len() - 1]));
    names
}

/// Splits rows by their values of one column (`values[i]` = (source line, value) of row `i`).
///
/// # Errors
/// A numeric split with a value that is not a finite number (the message names the line); a median
/// split with no valid value.
pub fn assign_groups(
    values: &[(u64, Option<&str>)],
    split: &GroupSplit,
    column: &str,
    source: &str,
) -> Result<GroupAssignment, FocusError> {
    let missing = values.iter().filter(|(_, v)| v.is_none()).count();
    match split {
        GroupSplit::Categorical => {
            let mut by_value: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            for (i, (_, v)) in values.iter().enumerate() {
                if let Some(v) = v {
                    by_value.entry(v).or_default().push(i);
                }
            }
            Ok(GroupAssignment {
                groups: by_value.keys().map(|k| k.to_string()).collect(),
                rows: by_value.into_values().collect(),
                missing,
                cuts: Vec::new(),
            })
        }
        GroupSplit::Median | GroupSplit::Thresholds(_) => {
            let mut numeric = Vec::with_capacity(values.len());
            for (i, (line, v)) in values.iter().enumerate() {
                if let Some(text) = v {
                    let x = text.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| {
                        FocusError::Cell {
                            file: source.to_string(),
                            line: *line,
                            column: column.to_string(),
                            message: format!(
                                "`{text}` is not a finite number (the column has a numeric split)"
                            ),
                        }
                    })?;
                    numeric.push((i, x));
                }
            }
            let cuts = match split {
                GroupSplit::Thresholds(t) => t.clone(),
                _ => {
                    if numeric.is_empty() {
                        return Err(FocusError::Cell {
                            file: source.to_string(),
                            line: 0,
                            column: column.to_string(),
                            message: "no valid value to take a median of".into(),
                        });
                    }
                    vec![median(&numeric.iter().map(|&(_, x)| x).collect::<Vec<_>>())]
                }
            };
            let mut rows = vec![Vec::new(); cuts.len() + 1];
            for (i, x) in numeric {
                // Right-closed: the first cut ≥ x.
                let g = cuts.iter().position(|&c| x <= c).unwrap_or(cuts.len());
                rows[g].push(i);
            }
            Ok(GroupAssignment { groups: stratum_names(&cuts), rows, missing, cuts })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_column_declarations() {
        let c = GroupColumn::parse("age:median", GapKind::Subgroup).unwrap();
        assert_eq!((c.name.as_str(), &c.split), ("age", &GroupSplit::Median));
        let c = GroupColumn::parse("q:thresholds=0.3,0.7", GapKind::Quality).unwrap();
        assert_eq!(c.split, GroupSplit::Thresholds(vec![0.3, 0.7]));
        assert_eq!(GroupColumn::parse("sex", GapKind::Subgroup).unwrap().split, GroupSplit::Categorical);
        assert!(GroupColumn::parse("q:thresholds=0.7,0.3", GapKind::Quality).is_err());
        assert!(GroupColumn::parse("q:thresholds=x", GapKind::Quality).is_err());
        assert!(GroupColumn::parse("q:mean", GapKind::Quality).is_err());
        assert!(GroupColumn::parse(":median", GapKind::Quality).is_err());
    }

    #[test]
    fn median_split_is_right_closed() {
        // Exact: valid values 30, 50, 60, 70 → median 55; 50 and 30 go low, the blank is missing.
        let v = [(2, Some("50")), (3, None), (4, Some("70")), (5, Some("30")), (6, Some("60"))];
        let a = assign_groups(&v, &GroupSplit::Median, "age", "g.csv").unwrap();
        assert_eq!(a.cuts, vec![55.0]);
        assert_eq!(a.rows, vec![vec![0, 3], vec![2, 4]]);
        assert_eq!(a.missing, 1);
        // A value equal to a threshold is in the lower stratum.
        let a = assign_groups(&v, &GroupSplit::Thresholds(vec![50.0]), "age", "g.csv").unwrap();
        assert_eq!(a.rows, vec![vec![0, 3], vec![2, 4]]);
        assert_eq!(a.groups, vec!["<= 50", "> 50"]);
    }

    #[test]
    fn bad_numeric_value_names_file_line_and_column() {
        let v = [(2, Some("50")), (7, Some("old"))];
        let err = assign_groups(&v, &GroupSplit::Median, "age", "g.csv").unwrap_err().to_string();
        assert!(err.contains("g.csv: line 7, column `age`") && err.contains("`old`"), "{err}");
    }

    #[test]
    fn categorical_groups_are_sorted() {
        let v = [(2, Some("M")), (3, Some("F")), (4, Some("M"))];
        let a = assign_groups(&v, &GroupSplit::Categorical, "sex", "g.csv").unwrap();
        assert_eq!(a.groups, vec!["F", "M"]);
        assert_eq!(a.rows, vec![vec![1], vec![0, 2]]);
    }

    #[test]
    fn group_table_errors_name_file_and_line() {
        let cols = vec!["sex".to_string()];
        let read = |t: &str| GroupTable::from_reader(t.as_bytes(), "g.csv", &cols);
        let err = read("id,age\na,3\n").unwrap_err().to_string();
        assert!(err.contains("g.csv: header") && err.contains("`sex`"), "{err}");
        let err = read("id,sex\na,F\na,M\n").unwrap_err().to_string();
        assert!(err.contains("g.csv: line 3") && err.contains("repeats line 2"), "{err}");
        let err = read("id,sex\na,F,x\n").unwrap_err().to_string();
        assert!(err.contains("g.csv: line 2"), "{err}");
        let t = read("id,sex\na,F\nb,\n").unwrap();
        let ids = vec!["b".to_string(), "a".to_string()];
        assert_eq!(t.values_for("sex", &ids, "p.csv").unwrap(), vec![(3, None), (2, Some("F"))]);
        let err = t.values_for("sex", &["z".to_string()], "p.csv").unwrap_err().to_string();
        assert!(err.contains("p.csv: sample id `z`"), "{err}");
    }
}
