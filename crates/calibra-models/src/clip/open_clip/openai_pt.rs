//! OpenAI CLIP state dicts (`.pt`/`.pth`) converted into native OpenCLIP checkpoint directories.
//!
//! CheXzero and other fine-tuned OpenAI CLIPs are released as `torch.save(model.state_dict())` of
//! OpenAI's `clip.model.CLIP`: a pickle, no configuration. open_clip loads them with
//! `load_openai_model`, which reads the architecture off the tensor shapes
//! (`build_model_from_openai_state_dict`); [`infer_model_cfg`] follows that function rule for rule:
//!
//! | option | from |
//! |---|---|
//! | `vision_cfg.width` / `patch_size` | `visual.conv1.weight` `[width, 3, patch, patch]` |
//! | `vision_cfg.layers` | the number of `visual.….attn.in_proj_weight` entries |
//! | `vision_cfg.image_size` | `patch · round(√(positions − 1))`, positions = `visual.positional_embedding` rows |
//! | `embed_dim` | `text_projection` `[width, embed]` |
//! | `text_cfg.context_length`, `vocab_size`, `width` | `positional_embedding`, `token_embedding.weight`, `ln_final.weight` |
//! | `text_cfg.heads` | `width / 64` (vision: open_clip's default head width 64) |
//! | `text_cfg.layers` | the distinct `transformer.resblocks.{i}` |
//! | `quick_gelu` | always true (OpenAI trained with QuickGELU) |
//!
//! OpenAI's parameter names are OpenCLIP's native names, so the tensors are written unchanged (each
//! in its stored float type: OpenAI's partial float16 cast stays as it is) to
//! `open_clip_model.safetensors`, next to an `open_clip_config.json` holding the inferred `model_cfg`
//! and a `preprocess_cfg`. The directory is written under a temporary name, loaded back as a
//! [`crate::clip::ClipModel`] (every tensor used, every shape right), and only then renamed into
//! place, so a failed or interrupted conversion leaves no half-written checkpoint.
//!
//! Like open_clip's loader, a checkpoint nested as `{"state_dict": {"module.…": …}}` (a DDP training
//! script's save) is unwrapped, and the integer entries of OpenAI's JIT state dicts
//! (`input_resolution`, `context_length`, `vocab_size`) are checked against the shapes and dropped.
//! Refused, by name: TorchScript archives (OpenAI's own released `.pt` files: re-save their
//! `state_dict()`), CLIPs with a ModifiedResNet image tower (`RN50`, …), and any other tensor that is
//! not a float.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use burn::tensor::Device;
use pytorch_reader::DType;
use serde_json::{Value, json};

use super::config::{OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHTS};
use super::convert::{Owned, pt_format, serialize_tensors};
use crate::error::ModelError;
use crate::hf::staged_dir::{publish_directory, refuse_existing};
use crate::hf::torch_state_dict::{
    Shapes, SourceCheckpoint, TorchStateDict, invalid, is_float, owned_tensor,
};

/// OpenAI CLIP's image normalisation (`OPENAI_DATASET_MEAN` / `_STD` in open_clip).
pub const OPENAI_MEAN: [f64; 3] = [0.48145466, 0.4578275, 0.40821073];
/// See [`OPENAI_MEAN`].
pub const OPENAI_STD: [f64; 3] = [0.26862954, 0.26130258, 0.27577711];

/// CheXzero's normalisation, `Normalize((101.48761,)*3, (83.43944,)*3)` on 0–255 pixel values
/// (rajpurkarlab/CheXzero `zero_shot.py`), in the 0–1 units of a `preprocess_cfg`.
pub const CHEXZERO_MEAN: [f64; 3] = [101.48761 / 255.0; 3];
/// See [`CHEXZERO_MEAN`].
pub const CHEXZERO_STD: [f64; 3] = [83.43944 / 255.0; 3];

/// The integer entries an OpenAI JIT model's `state_dict()` carries besides the weights.
const INTEGER_ENTRIES: [&str; 3] = ["input_resolution", "context_length", "vocab_size"];

/// The eval-time image transform written as `preprocess_cfg` (open_clip's `PreprocessCfg` names).
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocess {
    pub mean: [f64; 3],
    pub std: [f64; 3],
    /// `bicubic` (OpenAI's) or `bilinear`.
    pub interpolation: String,
    /// `shortest` (resize the shorter side, centre crop: OpenAI's) or `squash`.
    pub resize_mode: String,
}

impl Preprocess {
    /// OpenAI CLIP's eval transform: bicubic resize of the shorter side, centre crop, OpenAI's mean/std.
    pub fn openai() -> Self {
        Preprocess {
            mean: OPENAI_MEAN,
            std: OPENAI_STD,
            interpolation: "bicubic".into(),
            resize_mode: "shortest".into(),
        }
    }

    /// CheXzero's: its normalisation, then a bicubic resize to 224 (its images are square, so the
    /// shorter-side resize and centre crop are the whole image). CheXzero normalises before resizing;
    /// both are linear, so the order changes only rounding.
    pub fn chexzero() -> Self {
        Preprocess { mean: CHEXZERO_MEAN, std: CHEXZERO_STD, ..Preprocess::openai() }
    }

    fn to_json(&self) -> Value {
        json!({
            "mean": self.mean,
            "std": self.std,
            "interpolation": self.interpolation,
            "resize_mode": self.resize_mode,
        })
    }
}

/// What a conversion read and wrote.
#[derive(Debug, Clone)]
pub struct ConvertedOpenAiClip {
    /// The checkpoint directory written.
    pub out: PathBuf,
    /// The inferred `model_cfg`.
    pub model_cfg: Value,
    /// Where the weights came from (`state_dict` entry and `module.` prefix for a DDP training save).
    pub source: SourceCheckpoint,
    /// Weight tensors written, by stored float type (`F16`: …).
    pub dtypes: BTreeMap<String, usize>,
    /// Parameters in all.
    pub parameters: u64,
    /// Integer entries checked and dropped.
    pub dropped: Vec<String>,
}

impl ConvertedOpenAiClip {
    /// One line naming the architecture, e.g. `vision 224 px, patch 32, width 768, depth 12; text …`.
    pub fn architecture(&self) -> String {
        let c = &self.model_cfg;
        let (v, t) = (&c["vision_cfg"], &c["text_cfg"]);
        format!(
            "vision {} px, patch {}, width {}, depth {}; text width {}, depth {}, heads {}, context {}, \
             vocabulary {}; embedding {}",
            v["image_size"],
            v["patch_size"],
            v["width"],
            v["layers"],
            t["width"],
            t["layers"],
            t["heads"],
            t["context_length"],
            t["vocab_size"],
            c["embed_dim"]
        )
    }
}

fn dim(shapes: &Shapes, path: &Path, name: &str, axis: usize, rank: usize) -> Result<usize, ModelError> {
    let (_, shape) = shapes.get(name).ok_or_else(|| {
        invalid(
            path,
            format!("missing '{name}': not an OpenAI CLIP state dict (or nested under a key: pass it)"),
        )
    })?;
    if shape.len() != rank {
        return Err(invalid(path, format!("'{name}' has shape {shape:?}, expected {rank} axes")));
    }
    Ok(shape[axis])
}

/// The `model_cfg` open_clip's `build_model_from_openai_state_dict` would build for these shapes.
pub fn infer_model_cfg(shapes: &Shapes, path: &Path) -> Result<Value, ModelError> {
    if !shapes.contains_key("visual.proj") {
        if shapes.keys().any(|k| k.starts_with("visual.layer1.") || k.starts_with("visual.attnpool.")) {
            return Err(ModelError::UnsupportedConfig {
                path: path.into(),
                message:
                    "an OpenAI CLIP with a ModifiedResNet image tower (RN50, RN101, RN50x4, …): calibra \
                          implements CLIP's ViT image towers only"
                        .into(),
            });
        }
        return Err(invalid(
            path,
            "no 'visual.proj': not an OpenAI CLIP ViT state dict (or nested under a key: pass it)",
        ));
    }
    let vision_width = dim(shapes, path, "visual.conv1.weight", 0, 4)?;
    let patch = dim(shapes, path, "visual.conv1.weight", 3, 4)?;
    let vision_layers =
        shapes.keys().filter(|k| k.starts_with("visual.") && k.ends_with(".attn.in_proj_weight")).count();
    let positions = dim(shapes, path, "visual.positional_embedding", 0, 2)?;
    let grid = ((positions.saturating_sub(1)) as f64).sqrt().round() as usize;
    if grid == 0 || grid * grid + 1 != positions {
        return Err(invalid(
            path,
            format!(
                "'visual.positional_embedding' has {positions} rows: expected a square grid of patches plus one"
            ),
        ));
    }
    let embed_dim = dim(shapes, path, "text_projection", 1, 2)?;
    let context_length = dim(shapes, path, "positional_embedding", 0, 2)?;
    let vocab_size = dim(shapes, path, "token_embedding.weight", 0, 2)?;
    let text_width = dim(shapes, path, "ln_final.weight", 0, 1)?;
    let text_layers: BTreeSet<&str> = shapes
        .keys()
        .filter_map(|k| k.strip_prefix("transformer.resblocks."))
        .filter_map(|rest| rest.split('.').next())
        .collect();
    for (tower, width, layers) in
        [("vision", vision_width, vision_layers), ("text", text_width, text_layers.len())]
    {
        if width < 64 {
            return Err(invalid(
                path,
                format!("the {tower} width is {width}: OpenAI CLIP has width / 64 heads, so at least 64"),
            ));
        }
        if layers == 0 {
            return Err(invalid(path, format!("no {tower} transformer blocks found")));
        }
    }
    Ok(json!({
        "embed_dim": embed_dim,
        "quick_gelu": true,
        "vision_cfg": {"image_size": patch * grid, "layers": vision_layers, "width": vision_width, "patch_size": patch},
        "text_cfg": {
            "context_length": context_length,
            "vocab_size": vocab_size,
            "width": text_width,
            "heads": text_width / 64,
            "layers": text_layers.len(),
        },
    }))
}

/// The value an integer entry must have, from the inferred configuration.
fn expected_integer(entry: &str, cfg: &Value) -> Option<u64> {
    match entry {
        "input_resolution" => cfg["vision_cfg"]["image_size"].as_u64(),
        "context_length" => cfg["text_cfg"]["context_length"].as_u64(),
        "vocab_size" => cfg["text_cfg"]["vocab_size"].as_u64(),
        _ => None,
    }
}

fn read_integer(bytes: &[u8], dtype: DType) -> Option<i64> {
    Some(match (dtype, bytes.len()) {
        (DType::I64, 8) => i64::from_ne_bytes(bytes.try_into().ok()?),
        (DType::I32, 4) => i32::from_ne_bytes(bytes.try_into().ok()?) as i64,
        (DType::I16, 2) => i16::from_ne_bytes(bytes.try_into().ok()?) as i64,
        (DType::U8, 1) => bytes[0] as i64,
        (DType::I8, 1) => bytes[0] as i8 as i64,
        _ => return None,
    })
}

/// Converts the OpenAI CLIP state dict `source` into an OpenCLIP checkpoint directory `out` (which
/// must not exist), with `preprocess` as its `preprocess_cfg`. `key`: the entry holding the state
/// dict, for a checkpoint that nests it under another name than `state_dict`.
pub fn convert_openai_clip(
    source: &Path,
    out: &Path,
    key: Option<&str>,
    preprocess: &Preprocess,
) -> Result<ConvertedOpenAiClip, ModelError> {
    refuse_existing(out)?;
    let state = TorchStateDict::open(
        source,
        key,
        &["state_dict"],
        |names| names.iter().any(|n| n == "visual.conv1.weight"),
        "an OpenAI CLIP state dict",
    )?;
    let shapes = state.shapes();
    let model_cfg = infer_model_cfg(&shapes, source)?;

    let mut tensors: Vec<(String, Owned)> = Vec::new();
    let mut dropped = Vec::new();
    let mut dtypes = BTreeMap::new();
    let mut parameters = 0u64;
    for (name, tensor) in state.iter() {
        let original = format!("{}{name}", state.strip);
        if is_float(tensor.dtype()) {
            let weight = owned_tensor(tensor, &original, source)?;
            *dtypes.entry(format!("{:?}", weight.dtype)).or_insert(0) += 1;
            parameters += tensor.num_elements() as u64;
            tensors.push((name.to_string(), weight));
            continue;
        }
        let bytes = tensor.read().map_err(|e| invalid(source, format!("reading '{original}': {e}")))?;
        let Some(expected) = expected_integer(name, &model_cfg) else {
            return Err(invalid(
                source,
                format!(
                    "'{original}' is a {:?} tensor: an OpenAI CLIP state dict holds float weights (and the integer \
                     entries {})",
                    tensor.dtype(),
                    INTEGER_ENTRIES.join(", ")
                ),
            ));
        };
        match read_integer(&bytes, tensor.dtype()) {
            Some(v) if v >= 0 && v as u64 == expected => dropped.push(name.to_string()),
            other => {
                return Err(invalid(
                    source,
                    format!("'{original}' is {other:?}, but the weights' shapes give {expected}"),
                ));
            }
        }
    }
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    dropped.sort();

    let config = json!({ "model_cfg": model_cfg, "preprocess_cfg": preprocess.to_json() });
    let from = state.source()?;
    write_directory(out, &config, &tensors, source)?;
    Ok(ConvertedOpenAiClip { out: out.into(), model_cfg, source: from, dtypes, parameters, dropped })
}

/// Writes the two files under a temporary sibling of `out`, loads them back, then renames.
fn write_directory(
    out: &Path,
    config: &Value,
    tensors: &[(String, Owned)],
    source: &Path,
) -> Result<(), ModelError> {
    let bytes = serialize_tensors(tensors, pt_format(), &out.join(OPEN_CLIP_WEIGHTS))?;
    let text = serde_json::to_string_pretty(config).map_err(|e| ModelError::Input(e.to_string()))? + "\n";
    let files: [(&str, &[u8]); 2] = [(OPEN_CLIP_WEIGHTS, &bytes), (OPEN_CLIP_CONFIG, text.as_bytes())];
    // Every tensor used and every shape right, or no checkpoint.
    publish_directory(out, &files, |staged| {
        super::load_open_clip(staged, &Device::flex()).map(|_| ()).map_err(|e| {
            invalid(source, format!("the converted checkpoint does not load as an OpenCLIP CLIP: {e}"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes of OpenAI's ViT-B/32 (CheXzero's architecture).
    fn vit_b32() -> Shapes {
        let f = |s: &[usize]| (DType::F16, s.to_vec());
        let mut m = Shapes::new();
        m.insert("visual.conv1.weight".into(), f(&[768, 3, 32, 32]));
        m.insert("visual.positional_embedding".into(), f(&[50, 768]));
        m.insert("visual.proj".into(), f(&[768, 512]));
        m.insert("text_projection".into(), f(&[512, 512]));
        m.insert("positional_embedding".into(), f(&[77, 512]));
        m.insert("token_embedding.weight".into(), f(&[49408, 512]));
        m.insert("ln_final.weight".into(), f(&[512]));
        for i in 0..12 {
            m.insert(format!("visual.transformer.resblocks.{i}.attn.in_proj_weight"), f(&[2304, 768]));
            m.insert(format!("transformer.resblocks.{i}.attn.in_proj_weight"), f(&[1536, 512]));
            m.insert(format!("transformer.resblocks.{i}.ln_1.weight"), f(&[512]));
        }
        m
    }

    #[test]
    fn vit_b32_shapes_give_open_clips_vit_b32_config() {
        let cfg = infer_model_cfg(&vit_b32(), Path::new("x.pt")).unwrap();
        // open_clip's model_configs/ViT-B-32-quickgelu.json, with head width 64 implied.
        assert_eq!(
            cfg,
            json!({
                "embed_dim": 512, "quick_gelu": true,
                "vision_cfg": {"image_size": 224, "layers": 12, "width": 768, "patch_size": 32},
                "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 512, "heads": 8, "layers": 12},
            })
        );
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let path = Path::new("ck.pt");
        let mut rn = vit_b32();
        rn.remove("visual.proj");
        rn.insert("visual.layer1.0.conv1.weight".into(), (DType::F16, vec![64, 64, 1, 1]));
        let e = infer_model_cfg(&rn, path).unwrap_err().to_string();
        assert!(e.contains("ModifiedResNet") && e.contains("ck.pt"), "{e}");

        let mut odd = vit_b32();
        odd.insert("visual.positional_embedding".into(), (DType::F32, vec![51, 768]));
        let e = infer_model_cfg(&odd, path).unwrap_err().to_string();
        assert!(e.contains("51 rows"), "{e}");

        let mut narrow = vit_b32();
        narrow.insert("ln_final.weight".into(), (DType::F32, vec![32]));
        let e = infer_model_cfg(&narrow, path).unwrap_err().to_string();
        assert!(e.contains("text width is 32"), "{e}");

        let mut missing = vit_b32();
        missing.remove("token_embedding.weight");
        let e = infer_model_cfg(&missing, path).unwrap_err().to_string();
        assert!(e.contains("missing 'token_embedding.weight'"), "{e}");

        let e = infer_model_cfg(&Shapes::new(), path).unwrap_err().to_string();
        assert!(e.contains("no 'visual.proj'"), "{e}");
    }

    #[test]
    fn integer_entries_are_read_in_every_width() {
        assert_eq!(read_integer(&224i64.to_ne_bytes(), DType::I64), Some(224));
        assert_eq!(read_integer(&77i32.to_ne_bytes(), DType::I32), Some(77));
        assert_eq!(read_integer(&[5], DType::U8), Some(5));
        assert_eq!(read_integer(&[0, 0], DType::I64), None);
        let cfg = infer_model_cfg(&vit_b32(), Path::new("x.pt")).unwrap();
        assert_eq!(expected_integer("input_resolution", &cfg), Some(224));
        assert_eq!(expected_integer("context_length", &cfg), Some(77));
        assert_eq!(expected_integer("vocab_size", &cfg), Some(49408));
        assert_eq!(expected_integer("epoch", &cfg), None);
    }

    #[test]
    fn chexzero_normalisation_is_its_0_255_values_scaled() {
        let p = Preprocess::chexzero();
        assert!((p.mean[0] * 255.0 - 101.48761).abs() < 1e-9 && (p.std[2] * 255.0 - 83.43944).abs() < 1e-9);
        assert_eq!(p.interpolation, "bicubic");
    }
}
