//! The executor: what fits one grid fit. It returns a fitted model ([`crate::fitted`]), and the grid
//! loop ([`crate::runner`]) predicts, calibrates, scores and records it the same way for every regime;
//! the loop is generic over the executor, so the burn-based executors (frozen probes, LoRA, CoOp,
//! full, zero-shot; calibra-exec) plug in without this crate depending on burn.

use std::path::{Path, PathBuf};

use crate::datasets::DatasetCache;
use crate::fitted::FitOutcome;
use crate::grid::{FeaturePass, FitSpec, Slot};
use crate::run_key::sha256_hex;

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

    /// Fits `fit` (on the train split's label fraction of `fit.config`) and returns the fitted model;
    /// the runner then predicts every slot in `ctx.missing` with it.
    fn fit<'a>(&'a self, fit: &'a FitSpec, ctx: &mut RunContext<'_>) -> Result<FitOutcome<'a>, ExecError>;

    /// The datasets the executor has loaded, which the runner reads to predict (so that a dataset is
    /// loaded once per grid); `None`: the runner loads its own.
    fn datasets(&self) -> Option<&DatasetCache> {
        None
    }
}
