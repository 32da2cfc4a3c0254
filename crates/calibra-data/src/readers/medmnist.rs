//! `medmnist:` — a MedMNIST `.npz` (a zip of `.npy` arrays, plain or deflated):
//! `train_images`, `train_labels`, `val_images`, `val_labels`, `test_images`, `test_labels`.
//! Images are `|u1` of shape `(N, H, W)` (gray) or `(N, H, W, 3)` (RGB), any of the MedMNIST sizes
//! (28, 64, 128, 224). Labels are integers of shape `(N, 1)`/`(N,)` (one class or grade) or `(N, K)`
//! (multilabel 0/1). The official train/val/test arrays become the train/calibration/test splits;
//! a sample's id is `<split>-<index>` (e.g. `val-17`).
//!
//! Task: from the file name — `chestmnist*` multilabel (the 14 ChestX-ray14 findings),
//! `retinamnist*` ordinal (5 grades), anything else multiclass with classes `0..=max` — or `task=`.

use super::npy::{NpyArray, parse_npy};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, Split, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::{ImageArray, ImageSource};
use crate::spec::DatasetSpec;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

/// The 14 ChestMNIST (NIH ChestX-ray14) labels in MedMNIST's order.
pub const CHESTMNIST_LABELS: [&str; 14] = [
    "atelectasis",
    "cardiomegaly",
    "effusion",
    "infiltration",
    "mass",
    "nodule",
    "pneumonia",
    "pneumothorax",
    "consolidation",
    "edema",
    "emphysema",
    "fibrosis",
    "pleural",
    "hernia",
];

const SPLITS: [(&str, Split); 3] =
    [("train", Split::Train), ("val", Split::Calibration), ("test", Split::Test)];

/// Reads a MedMNIST `.npz`.
pub fn read(spec: &DatasetSpec) -> Result<Dataset, DataError> {
    let path = spec.path();
    let file = std::fs::File::open(&path).map_err(|e| DataError::io(&path, e))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| DataError::file(&path, format!("not a .npz (zip) archive: {e}")))?;
    let mut arrays: BTreeMap<String, NpyArray> = BTreeMap::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| DataError::file(&path, format!("zip entry {i}: {e}")))?;
        let name = entry.name().trim_end_matches(".npy").to_string();
        let allowed =
            SPLITS.iter().any(|(s, _)| name == format!("{s}_images") || name == format!("{s}_labels"));
        if !allowed {
            return Err(DataError::file(
                &path,
                format!(
                    "unexpected array `{name}`; a MedMNIST .npz holds only {{train,val,test}}_{{images,labels}}"
                ),
            ));
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(|e| DataError::io(&path, e))?;
        let array = parse_npy(&bytes).map_err(|m| DataError::file(&path, format!("array `{name}`: {m}")))?;
        arrays.insert(name, array);
    }
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    let kind = match spec.option("task") {
        Some("multiclass") => TaskKind::Multiclass,
        Some("ordinal") => TaskKind::Ordinal,
        Some("multilabel") => TaskKind::Multilabel,
        Some(t) => {
            return Err(spec.error(format!("option `task={t}`: expected multiclass, ordinal or multilabel")));
        }
        None if file_name.starts_with("chestmnist") => TaskKind::Multilabel,
        None if file_name.starts_with("retinamnist") => TaskKind::Ordinal,
        None => TaskKind::Multiclass,
    };
    let mut samples = Vec::new();
    let mut max_class = 0i64;
    let mut n_labels = None;
    for (split_name, split) in SPLITS {
        let (img_key, lab_key) = (format!("{split_name}_images"), format!("{split_name}_labels"));
        let (images, labels) = match (arrays.get(&img_key), arrays.get(&lab_key)) {
            (Some(i), Some(l)) => (i, l),
            (None, None) if split != Split::Train => continue,
            _ => {
                return Err(DataError::file(&path, format!("needs both `{img_key}` and `{lab_key}` arrays")));
            }
        };
        let bytes = images.bytes_u8.clone().ok_or_else(|| {
            DataError::file(
                &path,
                format!("array `{img_key}` has dtype {}, expected uint8 (|u1)", images.dtype),
            )
        })?;
        let (n, h, w, c) = match images.shape.as_slice() {
            [n, h, w] => (*n, *h, *w, 1u8),
            [n, h, w, 1] => (*n, *h, *w, 1u8),
            [n, h, w, 3] => (*n, *h, *w, 3u8),
            other => {
                return Err(DataError::file(
                    &path,
                    format!("array `{img_key}` has shape {other:?}, expected (N, H, W) or (N, H, W, 3)"),
                ));
            }
        };
        let k = match labels.shape.as_slice() {
            [m] if *m == n => 1,
            [m, k] if *m == n => *k,
            other => {
                return Err(DataError::file(
                    &path,
                    format!(
                        "array `{lab_key}` has shape {other:?}, expected ({n},) or ({n}, K) to match `{img_key}`"
                    ),
                ));
            }
        };
        if kind == TaskKind::Multilabel {
            if *n_labels.get_or_insert(k) != k {
                return Err(DataError::file(
                    &path,
                    format!("array `{lab_key}` has {k} labels per row, other splits differ"),
                ));
            }
        } else if k != 1 {
            return Err(DataError::file(
                &path,
                format!(
                    "array `{lab_key}` has {k} labels per row; a {kind:?} task needs one (use task=multilabel?)"
                ),
            ));
        }
        let array = Arc::new(ImageArray {
            origin: format!("{}:{img_key}", path.display()),
            n,
            height: h as u32,
            width: w as u32,
            channels: c,
            data: bytes,
        });
        for i in 0..n {
            let row = &labels.values[i * k..(i + 1) * k];
            let target = if kind == TaskKind::Multilabel {
                Target::Labels(
                    row.iter()
                        .enumerate()
                        .map(|(j, &v)| match v {
                            0 => Ok(Some(false)),
                            1 => Ok(Some(true)),
                            other => Err(DataError::file(
                                &path,
                                format!("array `{lab_key}`, row {i}, label {j}: value {other} is not 0 or 1"),
                            )),
                        })
                        .collect::<Result<_, _>>()?,
                )
            } else {
                if row[0] < 0 {
                    return Err(DataError::file(
                        &path,
                        format!("array `{lab_key}`, row {i}: negative class {}", row[0]),
                    ));
                }
                max_class = max_class.max(row[0]);
                Target::Class(row[0] as usize)
            };
            samples.push(Sample {
                id: format!("{split_name}-{i}"),
                image: ImageSource::Array { array: Arc::clone(&array), index: i },
                target,
                metadata: Metadata::default(),
                official_split: Some(split),
            });
        }
    }
    let names: Vec<String> = match kind {
        TaskKind::Multilabel => {
            let k = n_labels.unwrap_or(0);
            if k == CHESTMNIST_LABELS.len() && file_name.starts_with("chestmnist") {
                CHESTMNIST_LABELS.iter().map(|s| s.to_string()).collect()
            } else {
                (0..k).map(|j| format!("label{j}")).collect()
            }
        }
        _ => (0..=max_class).map(|c| c.to_string()).collect(),
    };
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace { kind, names },
        samples,
        skipped: Vec::new(),
        on_bad_image: super::BadImagePolicy::Fail,
    })
}
