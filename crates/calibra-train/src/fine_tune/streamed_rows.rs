//! A dataset's training rows as an image source: each batch is decoded and preprocessed (in
//! parallel) when the trainer asks for it, under the dataset's bad-image policy; nothing is cached.
//! The in-memory training set reads all its rows through the same function, so both kinds of set
//! see the same pixels and leave out the same unreadable images.

use calibra_data::{Dataset, PreprocessConfig};

use crate::features::{FeatureCondition, readable_image_batch};
use crate::train_images::{ImageRows, RowPixels, UnreadableImage};

/// What an error under the `fail` policy adds.
const SKIP_HINT: &str = " (add `on_bad_image=skip` to the dataset spec to leave such training images out)";

/// Training-set row `i` is dataset sample `rows[i]`, clean, preprocessed by `preprocess`.
pub(super) struct DatasetRows {
    /// The dataset's per-sample metadata (ids, image references, labels); no pixels.
    dataset: Dataset,
    rows: Vec<usize>,
    preprocess: PreprocessConfig,
    /// `[c, h, w]` every image must preprocess to (that of the first readable one).
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
    fn pixels(&self, rows: &[usize]) -> Result<RowPixels, String> {
        read_rows(&self.dataset, &self.rows, rows, &self.preprocess, self.shape)
    }
}

/// The images of training rows `rows` (training row `i` is dataset sample `samples[i]`), clean and
/// preprocessed, each of `shape`. Under the dataset's `fail` policy an image that cannot be read is
/// an error naming the sample and its file; under `skip` it is zeros in the output, listed.
pub(super) fn read_rows(
    dataset: &Dataset,
    samples: &[usize],
    rows: &[usize],
    preprocess: &PreprocessConfig,
    shape: [usize; 3],
) -> Result<RowPixels, String> {
    let named = |e: String| format!("dataset `{}`: {e}", dataset.name);
    let indices =
        rows.iter()
            .map(|&r| {
                samples.get(r).copied().ok_or_else(|| {
                    format!("training row {r} asked for; the training set has {}", samples.len())
                })
            })
            .collect::<Result<Vec<usize>, String>>()?;
    let read = readable_image_batch(dataset, &indices, preprocess, FeatureCondition::Clean)
        .map_err(|e| named(format!("{e}{SKIP_HINT}")))?;
    if let Some(&first) = read.kept.first()
        && read.batch.shape != shape
    {
        return Err(named(format!(
            "sample `{}` preprocesses to {:?}, the training set's images to {shape:?}: set a centre crop in \
             the encoder's preprocessor_config.json",
            dataset.samples[indices[first]].id, read.batch.shape
        )));
    }
    let size: usize = shape.iter().product();
    let mut pixels = vec![0.0; rows.len() * size];
    for (&p, image) in read.kept.iter().zip(read.batch.pixels.chunks_exact(size)) {
        pixels[p * size..(p + 1) * size].copy_from_slice(image);
    }
    let unreadable = read
        .skipped
        .into_iter()
        .map(|(p, s)| UnreadableImage { row: rows[p], sample: s.location, reason: s.reason })
        .collect();
    Ok(RowPixels { pixels, unreadable })
}

/// The first training row (in order) whose image can be read and its preprocessed shape. Under the
/// `fail` policy that is row 0 or the error naming it; under `skip`, an error only when no image of
/// the training set can be read.
pub(super) fn first_readable(
    dataset: &Dataset,
    samples: &[usize],
    preprocess: &PreprocessConfig,
) -> Result<(usize, [usize; 3]), String> {
    for (row, &sample) in samples.iter().enumerate() {
        let read = readable_image_batch(dataset, &[sample], preprocess, FeatureCondition::Clean)
            .map_err(|e| format!("dataset `{}`: {e}{SKIP_HINT}", dataset.name))?;
        if !read.kept.is_empty() {
            return Ok((row, read.batch.shape));
        }
    }
    Err(format!("dataset `{}`: none of the {} training images can be read", dataset.name, samples.len()))
}
