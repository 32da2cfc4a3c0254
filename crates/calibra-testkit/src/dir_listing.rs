//! What a directory holds, for tests of writers that must leave nothing behind.

use std::path::Path;

/// The names of the entries of `dir` (files, directories, hidden ones included), sorted.
pub fn sorted_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
