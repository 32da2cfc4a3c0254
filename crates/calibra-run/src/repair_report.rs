//! What `calibra merge --repair STORE` tells the user about a [`RepairSummary`].

use std::path::Path;

use crate::RepairSummary;

impl RepairSummary {
    /// The lines that report the repair of `store`: consistent, or what was kept and dropped and
    /// where the old files are, with a note when fits are left incomplete.
    pub fn lines(&self, store: &Path) -> Vec<String> {
        let store = store.display();
        if !self.changed {
            return vec![format!("{store}: consistent ({} records); nothing to repair", self.records_kept)];
        }
        let mut lines = vec![format!(
            "{store}: repaired: {} records kept, {} duplicates dropped, {} records of uncommitted appends \
             dropped, {} unreadable lines dropped; the old files are in {}",
            self.records_kept,
            self.duplicates_dropped,
            self.uncommitted_dropped,
            self.unreadable_lines,
            self.backup.as_ref().map_or_else(String::new, |b| b.display().to_string())
        )];
        if !self.incomplete_fits.is_empty() {
            lines.push(format!(
                "note: {} fit(s) hold fewer records than their journal announced; `calibra run --resume` \
                 reruns their missing slots",
                self.incomplete_fits.len()
            ));
        }
        lines
    }
}
