//! Preprocessing for an encoder: decode, grayscale → 3 channels, resize, centre crop, rescale and
//! normalise, configured from a Hugging Face `preprocessor_config.json` or explicit values; and
//! rayon-parallel decoding of many samples with the bad-image policy.
//!
//! Hugging Face semantics reproduced: `size: {"shortest_edge": s}` (or a bare integer) resizes the
//! shorter side to `s` and the longer to `floor(s · long / short)`; `size: {"height", "width"}`
//! resizes to exactly that; `crop_size` centre-crops at offset `floor((side − crop) / 2)` (zero
//! padding when the image is smaller); `rescale_factor` (default 1/255) then
//! `(x − image_mean[c]) / image_std[c]`. The resized image is quantised to 8 bits before rescaling,
//! as Pillow-based processors do. `resample` uses PIL codes: 0 nearest, 1 lanczos, 2 bilinear,
//! 3 bicubic (default 3); the `image` crate's filters approximate Pillow's (antialiased when
//! downscaling) but are not bit-identical.

use crate::dataset::{Dataset, SkippedSample};
use crate::error::DataError;
use crate::pixels::ImageU8;
use crate::readers::BadImagePolicy;
use crate::resample::resize_triangle;
use image::imageops::FilterType;
use rayon::prelude::*;
use serde_json::Value;
use std::path::Path;

/// How to resize before cropping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResizeTarget {
    /// Shorter side to this many pixels, aspect ratio kept.
    ShortestEdge(u32),
    /// Exactly `height × width`.
    Exact { height: u32, width: u32 },
}

/// How the centre crop's offset `(side − crop) / 2` is rounded when it is not whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CropRounding {
    /// `floor` (Hugging Face image processors).
    #[default]
    Floor,
    /// Python's `round`, half to even (torchvision's `CenterCrop`, used by timm's eval transform).
    HalfEven,
}

/// An encoder's input transform. (`Debug` is part of feature-cache keys: `crop_rounding` is printed
/// only when not [`CropRounding::Floor`], so that keys made before it existed stay valid.)
#[derive(Clone, PartialEq)]
pub struct PreprocessConfig {
    pub resize: Option<ResizeTarget>,
    pub filter: FilterType,
    /// `(height, width)` of the centre crop.
    pub center_crop: Option<(u32, u32)>,
    /// Rounding of the centre crop's offset.
    pub crop_rounding: CropRounding,
    pub rescale_factor: f32,
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

/// A resize target and a centre crop `(height, width)`.
type ResizeAndCrop = (Option<ResizeTarget>, Option<(u32, u32)>);

/// `ConvNextImageProcessor`'s `crop_pct` (transformers 5.24; the processor of `microsoft/resnet-50` and
/// the other converted ConvNeXt / ResNet checkpoints): with `size.shortest_edge` `s < 384` the shorter
/// side is resized to `int(s / crop_pct)` and the centre `s × s` cut out (offset
/// `int((side − s) / 2)`); from 384 up the image is warped to `s × s` without a crop. Without
/// `do_resize` it does nothing. Other processors read `crop_pct` differently (PoolFormer, LeViT, …)
/// and are refused naming it, never preprocessed as if it were absent.
fn convnext_crop_pct(
    v: &Value,
    pct: &Value,
    resize: Option<ResizeTarget>,
    center_crop: Option<(u32, u32)>,
) -> Result<ResizeAndCrop, String> {
    let kind = ["image_processor_type", "feature_extractor_type"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap_or("an unnamed processor");
    if !kind.starts_with("ConvNext") {
        return Err(format!(
            "`crop_pct` is implemented for ConvNextImageProcessor only; {kind} is not supported"
        ));
    }
    let crop_pct =
        pct.as_f64().filter(|c| c.is_finite() && *c > 0.0).ok_or("`crop_pct` must be a number > 0")?;
    match resize {
        None => Ok((None, center_crop)),
        Some(ResizeTarget::ShortestEdge(s)) if s < 384 => {
            let edge = (f64::from(s) / crop_pct) as u32;
            if edge == 0 || edge > 1 << 16 {
                return Err(format!("`crop_pct` = {crop_pct} resizes the shorter side to {edge} pixels"));
            }
            Ok((Some(ResizeTarget::ShortestEdge(edge)), Some((s, s))))
        }
        Some(ResizeTarget::ShortestEdge(s)) => Ok((Some(ResizeTarget::Exact { height: s, width: s }), None)),
        Some(ResizeTarget::Exact { .. }) => {
            Err("ConvNextImageProcessor's `crop_pct` needs `size` as an integer or {shortest_edge}".into())
        }
    }
}

impl std::fmt::Debug for PreprocessConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("PreprocessConfig");
        d.field("resize", &self.resize).field("filter", &self.filter).field("center_crop", &self.center_crop);
        if self.crop_rounding != CropRounding::Floor {
            d.field("crop_rounding", &self.crop_rounding);
        }
        d.field("rescale_factor", &self.rescale_factor)
            .field("mean", &self.mean)
            .field("std", &self.std)
            .finish()
    }
}

impl PreprocessConfig {
    /// The common 224 ImageNet transform: shortest edge 224, bicubic, centre crop 224, ImageNet
    /// mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225).
    pub fn imagenet_224() -> Self {
        Self {
            resize: Some(ResizeTarget::ShortestEdge(224)),
            filter: FilterType::CatmullRom,
            center_crop: Some((224, 224)),
            crop_rounding: CropRounding::Floor,
            rescale_factor: 1.0 / 255.0,
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
        }
    }

    /// Reads a Hugging Face `preprocessor_config.json`.
    pub fn from_hf_file(path: &Path) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        Self::from_hf_json(&text).map_err(|m| DataError::file(path, m))
    }

    /// Parses the JSON text of a `preprocessor_config.json` (errors name the key).
    pub fn from_hf_json(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let flag = |k: &str, default: bool| v.get(k).and_then(Value::as_bool).unwrap_or(default);
        let side = |x: &Value, key: &str| -> Result<u32, String> {
            x.as_u64()
                .filter(|n| *n > 0)
                .map(|n| n as u32)
                .ok_or_else(|| format!("`{key}` must be a positive integer"))
        };
        let resize = if flag("do_resize", true) {
            match v.get("size") {
                None => None,
                Some(s) if s.is_u64() => Some(ResizeTarget::ShortestEdge(side(s, "size")?)),
                Some(s) => match (s.get("shortest_edge"), s.get("height"), s.get("width")) {
                    (Some(e), _, _) => Some(ResizeTarget::ShortestEdge(side(e, "size.shortest_edge")?)),
                    (None, Some(h), Some(w)) => Some(ResizeTarget::Exact {
                        height: side(h, "size.height")?,
                        width: side(w, "size.width")?,
                    }),
                    _ => return Err("`size` must be an integer, {shortest_edge} or {height, width}".into()),
                },
            }
        } else {
            None
        };
        let filter = match v.get("resample").and_then(Value::as_u64).unwrap_or(3) {
            0 => FilterType::Nearest,
            1 => FilterType::Lanczos3,
            2 => FilterType::Triangle,
            3 => FilterType::CatmullRom,
            other => {
                return Err(format!(
                    "`resample` {other} is not supported (0 nearest, 1 lanczos, 2 bilinear, 3 bicubic)"
                ));
            }
        };
        let center_crop = if flag("do_center_crop", v.get("crop_size").is_some()) {
            match v.get("crop_size") {
                None => None,
                Some(c) if c.is_u64() => {
                    let n = side(c, "crop_size")?;
                    Some((n, n))
                }
                Some(c) => Some((
                    side(c.get("height").unwrap_or(&Value::Null), "crop_size.height")?,
                    side(c.get("width").unwrap_or(&Value::Null), "crop_size.width")?,
                )),
            }
        } else {
            None
        };
        let (resize, center_crop) = match v.get("crop_pct").filter(|c| !c.is_null()) {
            None => (resize, center_crop),
            Some(pct) => convnext_crop_pct(&v, pct, resize, center_crop)?,
        };
        let rescale_factor = if flag("do_rescale", true) {
            v.get("rescale_factor")
                .map_or(Some(1.0 / 255.0), Value::as_f64)
                .ok_or("`rescale_factor` must be a number")? as f32
        } else {
            1.0
        };
        let triple = |k: &str, default: [f32; 3]| -> Result<[f32; 3], String> {
            match v.get(k) {
                None => Ok(default),
                Some(Value::Array(a)) if a.len() == 3 => {
                    let mut out = [0f32; 3];
                    for (o, x) in out.iter_mut().zip(a) {
                        *o = x.as_f64().ok_or(format!("`{k}` must hold numbers"))? as f32;
                    }
                    Ok(out)
                }
                Some(Value::Number(n)) => Ok([n.as_f64().unwrap_or(0.0) as f32; 3]),
                _ => Err(format!("`{k}` must be a list of 3 numbers")),
            }
        };
        let (mean, std) = if flag("do_normalize", true) {
            (triple("image_mean", [0.5; 3])?, triple("image_std", [0.5; 3])?)
        } else {
            ([0.0; 3], [1.0; 3])
        };
        if std.iter().any(|s| *s <= 0.0) {
            return Err("`image_std` must be positive".into());
        }
        Ok(Self {
            resize,
            filter,
            center_crop,
            crop_rounding: CropRounding::Floor,
            rescale_factor,
            mean,
            std,
        })
    }

    /// Applies the transform: to RGB, resize, centre crop, rescale, normalise → a CHW tensor.
    ///
    /// Each output value is `(f32::from(v) · rescale_factor − mean[c]) / std[c]` for the 8-bit value
    /// `v` (0 outside the image when the crop is larger than it); the 256 possible values per channel
    /// are computed once into a table, which gives the same `f32`s as computing them per pixel.
    pub fn apply(&self, image: &ImageU8) -> Tensor3 {
        let gray_as_rgb;
        let rgb: &ImageU8 = if image.channels == 3 {
            image
        } else {
            gray_as_rgb = image.to_rgb();
            &gray_as_rgb
        };
        let (mut w, mut h) = (rgb.width, rgb.height);
        let mut resized = None;
        if let Some(target) = self.resize {
            let (nw, nh) = match target {
                ResizeTarget::Exact { height, width } => (width, height),
                ResizeTarget::ShortestEdge(s) if w <= h => {
                    (s, ((s as u64 * h as u64) / w as u64).max(1) as u32)
                }
                ResizeTarget::ShortestEdge(s) => (((s as u64 * w as u64) / h as u64).max(1) as u32, s),
            };
            if (nw, nh) != (w, h) {
                resized = Some(if self.filter == FilterType::Triangle {
                    // Same bytes as image's Triangle resize (see `resample`), several times faster.
                    resize_triangle(&rgb.data, w as usize, h as usize, 3, nw as usize, nh as usize)
                } else {
                    let img = image::RgbImage::from_raw(w, h, rgb.data.clone()).expect("checked size");
                    image::imageops::resize(&img, nw, nh, self.filter).into_raw()
                });
                (w, h) = (nw, nh);
            }
        }
        let pixels: &[u8] = resized.as_deref().unwrap_or(&rgb.data);
        let table: [[f32; 256]; 3] = std::array::from_fn(|c| {
            std::array::from_fn(|v| (f32::from(v as u8) * self.rescale_factor - self.mean[c]) / self.std[c])
        });
        let (w, h) = (w as i64, h as i64);
        let (ch, cw) = self.center_crop.map_or((h, w), |(a, b)| (a as i64, b as i64));
        let offset = |d: i64| match self.crop_rounding {
            CropRounding::Floor => d.div_euclid(2),
            // round(d / 2) half to even: an odd d gives k + ½, rounded to k or k + 1, whichever is even
            CropRounding::HalfEven => {
                let k = d.div_euclid(2);
                if d.rem_euclid(2) == 1 && k.rem_euclid(2) == 1 { k + 1 } else { k }
            }
        };
        let (top, left) = (offset(h - ch), offset(w - cw));
        let plane = (ch * cw) as usize;
        // Outside the image (a crop larger than it) the pixel is 0 before normalisation.
        let mut data: Vec<f32> = table.iter().flat_map(|t| std::iter::repeat_n(t[0], plane)).collect();
        // The columns of the crop that lie inside the image, in crop coordinates.
        let (x0, x1) = ((-left).clamp(0, cw), (w - left).clamp(0, cw));
        for y in 0..ch {
            let sy = y + top;
            if !(0..h).contains(&sy) || x0 >= x1 {
                continue;
            }
            let n = (x1 - x0) as usize;
            let src_start = ((sy * w + x0 + left) * 3) as usize;
            let src = &pixels[src_start..src_start + 3 * n];
            let dst_start = (y * cw + x0) as usize;
            let (r, gb) = data.split_at_mut(plane);
            let (g, b) = gb.split_at_mut(plane);
            let dst = (&mut r[dst_start..][..n], &mut g[dst_start..][..n], &mut b[dst_start..][..n]);
            for (i, px) in src.chunks_exact(3).enumerate() {
                dst.0[i] = table[0][usize::from(px[0])];
                dst.1[i] = table[1][usize::from(px[1])];
                dst.2[i] = table[2][usize::from(px[2])];
            }
        }
        Tensor3 { channels: 3, height: ch as usize, width: cw as usize, data }
    }
}

/// A channels-first float image (`data[c * height * width + y * width + x]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor3 {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub data: Vec<f32>,
}

/// The result of decoding many samples.
#[derive(Debug)]
pub struct Decoded<T> {
    /// `(sample index, value)` in the order of the requested indices, bad images left out.
    pub items: Vec<(usize, T)>,
    /// Samples left out under [`BadImagePolicy::Skip`].
    pub skipped: Vec<SkippedSample>,
}

/// Loads and transforms the samples `indices` in parallel (rayon). The output order is the order
/// of `indices` whatever the thread count. Under [`BadImagePolicy::Fail`] the first bad image in
/// `indices` order is the error; under `Skip` bad images are listed in [`Decoded::skipped`].
pub fn decode_samples<T: Send>(
    dataset: &Dataset,
    indices: &[usize],
    policy: BadImagePolicy,
    transform: impl Fn(usize, ImageU8) -> Result<T, DataError> + Sync,
) -> Result<Decoded<T>, DataError> {
    if let Some(&bad) = indices.iter().find(|&&i| i >= dataset.len()) {
        return Err(DataError::Invalid(format!(
            "sample index {bad} out of range ({} samples)",
            dataset.len()
        )));
    }
    let results: Vec<Result<T, DataError>> =
        indices.par_iter().map(|&i| transform(i, dataset.samples[i].image.load()?)).collect();
    let mut out = Decoded { items: Vec::with_capacity(indices.len()), skipped: Vec::new() };
    for (&i, r) in indices.iter().zip(results) {
        match (r, policy) {
            (Ok(v), _) => out.items.push((i, v)),
            (Err(e), BadImagePolicy::Fail) => {
                return Err(DataError::Invalid(format!("sample `{}`: {e}", dataset.samples[i].id)));
            }
            (Err(e), BadImagePolicy::Skip) => out.skipped.push(SkippedSample {
                location: format!(
                    "sample `{}` ({})",
                    dataset.samples[i].id,
                    dataset.samples[i].image.describe()
                ),
                reason: e.to_string(),
            }),
        }
    }
    Ok(out)
}

/// Decodes and preprocesses `indices` with `config` (see [`decode_samples`]).
pub fn preprocess_samples(
    dataset: &Dataset,
    indices: &[usize],
    config: &PreprocessConfig,
    policy: BadImagePolicy,
) -> Result<Decoded<Tensor3>, DataError> {
    decode_samples(dataset, indices, policy, |_, image| Ok(config.apply(&image)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The transform written per pixel, as before the table and the row loop: the fast `apply` must
    /// give the same `f32`s.
    fn apply_per_pixel(config: &PreprocessConfig, image: &ImageU8) -> Tensor3 {
        let rgb = image.to_rgb();
        let mut img = image::RgbImage::from_raw(rgb.width, rgb.height, rgb.data).unwrap();
        if let Some(target) = config.resize {
            let (w, h) = (img.width(), img.height());
            let (nw, nh) = match target {
                ResizeTarget::Exact { height, width } => (width, height),
                ResizeTarget::ShortestEdge(s) if w <= h => {
                    (s, ((s as u64 * h as u64) / w as u64).max(1) as u32)
                }
                ResizeTarget::ShortestEdge(s) => (((s as u64 * w as u64) / h as u64).max(1) as u32, s),
            };
            if (nw, nh) != (w, h) {
                img = image::imageops::resize(&img, nw, nh, config.filter);
            }
        }
        let (w, h) = (img.width() as i64, img.height() as i64);
        let (ch, cw) = config.center_crop.map_or((h, w), |(a, b)| (a as i64, b as i64));
        let (top, left) = ((h - ch).div_euclid(2), (w - cw).div_euclid(2));
        let plane = (ch * cw) as usize;
        let mut data = vec![0f32; 3 * plane];
        for y in 0..ch {
            for x in 0..cw {
                let (sy, sx) = (y + top, x + left);
                let px = if (0..h).contains(&sy) && (0..w).contains(&sx) {
                    img.get_pixel(sx as u32, sy as u32).0
                } else {
                    [0, 0, 0]
                };
                for c in 0..3 {
                    data[c * plane + (y * cw + x) as usize] =
                        (f32::from(px[c]) * config.rescale_factor - config.mean[c]) / config.std[c];
                }
            }
        }
        Tensor3 { channels: 3, height: ch as usize, width: cw as usize, data }
    }

    /// The legacy ConvNext config transformers' ResNet checkpoints ship (`size` 32 here, `crop_pct`
    /// 0.875), applied to timm's 61×45 preprocess fixture image, against
    /// `AutoImageProcessor.from_pretrained(...)` (scripts/golden/encoders_resnet.py): shorter side to
    /// int(32 / 0.875) = 36, centre 32×32. Tolerance as for timm's transform (calibra's bicubic is
    /// not Pillow's / torchvision's bit for bit): every value within 3 levels, mean below half a level;
    /// ignoring `crop_pct` (resize to 32, no crop) fails it.
    #[test]
    fn convnext_crop_pct_matches_transformers() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures");
        let cfg =
            PreprocessConfig::from_hf_file(&fixtures.join("resnet/preprocess/preprocessor_config.json"))
                .unwrap();
        assert_eq!(cfg.resize, Some(ResizeTarget::ShortestEdge(36)));
        assert_eq!(cfg.center_crop, Some((32, 32)));
        let img = image::open(fixtures.join("timm/preprocess/image.png")).unwrap().to_rgb8();
        let (w, h) = img.dimensions();
        let image = ImageU8 { width: w, height: h, channels: 3, data: img.into_raw() };
        let bytes = std::fs::read(fixtures.join("resnet/preprocess/golden.safetensors")).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let t = st.tensor("pixel_values").unwrap();
        assert_eq!(t.shape(), &[1, 3, 32, 32]);
        let want: Vec<f32> =
            t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        // One 8-bit level per channel, in normalised units.
        let levels = |got: &[f32]| -> (f32, f32) {
            let d: Vec<f32> = got
                .iter()
                .zip(&want)
                .enumerate()
                .map(|(i, (a, b))| (a - b).abs() * 255.0 * cfg.std[i / (32 * 32)])
                .collect();
            (d.iter().copied().fold(0.0, f32::max), d.iter().sum::<f32>() / d.len() as f32)
        };
        let (max, mean) = levels(&cfg.apply(&image).data);
        println!("ConvNext crop_pct transform: max |diff| {max:.2} levels, mean {mean:.3} levels");
        assert!(max <= 3.0 + 1e-3 && mean < 0.5, "max {max} levels, mean {mean} levels");
        let mut ignored = cfg.clone();
        ignored.resize = Some(ResizeTarget::ShortestEdge(32));
        let (_, mean_ignored) = levels(&ignored.apply(&image).data);
        assert!(mean_ignored > 0.5, "crop_pct must matter on this image: {mean_ignored}");
    }

    /// `microsoft/resnet-50`'s processor (ConvNextFeatureExtractor, size 224, crop_pct 0.875):
    /// shorter side to int(224 / 0.875) = 256, then the centre 224 × 224; from 384 up a warp; other
    /// processors' `crop_pct` is refused by name.
    #[test]
    fn convnext_crop_pct_resizes_then_crops() {
        let base =
            r#""feature_extractor_type": "ConvNextFeatureExtractor", "crop_pct": 0.875, "resample": 3"#;
        let c = PreprocessConfig::from_hf_json(&format!(r#"{{{base}, "size": 224}}"#)).unwrap();
        assert_eq!(c.resize, Some(ResizeTarget::ShortestEdge(256)));
        assert_eq!(c.center_crop, Some((224, 224)));
        let c = PreprocessConfig::from_hf_json(&format!(r#"{{{base}, "size": {{"shortest_edge": 384}}}}"#))
            .unwrap();
        assert_eq!(c.resize, Some(ResizeTarget::Exact { height: 384, width: 384 }));
        assert_eq!(c.center_crop, None);
        let err = PreprocessConfig::from_hf_json(
            r#"{"image_processor_type": "PoolFormerImageProcessor", "crop_pct": 0.9, "size": 224}"#,
        )
        .unwrap_err();
        assert!(err.contains("crop_pct") && err.contains("PoolFormerImageProcessor"), "{err}");
    }

    #[test]
    fn same_floats_as_the_per_pixel_transform() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let configs = [
            r#"{"size": {"height": 224, "width": 224}, "resample": 2,
                "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}"#,
            r#"{"size": {"shortest_edge": 24}, "crop_size": {"height": 20, "width": 22}, "resample": 2}"#,
            r#"{"size": {"shortest_edge": 16}, "crop_size": {"height": 30, "width": 12}, "resample": 3}"#,
            r#"{"size": {"height": 9, "width": 40}, "crop_size": {"height": 12, "width": 44}, "resample": 0}"#,
            r#"{"crop_size": {"height": 50, "width": 7}, "rescale_factor": 0.5, "image_mean": 0.2}"#,
            r#"{"do_resize": false, "do_normalize": false}"#,
        ];
        for text in configs {
            let config = PreprocessConfig::from_hf_json(text).unwrap();
            for (w, h, c) in [(256u32, 256u32, 3u8), (37, 29, 3), (29, 37, 1), (1, 5, 3)] {
                let data = (0..w * h * u32::from(c)).map(|_| rng.random()).collect();
                let image = ImageU8::new(w, h, c, data).unwrap();
                assert_eq!(config.apply(&image), apply_per_pixel(&config, &image), "{text} {w}x{h}x{c}");
            }
        }
    }
}
