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
//!
//! An image that cannot be read (a file that exists but does not decode) is an error naming it under
//! the dataset's `fail` bad-image policy. Under `skip` the source returns it as an
//! [`UnreadableImage`] and [`TrainImages::gather`] leaves its row out of the batch; both kinds of set
//! do so identically, so they still train to the same bits.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use crate::trainer::TrainerError;

/// A training image left out under the `skip` bad-image policy: its row in the training set, the
/// sample (id and file) and why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct UnreadableImage {
    pub row: usize,
    /// `sample `ID` (PATH)`.
    pub sample: String,
    pub reason: String,
}

impl fmt::Display for UnreadableImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.sample, self.reason)
    }
}

/// What a source returns for the rows asked for: `rows.len()` images, row-major, in the order asked;
/// an unreadable image (skip policy only) is all zeros there and listed in `unreadable`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowPixels {
    pub pixels: Vec<f32>,
    pub unreadable: Vec<UnreadableImage>,
}

/// Preprocessed images on demand: `pixels(rows)` returns the images of `rows` (indices into the
/// training set), row-major `rows.len() × c·h·w`, identical on every call.
pub trait ImageRows: Send + Sync {
    /// The pixels of `rows`, or a message naming the image that could not be read (fail policy).
    fn pixels(&self, rows: &[usize]) -> Result<RowPixels, String>;
}

/// A training set's images.
#[derive(Clone)]
pub enum TrainImages {
    /// Row-major `n × c·h·w`, all in memory; unreadable images (skip policy) are zeros, listed in
    /// `unreadable` by row.
    InMemory { pixels: Vec<f32>, unreadable: Vec<UnreadableImage> },
    /// Read when a batch needs them (and read ahead by one step); nothing else is kept.
    Streamed(Arc<dyn ImageRows>, ReadAhead),
}

impl TrainImages {
    /// All images held in memory, every one readable.
    pub fn in_memory(pixels: Vec<f32>) -> Self {
        TrainImages::InMemory { pixels, unreadable: Vec::new() }
    }
}

impl fmt::Debug for TrainImages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainImages::InMemory { pixels, unreadable } => {
                write!(f, "InMemory({} values, {} unreadable)", pixels.len(), unreadable.len())
            }
            TrainImages::Streamed(..) => f.write_str("Streamed"),
        }
    }
}

/// The readable images among the rows asked for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gathered {
    /// The rows whose images are in `pixels`, in the order asked.
    pub rows: Vec<usize>,
    /// `rows.len()` images, row-major.
    pub pixels: Vec<f32>,
    /// The rows asked for whose image could not be read (skip policy), in the order asked.
    pub unreadable: Vec<UnreadableImage>,
}

type Pending = JoinHandle<Result<RowPixels, String>>;

/// The rows read ahead and their state.
type Slot = Option<(Vec<usize>, Ahead)>;

/// The rows being read ahead (decoding on a worker thread) or already read.
#[derive(Clone, Default)]
pub struct ReadAhead(Arc<Mutex<Slot>>);

enum Ahead {
    Decoding(Pending),
    Done(Result<RowPixels, String>),
}

/// The images of `rows[start..start + len]` out of `all` (the images of `rows`, each `size` values).
fn part_of(
    all: &RowPixels,
    rows: &[usize],
    start: usize,
    len: usize,
    size: usize,
) -> Result<RowPixels, String> {
    if all.pixels.len() != rows.len() * size {
        return Err(format!(
            "the image source returned {} values for {} images of {size}",
            all.pixels.len(),
            rows.len()
        ));
    }
    let wanted = &rows[start..start + len];
    Ok(RowPixels {
        pixels: all.pixels[start * size..(start + len) * size].to_vec(),
        unreadable: all.unreadable.iter().filter(|u| wanted.contains(&u.row)).cloned().collect(),
    })
}

impl ReadAhead {
    /// The pixels of `rows` if they are (a contiguous part of) the rows read ahead, waiting for the
    /// worker if it is still decoding. Rows not read ahead give `None` (read them directly).
    fn take(&self, rows: &[usize], size: usize) -> Option<Result<RowPixels, String>> {
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
            Ok(all) => part_of(all, &ahead_rows, start, rows.len(), size),
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
    /// The readable images of `rows`, each `size` values, row-major (see [`Gathered`]); a streamed
    /// source that returns another length is an error, not a misaligned batch.
    pub(crate) fn gather(&self, rows: &[usize], size: usize) -> Result<Gathered, TrainerError> {
        let read = match self {
            TrainImages::InMemory { pixels, unreadable } => {
                let mut out = Vec::with_capacity(rows.len() * size);
                for &i in rows {
                    out.extend_from_slice(&pixels[i * size..(i + 1) * size]);
                }
                let unreadable =
                    rows.iter().filter_map(|&r| unreadable.iter().find(|u| u.row == r).cloned()).collect();
                RowPixels { pixels: out, unreadable }
            }
            TrainImages::Streamed(source, ahead) => {
                let read = match ahead.take(rows, size) {
                    Some(read) => read,
                    None => source.pixels(rows),
                }
                .map_err(TrainerError::Images)?;
                if read.pixels.len() != rows.len() * size {
                    return Err(TrainerError::Images(format!(
                        "the image source returned {} values for {} images of {size}",
                        read.pixels.len(),
                        rows.len()
                    )));
                }
                read
            }
        };
        if read.unreadable.is_empty() {
            return Ok(Gathered { rows: rows.to_vec(), pixels: read.pixels, unreadable: Vec::new() });
        }
        let mut gathered = Gathered::default();
        for (i, &row) in rows.iter().enumerate() {
            match read.unreadable.iter().find(|u| u.row == row) {
                Some(u) => gathered.unreadable.push(u.clone()),
                None => {
                    gathered.rows.push(row);
                    gathered.pixels.extend_from_slice(&read.pixels[i * size..(i + 1) * size]);
                }
            }
        }
        Ok(gathered)
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
        fn pixels(&self, rows: &[usize]) -> Result<RowPixels, String> {
            Ok(RowPixels {
                pixels: rows.iter().flat_map(|&r| [r as f32, r as f32 + 0.5]).collect(),
                unreadable: Vec::new(),
            })
        }
    }

    struct Short;
    impl ImageRows for Short {
        fn pixels(&self, _: &[usize]) -> Result<RowPixels, String> {
            Ok(RowPixels { pixels: vec![0.0], unreadable: Vec::new() })
        }
    }

    /// Rows 1 and 4 cannot be read (skip policy): zeros in their place, listed.
    struct Damaged;
    impl ImageRows for Damaged {
        fn pixels(&self, rows: &[usize]) -> Result<RowPixels, String> {
            let bad = |r: usize| r == 1 || r == 4;
            Ok(RowPixels {
                pixels: rows
                    .iter()
                    .flat_map(|&r| if bad(r) { [0.0, 0.0] } else { [r as f32, r as f32 + 0.5] })
                    .collect(),
                unreadable: rows.iter().filter(|&&r| bad(r)).map(|&r| unreadable(r)).collect(),
            })
        }
    }

    fn unreadable(row: usize) -> UnreadableImage {
        UnreadableImage { row, sample: format!("sample `s{row}`"), reason: "truncated".into() }
    }

    fn values(set: &TrainImages, rows: &[usize]) -> Vec<f32> {
        set.gather(rows, 2).unwrap().pixels
    }

    #[test]
    fn streamed_and_in_memory_gather_the_same_rows() {
        let in_memory = TrainImages::in_memory((0..6).flat_map(|r| [r as f32, r as f32 + 0.5]).collect());
        let streamed = TrainImages::Streamed(Arc::new(Rows), ReadAhead::default());
        let rows = [4, 0, 5, 2];
        assert_eq!(values(&in_memory, &rows), values(&streamed, &rows));
        // Read ahead, then gathered whole, in micro-batches, or not at all (other rows asked).
        streamed.prefetch(&rows);
        assert_eq!(values(&streamed, &rows), values(&in_memory, &rows));
        streamed.prefetch(&rows);
        assert_eq!(values(&streamed, &rows[..2]), values(&in_memory, &rows[..2]));
        assert_eq!(values(&streamed, &rows[2..]), values(&in_memory, &rows[2..]));
        streamed.prefetch(&rows);
        assert_eq!(values(&streamed, &[1, 3]), values(&in_memory, &[1, 3]));
        assert_eq!(in_memory.gather(&rows, 2).unwrap().rows, rows);
    }

    #[test]
    fn unreadable_rows_are_left_out_alike_in_memory_streamed_and_read_ahead() {
        let in_memory = TrainImages::InMemory {
            pixels: Damaged.pixels(&[0, 1, 2, 3, 4, 5]).unwrap().pixels,
            unreadable: vec![unreadable(1), unreadable(4)],
        };
        let streamed = TrainImages::Streamed(Arc::new(Damaged), ReadAhead::default());
        let rows = [4, 0, 5, 1, 2];
        let expected = Gathered {
            rows: vec![0, 5, 2],
            pixels: vec![0.0, 0.5, 5.0, 5.5, 2.0, 2.5],
            unreadable: vec![unreadable(4), unreadable(1)],
        };
        assert_eq!(in_memory.gather(&rows, 2).unwrap(), expected);
        assert_eq!(streamed.gather(&rows, 2).unwrap(), expected);
        streamed.prefetch(&rows);
        assert_eq!(streamed.gather(&rows, 2).unwrap(), expected);
        // Micro-batches of a read-ahead step each get their own unreadable rows.
        streamed.prefetch(&rows);
        let first = streamed.gather(&rows[..2], 2).unwrap();
        assert_eq!((first.rows, first.unreadable), (vec![0], vec![unreadable(4)]));
        let rest = streamed.gather(&rows[2..], 2).unwrap();
        assert_eq!((rest.rows, rest.unreadable), (vec![5, 2], vec![unreadable(1)]));
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
