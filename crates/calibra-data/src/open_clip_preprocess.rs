//! An OpenCLIP checkpoint's eval transform from its `open_clip_config.json` (open_clip_torch 3.3.0:
//! `create_model("local-dir:…")` merges `preprocess_cfg` over `PreprocessCfg`'s defaults, sets `size`
//! to the vision tower's `image_size`, and `image_transform_v2(cfg, is_train=False)` builds):
//!
//! - `resize_mode` `shortest` (default): `Resize(size)` of the shorter side (torchvision: the longer
//!   side becomes `int(size · long / short)`), then `CenterCrop(size)` (offset rounded half to even);
//!   `squash`: both sides to `size`, no crop;
//! - `interpolation` `bicubic` (default; also `random`, which is bicubic at eval) or `bilinear`;
//! - `ToTensor` then `Normalize(mean, std)` (defaults: OpenAI's CLIP mean and std; a single number is
//!   used for the three channels).
//!
//! Refused naming the field: `resize_mode` `longest` (resize the longer side and pad), `mode` other
//! than `RGB`, a non-square `image_size`. Keys open_clip does not read (anything but `size`, `mode`,
//! `mean`, `std`, `interpolation`, `resize_mode`, `fill_color`) are ignored, as open_clip ignores them.

use image::imageops::FilterType;
use serde_json::Value;

use crate::preprocess::{CropRounding, PreprocessConfig, ResizeTarget};

/// open_clip's `OPENAI_DATASET_MEAN`.
pub const OPENAI_MEAN: [f32; 3] = [0.48145466, 0.4578275, 0.40821073];
/// open_clip's `OPENAI_DATASET_STD` (written as open_clip writes it; rounds to the same f32).
#[allow(clippy::excessive_precision)]
pub const OPENAI_STD: [f32; 3] = [0.26862954, 0.26130258, 0.27577711];

/// Whether a parsed JSON file is an OpenCLIP `open_clip_config.json` (it holds a `model_cfg` object).
pub fn is_open_clip_config(json: &Value) -> bool {
    json.get("model_cfg").is_some_and(Value::is_object)
}

impl PreprocessConfig {
    /// open_clip's eval transform from the text of an `open_clip_config.json` (see the module docs);
    /// errors name the field.
    pub fn from_open_clip_json(text: &str) -> Result<Self, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if !is_open_clip_config(&root) {
            return Err("missing object `model_cfg` (not an open_clip_config.json)".into());
        }
        let size = match root["model_cfg"].get("vision_cfg").and_then(|v| v.get("image_size")) {
            None | Some(Value::Null) => 224,
            Some(Value::Array(a)) if a.len() == 2 && a[0] == a[1] => {
                a[0].as_u64().ok_or("`model_cfg.vision_cfg.image_size` must hold integers")?
            }
            Some(Value::Array(_)) => {
                return Err("`model_cfg.vision_cfg.image_size`: only square images are supported".into());
            }
            Some(v) => v.as_u64().ok_or("`model_cfg.vision_cfg.image_size` must be an integer")?,
        };
        if size == 0 || size > 1 << 16 {
            return Err(format!("`model_cfg.vision_cfg.image_size` = {size}: expected 1 to 65536"));
        }
        let size = size as u32;
        let empty = Value::Object(Default::default());
        let cfg = match root.get("preprocess_cfg") {
            None | Some(Value::Null) => &empty,
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err("`preprocess_cfg` must be an object".into()),
        };
        // merge_preprocess_dict drops None values: a null field keeps the default.
        let field = |k: &str| cfg.get(k).filter(|v| !v.is_null());
        let string = |k: &str, default: &'static str| -> Result<String, String> {
            match field(k) {
                None => Ok(default.to_string()),
                Some(v) => {
                    v.as_str().map(str::to_string).ok_or(format!("`preprocess_cfg.{k}` must be a string"))
                }
            }
        };
        let mode = string("mode", "RGB")?;
        if mode != "RGB" {
            return Err(format!("`preprocess_cfg.mode` = '{mode}': only 'RGB' is supported"));
        }
        let filter = match string("interpolation", "bicubic")?.as_str() {
            "bicubic" | "random" => FilterType::CatmullRom,
            "bilinear" => FilterType::Triangle,
            other => {
                return Err(format!(
                    "`preprocess_cfg.interpolation` = '{other}' is not supported ('bicubic', 'bilinear', 'random')"
                ));
            }
        };
        let (resize, center_crop) = match string("resize_mode", "shortest")?.as_str() {
            "shortest" => (ResizeTarget::ShortestEdge(size), Some((size, size))),
            "squash" => (ResizeTarget::Exact { height: size, width: size }, None),
            other => {
                return Err(format!(
                    "`preprocess_cfg.resize_mode` = '{other}' is not supported ('shortest' or 'squash'; \
                     'longest' pads the image, which calibra does not implement)"
                ));
            }
        };
        let triple = |k: &str, default: [f32; 3]| -> Result<[f32; 3], String> {
            match field(k) {
                None => Ok(default),
                Some(Value::Number(n)) => Ok([n.as_f64().unwrap_or(f64::NAN) as f32; 3]),
                Some(Value::Array(a)) if a.len() == 3 && a.iter().all(|x| x.as_f64().is_some()) => {
                    Ok(std::array::from_fn(|i| a[i].as_f64().unwrap_or(f64::NAN) as f32))
                }
                Some(v) => {
                    Err(format!("`preprocess_cfg.{k}` must be a number or a list of 3 numbers, found {v}"))
                }
            }
        };
        let mean = triple("mean", OPENAI_MEAN)?;
        let std = triple("std", OPENAI_STD)?;
        if std.iter().any(|s| !(*s > 0.0 && s.is_finite())) || mean.iter().any(|m| !m.is_finite()) {
            return Err("`preprocess_cfg.std` must be positive and `mean` finite".into());
        }
        Ok(Self {
            resize: Some(resize),
            filter,
            center_crop,
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

    fn fixtures() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures")
    }

    /// Both OpenCLIP fixtures' eval transforms applied to the timm fixture's 61×45 PNG, against
    /// open_clip's `image_transform_v2(is_train=False)` output (scripts/golden/encoders_open_clip.py).
    /// Tolerance as for timm's transform: calibra's resamplers are not Pillow's bit for bit, so every
    /// value must be within 3 8-bit levels and the mean |diff| below half a level.
    #[test]
    fn open_clip_eval_transform_matches_open_clip() {
        let img = image::open(fixtures().join("timm/preprocess/image.png")).unwrap().to_rgb8();
        let (w, h) = img.dimensions();
        let image = ImageU8 { width: w, height: h, channels: 3, data: img.into_raw() };
        let bytes = std::fs::read(fixtures().join("open_clip/preprocess.safetensors")).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        for (name, std, size) in [("gelu", OPENAI_STD[2], 32), ("quickgelu", 0.5, 24)] {
            let text =
                std::fs::read_to_string(fixtures().join(format!("open_clip/{name}/open_clip_config.json")))
                    .unwrap();
            let cfg = PreprocessConfig::from_open_clip_json(&text).unwrap();
            let got = cfg.apply(&image);
            let t = st.tensor(name).unwrap();
            assert_eq!(t.shape(), &[3, size, size], "{name}");
            let want: Vec<f32> =
                t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            assert_eq!(got.data.len(), want.len(), "{name}");
            let level = 1.0 / 255.0 / std;
            let diffs: Vec<f32> = got.data.iter().zip(&want).map(|(a, b)| (a - b).abs()).collect();
            let max = diffs.iter().copied().fold(0.0, f32::max);
            let mean = diffs.iter().sum::<f32>() / diffs.len() as f32;
            println!(
                "open_clip {name} eval transform: max |diff| {max:.4} ({:.1} levels), mean {mean:.5}",
                max / level
            );
            assert!(max <= 3.0 * level + 1e-6, "{name}: max |diff| {max}");
            assert!(mean < 0.5 * level, "{name}: mean |diff| {mean}");
        }
    }

    #[test]
    fn open_clip_transform_reads_defaults_and_refuses_what_it_cannot_express() {
        let cfg = PreprocessConfig::from_open_clip_json(r#"{"model_cfg": {"vision_cfg": {}}}"#).unwrap();
        assert_eq!(cfg.resize, Some(ResizeTarget::ShortestEdge(224)));
        assert_eq!(cfg.center_crop, Some((224, 224)));
        assert_eq!((cfg.mean, cfg.std), (OPENAI_MEAN, OPENAI_STD));
        let cfg = PreprocessConfig::from_open_clip_json(
            r#"{"model_cfg": {"vision_cfg": {"image_size": [64, 64]}}, "preprocess_cfg": {"mean": 0.5, "std": null, "size": 999}}"#,
        )
        .unwrap();
        assert_eq!(cfg.center_crop, Some((64, 64)), "size follows the vision tower, not preprocess_cfg.size");
        assert_eq!((cfg.mean, cfg.std), ([0.5; 3], OPENAI_STD));
        for (pp, field) in [
            (r#"{"resize_mode": "longest"}"#, "resize_mode"),
            (r#"{"interpolation": "nearest"}"#, "interpolation"),
            (r#"{"mode": "L"}"#, "mode"),
            (r#"{"std": [0, 1, 1]}"#, "std"),
        ] {
            let text = format!(r#"{{"model_cfg": {{}}, "preprocess_cfg": {pp}}}"#);
            let err = PreprocessConfig::from_open_clip_json(&text).unwrap_err();
            assert!(err.contains(field), "{field}: {err}");
        }
        let err = PreprocessConfig::from_open_clip_json(
            r#"{"model_cfg": {"vision_cfg": {"image_size": [224, 160]}}}"#,
        )
        .unwrap_err();
        assert!(err.contains("image_size"), "{err}");
    }
}
