//! Field-of-view crop: keep the central `fraction` of each side (`round(fraction · side)` pixels,
//! offset `floor((side − kept) / 2)`), then resize back to the original size with a bilinear
//! (triangle) filter — a zoom that cuts the periphery out of view.

use crate::pixels::ImageU8;
use image::imageops::{FilterType, crop_imm, resize};

/// Centre-crops `fraction ∈ (0, 1]` of each side and resizes back (`fraction >= 1`: a copy).
pub fn fov_crop(image: &ImageU8, fraction: f64) -> ImageU8 {
    if fraction >= 1.0 {
        return image.clone();
    }
    let (w, h) = (image.width, image.height);
    let cw = ((w as f64 * fraction).round() as u32).clamp(1, w);
    let ch = ((h as f64 * fraction).round() as u32).clamp(1, h);
    let (x0, y0) = ((w - cw) / 2, (h - ch) / 2);
    let dynamic = image.to_dynamic();
    let cropped = crop_imm(&dynamic, x0, y0, cw, ch).to_image();
    let resized = resize(&cropped, w, h, FilterType::Triangle);
    ImageU8::from_dynamic(image::DynamicImage::ImageRgba8(resized)).with_channels(image.channels)
}

impl ImageU8 {
    /// Converts to `channels` (1: luma by taking the first channel of a replicated gray image;
    /// 3: replicate gray). Used where an intermediate went through RGBA.
    pub(crate) fn with_channels(self, channels: u8) -> ImageU8 {
        match (self.channels, channels) {
            (a, b) if a == b => self,
            (1, 3) => self.to_rgb(),
            (3, 1) => {
                let data = self.data.chunks_exact(3).map(|p| p[0]).collect();
                ImageU8 { width: self.width, height: self.height, channels: 1, data }
            }
            _ => self,
        }
    }
}
