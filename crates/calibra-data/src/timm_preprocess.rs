//! A timm checkpoint's eval transform from its `config.json` `pretrained_cfg` (timm 1.0.31
//! `resolve_data_config` + `create_transform(is_training=False)`), as a [`PreprocessConfig`]:
//!
//! - `crop_mode` `center` (default): `Resize(floor(size / crop_pct))` of the shorter side with
//!   `interpolation`, then `CenterCrop(size)` (torchvision: offset `round((side − size) / 2)`, half to
//!   even); `squash`: both sides to `floor(size / crop_pct)`, then the same crop;
//! - `ToTensor` then `Normalize(mean, std)` (`(v / 255 − mean) / std`).
//!
//! `input_size` is `[3, size, size]`; `interpolation` `bicubic` / `bilinear` / `nearest`
//! (calibra's resamplers approximate Pillow's, see [`crate::preprocess`]); `crop_pct` in `(0, 1]`.
//! Anything else (`crop_mode` `border`, non-square or non-RGB input sizes, `crop_pct` > 1 (padding),
//! other interpolations) is refused naming the field. `test_input_size` / `test_crop_pct` are not
//! used, as in `resolve_data_config`'s default.

use image::imageops::FilterType;
use serde_json::Value;

use crate::preprocess::{CropRounding, PreprocessConfig, ResizeTarget};

/// Whether `config.json` (parsed) is a timm one: it names an `architecture` and has no `model_type`.
pub fn is_timm_config(json: &Value) -> bool {
    json.get("architecture").is_some() && json.get("model_type").is_none()
}

impl PreprocessConfig {
    /// timm's eval transform from a timm `config.json` (see the module docs); errors name the field.
    pub fn from_timm_json(text: &str) -> Result<Self, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        // A legacy single-dict config is its own pretrained_cfg.
        let cfg = match root.get("pretrained_cfg") {
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err("`pretrained_cfg` must be an object".into()),
            None => &root,
        };
        let field = |k: &str| cfg.get(k).filter(|v| !v.is_null());
        let size = match field("input_size") {
            None => 224,
            Some(Value::Array(a)) if a.len() == 3 => {
                let n: Vec<u64> = a.iter().filter_map(Value::as_u64).collect();
                if n.len() != 3 || n[1] == 0 || n[1] > 1 << 16 {
                    return Err(
                        "`pretrained_cfg.input_size` must be [3, size, size] with sizes from 1 to 65536"
                            .into(),
                    );
                }
                if n[0] != 3 || n[1] != n[2] {
                    return Err(format!(
                        "`pretrained_cfg.input_size` = {n:?}: only RGB square inputs [3, size, size] are supported"
                    ));
                }
                n[1] as u32
            }
            Some(v) => return Err(format!("`pretrained_cfg.input_size` must be [3, size, size], found {v}")),
        };
        let crop_pct = match field("crop_pct") {
            None => 0.875,
            Some(v) => v.as_f64().ok_or("`pretrained_cfg.crop_pct` must be a number")?,
        };
        if !(crop_pct > 0.0 && crop_pct <= 1.0) {
            return Err(format!(
                "`pretrained_cfg.crop_pct` = {crop_pct}: only (0, 1] is supported (above 1 timm pads the image)"
            ));
        }
        let scale = (f64::from(size) / crop_pct).floor() as u32;
        let resize = match field("crop_mode")
            .map(|v| v.as_str().ok_or("`pretrained_cfg.crop_mode` must be a string"))
        {
            None => ResizeTarget::ShortestEdge(scale),
            Some(mode) => match mode? {
                "center" => ResizeTarget::ShortestEdge(scale),
                "squash" => ResizeTarget::Exact { height: scale, width: scale },
                other => {
                    return Err(format!(
                        "`pretrained_cfg.crop_mode` = '{other}' is not supported ('center' or 'squash')"
                    ));
                }
            },
        };
        let filter = match field("interpolation").map(|v| v.as_str().unwrap_or("?")).unwrap_or("bicubic") {
            "bicubic" => FilterType::CatmullRom,
            "bilinear" => FilterType::Triangle,
            "nearest" => FilterType::Nearest,
            other => {
                return Err(format!(
                    "`pretrained_cfg.interpolation` = '{other}' is not supported ('bicubic', 'bilinear', 'nearest')"
                ));
            }
        };
        let triple = |k: &str, default: [f32; 3]| -> Result<[f32; 3], String> {
            match field(k) {
                None => Ok(default),
                Some(Value::Array(a)) if a.len() == 3 && a.iter().all(|x| x.as_f64().is_some()) => {
                    Ok(std::array::from_fn(|i| a[i].as_f64().unwrap_or(0.0) as f32))
                }
                Some(v) => Err(format!("`pretrained_cfg.{k}` must be a list of 3 numbers, found {v}")),
            }
        };
        let mean = triple("mean", [0.485, 0.456, 0.406])?;
        let std = triple("std", [0.229, 0.224, 0.225])?;
        if std.iter().any(|s| !(*s > 0.0 && s.is_finite())) || mean.iter().any(|m| !m.is_finite()) {
            return Err("`pretrained_cfg.std` must be positive and `mean` finite".into());
        }
        Ok(Self {
            resize: Some(resize),
            filter,
            center_crop: Some((size, size)),
            crop_rounding: CropRounding::HalfEven,
            rescale_factor: 1.0 / 255.0,
            mean,
            std,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pixels::ImageU8;
    use std::path::Path;

    fn fixture(rel: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/timm").join(rel)
    }

    /// The token fixture's pretrained_cfg (input 32, bicubic, crop_pct 0.9, center, mean = std = 0.5)
    /// applied to a 61×45 PNG, against timm's `resolve_data_config` + `create_transform` output
    /// (resize to 47×35, crop 32 at offsets (8, 2): torchvision's half-to-even rounding of 7.5 and 1.5).
    ///
    /// Tolerance: calibra's bicubic (the `image` crate's Catmull-Rom) is not Pillow's bit for bit; both
    /// quantise to 8 bits, so a pixel may differ by a few levels, i.e. k/255/std = k · 0.0078 here. We
    /// require every value within 3 levels (measured: 1 level, mean 0.0015) and the mean |diff| below
    /// half a level, which a one-pixel shift of the crop (floor rounding) fails on this image.
    #[test]
    fn timm_eval_transform_matches_timm() {
        let text = std::fs::read_to_string(fixture("token/config.json")).unwrap();
        let cfg = PreprocessConfig::from_timm_json(&text).unwrap();
        assert_eq!(cfg.resize, Some(ResizeTarget::ShortestEdge(35)));
        assert_eq!(cfg.center_crop, Some((32, 32)));
        let img = image::open(fixture("preprocess/image.png")).unwrap().to_rgb8();
        let (w, h) = img.dimensions();
        let image = ImageU8 { width: w, height: h, channels: 3, data: img.into_raw() };
        let got = cfg.apply(&image);
        let bytes = std::fs::read(fixture("preprocess/golden.safetensors")).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let t = st.tensor("pixel_values").unwrap();
        assert_eq!(t.shape(), &[1, 3, 32, 32]);
        let want: Vec<f32> =
            t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let level = 1.0 / 255.0 / 0.5;
        let diffs: Vec<f32> = got.data.iter().zip(&want).map(|(a, b)| (a - b).abs()).collect();
        let max = diffs.iter().copied().fold(0.0, f32::max);
        let mean = diffs.iter().sum::<f32>() / diffs.len() as f32;
        println!("timm eval transform: max |diff| {max:.4} ({:.1} levels), mean {mean:.5}", max / level);
        assert!(max <= 3.0 * level + 1e-6, "max |diff| {max}");
        assert!(mean < 0.5 * level, "mean |diff| {mean}");

        let mut floor = cfg.clone();
        floor.crop_rounding = CropRounding::Floor;
        let shifted = floor.apply(&image);
        let mean_floor =
            shifted.data.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum::<f32>() / want.len() as f32;
        assert!(mean_floor > 0.5 * level, "the crop rounding must matter on this image: {mean_floor}");
    }

    #[test]
    fn timm_transform_refuses_what_it_cannot_express() {
        for (cfg, field) in [
            (r#"{"architecture": "x", "pretrained_cfg": {"crop_mode": "border"}}"#, "crop_mode"),
            (r#"{"architecture": "x", "pretrained_cfg": {"crop_pct": 1.1}}"#, "crop_pct"),
            (r#"{"architecture": "x", "pretrained_cfg": {"interpolation": "random"}}"#, "interpolation"),
            (r#"{"architecture": "x", "pretrained_cfg": {"input_size": [3, 224, 160]}}"#, "input_size"),
            (r#"{"architecture": "x", "pretrained_cfg": {"input_size": [1, 224, 224]}}"#, "input_size"),
        ] {
            let err = PreprocessConfig::from_timm_json(cfg).unwrap_err();
            assert!(err.contains(field), "{field}: {err}");
        }
        // legacy single-dict config and defaults (224, crop_pct 0.875 → 256, ImageNet mean/std)
        let cfg = PreprocessConfig::from_timm_json(r#"{"architecture": "vit_base_patch16_224"}"#).unwrap();
        assert_eq!(cfg.resize, Some(ResizeTarget::ShortestEdge(256)));
        assert_eq!(cfg.center_crop, Some((224, 224)));
        assert_eq!(cfg.mean, [0.485, 0.456, 0.406]);
    }
}
