//! `calibra compare-ranks <A.csv> <B.csv> [--format table|json]`: compare two orderings of the same
//! encoders (spec §5.4). Each CSV has the header `encoder,score` and one row per encoder; higher scores
//! are better. The statistics are `calibra_crs::rank_compare`'s.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use calibra_crs::rank_compare::{RankComparison, compare_rankings, encoder_set_difference};

use crate::cli::output::OutputFormat;

/// Arguments of `calibra compare-ranks`.
#[derive(Debug, clap::Args)]
pub struct CompareRanksArgs {
    /// First ordering: CSV `encoder,score` (higher is better); its order breaks score ties.
    pub a: PathBuf,
    /// Second ordering: CSV `encoder,score` with the same encoders, in any order.
    pub b: PathBuf,
    /// Output format: a summary table with per-encoder moves, or one JSON object.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

/// Reads an `encoder,score` CSV; errors name the file and the 1-based line (the header is line 1).
pub fn read_scores(path: &Path) -> Result<Vec<(String, f64)>> {
    let file = path.display();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .flexible(true)
        .from_path(path)
        .with_context(|| format!("{file}: cannot open"))?;
    let headers =
        reader.headers().with_context(|| format!("{file}: line 1: cannot read the header"))?.clone();
    if headers.len() != 2 || &headers[0] != "encoder" || &headers[1] != "score" {
        bail!(
            "{file}: line 1: expected the header `encoder,score`, found `{}`",
            headers.iter().collect::<Vec<_>>().join(",")
        );
    }
    let mut rows = Vec::new();
    let mut first_line: HashMap<String, u64> = HashMap::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("{file}: malformed CSV"))?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != 2 {
            bail!("{file}: line {line}: expected 2 fields (encoder,score), found {}", record.len());
        }
        let encoder = record[0].to_string();
        if encoder.is_empty() {
            bail!("{file}: line {line}: empty encoder name");
        }
        let score: f64 =
            record[1].parse().ok().filter(|s: &f64| s.is_finite()).with_context(|| {
                format!("{file}: line {line}: score `{}` is not a finite number", &record[1])
            })?;
        if let Some(first) = first_line.insert(encoder.clone(), line) {
            bail!("{file}: line {line}: encoder `{encoder}` already listed on line {first}");
        }
        rows.push((encoder, score));
    }
    if rows.len() < 2 {
        bail!("{file}: need at least 2 encoders to compare, found {}", rows.len());
    }
    Ok(rows)
}

/// Runs the subcommand: prints the comparison to stdout.
pub fn run(args: &CompareRanksArgs) -> Result<()> {
    let a = read_scores(&args.a)?;
    let b = read_scores(&args.b)?;
    let (only_a, only_b) = encoder_set_difference(&a, &b);
    if !only_a.is_empty() || !only_b.is_empty() {
        bail!(
            "{} and {} rank different encoders: only in {}: [{}]; only in {}: [{}]",
            args.a.display(),
            args.b.display(),
            args.a.display(),
            only_a.join(", "),
            args.b.display(),
            only_b.join(", ")
        );
    }
    let comparison = compare_rankings(&a, &b)?;
    match args.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&comparison)?),
        OutputFormat::Table => print!("{}", table(&comparison, &args.a, &args.b)),
    }
    Ok(())
}

fn table(c: &RankComparison, a: &Path, b: &Path) -> String {
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
