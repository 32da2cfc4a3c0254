//! Where a training set's preprocessed images come from: held in memory, or read batch by batch
//! from a source that decodes and preprocesses them on demand (streamed from disk), so that memory
//! holds one batch of pixels however large the dataset is.
//!
//! Both give the same pixels for the same rows (a source must be a pure function of the rows it is
//! asked for), so a run trains to the same bits either way; only memory and time differ.
//!
//! A streamed set reads ahead: [`TrainImages::prefetch`] starts decoding the next step's rows on a
//! worker thread while the current step computes, and the next [`TrainImages::gather`] of those rows
//! (or of a contiguous part of them: a micro-batch under gradient accumulation) takes them from it.
//! At most the current step's and the next step's pixels are held.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

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
    /// Read when a batch needs them (and read ahead by one step); nothing else is kept.
    Streamed(Arc<dyn ImageRows>, ReadAhead),
}

impl fmt::Debug for TrainImages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainImages::InMemory(p) => write!(f, "InMemory({} values)", p.len()),
            TrainImages::Streamed(..) => f.write_str("Streamed"),
        }
    }
}

type Pending = JoinHandle<Result<Vec<f32>, String>>;

/// The rows read ahead and their state.
type Slot = Option<(Vec<usize>, Ahead)>;

/// The rows being read ahead (decoding on a worker thread) or already read.
#[derive(Clone, Default)]
pub struct ReadAhead(Arc<Mutex<Slot>>);

enum Ahead {
    Decoding(Pending),
    Done(Result<Vec<f32>, String>),
}

impl ReadAhead {
    /// The pixels of `rows` if they are (a contiguous part of) the rows read ahead, waiting for the
    /// worker if it is still decoding. Rows not read ahead give `None` (read them directly).
    fn take(&self, rows: &[usize], size: usize) -> Option<Result<Vec<f32>, String>> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (ahead_rows, _) = slot.as_ref()?;
        let start = ahead_rows.windows(rows.len().max(1)).position(|w| w == rows)?;
        let (ahead_rows, state) = slot.take()?;
        let result = match state {
            Ahead::Decoding(handle) => {
                handle.join().unwrap_or_else(|_| Err("the image read-ahead thread panicked".to_string()))
            }
            Ahead::Done(result) => result,
        };
        let part = match &result {
            Ok(all) if all.len() == ahead_rows.len() * size => {
                Ok(all[start * size..(start + rows.len()) * size].to_vec())
            }
            Ok(all) => Err(format!(
                "the image source returned {} values for {} images of {size}",
                all.len(),
                ahead_rows.len()
            )),
            Err(e) => Err(e.clone()),
        };
        // Keep the rest for the following micro-batches of the same step.
        if start + rows.len() < ahead_rows.len() {
            *slot = Some((ahead_rows, Ahead::Done(result)));
        }
        Some(part)
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
            TrainImages::Streamed(source, ahead) => {
                let out = match ahead.take(rows, size) {
                    Some(read) => read,
                    None => source.pixels(rows),
                }
                .map_err(TrainerError::Images)?;
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

    /// Starts reading `rows` ahead on a worker thread (streamed sets; a no-op in memory). Replaces
    /// whatever was read ahead before.
    pub(crate) fn prefetch(&self, rows: &[usize]) {
        if let TrainImages::Streamed(source, ahead) = self {
            let (source, owned) = (Arc::clone(source), rows.to_vec());
            let handle = std::thread::spawn(move || source.pixels(&owned));
            let mut slot = ahead.0.lock().unwrap_or_else(|e| e.into_inner());
            *slot = Some((rows.to_vec(), Ahead::Decoding(handle)));
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
        let streamed = TrainImages::Streamed(Arc::new(Rows), ReadAhead::default());
        let rows = [4, 0, 5, 2];
        assert_eq!(in_memory.gather(&rows, 2).unwrap(), streamed.gather(&rows, 2).unwrap());
        // Read ahead, then gathered whole, in micro-batches, or not at all (other rows asked).
        streamed.prefetch(&rows);
        assert_eq!(streamed.gather(&rows, 2).unwrap(), in_memory.gather(&rows, 2).unwrap());
        streamed.prefetch(&rows);
        assert_eq!(streamed.gather(&rows[..2], 2).unwrap(), in_memory.gather(&rows[..2], 2).unwrap());
        assert_eq!(streamed.gather(&rows[2..], 2).unwrap(), in_memory.gather(&rows[2..], 2).unwrap());
        streamed.prefetch(&rows);
        assert_eq!(streamed.gather(&[1, 3], 2).unwrap(), in_memory.gather(&[1, 3], 2).unwrap());
    }

    #[test]
    fn a_source_of_the_wrong_length_is_an_error() {
        let short = TrainImages::Streamed(Arc::new(Short), ReadAhead::default());
        let err = short.gather(&[1, 2], 2).unwrap_err().to_string();
        assert!(err.contains("1 values for 2 images"), "{err}");
        short.prefetch(&[1, 2]);
        let err = short.gather(&[1, 2], 2).unwrap_err().to_string();
        assert!(err.contains("1 values for 2 images"), "read ahead: {err}");
    }
}
