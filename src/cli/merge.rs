//! `calibra merge DIR... --out DIR`: combine run stores (e.g. the shards of one grid) into one,
//! dropping identical duplicates and refusing conflicting ones, all or nothing, with the recipe
//! carried along (see calibra_run::merge and calibra_run::merge_recipe). `calibra merge --repair DIR` rebuilds one store whose journal and records
//! disagree (see calibra_run::repair).

use anyhow::Result;
use calibra_run::store::StoreOptions;
use calibra_run::{merge_with_recipe, repair_store};
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
    let outcome = merge_with_recipe(&args.stores, out, StoreOptions { break_lock: args.break_lock })?;
    for line in outcome.lines() {
        eprintln!("{line}");
    }
    Ok(())
}

fn repair(args: &MergeArgs) -> Result<()> {
    let [store] = args.stores.as_slice() else {
        anyhow::bail!("--repair takes exactly one STORE ({} given)", args.stores.len());
    };
    for line in repair_store(store, args.break_lock)?.lines(store) {
        eprintln!("{line}");
    }
    Ok(())
}
