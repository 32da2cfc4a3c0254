//! Where a sample's pixels come from: a file on disk, one slice of an in-memory array (MedMNIST
//! `.npz`), or a procedural generator (the synthetic suites).

use crate::error::DataError;
use crate::pixels::ImageU8;
use crate::synth::SynthImageRef;
use std::path::PathBuf;
use std::sync::Arc;

/// A stack of `n` images of the same shape, `n × height × width × channels` bytes.
#[derive(Debug)]
pub struct ImageArray {
    /// Where it came from (`file.npz:train_images`), for error messages.
    pub origin: String,
    pub n: usize,
    pub height: u32,
    pub width: u32,
    pub channels: u8,
    pub data: Vec<u8>,
}

/// The pixels of one sample, loaded on demand by [`ImageSource::load`].
#[derive(Debug, Clone)]
pub enum ImageSource {
    /// A PNG or JPEG file (format detected from its content).
    File(PathBuf),
    /// Image `index` of a shared array.
    Array { array: Arc<ImageArray>, index: usize },
    /// A procedurally generated image.
    Synthetic(SynthImageRef),
}

impl ImageSource {
    /// Decodes (or generates) the image.
    pub fn load(&self) -> Result<ImageU8, DataError> {
        match self {
            ImageSource::File(path) => ImageU8::open(path),
            ImageSource::Array { array, index } => {
                let size = array.height as usize * array.width as usize * array.channels as usize;
                let start = index * size;
                let bytes = array.data.get(start..start + size).ok_or_else(|| {
                    DataError::Invalid(format!(
                        "{}: image {index} is out of range ({} images)",
                        array.origin, array.n
                    ))
                })?;
                ImageU8::new(array.width, array.height, array.channels, bytes.to_vec())
            }
            ImageSource::Synthetic(r) => Ok(r.render()),
        }
    }

    /// A short human-readable name (path, `array[i]`, `synth:...`).
    pub fn describe(&self) -> String {
        match self {
            ImageSource::File(path) => path.display().to_string(),
            ImageSource::Array { array, index } => format!("{}[{index}]", array.origin),
            ImageSource::Synthetic(r) => r.describe(),
        }
    }
}
