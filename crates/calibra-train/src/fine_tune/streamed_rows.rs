//! A dataset's training rows as a streamed image source: each batch is decoded, preprocessed (in
//! parallel, by [`image_batch`]) and returned when the trainer asks for it; nothing is cached.

use calibra_data::{Dataset, PreprocessConfig};

use crate::features::{FeatureCondition, image_batch};
use crate::train_images::ImageRows;

/// Training-set row `i` is dataset sample `rows[i]`, clean, preprocessed by `preprocess`.
pub(super) struct DatasetRows {
    /// The dataset's per-sample metadata (ids, image references, labels); no pixels.
    dataset: Dataset,
    rows: Vec<usize>,
    preprocess: PreprocessConfig,
    /// `[c, h, w]` every image must preprocess to (that of the first one).
    shape: [usize; 3],
}

impl DatasetRows {
    pub(super) fn new(
        dataset: &Dataset,
        rows: &[usize],
        preprocess: &PreprocessConfig,
        shape: [usize; 3],
    ) -> Self {
        DatasetRows { dataset: dataset.clone(), rows: rows.to_vec(), preprocess: preprocess.clone(), shape }
    }
}

impl ImageRows for DatasetRows {
    fn pixels(&self, rows: &[usize]) -> Result<Vec<f32>, String> {
        let samples = rows
            .iter()
            .map(|&r| {
                self.rows.get(r).copied().ok_or_else(|| {
                    format!("training row {r} asked for; the training set has {}", self.rows.len())
                })
            })
            .collect::<Result<Vec<usize>, String>>()?;
        let batch = image_batch(&self.dataset, &samples, &self.preprocess, FeatureCondition::Clean)
            .map_err(|e| format!("dataset `{}`: {e}", self.dataset.name))?;
        if !samples.is_empty() && batch.shape != self.shape {
            return Err(format!(
                "dataset `{}`: sample `{}` preprocesses to {:?}, the training set's images to {:?}: set a \
                 centre crop in the encoder's preprocessor_config.json",
                self.dataset.name, self.dataset.samples[samples[0]].id, batch.shape, self.shape
            ));
        }
        Ok(batch.pixels)
    }
}
