//! `calibra crs PROFILES.csv`: the Clinical Reliability Score of encoder profiles, against a reference
//! built from the file itself or against a saved (frozen) reference
//! ([`calibra_report::score_profiles`]).

use crate::cli::output::OutputFormat;
use crate::cli::weights;
use anyhow::Result;
use calibra_crs::{AxisWeights, ComponentWeights};
use calibra_report::{ProfileScoringOptions, score_profiles};
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

pub fn run(args: &CrsArgs) -> Result<()> {
    let options = ProfileScoringOptions {
        profiles: args.profiles.clone(),
        normalized: args.normalized,
        reference: args.reference.clone(),
        save_reference: args.save_reference.clone(),
        weights: args.weights,
        axis_weights: args.axis_weights,
    };
    let scoring = score_profiles(&options, &mut |m| eprintln!("{m}"))?;
    match args.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&scoring.rows())?),
        OutputFormat::Table => print!("{}", scoring.table()),
    }
    Ok(())
}
