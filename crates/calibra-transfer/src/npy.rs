//! A minimal reader of numpy `.npy` files (format 1.0–3.0, C order, little-endian or byte-sized
//! dtypes): enough for `calibra transfer score` features `[N, D]` and labels `[N]` / `[N, L]`.
//!
//! Kept here rather than taken from a crate: the estimators need every supported dtype widened to
//! f64 with the file's dtype class (integer or float) known, which is one match over the `descr`.

use std::path::Path;

use thiserror::Error;

/// Why a `.npy` file cannot be read; every variant names the file.
#[derive(Debug, Error)]
pub enum NpyError {
    #[error("{file}: cannot read")]
    Read { file: String, source: std::io::Error },
    #[error("{file}: header is not text")]
    HeaderText { file: String, source: std::str::Utf8Error },
    #[error("{file}: bad shape entry `{entry}`")]
    ShapeEntry { file: String, entry: String, source: std::num::ParseIntError },
    /// Anything else wrong with the file (the message says what).
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

/// A dense array read from `.npy`, widened to f64, with its shape and whether its dtype was integer.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
    pub integer: bool,
}

/// Read the `.npy` file at `path`.
pub fn read_npy(path: &Path) -> Result<NpyArray, NpyError> {
    let file = path.display().to_string();
    let invalid = |message: String| NpyError::Invalid { file: file.clone(), message };
    let bytes = std::fs::read(path).map_err(|source| NpyError::Read { file: file.clone(), source })?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(invalid("not a .npy file (missing the \\x93NUMPY magic)".into()));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(invalid(format!(".npy format version {v} is not supported (1, 2 or 3)"))),
    };
    let end = start + header_len;
    if bytes.len() < end {
        return Err(invalid("header runs past the end of the file".into()));
    }
    let header = std::str::from_utf8(&bytes[start..end])
        .map_err(|source| NpyError::HeaderText { file: file.clone(), source })?;
    let descr = dict_value(header, "descr").ok_or_else(|| invalid("header has no 'descr'".into()))?;
    let descr = descr.trim_matches(|c: char| c == '\'' || c == '"');
    if dict_value(header, "fortran_order").is_some_and(|v| v.trim() == "True") {
        return Err(invalid(
            "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)".into(),
        ));
    }
    let shape_text = dict_value(header, "shape").ok_or_else(|| invalid("header has no 'shape'".into()))?;
    let shape: Vec<usize> = shape_text
        .trim_matches(|c: char| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>().map_err(|source| NpyError::ShapeEntry {
                file: file.clone(),
                entry: s.to_string(),
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    let count: usize = shape.iter().product();
    let body = &bytes[end..];
    let (size, integer): (usize, bool) = match descr {
        "<f8" | "<f4" => (if descr == "<f8" { 8 } else { 4 }, false),
        "<i8" | "<u8" => (8, true),
        "<i4" | "<u4" => (4, true),
        "<i2" | "<u2" => (2, true),
        "|i1" | "|u1" | "|b1" => (1, true),
        other => {
            return Err(invalid(format!(
                "dtype `{other}` is not supported (expected f4/f8 or a little-endian integer)"
            )));
        }
    };
    if body.len() != count * size {
        return Err(invalid(format!(
            "{} data bytes for shape {shape:?} of `{descr}` (expected {})",
            body.len(),
            count * size
        )));
    }
    let data = body.chunks_exact(size).map(|c| widen(descr, c)).collect();
    Ok(NpyArray { shape, data, integer })
}

/// One little-endian value of dtype `descr` (`c` holds exactly its size in bytes) as f64.
fn widen(descr: &str, c: &[u8]) -> f64 {
    let b8 = || <[u8; 8]>::try_from(c).unwrap_or_default();
    let b4 = || <[u8; 4]>::try_from(c).unwrap_or_default();
    let b2 = || <[u8; 2]>::try_from(c).unwrap_or_default();
    match descr {
        "<f8" => f64::from_le_bytes(b8()),
        "<f4" => f64::from(f32::from_le_bytes(b4())),
        "<i8" => i64::from_le_bytes(b8()) as f64,
        "<u8" => u64::from_le_bytes(b8()) as f64,
        "<i4" => f64::from(i32::from_le_bytes(b4())),
        "<u4" => f64::from(u32::from_le_bytes(b4())),
        "<i2" => f64::from(i16::from_le_bytes(b2())),
        "<u2" => f64::from(u16::from_le_bytes(b2())),
        "|i1" => f64::from(c[0] as i8),
        _ => f64::from(c[0]),
    }
}

/// The text of `'key': value` in a numpy header dict (value up to the next top-level comma).
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'"))?;
    let rest = header[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0;
    for (i, ch) in rest.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&rest[..=i]);
                }
            }
            ',' | '}' if depth == 0 => return Some(&rest[..i]),
            _ => {}
        }
    }
    None
}

/// The bytes of a version-1.0 `.npy` file with dtype `descr`, shape `shape` (a Python tuple) and the
/// raw little-endian `body`, header padded to 64 bytes as numpy writes it. For this crate's tests.
#[cfg(test)]
pub(crate) fn npy_bytes(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_floats_and_integers_widened() {
        let dir = std::env::temp_dir().join(format!("calibra-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.npy");
        let body: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&f, npy_bytes("<f4", "(1, 2)", &body)).unwrap();
        let a = read_npy(&f).unwrap();
        assert_eq!((a.shape.clone(), a.data.clone(), a.integer), (vec![1, 2], vec![1.5, -2.0], false));
        let i = dir.join("i.npy");
        let body: Vec<u8> = [3i64, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&i, npy_bytes("<i8", "(2,)", &body)).unwrap();
        let a = read_npy(&i).unwrap();
        assert_eq!((a.shape, a.data, a.integer), (vec![2], vec![3.0, 0.0], true));
        let bad = dir.join("bad.npy");
        std::fs::write(&bad, npy_bytes("<i8", "(3,)", &body)).unwrap();
        let e = read_npy(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.npy: 16 data bytes for shape [3]"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
