//! The CSV reader: header interpretation and cell parsing, with errors that name file, line and column.

use crate::PredictionsError;
use crate::table::{Predictions, ScoreKind, Targets};
use calibra_core::LineIndex;
use calibra_metrics::input::ROW_SUM_TOLERANCE;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Read and validate a predictions CSV file (format in the crate documentation).
pub fn read_predictions(path: &Path) -> Result<Predictions, PredictionsError> {
    let source = path.display().to_string();
    if path.is_dir() {
        return Err(PredictionsError::Io {
            file: source,
            error: std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory; expected a predictions CSV file",
            ),
        });
    }
    let file = File::open(path).map_err(|error| PredictionsError::Io { file: source.clone(), error })?;
    read_predictions_from(file, &source)
}

/// Read and validate predictions CSV from any reader; `source` names it in error messages.
pub fn read_predictions_from<R: Read>(reader: R, source: &str) -> Result<Predictions, PredictionsError> {
    let src = || source.to_string();
    let lines = LineIndex::default();
    let mut csv =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(lines.reader(reader));
    let mut records = csv.byte_records();
    let header = match records.next() {
        None => return Err(PredictionsError::Empty { file: src() }),
        Some(r) => r.map_err(|e| csv_error(source, e))?,
    };
    let layout = Layout::from_header(&header, source)?;

    let k = layout.score_cols.len();
    let mut ids = Vec::new();
    let mut scores = Vec::new();
    let mut classes = Vec::new();
    let mut labels = Vec::new();
    let mut first_line: HashMap<String, u64> = HashMap::new();
    for record in records {
        let record = record.map_err(|e| csv_error(source, e))?;
        // The physical line (the csv crate's own count skips blank lines).
        let line = record.position().map_or(0, |p| lines.line_of(p.byte()));
        if record.len() == 1 && record.get(0).is_some_and(|f| f.trim_ascii().is_empty()) {
            continue; // a blank line
        }
        if record.len() != header.len() {
            return Err(PredictionsError::Ragged {
                file: src(),
                line,
                expected: header.len(),
                found: record.len(),
            });
        }
        let cell = |col: usize| -> Result<&str, PredictionsError> {
            std::str::from_utf8(&record[col]).map(str::trim).map_err(|_| PredictionsError::Cell {
                file: src(),
                line,
                column: layout.names[col].clone(),
                message: "not valid UTF-8".into(),
            })
        };
        let bad = |col: usize, message: String| PredictionsError::Cell {
            file: src(),
            line,
            column: layout.names[col].clone(),
            message,
        };
        let id = cell(layout.id_col)?;
        if id.is_empty() {
            return Err(bad(layout.id_col, "empty id".into()));
        }
        if let Some(first) = first_line.insert(id.to_string(), line) {
            return Err(bad(
                layout.id_col,
                format!(
                    "duplicate id `{id}` (first at line {first}): id `{id}` appears twice, and ids must be unique"
                ),
            ));
        }
        ids.push(id.to_string());
        let row_start = scores.len();
        for &col in &layout.score_cols {
            let text = cell(col)?;
            let value: f64 = text.parse().map_err(|_| bad(col, format!("`{text}` is not a number")))?;
            if !value.is_finite() {
                return Err(bad(col, format!("`{text}` is not a finite number")));
            }
            if layout.kind == ScoreKind::Probability && !(0.0..=1.0).contains(&value) {
                return Err(bad(col, format!("probability {value} is outside [0, 1]")));
            }
            scores.push(value);
        }
        match &layout.targets {
            TargetLayout::Class(col) => {
                let text = cell(*col)?;
                let label: usize = text.parse().map_err(|_| {
                    bad(*col, format!("`{text}` is not a class index (expected an integer in 0..{k})"))
                })?;
                if label >= k {
                    return Err(bad(*col, format!("class index {label} is out of range 0..{k}")));
                }
                classes.push(label);
                if layout.kind == ScoreKind::Probability {
                    let sum: f64 = scores[row_start..].iter().sum();
                    if (sum - 1.0).abs() > ROW_SUM_TOLERANCE {
                        return Err(PredictionsError::Row {
                            file: src(),
                            line,
                            message: format!(
                                "probabilities sum to {sum}, expected 1 within {ROW_SUM_TOLERANCE:e}"
                            ),
                        });
                    }
                }
            }
            TargetLayout::Labels(cols) => {
                for &col in cols {
                    let text = cell(col)?;
                    labels.push(match text {
                        "" => None,
                        "1" | "1.0" => Some(true),
                        "0" | "0.0" => Some(false),
                        _ => {
                            return Err(bad(
                                col,
                                format!("`{text}` is not a label (expected 1, 0 or blank)"),
                            ));
                        }
                    });
                }
            }
        }
    }
    if ids.is_empty() {
        return Err(PredictionsError::NoRows { file: src() });
    }
    let targets = match layout.targets {
        TargetLayout::Class(_) => Targets::Classes(classes),
        TargetLayout::Labels(_) => Targets::Labels(labels),
    };
    Predictions::new(ids, layout.class_names, layout.kind, scores, targets).map_err(|e| match e {
        PredictionsError::Invalid(message) => PredictionsError::Header { file: src(), message },
        other => other,
    })
}

fn csv_error(source: &str, e: csv::Error) -> PredictionsError {
    PredictionsError::Csv { file: source.to_string(), message: e.to_string() }
}

enum TargetLayout {
    /// The `label` column index.
    Class(usize),
    /// For each score column (in class order), the index of its `label_<name>` column.
    Labels(Vec<usize>),
}

/// What each header column means.
struct Layout {
    names: Vec<String>,
    id_col: usize,
    kind: ScoreKind,
    score_cols: Vec<usize>,
    class_names: Vec<String>,
    targets: TargetLayout,
}

impl Layout {
    fn from_header(header: &csv::ByteRecord, source: &str) -> Result<Self, PredictionsError> {
        let err = |message: String| PredictionsError::Header { file: source.to_string(), message };
        let names: Vec<String> = header
            .iter()
            .map(|f| String::from_utf8_lossy(f).trim().trim_start_matches('\u{feff}').to_string())
            .collect();
        if names.len() == 1 && names[0].is_empty() {
            return Err(PredictionsError::Empty { file: source.to_string() });
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(err(format!("column {} has an empty name", i + 1)));
            }
            if let Some(first) = seen.insert(name, i) {
                return Err(err(format!("duplicate column `{name}` (columns {} and {})", first + 1, i + 1)));
            }
        }
        let id_col = *seen.get("id").ok_or_else(|| err("missing column `id`".into()))?;

        let with_prefix = |prefix: &str| -> Vec<(usize, String)> {
            names
                .iter()
                .enumerate()
                .filter_map(|(i, n)| n.strip_prefix(prefix).map(|rest| (i, rest.to_string())))
                .collect()
        };
        let logits = with_prefix(ScoreKind::Logit.prefix());
        let probs = with_prefix(ScoreKind::Probability.prefix());
        let (kind, scored) = match (logits.is_empty(), probs.is_empty()) {
            (false, false) => {
                return Err(err(format!(
                    "both logit_ ({}) and prob_ ({}) columns: a file holds one kind of score",
                    logits.len(),
                    probs.len()
                )));
            }
            (true, true) => {
                return Err(err("no score columns: expected `logit_<class>` or `prob_<class>`".into()));
            }
            (false, true) => (ScoreKind::Logit, logits),
            (true, false) => (ScoreKind::Probability, probs),
        };
        if let Some((i, _)) = scored.iter().find(|(_, name)| name.is_empty()) {
            return Err(err(format!(
                "column {} (`{}`) has no class name after the prefix",
                i + 1,
                names[*i]
            )));
        }
        let label_cols = with_prefix("label_");
        let targets = match (seen.get("label"), label_cols.is_empty()) {
            (Some(_), false) => {
                return Err(err(
                    "both `label` and `label_<name>` columns: use `label` for single-label tasks or \
                     `label_<name>` for multilabel, not both"
                        .into(),
                ));
            }
            (None, true) => {
                return Err(err("missing target column: expected `label` or `label_<name>` columns".into()));
            }
            (Some(&col), true) => TargetLayout::Class(col),
            (None, false) => {
                let by_name: HashMap<&str, usize> =
                    label_cols.iter().map(|(i, n)| (n.as_str(), *i)).collect();
                let mut cols = Vec::with_capacity(scored.len());
                for (i, name) in &scored {
                    match by_name.get(name.as_str()) {
                        Some(&c) => cols.push(c),
                        None => {
                            return Err(err(format!(
                                "score column `{}` has no matching `label_{name}` column",
                                names[*i]
                            )));
                        }
                    }
                }
                let scored_names: std::collections::HashSet<&str> =
                    scored.iter().map(|(_, n)| n.as_str()).collect();
                if let Some((_, extra)) = label_cols.iter().find(|(_, n)| !scored_names.contains(n.as_str()))
                {
                    return Err(err(format!(
                        "column `label_{extra}` has no matching `{}{extra}` score column",
                        kind.prefix()
                    )));
                }
                TargetLayout::Labels(cols)
            }
        };
        Ok(Layout {
            id_col,
            kind,
            score_cols: scored.iter().map(|(i, _)| *i).collect(),
            class_names: scored.into_iter().map(|(_, n)| n).collect(),
            targets,
            names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Predictions, PredictionsError> {
        read_predictions_from(text.as_bytes(), "test.csv")
    }

    fn err(text: &str) -> String {
        read(text).unwrap_err().to_string()
    }

    /// Issue 20: a duplicate id was reported as "header: id `x` appears twice (row 1)".
    #[test]
    fn a_duplicate_id_names_both_lines() {
        let e = err("id,label,logit_a,logit_b\nx,0,1,2\ny,1,1,2\nx,1,0,0\n");
        assert!(e.contains("test.csv: line 4, column `id`: duplicate id `x` (first at line 2)"), "{e}");
        assert!(!e.contains("header"), "{e}");
    }

    /// Issue 20: after a blank line, errors named the line the csv crate counted (blank lines
    /// skipped), not the file's.
    #[test]
    fn lines_count_blank_lines() {
        let e = err("id,label,logit_a,logit_b\nx,0,1,2\n\ny,1,1,2\n\nx,1,0,0\n");
        assert!(e.contains("test.csv: line 6, column `id`: duplicate id `x` (first at line 2)"), "{e}");
        let e = err("id,label,logit_a,logit_b\r\n\r\nx,0,1,zz\r\n");
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn a_directory_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_predictions(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory; expected a predictions CSV file"), "{e}");
    }

    #[test]
    fn reads_multiclass_logits_with_extra_columns() {
        let p = read("id,label,site,logit_a,logit_b,logit_c\nx,2,A,0.1,0.2,3\ny,0,B,-1,0,1\n").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p.class_names(), ["a", "b", "c"]);
        assert_eq!(p.targets(), &Targets::Classes(vec![2, 0]));
        assert_eq!(p.scores(), [0.1, 0.2, 3.0, -1.0, 0.0, 1.0]);
    }

    #[test]
    fn reads_multilabel_with_blanks_in_score_order() {
        let p = read("id,label_b,label_a,prob_a,prob_b\nx,1,,0.2,0.9\ny,0,1,0.5,0.1\n").unwrap();
        assert_eq!(p.class_names(), ["a", "b"]);
        assert_eq!(p.targets(), &Targets::Labels(vec![None, Some(true), Some(true), Some(false)]));
    }

    #[test]
    fn header_errors_are_specific() {
        assert!(err("").contains("empty"));
        assert!(err("label,logit_a,logit_b\n0,1,2\n").contains("missing column `id`"));
        assert!(err("id,id,label,logit_a\n").contains("duplicate column `id`"));
        assert!(err("id,label,logit_a,prob_a\n").contains("both logit_ (1) and prob_ (1)"));
        assert!(err("id,label\nx,0\n").contains("no score columns"));
        assert!(err("id,logit_a,logit_b\nx,0,1\n").contains("missing target column"));
        assert!(err("id,label,label_a,logit_a\n").contains("both `label` and `label_<name>`"));
        assert!(err("id,label_a,logit_a,logit_b\nx,1,0,0\n").contains("`logit_b` has no matching `label_b`"));
        assert!(err("id,label,logit_a,logit_b\n").contains("no data rows"));
    }

    #[test]
    fn cell_errors_name_line_and_column() {
        let e = err("id,label,logit_a,logit_b\nx,0,1,2\ny,1,abc,2\n");
        assert_eq!(e, "test.csv: line 3, column `logit_a`: `abc` is not a number");
        let e = err("id,label,logit_a,logit_b\nx,0,1,2\ny,1,2\n");
        assert_eq!(e, "test.csv: line 3: expected 4 fields as in the header, found 3");
        let e = err("id,label,logit_a,logit_b\nx,2,1,2\n");
        assert!(e.contains("line 2, column `label`: class index 2 is out of range 0..2"), "{e}");
        let e = err("id,label,prob_a,prob_b\nx,0,0.5,0.6\n");
        assert!(e.contains("line 2: probabilities sum to"), "{e}");
        let e = err("id,label,logit_a,logit_b\nx,0,NaN,2\n");
        assert!(e.contains("line 2, column `logit_a`: `NaN` is not a finite number"), "{e}");
        let e = err("id,label_a,prob_a\nx,2,0.5\n");
        assert!(e.contains("`2` is not a label"), "{e}");
        let e = err("id,label,logit_a,logit_b\nx,0,1,2\nx,1,0,0\n");
        assert!(e.contains("id `x` appears twice"), "{e}");
    }
}
