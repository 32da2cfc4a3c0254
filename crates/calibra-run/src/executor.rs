//! The executor: what turns one fit into its run records. The grid loop ([`crate::runner`]) is generic
//! over it, so the burn-based executors (frozen probes, LoRA, CoOp, full) plug in without this crate
//! depending on burn.

use std::path::{Path, PathBuf};

use crate::grid::{FeaturePass, FitSpec, Slot};
use crate::run_key::sha256_hex;
use crate::store::RunOutput;

/// An executor's error: any error, with its text recorded in `journal/failures.jsonl`.
pub type ExecError = Box<dyn std::error::Error + Send + Sync>;

/// Progress events of a grid run.
pub trait Progress {
    /// A fit starts (`done` fits of `total` already handled in this run).
    fn fit_started(&mut self, _done: usize, _total: usize, _fit: &FitSpec) {}
    /// A fit finished and `records` records were committed.
    fn fit_finished(&mut self, _fit: &FitSpec, _records: usize, _seconds: f64) {}
    /// A fit failed; its error is recorded.
    fn fit_failed(&mut self, _fit: &FitSpec, _error: &str) {}
    /// A free-form message from the executor (an epoch, a feature pass...).
    fn message(&mut self, _fit: &FitSpec, _text: &str) {}
}

/// Progress that reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// What an executor sees besides the fit.
pub struct RunContext<'a> {
    /// The slots still missing from the store (the executor may compute only these; records for
    /// other slots are accepted and ignored).
    pub missing: Vec<Slot>,
    features_dir: PathBuf,
    fit: &'a FitSpec,
    progress: &'a mut dyn Progress,
}

impl<'a> RunContext<'a> {
    /// A context for `fit`; `features_dir` is the store's feature cache.
    pub fn new(
        fit: &'a FitSpec,
        missing: Vec<Slot>,
        features_dir: &Path,
        progress: &'a mut dyn Progress,
    ) -> Self {
        RunContext { missing, features_dir: features_dir.to_path_buf(), fit, progress }
    }

    /// Reports progress text for the current fit.
    pub fn report(&mut self, text: &str) {
        self.progress.message(self.fit, text);
    }

    /// The fit's own directory in the store, `fits/<fit key>/` (a sibling of `features/`): where an
    /// executor keeps its training checkpoint (so a killed fit resumes mid-training) and the fitted
    /// model it leaves for the user (an adapter, a head). Not created here.
    pub fn fit_dir(&self) -> PathBuf {
        let store = self.features_dir.parent().unwrap_or(Path::new("."));
        store.join(crate::snapshot::FITS_DIR).join(self.fit.key.as_str())
    }

    /// The cache directory of a feature pass: `features/<sha256 of encoder source, dataset spec, split
    /// and condition>/`, shared by every fit reading the same features. Executors write it atomically
    /// (a temporary name renamed into place), so a killed pass is recomputed, never half-read.
    pub fn feature_dir(&self, pass: &FeaturePass) -> PathBuf {
        let c = &self.fit.config;
        let identity = serde_json::json!({
            "encoder": c.encoder, "dataset": c.dataset, "split": c.split, "condition": pass.condition,
        });
        self.features_dir.join(sha256_hex(crate::run_key::canonical_json(&identity).as_bytes()))
    }
}

/// Runs fits.
pub trait Executor {
    /// `Err(why)` when this executor cannot run `fit` at all (checked for the whole grid before any
    /// work starts, so that a missing capability is an error up front, not thousands of failures).
    fn supports(&self, fit: &FitSpec) -> Result<(), String>;

    /// Runs one fit and returns one output per slot (at least every slot in `ctx.missing`). The record
    /// fields encoder, dataset, regime, probe, label_fraction and seed must be the fit's
    /// (`fit.config`), and `condition` / `calibrator` one of its slots; the runner checks this.
    fn execute(&self, fit: &FitSpec, ctx: &mut RunContext<'_>) -> Result<Vec<RunOutput>, ExecError>;
}
