//! What the FOCUS analyses compute (see `crate::focus_analyses`).

use std::path::PathBuf;

use crate::adaptation_deltas::PairedBootstrapConfig;
use crate::group_columns::GroupColumn;
use crate::sample_metrics::SampleMetric;
use crate::subgroup_gaps::DEFAULT_MIN_GROUP_SIZE;

/// What the FOCUS analyses compute.
#[derive(Debug, Clone)]
pub struct FocusOptions {
    /// Declared group columns (subgroups and quality strata).
    pub columns: Vec<GroupColumn>,
    /// The group table; `None` reads the columns from each predictions file.
    pub groups_file: Option<PathBuf>,
    /// Groups smaller than this are reported as skipped (default 30).
    pub min_group_size: usize,
    /// Metrics compared (default: AUROC, ECE, Brier, accuracy).
    pub metrics: Vec<SampleMetric>,
    /// Paired bootstrap of the adaptation deltas (its `n_bins` is also the ECE binning of the gaps);
    /// `replicates = 0` gives point deltas without intervals.
    pub bootstrap: PairedBootstrapConfig,
}

impl Default for FocusOptions {
    fn default() -> Self {
        FocusOptions {
            columns: Vec::new(),
            groups_file: None,
            min_group_size: DEFAULT_MIN_GROUP_SIZE,
            metrics: SampleMetric::ALL.to_vec(),
            bootstrap: PairedBootstrapConfig::default(),
        }
    }
}
