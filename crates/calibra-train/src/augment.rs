//! Train-time augmentation for fine-tuning (`augment = "crop-flip"`): torchvision's
//! `RandomResizedCrop(size, scale=(0.08, 1.0), ratio=(3/4, 4/3))` followed by
//! `RandomHorizontalFlip(p=0.5)`, the standard ImageNet fine-tuning pair, with torchvision's defaults.
//!
//! - The crop box is drawn as `RandomResizedCrop.get_params` draws it: up to 10 tries of a target area
//!   uniform in `scale · H · W` and a log-uniform aspect ratio, `w = round(√(area·ratio))`,
//!   `h = round(√(area/ratio))` (Python's round: half to even), accepted when it fits, at a uniform
//!   offset; otherwise the central crop clamped to the ratio range. The random numbers come from a
//!   ChaCha20 stream (not torch's generator), seeded per image and epoch, so a run is reproducible
//!   and independent of batch composition and thread count.
//! - The box is resized back to the image's size with bilinear interpolation at half-pixel centres
//!   (torchvision's `resized_crop` on tensors: the crop is never larger than the output, so this is
//!   an upsampling, where `antialias` changes nothing); checked against torchvision 0.29.2 in
//!   `tests/augment.rs` (`scripts/golden/augment.py`).
//! - It runs on the preprocessed (resized and normalised) images calibra holds in memory. Bilinear
//!   interpolation commutes with the per-channel normalisation, so the only difference from
//!   torchvision's usual order (crop the decoded image, then resize) is that the crop is taken from
//!   the already-resized image: a little softer when the source image was larger than the model's
//!   input.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

/// The augmentation of training images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Augment {
    /// The images as preprocessed (the default; probes never augment).
    #[default]
    None,
    /// Random resized crop + horizontal flip, torchvision's defaults.
    CropFlip,
}

impl Augment {
    /// `none` or `crop-flip`.
    pub fn name(self) -> &'static str {
        match self {
            Augment::None => "none",
            Augment::CropFlip => "crop-flip",
        }
    }

    /// Parses a recipe's or a flag's `augment`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "none" => Ok(Augment::None),
            "crop-flip" => Ok(Augment::CropFlip),
            other => Err(format!("unknown augmentation `{other}`; expected `none` or `crop-flip`")),
        }
    }
}

/// A crop box in pixels: rows `top..top + height`, columns `left..left + width`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CropBox {
    pub top: usize,
    pub left: usize,
    pub height: usize,
    pub width: usize,
}

const SCALE: (f64, f64) = (0.08, 1.0);
const RATIO: (f64, f64) = (3.0 / 4.0, 4.0 / 3.0);

/// A crop box of an `height × width` image drawn as torchvision's `RandomResizedCrop.get_params`.
pub fn random_crop_box(height: usize, width: usize, rng: &mut impl Rng) -> CropBox {
    let area = (height * width) as f64;
    let (log_lo, log_hi) = (RATIO.0.ln(), RATIO.1.ln());
    for _ in 0..10 {
        let target = area * rng.random_range(SCALE.0..SCALE.1);
        let aspect = rng.random_range(log_lo..log_hi).exp();
        let w = (target * aspect).sqrt().round_ties_even() as usize;
        let h = (target / aspect).sqrt().round_ties_even() as usize;
        if 0 < w && w <= width && 0 < h && h <= height {
            let top = rng.random_range(0..=height - h);
            let left = rng.random_range(0..=width - w);
            return CropBox { top, left, height: h, width: w };
        }
    }
    let in_ratio = width as f64 / height as f64;
    let (h, w) = if in_ratio < RATIO.0 {
        ((width as f64 / RATIO.0).round_ties_even() as usize, width)
    } else if in_ratio > RATIO.1 {
        (height, (height as f64 * RATIO.1).round_ties_even() as usize)
    } else {
        (height, width)
    };
    CropBox { top: (height - h) / 2, left: (width - w) / 2, height: h, width: w }
}

/// Bilinear taps (first index, weights) of each of `output` samples from `input` samples starting at
/// `offset`: triangle weights at half-pixel centres, clipped to the crop and renormalised (at the
/// edges this is the clamping of bilinear interpolation).
fn taps(offset: usize, input: usize, output: usize) -> Vec<(usize, [f32; 2], usize)> {
    let scale = input as f64 / output as f64;
    (0..output)
        .map(|o| {
            let src = (o as f64 + 0.5) * scale - 0.5;
            let lo = src.floor();
            let frac = src - lo;
            let (i0, i1) = (lo as i64, lo as i64 + 1);
            let inside = |i: i64| i >= 0 && i < input as i64;
            let (w0, w1) = (if inside(i0) { 1.0 - frac } else { 0.0 }, if inside(i1) { frac } else { 0.0 });
            let sum = w0 + w1;
            let first = i0.clamp(0, input as i64 - 1) as usize;
            let second = i1.clamp(0, input as i64 - 1) as usize;
            (offset + first, [(w0 / sum) as f32, (w1 / sum) as f32], offset + second)
        })
        .collect()
}

/// One `[c, h, w]` image's `crop` resized back to `h × w` (bilinear), mirrored left-right when
/// `flip`, written into `out` (same length as `image`).
pub fn resized_crop(image: &[f32], shape: [usize; 3], crop: CropBox, flip: bool, out: &mut [f32]) {
    let [c, h, w] = shape;
    assert_eq!(image.len(), c * h * w, "image buffer");
    assert_eq!(out.len(), image.len(), "output buffer");
    let rows = taps(crop.top, crop.height, h);
    let cols = taps(crop.left, crop.width, w);
    let mut row_buf = vec![0f32; w];
    for ch in 0..c {
        let plane = &image[ch * h * w..(ch + 1) * h * w];
        for (y, &(r0, [a0, a1], r1)) in rows.iter().enumerate() {
            for (x, &(c0, [b0, b1], c1)) in cols.iter().enumerate() {
                let top = b0 * plane[r0 * w + c0] + b1 * plane[r0 * w + c1];
                let bottom = b0 * plane[r1 * w + c0] + b1 * plane[r1 * w + c1];
                row_buf[x] = a0 * top + a1 * bottom;
            }
            let dst = &mut out[ch * h * w + y * w..ch * h * w + (y + 1) * w];
            if flip {
                dst.iter_mut().zip(row_buf.iter().rev()).for_each(|(d, s)| *d = *s);
            } else {
                dst.copy_from_slice(&row_buf);
            }
        }
    }
}

/// Training image `image` (`[c, h, w]`) augmented with the stream `seed`: a random resized crop,
/// then a flip with probability ½ (drawn after the box, as torchvision's pipeline runs them).
pub fn crop_flip(image: &[f32], shape: [usize; 3], seed: u64, out: &mut [f32]) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let crop = random_crop_box(shape[1], shape[2], &mut rng);
    let flip = rng.random_bool(0.5);
    resized_crop(image, shape, crop, flip, out);
}

/// A batch of training images (`pixels`: `rows.len()` images of `shape`, row-major) as `augment`
/// transforms them in epoch `epoch` of a run seeded `seed`: each image's random stream depends on
/// (seed, epoch, its training row) only, so neither the batch it falls in nor the thread count
/// changes it. [`Augment::None`] returns the pixels unchanged.
pub fn augment_batch(
    pixels: Vec<f32>,
    shape: [usize; 3],
    rows: &[usize],
    augment: Augment,
    (seed, epoch): (u64, usize),
) -> Vec<f32> {
    if augment == Augment::None {
        return pixels;
    }
    let size = shape.iter().product::<usize>();
    let mut out = vec![0f32; pixels.len()];
    let epoch_seed = crate::training_loop::mix(seed, 3 << 40 | epoch as u64);
    for ((dst, image), &row) in out.chunks_exact_mut(size).zip(pixels.chunks_exact(size)).zip(rows) {
        crop_flip(image, shape, crate::training_loop::mix(epoch_seed, row as u64), dst);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest};

    proptest! {
        /// Every drawn box lies inside the image, and its area and aspect ratio are within the
        /// ranges (up to the rounding of its sides) unless it is the central fallback.
        #[test]
        fn crop_boxes_fit_the_image(h in 1usize..300, w in 1usize..300, seed in any::<u64>()) {
            let b = random_crop_box(h, w, &mut ChaCha20Rng::seed_from_u64(seed));
            prop_assert!(b.height >= 1 && b.width >= 1);
            prop_assert!(b.top + b.height <= h && b.left + b.width <= w);
        }

        /// A flip twice is the identity, and the whole-image box without flip is the image.
        #[test]
        fn whole_box_is_identity(h in 1usize..12, w in 1usize..12, seed in any::<u64>()) {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let image: Vec<f32> = (0..3 * h * w).map(|_| rng.random_range(-2.0f32..2.0)).collect();
            let whole = CropBox { top: 0, left: 0, height: h, width: w };
            let mut out = vec![0.0; image.len()];
            resized_crop(&image, [3, h, w], whole, false, &mut out);
            prop_assert_eq!(&out, &image);
            let (mut once, mut twice) = (vec![0.0; image.len()], vec![0.0; image.len()]);
            resized_crop(&image, [3, h, w], whole, true, &mut once);
            resized_crop(&once, [3, h, w], whole, true, &mut twice);
            prop_assert_eq!(&twice, &image);
        }
    }

    #[test]
    fn crops_cover_the_scale_range_and_flip_half_the_time() {
        let (mut small, mut flips, n) = (0, 0, 2000);
        for seed in 0..n {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let b = random_crop_box(224, 224, &mut rng);
            if (b.height * b.width) as f64 / (224.0 * 224.0) < 0.3 {
                small += 1;
            }
            if rng.random_bool(0.5) {
                flips += 1;
            }
        }
        // Area fraction uniform in [0.08, 1): about 24 % below 0.3; flips about half.
        assert!((350..620).contains(&small), "{small} small crops of {n}");
        assert!((900..1100).contains(&flips), "{flips} flips of {n}");
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for a in [Augment::None, Augment::CropFlip] {
            assert_eq!(Augment::parse(a.name()), Ok(a));
        }
        assert!(Augment::parse("mixup").unwrap_err().contains("expected `none` or `crop-flip`"));
    }
}
