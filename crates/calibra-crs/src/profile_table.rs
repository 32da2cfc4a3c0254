//! The profiles table: `encoder,discrimination,calibration,label_efficiency,robustness` (CSV).
//!
//! On the oriented scale (the default) the file holds measured values: discrimination = macro-AUROC in
//! [0, 1], calibration = raw ECE in [0, 1] (lower is better; oriented here as −ECE), label efficiency =
//! AUROC retention ≥ 0 (ratios above 1 are kept), robustness in [0, 1]. On the normalised scale all four
//! are already oriented and in [0, 1], and nothing is re-oriented.
//!
//! An optional sixth column `selective` (issue 24) gives the fifth axis: raw AUGRC in [0, 1] (lower is
//! better; oriented here as −AUGRC) on the oriented scale, an oriented normalised value on the normalised
//! scale. A table with it gives five-axis profiles (to be scored with five axis weights); without it,
//! four-axis profiles exactly as before.
//!
//! Lines starting with `#` are comments (e.g. the source of transcribed profiles); line numbers in errors
//! count them.

use crate::error::CrsError;
use crate::profile::{Axis, Profile, axes_of, oriented_calibration, oriented_selective};
use crate::reference::ValueScale;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The columns of a profiles table. Columns may come in any order; all five are required.
pub const PROFILE_COLUMNS: [&str; 5] =
    ["encoder", "discrimination", "calibration", "label_efficiency", "robustness"];

/// The optional column of the fifth (selective) axis.
pub const SELECTIVE_COLUMN: &str = "selective";

/// Read a profiles table from a file. See the module documentation for the columns and ranges.
///
/// # Errors
/// [`CrsError::Io`] if the file cannot be opened; otherwise as [`parse_profiles_csv`].
pub fn read_profiles_csv(path: &Path, scale: ValueScale) -> Result<Vec<Profile>, CrsError> {
    let file = std::fs::File::open(path).map_err(|error| CrsError::Io { file: path.to_path_buf(), error })?;
    parse_profiles_csv(file, &path.display().to_string(), scale)
}

/// The admissible range of a column's raw value, for messages and checks.
fn admissible(axis: Axis, scale: ValueScale) -> (f64, f64, &'static str) {
    match (scale, axis) {
        (ValueScale::Normalized, _) => (0.0, 1.0, "a normalised value in [0, 1]"),
        (ValueScale::Oriented, Axis::Discrimination) => (0.0, 1.0, "a macro-AUROC in [0, 1]"),
        (ValueScale::Oriented, Axis::Calibration) => (0.0, 1.0, "a raw ECE in [0, 1] (lower is better)"),
        (ValueScale::Oriented, Axis::LabelEfficiency) => {
            (0.0, f64::INFINITY, "an AUROC retention ≥ 0 (ratios above 1 are kept)")
        }
        (ValueScale::Oriented, Axis::Robustness) => (0.0, 1.0, "a robustness score in [0, 1]"),
        (ValueScale::Oriented, Axis::Selective) => (0.0, 1.0, "a raw AUGRC in [0, 1] (lower is better)"),
    }
}

/// Parse a profiles table; `file` names the source in errors (which give the 1-based line, the header
/// being line 1, and the column).
///
/// # Errors
/// [`CrsError::TableHeader`] (missing, duplicated or unknown column), [`CrsError::TableRow`] (wrong
/// field count, duplicate encoder, no rows, CSV syntax), [`CrsError::TableCell`] (empty encoder, a value
/// that is missing, not a number, not finite or outside its range).
pub fn parse_profiles_csv(
    reader: impl Read,
    file: &str,
    scale: ValueScale,
) -> Result<Vec<Profile>, CrsError> {
    let header_error = |message: String| CrsError::TableHeader { file: file.to_string(), message };
    let mut csv = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .comment(Some(b'#'))
        .from_reader(reader);
    let headers = csv.headers().map_err(|e| header_error(e.to_string()))?.clone();
    if headers.is_empty() || (headers.len() == 1 && headers[0].is_empty()) {
        return Err(header_error(format!(
            "the file is empty; expected the header `{}`",
            PROFILE_COLUMNS.join(",")
        )));
    }
    let mut position: HashMap<&str, usize> = HashMap::new();
    for (i, name) in headers.iter().enumerate() {
        if !PROFILE_COLUMNS.contains(&name) && name != SELECTIVE_COLUMN {
            return Err(header_error(format!(
                "unknown column `{name}`; expected exactly `{}` (and optionally `{SELECTIVE_COLUMN}`)",
                PROFILE_COLUMNS.join(",")
            )));
        }
        if position.insert(name, i).is_some() {
            return Err(header_error(format!("column `{name}` appears twice")));
        }
    }
    if let Some(missing) = PROFILE_COLUMNS.iter().find(|c| !position.contains_key(*c)) {
        return Err(header_error(format!(
            "missing column `{missing}`; expected `{}`",
            PROFILE_COLUMNS.join(",")
        )));
    }

    let axes = axes_of(if position.contains_key(SELECTIVE_COLUMN) { 5 } else { 4 });
    let mut profiles = Vec::new();
    let mut first_line: HashMap<String, u64> = HashMap::new();
    for record in csv.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            let message = match e.kind() {
                csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
                    format!("expected {expected_len} fields as in the header, found {len}")
                }
                _ => format!("CSV syntax error: {e}"),
            };
            CrsError::TableRow { file: file.to_string(), line, message }
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let cell_error = |column: &str, message: String| CrsError::TableCell {
            file: file.to_string(),
            line,
            column: column.to_string(),
            message,
        };
        let encoder = record[position["encoder"]].to_string();
        if encoder.is_empty() {
            return Err(cell_error("encoder", "the encoder name is empty".into()));
        }
        if let Some(previous) = first_line.insert(encoder.clone(), line) {
            return Err(CrsError::TableRow {
                file: file.to_string(),
                line,
                message: format!("encoder `{encoder}` already appears on line {previous}"),
            });
        }
        let mut values = vec![None; axes.len()];
        for &axis in axes {
            let text = &record[position[axis.name()]];
            let (lo, hi, what) = admissible(axis, scale);
            if text.is_empty() {
                return Err(cell_error(
                    axis.name(),
                    format!("missing value; expected {what} (axes are never imputed)"),
                ));
            }
            let value: f64 = text
                .parse()
                .map_err(|_| cell_error(axis.name(), format!("`{text}` is not a number; expected {what}")))?;
            if !value.is_finite() || value < lo || value > hi {
                return Err(cell_error(axis.name(), format!("{text} is out of range; expected {what}")));
            }
            values[axis.index()] = Some(match (scale, axis) {
                (ValueScale::Oriented, Axis::Calibration) => oriented_calibration(value),
                (ValueScale::Oriented, Axis::Selective) => oriented_selective(value),
                _ => value,
            });
        }
        profiles.push(Profile::with_values(encoder, values));
    }
    if profiles.is_empty() {
        return Err(CrsError::TableRow {
            file: file.to_string(),
            line: 2,
            message: "no data rows after the header".into(),
        });
    }
    Ok(profiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, scale: ValueScale) -> Result<Vec<Profile>, CrsError> {
        parse_profiles_csv(text.as_bytes(), "p.csv", scale)
    }

    #[test]
    fn raw_calibration_is_oriented_and_columns_may_be_reordered() {
        let p = parse(
            "encoder,calibration,discrimination,label_efficiency,robustness\nA,0.05,0.9,1.002,0.8\n",
            ValueScale::Oriented,
        )
        .unwrap();
        assert_eq!(p[0].encoder, "A");
        assert_eq!(p[0].values, [Some(0.9), Some(-0.05), Some(1.002), Some(0.8)]);
        let n = parse(
            "encoder,discrimination,calibration,label_efficiency,robustness\nA,0.9,0.05,1,0.8\n",
            ValueScale::Normalized,
        )
        .unwrap();
        assert_eq!(n[0].values, [Some(0.9), Some(0.05), Some(1.0), Some(0.8)]);
    }

    #[test]
    fn errors_name_the_file_line_and_column() {
        let head = "encoder,discrimination,calibration,label_efficiency,robustness\n";
        let cases = [
            (
                format!("{head}A,0.9,0.05,0.9,0.8\nB,0.9,,0.9,0.8\n"),
                "p.csv: line 3, column `calibration`: missing",
            ),
            (
                format!("{head}A,0.9,abc,0.9,0.8\n"),
                "p.csv: line 2, column `calibration`: `abc` is not a number",
            ),
            (
                format!("{head}A,0.9,1.5,0.9,0.8\n"),
                "p.csv: line 2, column `calibration`: 1.5 is out of range",
            ),
            (format!("{head}A,0.9,0.1,0.9\n"), "p.csv: line 2: expected 5 fields as in the header, found 4"),
            (
                format!("{head}A,0.9,0.1,0.9,0.8\nA,0.9,0.1,0.9,0.8\n"),
                "p.csv: line 3: encoder `A` already appears on line 2",
            ),
            (
                format!("{head}A,NaN,0.1,0.9,0.8\n"),
                "p.csv: line 2, column `discrimination`: NaN is out of range",
            ),
            (head.to_string(), "p.csv: line 2: no data rows"),
            (
                "encoder,discrimination,calibration,robustness\nA,1,1,1\n".into(),
                "missing column `label_efficiency`",
            ),
            (format!("{}{}", head.trim_end(), ",extra\nA,1,0,1,1,1\n"), "unknown column `extra`"),
            (String::new(), "p.csv: header: the file is empty"),
        ];
        let commented = format!("# source: a comment line\n{head}A,0.9,0.05,0.9,0.8\nB,0.9,x,0.9,0.8\n");
        let cases = cases.into_iter().chain([(commented, "p.csv: line 4, column `calibration`: `x` is not")]);
        for (text, expected) in cases {
            let err = parse(&text, ValueScale::Oriented).unwrap_err().to_string();
            assert!(err.contains(expected), "`{err}` should contain `{expected}`");
        }
        let err =
            parse(&format!("{head}A,0.9,0.1,1.2,0.8\n"), ValueScale::Normalized).unwrap_err().to_string();
        assert!(
            err.contains("column `label_efficiency`: 1.2 is out of range; expected a normalised"),
            "{err}"
        );
    }

    #[test]
    fn a_selective_column_gives_five_axis_profiles_oriented_as_negative_augrc() {
        let head = "encoder,discrimination,calibration,label_efficiency,robustness";
        let four = parse(&format!("{head}\nA,0.9,0.05,1.0,0.8\n"), ValueScale::Oriented).unwrap();
        assert_eq!(four[0].values.len(), 4);
        let five =
            parse(&format!("selective,{head}\n0.125,A,0.9,0.05,1.0,0.8\n"), ValueScale::Oriented).unwrap();
        assert_eq!(&five[0].values[..4], &four[0].values[..]);
        assert_eq!(five[0].get(Axis::Selective), Some(oriented_selective(0.125)));
        let err = parse(&format!("{head},selective\nA,0.9,0.05,1.0,0.8,1.5\n"), ValueScale::Oriented)
            .unwrap_err()
            .to_string();
        assert!(err.contains("column `selective`: 1.5 is out of range; expected a raw AUGRC"), "{err}");
        let err = parse(&format!("{head},selective\nA,0.9,0.05,1.0,0.8,\n"), ValueScale::Oriented)
            .unwrap_err()
            .to_string();
        assert!(err.contains("column `selective`: missing value"), "{err}");
    }
}
