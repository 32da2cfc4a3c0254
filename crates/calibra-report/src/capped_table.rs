//! Capped Markdown tables: the first rows of a long table, with the whole table as CSV linked beside
//! it, so that a report stays readable however large the run set is.

use crate::eval_report::ReportFile;
use crate::markdown::markdown_table;

/// Where the whole of a capped table is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FullTable<'a> {
    /// A CSV the evaluation already writes beside `report.md` (same rows, raw numbers).
    Beside(&'a str),
    /// Write the shown table, every row, as `tables/<name>.csv`.
    Write(&'a str),
}

/// Collects the CSVs of the capped tables of one report.
#[derive(Debug)]
pub(crate) struct Tables {
    /// Rows shown before a table is cut (`usize::MAX`: never cut).
    pub cap: usize,
    pub files: Vec<ReportFile>,
}

/// One CSV field (RFC 4180 quoting where needed).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// A CSV document of `header` and `rows`.
pub(crate) fn csv_document(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    out.push_str(&header.iter().map(|h| csv_field(h)).collect::<Vec<_>>().join(","));
    out.push('\n');
    for row in rows {
        out.push_str(&row.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

impl Tables {
    pub fn uncapped() -> Self {
        Tables { cap: usize::MAX, files: Vec::new() }
    }

    pub fn capped(cap: usize) -> Self {
        Tables { cap, files: Vec::new() }
    }

    /// The Markdown of a table: every row when they fit under the cap, else the first `cap` rows and a
    /// line linking the whole table.
    pub fn table(&mut self, full: FullTable<'_>, header: &[&str], rows: &[Vec<String>]) -> String {
        if rows.len() <= self.cap {
            return markdown_table(header, rows);
        }
        let path = match full {
            FullTable::Beside(name) => name.to_string(),
            FullTable::Write(name) => {
                let path = format!("tables/{name}.csv");
                self.files.push(ReportFile { path: path.clone(), contents: csv_document(header, rows) });
                path
            }
        };
        let mut md = markdown_table(header, &rows[..self.cap]);
        md.push_str(&format!(
            "\n_First {} of {} rows; the whole table: [{path}]({path})._\n",
            self.cap,
            rows.len()
        ));
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_table_is_cut_and_its_csv_written_whole() {
        let rows: Vec<Vec<String>> = (0..5).map(|i| vec![i.to_string(), format!("a,{i}")]).collect();
        let mut t = Tables::capped(2);
        let md = t.table(FullTable::Write("x"), &["i", "v"], &rows);
        assert_eq!(md.matches("\n| ").count(), 2, "{md}");
        assert!(md.contains("_First 2 of 5 rows; the whole table: [tables/x.csv](tables/x.csv)._"), "{md}");
        assert_eq!(t.files.len(), 1);
        assert_eq!(t.files[0].contents.lines().count(), 6);
        assert!(t.files[0].contents.contains("4,\"a,4\"\n"));
        let short = t.table(FullTable::Beside("y.csv"), &["i", "v"], &rows[..2]);
        assert!(!short.contains("whole table") && t.files.len() == 1);
        let beside = t.table(FullTable::Beside("y.csv"), &["i", "v"], &rows);
        assert!(beside.contains("[y.csv](y.csv)") && t.files.len() == 1);
    }
}
