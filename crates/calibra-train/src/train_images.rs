//! Where a training set's preprocessed images come from: held in memory, or read batch by batch
//! from a source that decodes and preprocesses them on demand (streamed from disk), so that memory
//! holds one batch of pixels however large the dataset is.
//!
//! Both give the same pixels for the same rows (a source must be a pure function of the rows it is
//! asked for), so a run trains to the same bits either way; only memory and time differ.

use std::fmt;
use std::sync::Arc;

use crate::trainer::TrainerError;

/// Preprocessed images on demand: `pixels(rows)` returns the images of `rows` (indices into the
/// training set), row-major `rows.len() × c·h·w`, identical on every call.
pub trait ImageRows: Send + Sync {
    /// The pixels of `rows`, or a message naming the image that could not be read.
    fn pixels(&self, rows: &[usize]) -> Result<Vec<f32>, String>;
}

/// A training set's images.
#[derive(Clone)]
pub enum TrainImages {
    /// Row-major `n × c·h·w`, all in memory.
    InMemory(Vec<f32>),
    /// Read when a batch needs them; nothing is kept between batches.
    Streamed(Arc<dyn ImageRows>),
}

impl fmt::Debug for TrainImages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainImages::InMemory(p) => write!(f, "InMemory({} values)", p.len()),
            TrainImages::Streamed(_) => f.write_str("Streamed"),
        }
    }
}

impl TrainImages {
    /// The pixels of `rows`, each `size` values, row-major; a streamed source that returns another
    /// length is an error, not a misaligned batch.
    pub(crate) fn gather(&self, rows: &[usize], size: usize) -> Result<Vec<f32>, TrainerError> {
        match self {
            TrainImages::InMemory(all) => {
                let mut out = Vec::with_capacity(rows.len() * size);
                for &i in rows {
                    out.extend_from_slice(&all[i * size..(i + 1) * size]);
                }
                Ok(out)
            }
            TrainImages::Streamed(source) => {
                let out = source.pixels(rows).map_err(TrainerError::Images)?;
                if out.len() != rows.len() * size {
                    return Err(TrainerError::Images(format!(
                        "the image source returned {} values for {} images of {size}",
                        out.len(),
                        rows.len()
                    )));
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rows;
    impl ImageRows for Rows {
        fn pixels(&self, rows: &[usize]) -> Result<Vec<f32>, String> {
            Ok(rows.iter().flat_map(|&r| [r as f32, r as f32 + 0.5]).collect())
        }
    }

    struct Short;
    impl ImageRows for Short {
        fn pixels(&self, _: &[usize]) -> Result<Vec<f32>, String> {
            Ok(vec![0.0])
        }
    }

    #[test]
    fn streamed_and_in_memory_gather_the_same_rows() {
        let in_memory = TrainImages::InMemory((0..6).flat_map(|r| [r as f32, r as f32 + 0.5]).collect());
        let streamed = TrainImages::Streamed(Arc::new(Rows));
        let rows = [4, 0, 5, 2];
        assert_eq!(in_memory.gather(&rows, 2).unwrap(), streamed.gather(&rows, 2).unwrap());
    }

    #[test]
    fn a_source_of_the_wrong_length_is_an_error() {
        let err = TrainImages::Streamed(Arc::new(Short)).gather(&[1, 2], 2).unwrap_err().to_string();
        assert!(err.contains("1 values for 2 images"), "{err}");
    }
}
