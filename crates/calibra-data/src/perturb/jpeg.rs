//! JPEG re-compression: encode at a quality with the libjpeg quantisation-table scaling and, for RGB,
//! 4:2:0 chroma subsampling (what Pillow, OpenCV and most cameras do), then decode. Grayscale
//! images are encoded as single-channel JPEG. Checked against Pillow (libjpeg-turbo) at the same
//! quality by `scripts/golden/perturb.py` (mean error within a few percent).

use crate::error::DataError;
use crate::pixels::ImageU8;
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

/// Encodes at `quality` (1–100) and decodes back.
pub fn jpeg_roundtrip(image: &ImageU8, quality: u8) -> Result<ImageU8, DataError> {
    let bytes = encode_jpeg(image, quality)?;
    let decoded = ImageU8::decode(&bytes, "in-memory JPEG")?;
    Ok(decoded.with_channels(image.channels))
}

/// Encodes as baseline JPEG at `quality` (1–100): 4:2:0 chroma subsampling for RGB, single-channel
/// for grayscale.
pub fn encode_jpeg(image: &ImageU8, quality: u8) -> Result<Vec<u8>, DataError> {
    let (w, h) = (
        u16::try_from(image.width)
            .map_err(|_| DataError::Invalid("JPEG images are at most 65535 wide".into()))?,
        u16::try_from(image.height)
            .map_err(|_| DataError::Invalid("JPEG images are at most 65535 high".into()))?,
    );
    let mut bytes = Vec::new();
    let mut encoder = Encoder::new(&mut bytes, quality.clamp(1, 100));
    let color = if image.channels == 1 {
        ColorType::Luma
    } else {
        encoder.set_sampling_factor(SamplingFactor::R_4_2_0);
        ColorType::Rgb
    };
    encoder
        .encode(&image.data, w, h, color)
        .map_err(|e| DataError::Invalid(format!("JPEG encoding failed: {e}")))?;
    Ok(bytes)
}
