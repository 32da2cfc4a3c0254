//! The estimators' inputs from `.npy` files: a feature matrix `[N, D]` of f32 / f64, and labels —
//! `[N]` integers (classes, or grades with [`TargetKind::Ordinal`]), `[N]` floats (a continuous
//! outcome), or `[N, L]` with 1 / 0 / −1 (multilabel, −1 or NaN = missing).

use std::path::Path;

use thiserror::Error;

use crate::npy::{NpyError, read_npy};
use crate::{Features, Targets, TransferError};

/// Why a `.npy` feature or label file cannot be used; names the file (and the row).
#[derive(Debug, Error)]
pub enum NpyInputError {
    #[error(transparent)]
    Npy(#[from] NpyError),
    #[error("{file}")]
    Features { file: String, source: TransferError },
    /// The array cannot be these features or labels (the message says why).
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

/// How integer / float labels are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetKind {
    /// Integer labels → classes, fractional → continuous, `[N, L]` → multilabel.
    #[default]
    Auto,
    Classes,
    /// Ordered grades: LogME on the grade, k-NN agreement by Spearman ρ.
    Ordinal,
    /// A continuous outcome: quintile classes for the class-based estimators.
    Continuous,
}

/// The feature matrix of a `.npy` `[N, D]` of f32 or f64.
pub fn features_from_npy(path: &Path) -> Result<Features, NpyInputError> {
    let file = path.display().to_string();
    let a = read_npy(path)?;
    if a.shape.len() != 2 {
        let message = format!("features must be [N, D], found shape {:?}", a.shape);
        return Err(NpyInputError::Invalid { file, message });
    }
    if a.integer {
        let message = "features must be f32 or f64, found an integer dtype".to_string();
        return Err(NpyInputError::Invalid { file, message });
    }
    Features::new(a.data, a.shape[0], a.shape[1]).map_err(|source| NpyInputError::Features { file, source })
}

/// The targets of a `.npy` label file, read as `kind` says.
pub fn labels_from_npy(path: &Path, kind: TargetKind) -> Result<Targets, NpyInputError> {
    let file = path.display().to_string();
    let invalid = |message: String| NpyInputError::Invalid { file: file.clone(), message };
    let a = read_npy(path)?;
    match a.shape.as_slice() {
        [n, l] => {
            let mut values = Vec::with_capacity(n * l);
            for (i, &v) in a.data.iter().enumerate() {
                let value = if v == 1.0 {
                    Some(true)
                } else if v == 0.0 {
                    Some(false)
                } else if v == -1.0 || v.is_nan() {
                    None
                } else {
                    let (row, label) = (i / l, i % l);
                    return Err(invalid(format!(
                        "row {row}, label {label}: {v} (expected 1, 0 or -1 = missing)"
                    )));
                };
                values.push(value);
            }
            Ok(Targets::Multilabel { labels: *l, values })
        }
        [_] => {
            let integral = a.data.iter().all(|v| v.fract() == 0.0);
            let continuous = kind == TargetKind::Continuous || (kind == TargetKind::Auto && !integral);
            if continuous {
                if let Some(i) = a.data.iter().position(|v| !v.is_finite()) {
                    return Err(invalid(format!("row {i}: {} is not a finite number", a.data[i])));
                }
                return Ok(Targets::Continuous(a.data));
            }
            let mut y = Vec::with_capacity(a.data.len());
            for (i, &v) in a.data.iter().enumerate() {
                if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0) {
                    return Err(invalid(format!(
                        "row {i}: label {v} is not a class index (a non-negative integer)"
                    )));
                }
                y.push(v as usize);
            }
            Ok(if kind == TargetKind::Ordinal { Targets::Ordinal(y) } else { Targets::Classes(y) })
        }
        other => Err(invalid(format!("labels must be [N] or [N, L], found shape {other:?}"))),
    }
}

/// Classes (or grades, or a continuous outcome, as `kind` says) from class indices.
pub fn targets_from_classes(y: Vec<usize>, kind: TargetKind) -> Targets {
    match kind {
        TargetKind::Ordinal => Targets::Ordinal(y),
        TargetKind::Continuous => Targets::Continuous(y.iter().map(|&c| c as f64).collect()),
        TargetKind::Auto | TargetKind::Classes => Targets::Classes(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_i64(path: &Path, shape: &str, values: &[i64]) {
        let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(path, crate::npy::npy_bytes("<i8", shape, &body)).unwrap();
    }

    #[test]
    fn labels_follow_the_shape_and_the_kind() {
        let dir = std::env::temp_dir().join(format!("calibra-npy-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let y = dir.join("y.npy");
        write_i64(&y, "(3,)", &[0, 2, 1]);
        assert_eq!(labels_from_npy(&y, TargetKind::Auto).unwrap(), Targets::Classes(vec![0, 2, 1]));
        assert_eq!(labels_from_npy(&y, TargetKind::Ordinal).unwrap(), Targets::Ordinal(vec![0, 2, 1]));
        assert_eq!(
            labels_from_npy(&y, TargetKind::Continuous).unwrap(),
            Targets::Continuous(vec![0.0, 2.0, 1.0])
        );
        let m = dir.join("m.npy");
        write_i64(&m, "(2, 2)", &[1, 0, -1, 1]);
        let want = Targets::Multilabel { labels: 2, values: vec![Some(true), Some(false), None, Some(true)] };
        assert_eq!(labels_from_npy(&m, TargetKind::Auto).unwrap(), want);
        let bad = dir.join("bad.npy");
        write_i64(&bad, "(2,)", &[0, -3]);
        let e = labels_from_npy(&bad, TargetKind::Auto).unwrap_err().to_string();
        assert!(e.ends_with("bad.npy: row 1: label -3 is not a class index (a non-negative integer)"), "{e}");
        let e = features_from_npy(&y).unwrap_err().to_string();
        assert!(e.ends_with("y.npy: features must be [N, D], found shape [3]"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
