//! Writing a single-label dataset to disk as an ImageFolder (`calibra data export`): one folder per
//! class, `out/<class>/<sample>.jpg` (or `.png`), which `imagefolder:out` reads back with the same
//! classes and samples. It turns a generated set (`synth:...`) into real files, so that a run decodes
//! JPEGs as it would on a clinical dataset, and so that a PyTorch DataLoader can read the same
//! images.
//!
//! - Classes are the label names; a sample's file name is its id with every character outside
//!   `[A-Za-z0-9._-]` replaced by `_` (two ids that collide so are an error, before anything is
//!   written).
//! - Each file is written to a temporary name beside it and renamed into place, so a killed export
//!   leaves only whole images; a second run writes only the files that are missing.
//! - Images are decoded (or generated) in parallel; the bytes of each file depend on its sample only.
//!   JPEG is written at the given quality with 4:2:0 chroma subsampling (`jpeg-encoder`, as the
//!   `jpeg` perturbation); PNG is lossless.
//! - Multilabel datasets have no ImageFolder form and are refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::dataset::{Dataset, SkippedSample, Target, TaskKind};
use crate::error::DataError;
use crate::pixels::ImageU8;
use crate::readers::BadImagePolicy;

/// The image format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// JPEG at this quality (1–100).
    Jpeg(u8),
    /// Lossless PNG.
    Png,
}

impl ExportFormat {
    fn extension(self) -> &'static str {
        match self {
            ExportFormat::Jpeg(_) => "jpg",
            ExportFormat::Png => "png",
        }
    }

    fn encode(self, image: &ImageU8) -> Result<Vec<u8>, DataError> {
        match self {
            ExportFormat::Jpeg(quality) => crate::perturb::jpeg::encode_jpeg(image, quality),
            ExportFormat::Png => {
                let mut bytes = std::io::Cursor::new(Vec::new());
                image
                    .to_dynamic()
                    .write_to(&mut bytes, image::ImageFormat::Png)
                    .map_err(|e| DataError::Invalid(format!("PNG encoding failed: {e}")))?;
                Ok(bytes.into_inner())
            }
        }
    }
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Files written by this run.
    pub written: usize,
    /// Files already present (a resumed export), left as they are.
    pub existing: usize,
    /// Samples whose image could not be read, under [`BadImagePolicy::Skip`].
    pub skipped: Vec<SkippedSample>,
}

/// `name` with every character outside `[A-Za-z0-9._-]` replaced by `_` (and never empty, `.` or
/// `..`, nor starting with `.`: the ImageFolder reader ignores hidden entries).
fn file_stem(name: &str) -> String {
    let stem: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    if stem.is_empty() || stem.starts_with('.') { format!("_{stem}") } else { stem }
}

/// Writes `dataset` under `out` as an ImageFolder (see the module docs), calling `progress` with the
/// number of samples handled so far. Errors: a multilabel dataset, two samples or classes whose
/// names collide once made file-safe, an unreadable image under [`BadImagePolicy::Fail`] (named), a
/// file that cannot be written (named).
pub fn export_imagefolder(
    dataset: &Dataset,
    out: &Path,
    format: ExportFormat,
    policy: BadImagePolicy,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<ExportSummary, DataError> {
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(DataError::Invalid(format!(
            "`{}` is multilabel: an ImageFolder holds one class per image",
            dataset.name
        )));
    }
    let classes: Vec<String> = dataset.labels.names.iter().map(|n| file_stem(n)).collect();
    for (i, class) in classes.iter().enumerate() {
        if let Some(j) = classes[..i].iter().position(|c| c == class) {
            return Err(DataError::Invalid(format!(
                "classes `{}` and `{}` would share the folder {}",
                dataset.labels.names[j],
                dataset.labels.names[i],
                out.join(class).display()
            )));
        }
    }
    let mut paths: BTreeMap<PathBuf, &str> = BTreeMap::new();
    let mut targets = Vec::with_capacity(dataset.len());
    for sample in &dataset.samples {
        let Target::Class(class) = sample.target else {
            return Err(DataError::Invalid(format!("sample `{}` has no single class", sample.id)));
        };
        let path =
            out.join(&classes[class]).join(format!("{}.{}", file_stem(&sample.id), format.extension()));
        if let Some(other) = paths.insert(path.clone(), &sample.id) {
            return Err(DataError::Invalid(format!(
                "samples `{other}` and `{}` would both be written to {}",
                sample.id,
                path.display()
            )));
        }
        targets.push(path);
    }
    for dir in &classes {
        let dir = out.join(dir);
        std::fs::create_dir_all(&dir).map_err(|e| DataError::io(&dir, e))?;
    }
    let done = AtomicUsize::new(0);
    enum Outcome {
        Written,
        Existing,
        Skipped(String),
    }
    let results: Vec<Result<Outcome, DataError>> = dataset
        .samples
        .par_iter()
        .zip(&targets)
        .map(|(sample, path)| {
            let outcome = if path.is_file() {
                Ok(Outcome::Existing)
            } else {
                match sample.image.load() {
                    Ok(image) => format.encode(&image).and_then(|bytes| {
                        calibra_core::write_bytes_atomically(path, &bytes)
                            .map_err(|e| DataError::io(path, e))?;
                        Ok(Outcome::Written)
                    }),
                    Err(e) if policy == BadImagePolicy::Skip => Ok(Outcome::Skipped(e.to_string())),
                    Err(e) => Err(DataError::Invalid(format!("sample `{}`: {e}", sample.id))),
                }
            };
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            outcome
        })
        .collect();
    let mut summary = ExportSummary::default();
    for (sample, result) in dataset.samples.iter().zip(results) {
        match result? {
            Outcome::Written => summary.written += 1,
            Outcome::Existing => summary.existing += 1,
            Outcome::Skipped(reason) => summary.skipped.push(SkippedSample {
                location: format!("sample `{}` ({})", sample.id, sample.image.describe()),
                reason,
            }),
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_and_never_hidden() {
        assert_eq!(file_stem("derm/000123"), "derm_000123");
        assert_eq!(file_stem("a b:c"), "a_b_c");
        assert_eq!(file_stem(".hidden"), "_.hidden");
        assert_eq!(file_stem(""), "_");
        assert_eq!(file_stem("basal_cell_carcinoma"), "basal_cell_carcinoma");
    }
}
