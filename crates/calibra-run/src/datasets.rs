//! The datasets of a grid, loaded once per spec and shared by the runner and its executor, and the
//! two lookups every regime needs: a recipe split of a dataset and a fit's shift target.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use calibra_data::{Dataset, DatasetSpec, LoadOptions, SplitAssignment};

use crate::executor::ExecError;
use crate::grid::FitSpec;
use crate::recipe::SplitSettings;

/// Loaded datasets by spec. Insert-after-load: a load that fails (or panics) leaves the cache as it
/// was, so the runner's recovery from a failed fit never sees a half-loaded dataset.
#[derive(Default)]
pub struct DatasetCache {
    loaded: RefCell<HashMap<String, Rc<Dataset>>>,
}

impl DatasetCache {
    /// The dataset of `spec` (`synth:derm?n=400`, `isic2019:/data/isic`, ...), loaded on first use.
    pub fn get(&self, spec: &str) -> Result<Rc<Dataset>, ExecError> {
        if let Some(d) = self.loaded.borrow().get(spec) {
            return Ok(d.clone());
        }
        let d = Rc::new(calibra_data::load_dataset(&DatasetSpec::parse(spec)?, &LoadOptions::default())?);
        self.loaded.borrow_mut().insert(spec.to_string(), d.clone());
        Ok(d)
    }

    /// The dataset of `fit`'s shift target `target`, checked to have the labels of `dataset` (the
    /// fit's own), with its spec.
    pub fn shift_target<'f>(
        &self,
        fit: &'f FitSpec,
        target: &str,
        dataset: &Dataset,
    ) -> Result<(&'f str, Rc<Dataset>), ExecError> {
        let spec = fit
            .shift_targets
            .iter()
            .find(|t| t.name == target)
            .map(|t| t.spec.as_str())
            .ok_or_else(|| format!("unknown shift target `{target}`"))?;
        let shifted = self.get(spec)?;
        if shifted.labels.names != dataset.labels.names {
            return Err(format!(
                "shift target `{target}` has labels {:?}, the dataset {:?}",
                shifted.labels.names, dataset.labels.names
            )
            .into());
        }
        Ok((spec, shifted))
    }
}

/// The train / calibration / test split of `dataset` under a recipe's `[split]`.
pub fn split_of(dataset: &Dataset, s: &SplitSettings) -> Result<SplitAssignment, ExecError> {
    Ok(calibra_data::split_dataset(dataset, &s.config())?)
}
