//! Raw safetensors float data ↔ `f32`, for the files calibra reads and writes outside burn-store
//! (PEFT adapters, CLIP's scalar `logit_scale`, feature caches).

use std::borrow::Cow;

use safetensors::Dtype;

/// Decodes little-endian float data of `dtype` (F32, F64, BF16, F16) to `f32`; other dtypes are an
/// error naming the dtype.
pub fn decode_f32(dtype: Dtype, bytes: &[u8]) -> Result<Vec<f32>, String> {
    Ok(match dtype {
        Dtype::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        Dtype::F64 => {
            bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32).collect()
        }
        Dtype::BF16 => bytes
            .chunks_exact(2)
            .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
            .collect(),
        Dtype::F16 => bytes.chunks_exact(2).map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect(),
        other => return Err(format!("dtype {other:?} is not a float type (expected F32, F64, BF16 or F16)")),
    })
}

/// IEEE half → single (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // Subnormal: value = f · 2^-24.
            let v = f as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 112) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

/// An owned F32 tensor to hand to `safetensors::serialize`.
pub struct F32View {
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl F32View {
    /// `values` row-major with `shape`.
    pub fn new(shape: Vec<usize>, values: &[f32]) -> Self {
        F32View { shape, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
    }
}

impl safetensors::View for F32View {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_decodes_exactly() {
        // 0x3c00 = 1.0, 0xc000 = -2.0, 0x0001 = 2^-24, 0x7bff = 65504, 0xfc00 = -inf.
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
        assert_eq!(decode_f32(Dtype::BF16, &[0x80, 0x3f]).unwrap(), vec![1.0]);
        assert!(decode_f32(Dtype::I32, &[0; 4]).unwrap_err().contains("I32"));
    }
}
