//! Predictions files read once each per analysis: the FOCUS and selective analyses visit every record
//! of a fit, and several records (conditions, calibrators) can name the same predictions file.

use crate::run_record::LocatedRecord;
use calibra_predictions::{Predictions, read_predictions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A predictions file that could not be read, with the record that named it.
#[derive(Debug)]
pub(crate) struct UnreadablePredictions {
    pub record: String,
    pub path: String,
    pub message: String,
}

/// Each predictions file, read and turned into `T` once.
pub(crate) struct PredictionsCache<T> {
    tables: HashMap<PathBuf, Arc<T>>,
    make: fn(Predictions) -> T,
}

impl<T> PredictionsCache<T> {
    /// A cache that keeps `make` of each file's predictions.
    pub fn new(make: fn(Predictions) -> T) -> Self {
        Self { tables: HashMap::new(), make }
    }

    /// The table of `path`, named by record `r`: read on the first request, shared afterwards.
    pub fn get(&mut self, r: &LocatedRecord, path: &Path) -> Result<Arc<T>, UnreadablePredictions> {
        if let Some(t) = self.tables.get(path) {
            return Ok(t.clone());
        }
        let p = read_predictions(path).map_err(|e| UnreadablePredictions {
            record: r.location.to_string(),
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let t = Arc::new((self.make)(p));
        self.tables.insert(path.to_path_buf(), t.clone());
        Ok(t)
    }
}
