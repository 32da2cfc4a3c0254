//! `calibra crs PROFILES.csv`: the Clinical Reliability Score of encoder profiles, against a reference
//! built from the file itself or against a saved (frozen) reference.

use crate::cli::output::OutputFormat;
use crate::cli::weights;
use anyhow::{Context, Result, bail};
use calibra_crs::{
    AxisEstimators, AxisWeights, ComponentWeights, CrsScore, Reference, ReferenceConfig, ScoreWeights,
    ValueScale, ordinal_ranks, read_profiles_csv,
};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CrsArgs {
    /// Profiles CSV with columns `encoder,discrimination,calibration,label_efficiency,robustness`: clean
    /// macro-AUROC, raw ECE (lower is better), AUROC retention and robustness (`#` lines are comments).
    /// An optional column `selective` (raw AUGRC, lower is better) gives the fifth axis; it needs five
    /// axis weights.
    pub profiles: PathBuf,
    /// The four columns are already oriented (larger is better) and normalised into [0, 1]; anchors are
    /// then the identity.
    #[arg(long)]
    pub normalized: bool,
    /// Score against this saved reference (frozen panel, anchors and weights) instead of building one
    /// from PROFILES.csv. Scoring never changes the panel's published scores.
    #[arg(long, value_name = "REF.json")]
    pub reference: Option<PathBuf>,
    /// Save the reference used (built from PROFILES.csv, or the one given) as versioned JSON.
    #[arg(long, value_name = "REF.json")]
    pub save_reference: Option<PathBuf>,
    /// Component weights α_D,α_S,α_W (non-negative, summing to 1) [default: 0.60,0.25,0.15].
    #[arg(long, value_name = "D,S,W", value_parser = weights::parse_component_weights)]
    pub weights: Option<ComponentWeights>,
    /// Axis weights of the ideal-point term, in the order discrimination,calibration,label_efficiency,
    /// robustness (non-negative, summing to 1) [default: 0.25,0.25,0.25,0.25]. A fifth weight adds the
    /// selective axis (−AUGRC; PROFILES.csv then needs the `selective` column).
    #[arg(long, value_name = "a,b,c,d[,e]", value_parser = weights::parse_axis_weights)]
    pub axis_weights: Option<AxisWeights>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

/// One row of the JSON output.
#[derive(Debug, Serialize)]
struct CrsRow<'a> {
    encoder: &'a str,
    dominance: f64,
    ideal: f64,
    worst: f64,
    crs: f64,
    rank: usize,
}

pub fn run(args: &CrsArgs) -> Result<()> {
    let scale = if args.normalized { ValueScale::Normalized } else { ValueScale::Oriented };
    let profiles = read_profiles_csv(&args.profiles, scale)?;
    let selective_column = profiles.first().is_some_and(|p| p.values.len() == 5);
    let selective_weight = args.axis_weights.is_some_and(|w| w.has_selective());
    if selective_weight && !selective_column {
        bail!(
            "{}: five axis weights ask for the selective axis, which needs a `selective` column (raw AUGRC \
             per encoder) in the profiles table; add it or give four axis weights",
            args.profiles.display()
        );
    }
    if selective_column && !selective_weight && args.reference.is_none() {
        bail!(
            "{}: the profiles table has a `selective` column (the fifth axis); give five axis weights \
             (--axis-weights a,b,c,d,e) to score it, or drop the column for the four-axis CRS",
            args.profiles.display()
        );
    }
    let estimators = AxisEstimators {
        selective: selective_column.then(|| AxisEstimators::AUGRC_MSP.to_string()),
        ..AxisEstimators::default()
    };
    let (reference, origin) = match &args.reference {
        Some(path) => {
            let reference = Reference::load(path)?;
            if reference.scale() != scale {
                bail!(
                    "{}: the reference was built from {} profiles but {} holds {} profiles{}",
                    path.display(),
                    reference.scale().name(),
                    args.profiles.display(),
                    scale.name(),
                    if args.normalized { " (drop --normalized)" } else { " (pass --normalized)" }
                );
            }
            reference.check_compatible(&estimators, scale).with_context(|| {
                format!("{}: the reference's estimators differ from a profiles table's", path.display())
            })?;
            weights::check_frozen(path, &reference, args.weights, args.axis_weights)?;
            let origin = format!("reference {} (|R| = {})", path.display(), reference.panel_len());
            (reference, origin)
        }
        None => {
            let weights = ScoreWeights {
                axis: args.axis_weights.unwrap_or_default(),
                component: args.weights.unwrap_or_default(),
            };
            let config = ReferenceConfig { scale, weights, estimators, ..ReferenceConfig::default() };
            let reference = Reference::build(&profiles, config)
                .with_context(|| format!("building a reference from {}", args.profiles.display()))?;
            let anchors = if args.normalized { "identity anchors" } else { "anchors = panel min/max" };
            (reference, format!("reference built from these {} profiles ({anchors})", profiles.len()))
        }
    };
    let scores = reference
        .score(&profiles)
        .with_context(|| format!("scoring {} against the reference", args.profiles.display()))?;
    if let Some(path) = &args.save_reference {
        reference.save(path)?;
        eprintln!("saved the reference to {}", path.display());
    }

    let crs: Vec<f64> = scores.iter().map(|s| s.components.crs).collect();
    let ranks = ordinal_ranks(&crs);
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by_key(|&i| ranks[i]);
    for s in &scores {
        if !s.saturated.is_empty() {
            let axes: Vec<&str> = s.saturated.iter().map(|a| a.name()).collect();
            eprintln!(
                "note: `{}` lies outside the reference anchors on {} (clipped)",
                s.encoder,
                axes.join(", ")
            );
        }
    }
    match args.format {
        OutputFormat::Json => {
            let rows: Vec<CrsRow> = order
                .iter()
                .map(|&i| {
                    let c = scores[i].components;
                    CrsRow {
                        encoder: &scores[i].encoder,
                        dominance: c.dominance,
                        ideal: c.ideal,
                        worst: c.worst,
                        crs: c.crs,
                        rank: ranks[i],
                    }
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
        }
        OutputFormat::Table => print!("{}", table(&scores, &ranks, &order, &origin, &reference)),
    }
    Ok(())
}

fn table(
    scores: &[CrsScore],
    ranks: &[usize],
    order: &[usize],
    origin: &str,
    reference: &Reference,
) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let w = reference.weights();
    let a = w.axis.as_slice();
    let _ = writeln!(out, "{origin}");
    if let [a0, a1, a2, a3] = a {
        let _ = writeln!(
            out,
            "CRS = {}·D + {}·S + {}·W; axis weights (disc, cal, le, rob) = ({}, {}, {}, {})",
            w.component.dominance, w.component.ideal, w.component.worst, a0, a1, a2, a3
        );
    } else {
        let shown: Vec<String> = a.iter().map(f64::to_string).collect();
        let _ = writeln!(
            out,
            "CRS = {}·D + {}·S + {}·W; axis weights (disc, cal, le, rob, sel) = ({})",
            w.component.dominance,
            w.component.ideal,
            w.component.worst,
            shown.join(", ")
        );
    }
    let _ = writeln!(out);
    let width = scores.iter().map(|s| s.encoder.chars().count()).max().unwrap_or(0).max("encoder".len());
    let _ = writeln!(
        out,
        "{:>4}  {:<width$}  {:>8}  {:>8}  {:>8}  {:>8}  note",
        "rank", "encoder", "D", "S", "W", "CRS"
    );
    for &i in order {
        let s = &scores[i];
        let c = s.components;
        let mut note = Vec::new();
        if !s.in_panel {
            note.push("candidate".to_string());
        }
        if !s.saturated.is_empty() {
            let axes: Vec<&str> = s.saturated.iter().map(|a| a.name()).collect();
            note.push(format!("clipped: {}", axes.join(",")));
        }
        let _ = writeln!(
            out,
            "{:>4}  {:<width$}  {:>8.4}  {:>8.4}  {:>8.4}  {:>8.4}  {}",
            ranks[i],
            s.encoder,
            c.dominance,
            c.ideal,
            c.worst,
            c.crs,
            note.join("; ")
        );
    }
    out
}
