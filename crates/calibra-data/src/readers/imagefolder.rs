//! `imagefolder:` — one subfolder per class (`root/<class>/<image>`), as torchvision's ImageFolder;
//! or official splits one level up (`root/{train,val,test}/<class>/<image>`, split folder names as
//! [`crate::Split::parse`]). Files ending in `.png`, `.jpg` or `.jpeg` (any case) are images; hidden
//! entries (names starting with `.`) and files that are not images (`labels.csv`, `README`) are
//! ignored. Bad images are reported, never dropped silently: a symbolic link whose target is missing,
//! and an image in a format calibra does not decode ([`UNSUPPORTED_IMAGE_EXTENSIONS`]: `.tif`, `.bmp`,
//! `.dcm`, ...), are an error naming the file under `--on-bad-image fail` and a skipped sample under
//! `skip`. Classes are the sorted union of class folder names; a sample's id is its path
//! relative to the root, with `/` separators.

use super::{BadImagePolicy, LoadOptions, SampleCollector};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, SkippedSample, Split, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::spec::DatasetSpec;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Extensions of image formats calibra does not decode (convert them to PNG).
pub const UNSUPPORTED_IMAGE_EXTENSIONS: &[&str] =
    &["tif", "tiff", "bmp", "gif", "webp", "dcm", "dicom", "nii", "jp2", "heic"];

/// Why `path` (not a decodable image file) is a bad image, or `None` when it is simply not an image.
fn bad_image_reason(path: &Path) -> Option<String> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link && !path.exists() {
        return Some(format!("{} is a symbolic link to a file that does not exist", path.display()));
    }
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase)?;
    UNSUPPORTED_IMAGE_EXTENSIONS.contains(&ext.as_str()).then(|| {
        format!(
            "{}: .{ext} images are not decoded by calibra (PNG and JPEG are); convert it to PNG",
            path.display()
        )
    })
}

fn is_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "png" | "jpg" | "jpeg"))
}

/// The entries of `dir`, sorted, without hidden ones (`.DS_Store`, `.ipynb_checkpoints`...).
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, DataError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .map(|e| e.map(|e| e.path()).map_err(|err| DataError::io(dir, err)))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|p| !p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.')))
        .collect();
    entries.sort();
    Ok(entries)
}

/// Reads an ImageFolder tree.
pub fn read(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let root = spec.path();
    let top: Vec<PathBuf> = sorted_entries(&root)?.into_iter().filter(|p| p.is_dir()).collect();
    let split_dirs: Vec<(Split, PathBuf)> = top
        .iter()
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).and_then(Split::parse).map(|s| (s, p.clone())))
        .collect();
    // (split, class folder) pairs.
    let mut class_dirs: Vec<(Option<Split>, PathBuf)> = Vec::new();
    if !split_dirs.is_empty() {
        if split_dirs.len() != top.len() {
            return Err(DataError::file(
                &root,
                "mixes split folders (train/val/test) with other folders; use one layout: root/<class>/ or root/<split>/<class>/",
            ));
        }
        for (split, dir) in &split_dirs {
            for p in sorted_entries(dir)?.into_iter().filter(|p| p.is_dir()) {
                class_dirs.push((Some(*split), p));
            }
        }
    } else {
        class_dirs = top.into_iter().map(|p| (None, p)).collect();
    }
    let names: Vec<String> = class_dirs
        .iter()
        .map(|(_, p)| p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if names.is_empty() {
        return Err(DataError::file(&root, "has no class folders (expected root/<class>/<image>)"));
    }
    let mut collector = SampleCollector::new();
    let mut skipped = Vec::new();
    for (split, dir) in &class_dirs {
        let class_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let class = names.iter().position(|n| n == class_name).expect("collected above");
        let entries = sorted_entries(dir)?;
        for path in &entries {
            if path.is_file() && is_image(path) {
                continue;
            }
            if let Some(reason) = bad_image_reason(path) {
                match options.on_bad_image {
                    BadImagePolicy::Fail => {
                        return Err(DataError::file(
                            path,
                            format!("{reason} (pass --on-bad-image skip to leave it out)"),
                        ));
                    }
                    BadImagePolicy::Skip => {
                        skipped.push(SkippedSample { location: path.display().to_string(), reason })
                    }
                }
            }
        }
        for file in entries.into_iter().filter(|p| p.is_file() && is_image(p)) {
            let id = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            collector.push(
                Sample {
                    id,
                    image: ImageSource::File(file.clone()),
                    target: Target::Class(class),
                    metadata: Metadata::default(),
                    official_split: *split,
                },
                &file,
                0,
            )?;
        }
    }
    let samples = collector.into_samples();
    if samples.is_empty() {
        return Err(DataError::file(&root, "has class folders but no .png/.jpg/.jpeg images"));
    }
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace { kind: TaskKind::Multiclass, names },
        samples,
        skipped,
        on_bad_image: options.on_bad_image,
    })
}
