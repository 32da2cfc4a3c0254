//! `calibra metrics FILE`: the discrimination and calibration metric set of one predictions file,
//! followed by the selective-prediction set (`aurc`, `eaurc`, `augrc`, `risk_at_80_coverage`,
//! `coverage_at_5_risk`, `smooth_ece`, `debiased_ece`, `selective_by_score`; see
//! `calibra_metrics::selective_summary`), added after the original keys (`calibra_report::MetricsReport`).

use crate::cli::output::{OutputFormat, emit};
use anyhow::Result;
use calibra_metrics::{Binning, SummaryOptions};
use calibra_predictions::read_predictions;
use calibra_report::MetricsReport;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    /// Predictions CSV: `id`, `label` or `label_<name>` columns, and `logit_<class>` or `prob_<class>` columns.
    pub file: PathBuf,
    /// Number of equal-width bins for ECE, MCE, class-wise ECE and the reliability diagram (and of
    /// equal-mass bins for adaptive ECE).
    #[arg(long, default_value_t = 15, allow_negative_numbers = true, value_parser = crate::cli::eval::numbers::bins)]
    pub bins: u32,
    /// Which bin a confidence exactly on an inner edge belongs to: `right-closed` (lo, hi] as in
    /// Guo et al. and MVC-Bench; `left-closed` [lo, hi) as netcal; `torchmetrics` [lo, hi) with an
    /// extra bin for exactly 1.0.
    #[arg(long, default_value = "right-closed")]
    pub binning: Binning,
    /// The classes are ordered grades: also report quadratic weighted kappa and ordinal MAE.
    #[arg(long)]
    pub ordinal: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

pub fn run(args: &MetricsArgs) -> Result<()> {
    let predictions = read_predictions(&args.file)?;
    let options = SummaryOptions { n_bins: args.bins as usize, binning: args.binning, ordinal: args.ordinal };
    let report = MetricsReport::of(&predictions, &args.file.display().to_string(), &options)?;
    match args.format {
        OutputFormat::Json => emit(&(serde_json::to_string_pretty(&report)? + "\n"))?,
        OutputFormat::Table => emit(&report.table())?,
    }
    Ok(())
}
