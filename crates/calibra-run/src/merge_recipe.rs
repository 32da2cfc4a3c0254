//! `calibra merge DIR... --out DIR`: [`merge_stores`](crate::merge_stores), then the recipe carried
//! along (`journal/recipe.toml`, which `calibra report` reads) when every source that has one
//! agrees on it; an output that already has a recipe keeps it.

use std::path::{Path, PathBuf};

use calibra_predictions::PredictionsError;
use thiserror::Error;

use crate::store::StoreOptions;
use crate::{MergeSummary, RunError, merge_stores};

/// Why a merge failed.
#[derive(Debug, Error)]
pub enum MergeRecipeError {
    #[error(transparent)]
    Merge(#[from] RunError),
    /// The recipe could not be written to the output store.
    #[error(transparent)]
    Recipe(#[from] PredictionsError),
}

/// What happened to the sources' recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecipeCopy {
    /// No source has one.
    Absent,
    /// Copied to the output.
    Copied,
    /// The sources agree, and the output already had a recipe.
    Kept,
    /// The sources disagree: none is copied.
    Differ,
}

/// What a merge did, to the records and to the recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOutcome {
    pub summary: MergeSummary,
    pub recipe: RecipeCopy,
    pub out: PathBuf,
}

/// The recipe file of a store.
fn recipe_path(store: &Path) -> PathBuf {
    store.join("journal/recipe.toml")
}

/// Merge `stores` into `out` and carry their recipe along when they agree on it.
pub fn merge_with_recipe(
    stores: &[PathBuf],
    out: &Path,
    options: StoreOptions,
) -> Result<MergeOutcome, MergeRecipeError> {
    let summary = merge_stores(stores, out, options)?;
    let recipes: Vec<String> =
        stores.iter().filter_map(|s| std::fs::read_to_string(recipe_path(s)).ok()).collect();
    let target = recipe_path(out);
    let recipe = match recipes.first() {
        None => RecipeCopy::Absent,
        Some(first) if recipes.iter().all(|r| r == first) => {
            if target.exists() {
                RecipeCopy::Kept
            } else {
                calibra_predictions::write_atomically(&target, |w| w.write_all(first.as_bytes()))?;
                RecipeCopy::Copied
            }
        }
        Some(_) => RecipeCopy::Differ,
    };
    Ok(MergeOutcome { summary, recipe, out: out.to_path_buf() })
}

impl MergeOutcome {
    /// The lines that report the merge: a note when the recipes differ, then the counts.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.recipe == RecipeCopy::Differ {
            lines.push(format!(
                "note: the sources were run with different recipes; none is copied to {}",
                recipe_path(&self.out).display()
            ));
        }
        let s = &self.summary;
        lines.push(format!(
            "merged {} stores into {}: {} records read, {} written, {} identical duplicates dropped, {} \
             failures copied",
            s.sources,
            self.out.display(),
            s.records_read,
            s.records_written,
            s.identical_duplicates,
            s.failures_copied
        ));
        lines
    }
}
