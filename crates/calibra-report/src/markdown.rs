//! Markdown tables with escaped cells and consistent number formatting.

/// A number for a report: 4 decimals, `—` where undefined (NaN) or absent.
pub fn format_number(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.4}"),
        Some(v) if v.is_nan() => "—".to_string(),
        Some(v) => v.to_string(),
        None => "—".to_string(),
    }
}

/// A GitHub-flavoured Markdown table. Pipes and newlines inside cells are escaped.
///
/// # Panics
/// If a row does not have as many cells as the header.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::new();
    out.push_str(&format!("| {} |\n", header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        assert_eq!(row.len(), header.len(), "a Markdown row must have one cell per column");
        out.push_str(&format!("| {} |\n", row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shape_and_escaping() {
        let t = markdown_table(&["a", "b"], &[vec!["x|y".into(), format_number(Some(f64::NAN))]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| x\\|y | — |\n");
        assert_eq!(format_number(Some(0.123456)), "0.1235");
    }
}
