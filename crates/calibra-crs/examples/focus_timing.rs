//! Times the FOCUS analyses (subgroup gaps and the adaptation-delta paired bootstrap) on a run store, as
//! `calibra eval` runs them (default options: the four sample metrics, 2,000 replicates, level 0.95, 15
//! ECE bins, no group column), and optionally writes the adaptation deltas as JSON so two builds can be
//! compared number for number. Then times `Evaluation::build` with its default options (the CRS part of
//! `calibra eval`).
//!
//! ```text
//! cargo run --release -p calibra-crs --example focus_timing -- RUNS.jsonl [REPLICATES] [OUT.json]
//! ```
//!
//! Issue 9 (quickstart under 10 minutes): see the section "Report: adaptation-delta bootstrap" of
//! benches/RESULTS.md.

use std::path::PathBuf;
use std::time::Instant;

use calibra_crs::{
    Evaluation, EvaluationOptions, FocusOptions, PairedBootstrapConfig, RunRecordSet, focus_analyses,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runs = PathBuf::from(args.next().ok_or("usage: focus_timing RUNS.jsonl [REPLICATES] [OUT.json]")?);
    let replicates: usize = match args.next() {
        Some(r) => r.parse().map_err(|e| format!("REPLICATES {r:?}: {e}"))?,
        None => 2_000,
    };
    let out = args.next().map(PathBuf::from);

    let started = Instant::now();
    let set = RunRecordSet::from_path(&runs)?;
    let options = FocusOptions {
        bootstrap: PairedBootstrapConfig { replicates, ..PairedBootstrapConfig::default() },
        ..FocusOptions::default()
    };
    let loaded = started.elapsed().as_secs_f64();
    let report = focus_analyses(&set, &options)?;
    let total = started.elapsed().as_secs_f64();
    println!(
        "records {} pairs {} unpaired {} replicates {replicates} threads {}: load {loaded:.3} s, focus {:.3} s",
        set.len(),
        report.adaptation.len(),
        report.unpaired.len(),
        rayon::current_num_threads(),
        total - loaded
    );
    // The rest of `calibra eval`: the CRS evaluation with its default options (paired-seed bootstrap,
    // stability analyses), for the scaling check of issue 9.
    let started = Instant::now();
    let built = Evaluation::build(&set, &EvaluationOptions::default());
    println!(
        "Evaluation::build (default options): {:.3} s ({})",
        started.elapsed().as_secs_f64(),
        match &built {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("error: {e}"),
        }
    );
    if let Some(out) = out {
        std::fs::write(&out, serde_json::to_string(&report.adaptation)?)?;
        println!("adaptation deltas written to {}", out.display());
    }
    Ok(())
}
