//! Two orderings of the same encoders from `encoder,score` CSV files (`calibra compare-ranks`, spec
//! §5.4): the reader, with errors naming the file and the 1-based line (the header is line 1), and the
//! comparison of two files. Higher scores are better; the statistics are
//! `calibra_crs::rank_compare`'s.

use calibra_crs::rank_compare::encoder_set_difference;
use calibra_crs::{CrsError, RankComparison, compare_rankings};
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ScoreFileError {
    /// `what` is the place and the step: `FILE: cannot open`, `FILE: line 1: cannot read the header`,
    /// `FILE: malformed CSV`.
    #[error("{what}")]
    Csv {
        what: String,
        #[source]
        source: csv::Error,
    },
    /// A file whose content is not a list of at least 2 distinct encoders with finite scores.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Compare(#[from] CrsError),
}

/// Reads an `encoder,score` CSV: at least 2 encoders, each once, with finite scores.
pub fn read_scores(path: &Path) -> Result<Vec<(String, f64)>, ScoreFileError> {
    let file = path.display();
    let csv_error = |what: String| move |source| ScoreFileError::Csv { what, source };
    let invalid = |message: String| Err(ScoreFileError::Invalid(format!("{file}: {message}")));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .flexible(true)
        .from_path(path)
        .map_err(csv_error(format!("{file}: cannot open")))?;
    let headers =
        reader.headers().map_err(csv_error(format!("{file}: line 1: cannot read the header")))?.clone();
    if headers.len() != 2 || &headers[0] != "encoder" || &headers[1] != "score" {
        let found = headers.iter().collect::<Vec<_>>().join(",");
        return invalid(format!("line 1: expected the header `encoder,score`, found `{found}`"));
    }
    let mut rows = Vec::new();
    let mut first_line: HashMap<String, u64> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(csv_error(format!("{file}: malformed CSV")))?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != 2 {
            return invalid(format!(
                "line {line}: expected 2 fields (encoder,score), found {}",
                record.len()
            ));
        }
        let encoder = record[0].to_string();
        if encoder.is_empty() {
            return invalid(format!("line {line}: empty encoder name"));
        }
        let Some(score) = record[1].parse::<f64>().ok().filter(|s| s.is_finite()) else {
            return invalid(format!("line {line}: score `{}` is not a finite number", &record[1]));
        };
        if let Some(first) = first_line.insert(encoder.clone(), line) {
            return invalid(format!("line {line}: encoder `{encoder}` already listed on line {first}"));
        }
        rows.push((encoder, score));
    }
    if rows.len() < 2 {
        return invalid(format!("need at least 2 encoders to compare, found {}", rows.len()));
    }
    Ok(rows)
}

/// Compares the orderings of the files `a` and `b`, which must rank the same encoders.
pub fn compare_score_files(a: &Path, b: &Path) -> Result<RankComparison, ScoreFileError> {
    let (scores_a, scores_b) = (read_scores(a)?, read_scores(b)?);
    let (only_a, only_b) = encoder_set_difference(&scores_a, &scores_b);
    if !only_a.is_empty() || !only_b.is_empty() {
        return Err(ScoreFileError::Invalid(format!(
            "{} and {} rank different encoders: only in {}: [{}]; only in {}: [{}]",
            a.display(),
            b.display(),
            a.display(),
            only_a.join(", "),
            b.display(),
            only_b.join(", ")
        )));
    }
    Ok(compare_rankings(&scores_a, &scores_b)?)
}

/// The comparison as `calibra compare-ranks` prints it: the statistics, then each encoder's move.
pub fn rank_comparison_table(c: &RankComparison, a: &Path, b: &Path) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "A = {}", a.display());
    let _ = writeln!(out, "B = {}", b.display());
    let _ = writeln!(out, "encoders                     {}", c.n);
    let _ = writeln!(out, "Kendall tau (ordinal ranks)  {:.3}", c.kendall_tau);
    let _ = writeln!(out, "Spearman rho (ordinal ranks) {:.3}", c.spearman_rho);
    let _ = writeln!(out, "Kendall tau-b (raw scores)   {:.3}", c.kendall_tau_b_scores);
    let _ = writeln!(out, "weighted tau (raw scores)    {:.3}", c.weighted_tau);
    let _ = writeln!(out, "pairwise reversals           {} of {}", c.reversals, c.pairs);
    let _ = writeln!(out, "mean |rank displacement|     {:.3}", c.mean_abs_displacement);
    for (k, overlap) in &c.top_k_overlap {
        let _ = writeln!(out, "top-{k} overlap                {overlap:.3}");
    }
    let _ = writeln!(
        out,
        "tied score pairs             A: {}, B: {} (ties broken by file order)",
        c.ties_a, c.ties_b
    );
    let width = c.moves.iter().map(|m| m.encoder.chars().count()).max().unwrap_or(0).max("encoder".len());
    let _ = writeln!(out);
    let _ = writeln!(out, "{:<width$}  rank A  rank B  move (rank A − rank B; + = better in B)", "encoder");
    for m in &c.moves {
        let delta = m.rank_a as i64 - m.rank_b as i64;
        let arrow = match delta.signum() {
            1 => format!("+{delta}"),
            -1 => format!("{delta}"),
            _ => "=".to_string(),
        };
        let _ = writeln!(out, "{:<width$}  {:>6}  {:>6}  {arrow}", m.encoder, m.rank_a, m.rank_b);
    }
    out
}
