//! Native OpenCLIP checkpoints (open_clip_torch 3.3.0 hub layout: `open_clip_config.json` +
//! `open_clip_model.safetensors`) with the native ViT vision tower and native text transformer,
//! loaded into calibra's Hugging Face-numerics [`ClipModel`] / [`ClipVisionTransformer`]:
//! [`config`] maps the options (refusing what calibra does not implement), [`convert`] renames and
//! re-lays the tensors (fused `in_proj` split into q/k/v, `proj` matrices transposed).
//!
//! A directory is an OpenCLIP checkpoint when it holds `open_clip_config.json` and no `config.json`
//! (repos that ship both layouts, e.g. `laion/CLIP-ViT-B-32-laion2B-s34B-b79K`, load through the
//! Hugging Face files). Such checkpoints usually ship no tokenizer files: their text is tokenised by
//! [`crate::tokenizer::ClipTokenizer::open_clip`] (open_clip's `SimpleTokenizer`).
//!
//! An OpenAI CLIP `.pt` state dict (CheXzero's release format) has no configuration; [`openai_pt`]
//! infers one from the tensor shapes, as open_clip does, and writes it out as such a directory.
//!
//! A checkpoint with a timm trunk and a Hugging Face BERT text tower (BiomedCLIP-style:
//! `timm_model_name` + `hf_model_name`) is not a CLIP ViT-CLIP: [`timm_bert_config`] reads its options
//! and [`timm_bert`] loads it as [`OpenClipTimmBert`] (timm ViT trunk, transformers `BertModel`, BERT
//! WordPiece tokenizer).

pub mod config;
pub mod convert;
pub mod openai_pt;
pub mod timm_bert;
pub mod timm_bert_config;

use std::path::Path;

use burn::prelude::*;

pub use config::{OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHTS, OpenClipConfig, is_open_clip_json};
pub use convert::open_clip_to_hf;
pub use openai_pt::{ConvertedOpenAiClip, Preprocess, convert_openai_clip};
pub use timm_bert::{OpenClipTimmBert, TimmBertSources};
pub use timm_bert_config::{TimmBertConfig, is_timm_bert_json};

use super::keys::{clip_model_keymap, clip_vision_keymap};
use super::model::read_scalar_bytes;
use super::{ClipModel, ClipVisionTransformer};
use crate::error::ModelError;
use crate::hf::load::{check_fits_file, load_safetensors_bytes};
use crate::hf::{HfConfig, LoadOptions, read_config};

/// Whether `dir` is an OpenCLIP checkpoint: `open_clip_config.json` present, `config.json` absent.
pub fn is_open_clip_dir(dir: &Path) -> bool {
    dir.join(OPEN_CLIP_CONFIG).is_file() && !dir.join("config.json").is_file()
}

/// Whether `dir` is an OpenCLIP checkpoint with a timm trunk and a Hugging Face text tower
/// (BiomedCLIP-style; loads as [`OpenClipTimmBert`], not as a [`ClipModel`]).
pub fn is_timm_bert_dir(dir: &Path) -> bool {
    is_open_clip_dir(dir)
        && read_config(&dir.join(OPEN_CLIP_CONFIG)).is_ok_and(|c| is_timm_bert_json(&c.json))
}

/// Whether a loaded encoder configuration came from an `open_clip_config.json`.
pub fn is_open_clip_config(cfg: &HfConfig) -> bool {
    cfg.path.file_name().is_some_and(|n| n == OPEN_CLIP_CONFIG) && is_open_clip_json(&cfg.json)
}

/// Reads `dir/open_clip_config.json`, resolves it and rewrites `dir/open_clip_model.safetensors` into
/// Hugging Face names (in memory).
fn read(dir: &Path) -> Result<(HfConfig, OpenClipConfig, Vec<u8>, std::path::PathBuf), ModelError> {
    let file = read_config(&dir.join(OPEN_CLIP_CONFIG))?;
    let config = OpenClipConfig::from_json(&file)?;
    let weights = dir.join(OPEN_CLIP_WEIGHTS);
    let c = &config.clip;
    let projections = c.projection_dim as u128 * (c.vision.d_model + c.text.d_model) as u128;
    check_fits_file(&file, &weights, c.vision.min_weights() + c.text.min_weights() + projections)?;
    let bytes = std::fs::read(&weights).map_err(|source| ModelError::Io { path: weights.clone(), source })?;
    let hf = open_clip_to_hf(&bytes, &weights, &config)?;
    Ok((file, config, hf, weights))
}

/// Loads the whole model (both towers, projections, `logit_scale`) of the OpenCLIP checkpoint in `dir`.
pub fn load_open_clip(dir: &Path, device: &Device) -> Result<(ClipModel, OpenClipConfig), ModelError> {
    let (_, config, bytes, weights) = read(dir)?;
    let mut model = config.clip.init(device);
    let logit_scale = read_scalar_bytes(&bytes, &weights, "logit_scale")?;
    load_safetensors_bytes(&mut model, bytes, &weights, &clip_model_keymap()?, &LoadOptions::default())?;
    model.logit_scale = logit_scale;
    Ok((model, config))
}

/// Loads the vision tower alone (the frozen image encoder); also returns the parsed
/// `open_clip_config.json`, which identifies the encoder as OpenCLIP downstream.
pub fn load_open_clip_vision(
    dir: &Path,
    device: &Device,
) -> Result<(ClipVisionTransformer, OpenClipConfig, HfConfig), ModelError> {
    let (file, config, bytes, weights) = read(dir)?;
    let mut tower = config.clip.vision.init(device);
    load_safetensors_bytes(&mut tower, bytes, &weights, &clip_vision_keymap()?, &LoadOptions::default())?;
    Ok((tower, config, file))
}
