//! `calibra merge DIR... --out DIR`: combine run stores (e.g. the shards of one grid) into one,
//! dropping identical duplicates and refusing conflicting ones, all or nothing (see
//! calibra_run::merge). `calibra merge --repair DIR` rebuilds one store whose journal and records
//! disagree (see calibra_run::repair).

use anyhow::Result;
use calibra_run::store::StoreOptions;
use calibra_run::{merge_stores, repair_store};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The run stores to merge, in order (the first occurrence of a record wins); with --repair, the
    /// one store to repair.
    #[arg(required = true, value_name = "STORE")]
    pub stores: Vec<PathBuf>,
    /// The output run store (created, or extended when it exists).
    #[arg(long, value_name = "DIR", required_unless_present = "repair", conflicts_with = "repair")]
    pub out: Option<PathBuf>,
    /// Repair STORE in place: keep every committed record exactly once and rebuild the journal (for a
    /// store that `run --resume` and `merge` refuse, e.g. after two processes wrote it at once).
    #[arg(long)]
    pub repair: bool,
    /// Remove the output store's lock file first (only when the process named in it is gone).
    #[arg(long)]
    pub break_lock: bool,
}

pub fn run(args: &MergeArgs) -> Result<()> {
    let Some(out) = &args.out else { return repair(args) };
    let summary = merge_stores(&args.stores, out, StoreOptions { break_lock: args.break_lock })?;
    // Carry the recipe along (for `calibra report`) when the sources agree on it.
    let recipes: Vec<String> = args
        .stores
        .iter()
        .filter_map(|s| std::fs::read_to_string(s.join("journal/recipe.toml")).ok())
        .collect();
    let target = out.join("journal/recipe.toml");
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
        out.display(),
        summary.records_read,
        summary.records_written,
        summary.identical_duplicates,
        summary.failures_copied
    );
    Ok(())
}

fn repair(args: &MergeArgs) -> Result<()> {
    let [store] = args.stores.as_slice() else {
        anyhow::bail!("--repair takes exactly one STORE ({} given)", args.stores.len());
    };
    let s = repair_store(store, args.break_lock)?;
    if !s.changed {
        eprintln!("{}: consistent ({} records); nothing to repair", store.display(), s.records_kept);
        return Ok(());
    }
    eprintln!(
        "{}: repaired: {} records kept, {} duplicates dropped, {} records of uncommitted appends dropped, {} \
         unreadable lines dropped; the old files are in {}",
        store.display(),
        s.records_kept,
        s.duplicates_dropped,
        s.uncommitted_dropped,
        s.unreadable_lines,
        s.backup.as_ref().map_or_else(String::new, |b| b.display().to_string())
    );
    if !s.incomplete_fits.is_empty() {
        eprintln!(
            "note: {} fit(s) hold fewer records than their journal announced; `calibra run --resume` reruns \
             their missing slots",
            s.incomplete_fits.len()
        );
    }
    Ok(())
}
