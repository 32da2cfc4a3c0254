//! What `evaluation.json` (the file `calibra eval` writes beside its CSV tables) holds: the whole
//! [`Evaluation`] in its own key order, except the per-row tables that are written whole as CSV in the
//! same directory. Those were most of the file (the quickstart's was 15.6 MB compact, 25 MB
//! pretty-printed, for 0.4 MB of everything else), and a copy of a CSV table helps no reader. In their
//! place a `tables` key names each left-out key, its file and its row count, so a reader that looks for
//! `metric_rows` finds where it went instead of an empty list. `calibra eval --format json` still
//! prints the whole evaluation on stdout.

use crate::evaluation::Evaluation;
use serde::Serialize;

/// A key of the evaluation left out of `evaluation.json`, and the CSV file that holds its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableBeside {
    /// The key's path in the evaluation document (`focus.adaptation`: key `adaptation` of `focus`).
    pub key: &'static str,
    pub file: &'static str,
}

/// The per-row tables `evaluation.json` leaves to their CSV files.
pub const TABLES_BESIDE: [TableBeside; 3] = [
    TableBeside { key: "metric_rows", file: "metric_rows.csv" },
    TableBeside { key: "calibration_stability", file: "calibration_stability.csv" },
    TableBeside { key: "focus.adaptation", file: "adaptation_deltas.csv" },
];

/// One entry of the `tables` key.
#[derive(Debug, Serialize)]
struct TableEntry {
    key: &'static str,
    file: &'static str,
    rows: usize,
}

/// How many CSV rows each left-out table has: one per metric row, per stability group, and per
/// adapted run × metric (the rows of `adaptation_deltas.csv`).
fn rows_of(e: &Evaluation, key: &str) -> usize {
    match key {
        "metric_rows" => e.metric_rows.len(),
        "calibration_stability" => e.calibration_stability.rows.len(),
        "focus.adaptation" => {
            e.focus.as_ref().map_or(0, |f| f.adaptation.iter().map(|p| p.deltas.len()).sum())
        }
        _ => 0,
    }
}

/// `evaluation.json`: one line of compact JSON (see the module docs).
pub fn evaluation_file_json(e: &Evaluation) -> Result<String, serde_json::Error> {
    let whole = serde_json::to_string(e)?;
    let tables: Vec<TableEntry> = TABLES_BESIDE
        .iter()
        .filter(|t| t.key != "focus.adaptation" || e.focus.is_some())
        .map(|t| TableEntry { key: t.key, file: t.file, rows: rows_of(e, t.key) })
        .collect();
    let tables = serde_json::to_string(&tables)?;
    let mut out = String::with_capacity(whole.len() / 8);
    out.push('{');
    let mut first = true;
    let mut push = |out: &mut String, key: &str, value: &str| -> Result<(), serde_json::Error> {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&serde_json::to_string(key)?);
        out.push(':');
        out.push_str(value);
        Ok(())
    };
    for (key, value) in ordered_entries(&whole)? {
        match key.as_str() {
            // `tables` takes the place of the first left-out key.
            "metric_rows" => push(&mut out, "tables", &tables)?,
            "calibration_stability" => {}
            "focus" if value != "null" => {
                let kept: Vec<String> = ordered_entries(value)?
                    .into_iter()
                    .filter(|(k, _)| k != "adaptation")
                    .map(|(k, v)| Ok(format!("{}:{v}", serde_json::to_string(&k)?)))
                    .collect::<Result<_, serde_json::Error>>()?;
                push(&mut out, "focus", &format!("{{{}}}", kept.join(",")))?;
            }
            _ => push(&mut out, &key, value)?,
        }
    }
    out.push('}');
    Ok(out)
}

/// The entries of a JSON object in document order: each key (decoded) and its value's raw text. The
/// text is serde_json's own output, so a scan that follows strings (with their escapes) and nesting
/// depth splits it exactly; the result is still checked to be an object.
fn ordered_entries(json: &str) -> Result<Vec<(String, &str)>, serde_json::Error> {
    let not_object = || <serde_json::Error as serde::de::Error>::custom("expected a JSON object");
    let body = json.trim().strip_prefix('{').and_then(|b| b.strip_suffix('}')).ok_or_else(not_object)?;
    let mut entries = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, 0usize);
    let mut split = |end: usize| -> Result<(), serde_json::Error> {
        let entry = body[start..end].trim();
        if !entry.is_empty() {
            let colon = key_end(entry).ok_or_else(not_object)?;
            let key: String = serde_json::from_str(&entry[..colon])?;
            entries.push((key, entry[colon + 1..].trim()));
        }
        start = end + 1;
        Ok(())
    };
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            _ if in_string => {}
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.checked_sub(1).ok_or_else(not_object)?,
            ',' if depth == 0 => split(i)?,
            _ => {}
        }
    }
    split(body.len())?;
    Ok(entries)
}

/// The byte offset of the `:` after an entry's key string.
fn key_end(entry: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in entry.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return entry[i + 1..].find(':').map(|j| i + 1 + j),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_document_order_and_raw_text() {
        let json = r#"{"z":1,"a":{"b":[1.50,2],"c":"x,}]\"{"},"k\",:":"v","m":null}"#;
        let got = ordered_entries(json).unwrap();
        let got: Vec<(&str, &str)> = got.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            got,
            [("z", "1"), ("a", r#"{"b":[1.50,2],"c":"x,}]\"{"}"#), ("k\",:", r#""v""#), ("m", "null")]
        );
        assert!(ordered_entries("{}").unwrap().is_empty());
        assert!(ordered_entries("[1]").is_err());
    }
}
