//! A small `.npy` reader (NumPy format versions 1.0–3.0) for the arrays a MedMNIST `.npz` holds:
//! C-order, little-endian integer arrays. Anything else is a clear error, never a guess.

/// A decoded array: its shape and its values widened to `i64`, plus the raw `u8` bytes when the
/// dtype is `|u1` (images stay bytes, no copy through i64).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    /// The `descr` of the header (`|u1`, `<i8`...).
    pub dtype: String,
    pub bytes_u8: Option<Vec<u8>>,
    pub values: Vec<i64>,
}

fn header_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pos = header.find(&format!("'{key}'"))?;
    let rest = header[pos + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    Some(rest)
}

/// Parses `.npy` bytes. Errors (as messages) on a bad magic, a Fortran-order or big-endian array,
/// a non-integer dtype, or a payload of the wrong length.
pub fn parse_npy(bytes: &[u8]) -> Result<NpyArray, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy array (bad magic)".into());
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        _ => return Err(format!("unsupported .npy version {major}")),
    };
    let header = std::str::from_utf8(bytes.get(start..start + header_len).ok_or("truncated .npy header")?)
        .map_err(|_| "the .npy header is not text")?;
    let descr = header_value(header, "descr").ok_or("the .npy header has no 'descr'")?;
    let dtype: String = descr.trim_start_matches('\'').split('\'').next().unwrap_or("").to_string();
    let fortran = header_value(header, "fortran_order").ok_or("the .npy header has no 'fortran_order'")?;
    if fortran.starts_with("True") {
        return Err("Fortran-order arrays are not supported (expected C order)".into());
    }
    let shape_text = header_value(header, "shape").ok_or("the .npy header has no 'shape'")?;
    let shape_text =
        shape_text.strip_prefix('(').and_then(|s| s.split(')').next()).ok_or("malformed 'shape'")?;
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>().map_err(|_| format!("malformed shape entry `{s}`")))
        .collect::<Result<_, _>>()?;
    let count: usize = shape.iter().product();
    let data = &bytes[start + header_len..];
    let width = match dtype.as_str() {
        "|u1" | "|i1" | "<u1" | "<i1" | "|b1" => 1,
        "<u2" | "<i2" => 2,
        "<u4" | "<i4" => 4,
        "<u8" | "<i8" => 8,
        other => {
            return Err(format!(
                "unsupported dtype `{other}` (expected a little-endian integer type such as |u1 or <i8)"
            ));
        }
    };
    if data.len() != count * width {
        return Err(format!(
            "payload holds {} bytes, shape {shape:?} of {dtype} needs {}",
            data.len(),
            count * width
        ));
    }
    let signed = dtype.contains('i');
    let values: Vec<i64> = data
        .chunks_exact(width)
        .map(|c| match (width, signed) {
            (1, false) => i64::from(c[0]),
            (1, true) => i64::from(c[0] as i8),
            (2, false) => i64::from(u16::from_le_bytes([c[0], c[1]])),
            (2, true) => i64::from(i16::from_le_bytes([c[0], c[1]])),
            (4, false) => i64::from(u32::from_le_bytes(c.try_into().expect("4"))),
            (4, true) => i64::from(i32::from_le_bytes(c.try_into().expect("4"))),
            (_, false) => u64::from_le_bytes(c.try_into().expect("8")) as i64,
            (_, true) => i64::from_le_bytes(c.try_into().expect("8")),
        })
        .collect();
    let bytes_u8 = (dtype == "|u1" || dtype == "<u1").then(|| data.to_vec());
    Ok(NpyArray { shape, dtype, bytes_u8, values })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, payload: &[u8]) -> Vec<u8> {
        npy_order(descr, "False", shape, payload)
    }

    fn npy_order(descr: &str, fortran: &str, shape: &str, payload: &[u8]) -> Vec<u8> {
        let mut header = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn parses_u1_and_i8_arrays() {
        let a = parse_npy(&npy("|u1", "(2, 3)", &[1, 2, 3, 4, 5, 255])).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.values, vec![1, 2, 3, 4, 5, 255]);
        let mut p = Vec::new();
        for v in [-1i64, 7] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        let b = parse_npy(&npy("<i8", "(2,)", &p)).unwrap();
        assert_eq!(b.values, vec![-1, 7]);
        assert!(b.bytes_u8.is_none());
    }

    #[test]
    fn rejects_floats_wrong_length_and_fortran() {
        assert!(parse_npy(&npy("<f4", "(1,)", &[0; 4])).unwrap_err().contains("<f4"));
        assert!(parse_npy(&npy("|u1", "(3,)", &[0; 2])).unwrap_err().contains("payload"));
        assert!(parse_npy(&npy_order("|u1", "True", "(1,)", &[0])).unwrap_err().contains("Fortran"));
        assert!(parse_npy(b"garbage!!!!!").unwrap_err().contains("magic"));
    }
}
