//! `calibra merge DIR... --out DIR`: combine run stores (e.g. the shards of one grid) into one,
//! dropping identical duplicates and refusing conflicting ones (see calibra_run::merge).

use anyhow::Result;
use calibra_run::merge_stores;
use calibra_run::store::StoreOptions;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The run stores to merge, in order (the first occurrence of a record wins).
    #[arg(required = true, value_name = "STORE")]
    pub stores: Vec<PathBuf>,
    /// The output run store (created, or extended when it exists).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Remove the output store's lock file first (only when the process named in it is gone).
    #[arg(long)]
    pub break_lock: bool,
}

pub fn run(args: &MergeArgs) -> Result<()> {
    let summary = merge_stores(&args.stores, &args.out, StoreOptions { break_lock: args.break_lock })?;
    // Carry the recipe along (for `calibra report`) when the sources agree on it.
    let recipes: Vec<String> = args
        .stores
        .iter()
        .filter_map(|s| std::fs::read_to_string(s.join("journal/recipe.toml")).ok())
        .collect();
    let target = args.out.join("journal/recipe.toml");
    if let Some(first) = recipes.first() {
        if recipes.iter().all(|r| r == first) {
            if !target.exists() {
                calibra_predictions::write_atomically(&target, |w| w.write_all(first.as_bytes()))?;
            }
        } else {
            eprintln!(
                "note: the sources were run with different recipes; none is copied to {}",
                target.display()
            );
        }
    }
    eprintln!(
        "merged {} stores into {}: {} records read, {} written, {} identical duplicates dropped, {} failures copied",
        summary.sources,
        args.out.display(),
        summary.records_read,
        summary.records_written,
        summary.identical_duplicates,
        summary.failures_copied
    );
    Ok(())
}
