//! An optional on-disk cache of preprocessed tensors, so that a grid of runs decodes and resizes each
//! image once per (encoder transform, perturbation) instead of once per run.
//!
//! Key: SHA-256 of (`calibra-tensor-cache-v1`, the crate version, the image source — for a file its
//! path, byte length and modification time; for an array its origin and index; for a synthetic image its
//! full description —, the transform's `Debug` text, and a caller tag such as the perturbation and
//! severity). Entry: `<dir>/<first 2 hex>/<hex>.f32` holding `channels, height, width` as little-endian
//! `u32` then the `f32` values little-endian. Entries are written to a temporary file and renamed, so
//! a crash never leaves a half-written entry under a valid name; an unreadable or malformed entry is
//! recomputed and overwritten, never trusted.

use crate::error::DataError;
use crate::hashing::sha256_parts;
use crate::image_source::ImageSource;
use crate::preprocess::Tensor3;
use std::path::{Path, PathBuf};

/// A directory of cached tensors.
#[derive(Debug, Clone)]
pub struct TensorCache {
    dir: PathBuf,
}

fn source_key(source: &ImageSource) -> String {
    match source {
        ImageSource::File(path) => {
            let meta = std::fs::metadata(path).ok();
            let len = meta.as_ref().map_or(0, |m| m.len());
            let modified = meta
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("file:{}:{len}:{modified}", path.display())
        }
        other => other.describe(),
    }
}

impl TensorCache {
    /// A cache rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The entry path of (source, transform, tag).
    pub fn entry_path(&self, source: &ImageSource, transform: &str, tag: &str) -> PathBuf {
        let digest = sha256_parts(&[
            "calibra-tensor-cache-v1",
            env!("CARGO_PKG_VERSION"),
            &source_key(source),
            transform,
            tag,
        ]);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(&hex[..2]).join(format!("{hex}.f32"))
    }

    /// The cached tensor, or `compute()` stored then returned. Storage errors are returned (a cache
    /// that cannot be written is a configuration problem worth knowing about).
    pub fn get_or_compute(
        &self,
        source: &ImageSource,
        transform: &str,
        tag: &str,
        compute: impl FnOnce() -> Result<Tensor3, DataError>,
    ) -> Result<Tensor3, DataError> {
        let path = self.entry_path(source, transform, tag);
        if let Some(t) = read_entry(&path) {
            return Ok(t);
        }
        let tensor = compute()?;
        write_entry(&path, &tensor)?;
        Ok(tensor)
    }
}

fn read_entry(path: &Path) -> Option<Tensor3> {
    let bytes = std::fs::read(path).ok()?;
    let header: Vec<usize> = bytes
        .get(..12)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4")) as usize)
        .collect();
    let (c, h, w) = (header[0], header[1], header[2]);
    let body = &bytes[12..];
    if body.len() != c * h * w * 4 {
        return None;
    }
    let data = body.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4"))).collect();
    Some(Tensor3 { channels: c, height: h, width: w, data })
}

fn write_entry(path: &Path, t: &Tensor3) -> Result<(), DataError> {
    let dir = path.parent().expect("entries live in a subfolder");
    std::fs::create_dir_all(dir).map_err(|e| DataError::io(dir, e))?;
    let mut bytes = Vec::with_capacity(12 + t.data.len() * 4);
    for v in [t.channels, t.height, t.width] {
        bytes.extend_from_slice(&(v as u32).to_le_bytes());
    }
    for v in &t.data {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    calibra_core::write_bytes_atomically(path, &bytes).map_err(|e| DataError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{SynthImageRef, SynthSuite};

    fn source(index: usize) -> ImageSource {
        ImageSource::Synthetic(SynthImageRef { suite: SynthSuite::Derm, seed: 0, index, size: 28 })
    }

    #[test]
    fn stores_reuses_and_separates_keys() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TensorCache::new(dir.path());
        let t = Tensor3 { channels: 1, height: 1, width: 2, data: vec![0.5, -1.25] };
        let mut calls = 0;
        let mut get = |src: &ImageSource, transform: &str, tag: &str| {
            cache
                .get_or_compute(src, transform, tag, || {
                    calls += 1;
                    Ok(t.clone())
                })
                .unwrap()
        };
        assert_eq!(get(&source(0), "cfg", "clean"), t);
        assert_eq!(get(&source(0), "cfg", "clean"), t);
        get(&source(1), "cfg", "clean");
        get(&source(0), "other cfg", "clean");
        get(&source(0), "cfg", "jpeg-s1");
        assert_eq!(calls, 4, "one computation per distinct key");
    }

    #[test]
    fn a_corrupt_entry_is_recomputed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TensorCache::new(dir.path());
        let t = Tensor3 { channels: 1, height: 1, width: 1, data: vec![3.0] };
        cache.get_or_compute(&source(0), "cfg", "", || Ok(t.clone())).unwrap();
        let path = cache.entry_path(&source(0), "cfg", "");
        std::fs::write(&path, b"junk").unwrap();
        let again = cache.get_or_compute(&source(0), "cfg", "", || Ok(t.clone())).unwrap();
        assert_eq!(again, t);
        assert_eq!(std::fs::read(&path).unwrap().len(), 16);
    }
}
