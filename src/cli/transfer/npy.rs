//! A minimal reader of numpy `.npy` files (format 1.0–3.0, C order, little-endian or byte-sized
//! dtypes): enough for `calibra transfer score` features `[N, D]` and labels `[N]` / `[N, L]`.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// A dense array read from `.npy`, widened to f64, with its shape and whether its dtype was integer.
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
    pub integer: bool,
}

pub fn read_npy(path: &Path) -> Result<NpyArray> {
    let file = path.display();
    let bytes = std::fs::read(path).with_context(|| format!("{file}: cannot read"))?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        bail!("{file}: not a .npy file (missing the \\x93NUMPY magic)");
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => bail!("{file}: .npy format version {v} is not supported (1, 2 or 3)"),
    };
    let end = start + header_len;
    if bytes.len() < end {
        bail!("{file}: header runs past the end of the file");
    }
    let header =
        std::str::from_utf8(&bytes[start..end]).with_context(|| format!("{file}: header is not text"))?;
    let descr = dict_value(header, "descr").with_context(|| format!("{file}: header has no 'descr'"))?;
    let descr = descr.trim_matches(|c: char| c == '\'' || c == '"');
    if dict_value(header, "fortran_order").is_some_and(|v| v.trim() == "True") {
        bail!("{file}: Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
    }
    let shape_text = dict_value(header, "shape").with_context(|| format!("{file}: header has no 'shape'"))?;
    let shape: Vec<usize> = shape_text
        .trim_matches(|c: char| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().with_context(|| format!("{file}: bad shape entry `{s}`")))
        .collect::<Result<_>>()?;
    let count: usize = shape.iter().product();
    let body = &bytes[end..];
    let (size, integer): (usize, bool) = match descr {
        "<f8" | "<f4" => (if descr == "<f8" { 8 } else { 4 }, false),
        "<i8" | "<u8" => (8, true),
        "<i4" | "<u4" => (4, true),
        "<i2" | "<u2" => (2, true),
        "|i1" | "|u1" | "|b1" => (1, true),
        other => {
            bail!("{file}: dtype `{other}` is not supported (expected f4/f8 or a little-endian integer)")
        }
    };
    if body.len() != count * size {
        bail!(
            "{file}: {} data bytes for shape {shape:?} of `{descr}` (expected {})",
            body.len(),
            count * size
        );
    }
    let data = body
        .chunks_exact(size)
        .map(|c| match descr {
            "<f8" => f64::from_le_bytes(c.try_into().expect("8 bytes")),
            "<f4" => f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))),
            "<i8" => i64::from_le_bytes(c.try_into().expect("8 bytes")) as f64,
            "<u8" => u64::from_le_bytes(c.try_into().expect("8 bytes")) as f64,
            "<i4" => f64::from(i32::from_le_bytes(c.try_into().expect("4 bytes"))),
            "<u4" => f64::from(u32::from_le_bytes(c.try_into().expect("4 bytes"))),
            "<i2" => f64::from(i16::from_le_bytes(c.try_into().expect("2 bytes"))),
            "<u2" => f64::from(u16::from_le_bytes(c.try_into().expect("2 bytes"))),
            "|i1" => f64::from(c[0] as i8),
            _ => f64::from(c[0]),
        })
        .collect();
    Ok(NpyArray { shape, data, integer })
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
