//! `ImageU8`: an 8-bit image with 1 (grayscale) or 3 (RGB) interleaved channels, the pixel type that
//! decoding, perturbation and preprocessing share.

use crate::error::DataError;
use image::{DynamicImage, GrayImage, ImageDecoder, RgbImage};
use std::path::Path;

/// Largest width or height calibra decodes, in pixels. Above it an image is a bad image (skipped under
/// `--on-bad-image skip`, an error naming the file under `fail`) instead of an allocation that could
/// abort the process: a 100-byte PNG may claim 100000 × 100000 pixels. 20,000 covers mammograms and
/// large dermoscopy and fundus photographs; whole-slide images are out of scope.
pub const MAX_IMAGE_SIDE: u32 = 20_000;

/// Largest decoded size calibra allocates for one image, in bytes (1 GiB; a 20,000 × 20,000 RGB image
/// is 1.2 GB, so both limits bind). Enforced from the header before any pixel is decoded, and passed
/// to the decoder as `image::Limits::max_alloc`.
pub const MAX_IMAGE_BYTES: u64 = 1 << 30;

/// An 8-bit image, row-major, channels interleaved (`data[(y * width + x) * channels + c]`).
///
/// `channels` is 1 (grayscale: chest radiographs, MedMNIST gray sets) or 3 (RGB). Grayscale stays
/// grayscale through perturbation (noise is not coloured) and becomes 3 channels only in
/// preprocessing, where an encoder needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageU8 {
    pub width: u32,
    pub height: u32,
    pub channels: u8,
    pub data: Vec<u8>,
}

impl ImageU8 {
    /// An image from raw interleaved bytes; errors if the length is not `width * height * channels`
    /// or `channels` is not 1 or 3.
    pub fn new(width: u32, height: u32, channels: u8, data: Vec<u8>) -> Result<Self, DataError> {
        if channels != 1 && channels != 3 {
            return Err(DataError::Invalid(format!("an image has 1 or 3 channels, not {channels}")));
        }
        let expected = width as usize * height as usize * channels as usize;
        if data.len() != expected || width == 0 || height == 0 {
            return Err(DataError::Invalid(format!(
                "image buffer of {} bytes does not hold {width}x{height}x{channels} (non-empty) pixels",
                data.len()
            )));
        }
        Ok(Self { width, height, channels, data })
    }

    /// A copy with 3 channels (grayscale replicated into R, G and B); RGB is returned unchanged.
    pub fn to_rgb(&self) -> ImageU8 {
        if self.channels == 3 {
            return self.clone();
        }
        let data = self.data.iter().flat_map(|&v| [v, v, v]).collect();
        ImageU8 { width: self.width, height: self.height, channels: 3, data }
    }

    /// From a decoded `image` crate image: luma (any depth) → 1 channel, anything else → RGB 8-bit.
    /// Alpha is dropped (composited on nothing: the colour channels are kept as they are).
    pub fn from_dynamic(image: DynamicImage) -> ImageU8 {
        match image {
            DynamicImage::ImageLuma8(_)
            | DynamicImage::ImageLumaA8(_)
            | DynamicImage::ImageLuma16(_)
            | DynamicImage::ImageLumaA16(_) => {
                let g = image.into_luma8();
                ImageU8 { width: g.width(), height: g.height(), channels: 1, data: g.into_raw() }
            }
            other => {
                let rgb = other.into_rgb8();
                ImageU8 { width: rgb.width(), height: rgb.height(), channels: 3, data: rgb.into_raw() }
            }
        }
    }

    /// To an `image` crate image (Luma8 or Rgb8).
    pub fn to_dynamic(&self) -> DynamicImage {
        if self.channels == 1 {
            DynamicImage::ImageLuma8(
                GrayImage::from_raw(self.width, self.height, self.data.clone()).expect("checked size"),
            )
        } else {
            DynamicImage::ImageRgb8(
                RgbImage::from_raw(self.width, self.height, self.data.clone()).expect("checked size"),
            )
        }
    }

    /// Decodes PNG or JPEG bytes (format from the content) and applies the EXIF orientation tag, so
    /// the pixels are the image as a viewer shows it (what Pillow's `ImageOps.exif_transpose` gives):
    /// a JPEG stored 16 × 8 with orientation 6 decodes as 8 × 16, rotated 90° clockwise. Images without
    /// EXIF, or without the tag, are returned as stored. `name` is used in the error message.
    pub fn decode(bytes: &[u8], name: &str) -> Result<ImageU8, DataError> {
        let error = |message: String| DataError::Decode { source_name: name.to_string(), message };
        let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| error(e.to_string()))?;
        let mut limits = image::Limits::default();
        limits.max_image_width = Some(MAX_IMAGE_SIDE);
        limits.max_image_height = Some(MAX_IMAGE_SIDE);
        limits.max_alloc = Some(MAX_IMAGE_BYTES);
        // Reading the header allocates nothing of the image's size; the decoder's own limit error
        // ("Image size exceeds limit") would not say what the header claims, so check it here first
        // and hand the limits to the decoder for the decode itself.
        reader.no_limits();
        let mut decoder = reader.into_decoder().map_err(|e| error(e.to_string()))?;
        let (w, h) = decoder.dimensions();
        if w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE || decoder.total_bytes() > MAX_IMAGE_BYTES {
            return Err(error(format!(
                "its header claims {w} × {h} pixels ({} bytes decoded), above calibra's limit of \
                 {MAX_IMAGE_SIDE} pixels per side and {MAX_IMAGE_BYTES} bytes",
                decoder.total_bytes()
            )));
        }
        decoder.set_limits(limits).map_err(|e| error(e.to_string()))?;
        let orientation =
            decoder.orientation().map_err(|e| error(format!("cannot read the EXIF orientation: {e}")))?;
        let mut image = DynamicImage::from_decoder(decoder).map_err(|e| error(e.to_string()))?;
        image.apply_orientation(orientation);
        Ok(Self::from_dynamic(image))
    }

    /// Reads and decodes an image file (format from its content, not its extension).
    pub fn open(path: &Path) -> Result<ImageU8, DataError> {
        let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
        Self::decode(&bytes, &path.display().to_string())
    }

    /// Writes the image as PNG.
    pub fn save_png(&self, path: &Path) -> Result<(), DataError> {
        self.to_dynamic()
            .save_with_format(path, image::ImageFormat::Png)
            .map_err(|e| DataError::file(path, format!("cannot write PNG: {e}")))
    }

    /// Root-mean-square difference in 8-bit levels between two images of the same shape:
    /// `sqrt(mean((a - b)^2))`. The pixel-space distance used by the severity tests.
    pub fn rmse(&self, other: &ImageU8) -> Result<f64, DataError> {
        if (self.width, self.height, self.channels) != (other.width, other.height, other.channels) {
            return Err(DataError::Invalid(format!(
                "cannot compare a {}x{}x{} image with a {}x{}x{} image",
                self.width, self.height, self.channels, other.width, other.height, other.channels
            )));
        }
        let sum: f64 = self
            .data
            .iter()
            .zip(&other.data)
            .map(|(&a, &b)| {
                let d = f64::from(a) - f64::from(b);
                d * d
            })
            .sum();
        Ok((sum / self.data.len() as f64).sqrt())
    }
}

/// Rounds a value in 8-bit level units to the nearest level, clamped to 0..=255 (NaN → 0).
pub fn to_u8(v: f64) -> u8 {
    if v.is_nan() { 0 } else { v.round().clamp(0.0, 255.0) as u8 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_roundtrip_is_lossless() {
        let img = ImageU8::new(3, 2, 3, (0..18).map(|v| v * 13).collect()).unwrap();
        let mut bytes = Vec::new();
        img.to_dynamic().write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
        assert_eq!(ImageU8::decode(&bytes, "mem").unwrap(), img);
    }

    #[test]
    fn rejects_wrong_buffer_and_channels() {
        assert!(ImageU8::new(2, 2, 3, vec![0; 11]).is_err());
        assert!(ImageU8::new(2, 2, 4, vec![0; 16]).is_err());
        assert!(ImageU8::decode(b"not an image", "x.png").unwrap_err().to_string().contains("x.png"));
    }

    #[test]
    fn gray_to_rgb_replicates() {
        let g = ImageU8::new(2, 1, 1, vec![7, 9]).unwrap();
        assert_eq!(g.to_rgb().data, vec![7, 7, 7, 9, 9, 9]);
    }
}
