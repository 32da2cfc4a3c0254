//! RETFound's released MAE checkpoints (`RETFound_cfp_weights.pth`, `RETFound_mae_natureCFP.pth`, …)
//! converted into a timm ViT checkpoint directory that computes RETFound's own feature.
//!
//! RETFound (rmaphoh/RETFound_MAE, `models_vit.py` and `main_finetune.py` at 897d71c) builds
//! `RETFound_mae`: timm's `VisionTransformer` (ViT-L/16, `qkv_bias`, LayerNorm eps 1e-6) with its own
//! `global_pool` switch, on by default (`--global_pool`; `--cls_token` turns it off):
//! - **global pool (default).** The model deletes timm's final `norm` and adds a new `fc_norm`; the
//!   feature is `fc_norm(mean of the patch tokens)`, the class token left out. The pre-trained
//!   checkpoint is loaded with `strict=False`, so its `norm.*` weights are ignored and `fc_norm` keeps
//!   PyTorch's LayerNorm initialisation (weight 1, bias 0) unless the checkpoint has its own (a
//!   fine-tuned one does).
//! - **class token.** timm's final `norm` on every token, and the class token as the feature.
//!
//! Both are timm options (`global_pool='avg'` with `fc_norm`, or `global_pool='token'`), so the
//! conversion writes a timm `config.json` whose model computes exactly that, and `model.safetensors`
//! with the encoder's weights under timm's names (which are RETFound's). The MAE decoder
//! (`decoder_*`, `mask_token`) and a fine-tuned task `head` are dropped and listed; any other name is
//! refused, never dropped silently.
//!
//! The architecture is read off the shapes: width and patch size from `patch_embed.proj.weight`,
//! depth from the `blocks.{i}`, MLP width from `mlp.fc1`, `qkv_bias` from `attn.qkv.bias`, the
//! input size from `pos_embed` (a class token plus a square grid). The head count is not stored:
//! it defaults to width / 64 (16 for ViT-L, RETFound's) and can be given.
//!
//! The preprocessing recorded is RETFound's evaluation transform (`util/datasets.py`): bicubic
//! resize of the shorter side to `size / crop_pct` (`crop_pct` 224/256 up to 224 px, else 1), centre
//! crop, ImageNet mean/std.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::vit_checkpoint::{
    BLOCK_PARAMS, ViTPreprocess, VitShape, head_count, read_vit_shape, timm_vit_config,
};
use super::write_dir::publish_timm_dir;
use crate::clip::open_clip::convert::Owned;
use crate::error::ModelError;
use crate::hf::staged_dir::refuse_existing;
use crate::hf::torch_state_dict::{SourceCheckpoint, TorchStateDict, float_tensor, invalid, name_sample};

/// timm's `IMAGENET_DEFAULT_MEAN` (RETFound's normalisation).
pub const IMAGENET_MEAN: [f64; 3] = [0.485, 0.456, 0.406];
/// timm's `IMAGENET_DEFAULT_STD`.
pub const IMAGENET_STD: [f64; 3] = [0.229, 0.224, 0.225];

/// RETFound's feature: its `global_pool` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetfoundPool {
    /// `--global_pool` (RETFound's default): `fc_norm` of the mean of the patch tokens.
    Avg,
    /// `--cls_token`: the final `norm`, then the class token.
    Token,
}

/// Where the written `fc_norm` came from (global-pool feature only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FcNormSource {
    /// The checkpoint's own `fc_norm.*` (a fine-tuned checkpoint).
    Checkpoint,
    /// None in the checkpoint: weight 1, bias 0, as RETFound's freshly built LayerNorm.
    FreshInit,
}

/// What a conversion read and wrote.
#[derive(Debug, Clone)]
pub struct ConvertedRetfound {
    pub out: PathBuf,
    /// Where the weights came from (the `model` entry for RETFound's releases).
    pub source: SourceCheckpoint,
    /// The architecture read off the shapes.
    pub shape: VitShape,
    pub num_heads: usize,
    pub qkv_bias: bool,
    pub pool: RetfoundPool,
    /// `Some` for the global-pool feature.
    pub fc_norm: Option<FcNormSource>,
    /// Names dropped, by group (`MAE decoder`: 57, …).
    pub dropped: BTreeMap<&'static str, usize>,
    pub parameters: u64,
}

/// What a name of the checkpoint is.
enum Role {
    Keep,
    Drop(&'static str),
}

fn role(name: &str, pool: RetfoundPool, depth: usize, qkv_bias: bool) -> Option<Role> {
    use Role::*;
    if matches!(name, "cls_token" | "pos_embed" | "patch_embed.proj.weight" | "patch_embed.proj.bias") {
        return Some(Keep);
    }
    if name == "mask_token" || name.starts_with("decoder_") {
        return Some(Drop("MAE decoder"));
    }
    if name.starts_with("head.") && matches!(name, "head.weight" | "head.bias") {
        return Some(Drop("task head"));
    }
    if let Some(rest) = name.strip_prefix("blocks.") {
        let (index, param) = rest.split_once('.')?;
        let i: usize = index.parse().ok()?;
        let known = BLOCK_PARAMS.contains(&param) || (qkv_bias && param == "attn.qkv.bias");
        return (i < depth && known).then_some(Keep);
    }
    match (name, pool) {
        ("norm.weight" | "norm.bias", RetfoundPool::Token) => Some(Keep),
        ("norm.weight" | "norm.bias", RetfoundPool::Avg) => {
            Some(Drop("final norm (unused with global pooling)"))
        }
        ("fc_norm.weight" | "fc_norm.bias", RetfoundPool::Avg) => Some(Keep),
        ("fc_norm.weight" | "fc_norm.bias", RetfoundPool::Token) => {
            Some(Drop("fc_norm (unused with the class token)"))
        }
        _ => None,
    }
}

const WHAT: &str = "a RETFound (MAE ViT) state dict";

/// Converts the RETFound checkpoint `source` into a timm checkpoint directory `out` (which must not
/// exist). `key`: the entry holding the weights (default: the top level, else `model`, else
/// `state_dict`); `num_heads`: default width / 64.
pub fn convert_retfound(
    source: &Path,
    out: &Path,
    key: Option<&str>,
    num_heads: Option<usize>,
    pool: RetfoundPool,
) -> Result<ConvertedRetfound, ModelError> {
    refuse_existing(out)?;
    let state = TorchStateDict::open(
        source,
        key,
        &["model", "state_dict", "teacher"],
        |names| names.iter().any(|n| n == "patch_embed.proj.weight"),
        WHAT,
    )?;
    if state.entry.as_deref() == Some("teacher") {
        return Err(ModelError::UnsupportedConfig {
            path: source.into(),
            message: "a RETFound DINOv2 checkpoint (weights under 'teacher'): RETFound_dinov2 is timm's \
                      vit_large_patch14_dinov2 with its own key renaming, which this command does not \
                      convert; it converts RETFound's MAE checkpoints (weights under 'model')"
                .into(),
        });
    }
    let names: Vec<String> = state.iter().map(|(n, _)| n.to_string()).collect();
    let shape = read_vit_shape(&|n| state.get(n), &names, source, WHAT, None)?;
    let qkv_bias = state.get("blocks.0.attn.qkv.bias").is_some();
    let heads = head_count(shape.embed_dim, num_heads, source)?;

    let mut tensors: Vec<(String, Owned)> = Vec::new();
    let mut dropped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut parameters = 0u64;
    for (name, tensor) in state.iter() {
        match role(name, pool, shape.depth, qkv_bias) {
            Some(Role::Keep) => {
                tensors.push((name.to_string(), float_tensor(tensor, name, source)?));
                parameters += tensor.num_elements() as u64;
            }
            Some(Role::Drop(group)) => *dropped.entry(group).or_insert(0) += 1,
            None => unknown.push(name.to_string()),
        }
    }
    if !unknown.is_empty() {
        return Err(ModelError::UnsupportedConfig {
            path: source.into(),
            message: format!(
                "{} name(s) RETFound's ViT does not have: {}; a checkpoint with other parameters (layer \
                 scale, register tokens, relative positions, …) is not RETFound's architecture and is \
                 not converted approximately",
                unknown.len(),
                name_sample(&mut unknown)
            ),
        });
    }
    let fc_norm = match pool {
        RetfoundPool::Token => {
            if state.get("norm.weight").is_none() {
                return Err(invalid(
                    source,
                    "--pool token needs the final 'norm', which this checkpoint does not have (a global-pool \
                     fine-tune replaces it with 'fc_norm'): use --pool avg",
                ));
            }
            None
        }
        RetfoundPool::Avg if state.get("fc_norm.weight").is_some() => Some(FcNormSource::Checkpoint),
        RetfoundPool::Avg => {
            let f32_bytes = |v: f32| (0..shape.embed_dim).flat_map(|_| v.to_le_bytes()).collect::<Vec<u8>>();
            for (name, value) in [("fc_norm.weight", 1.0f32), ("fc_norm.bias", 0.0)] {
                let t = Owned {
                    dtype: safetensors::Dtype::F32,
                    shape: vec![shape.embed_dim],
                    data: f32_bytes(value),
                };
                tensors.push((name.to_string(), t));
                parameters += shape.embed_dim as u64;
            }
            Some(FcNormSource::FreshInit)
        }
    };
    tensors.sort_by(|a, b| a.0.cmp(&b.0));

    let img_size = shape.img_size();
    let preprocess = ViTPreprocess {
        interpolation: "bicubic",
        crop_pct: if img_size <= 224 { 224.0 / 256.0 } else { 1.0 },
        mean: IMAGENET_MEAN,
        std: IMAGENET_STD,
    };
    let global_pool = match pool {
        RetfoundPool::Avg => "avg",
        RetfoundPool::Token => "token",
    };
    let config =
        timm_vit_config(&shape, heads, global_pool, json!({ "qkv_bias": qkv_bias }), &preprocess, source)?;
    let from = state.source()?;
    publish_timm_dir(out, &config, &tensors, source, "a timm ViT")?;
    Ok(ConvertedRetfound {
        out: out.into(),
        source: from,
        shape,
        num_heads: heads,
        qkv_bias,
        pool,
        fc_norm,
        dropped,
        parameters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_into_kept_dropped_and_unknown() {
        let keep = |n: &str, pool| matches!(role(n, pool, 2, true), Some(Role::Keep));
        let drop = |n: &str, pool| matches!(role(n, pool, 2, true), Some(Role::Drop(_)));
        let avg = RetfoundPool::Avg;
        assert!(keep("blocks.1.attn.qkv.bias", avg) && keep("cls_token", avg) && keep("fc_norm.bias", avg));
        assert!(drop("norm.weight", avg) && keep("norm.weight", RetfoundPool::Token));
        assert!(drop("fc_norm.weight", RetfoundPool::Token));
        assert!(
            drop("decoder_blocks.0.attn.qkv.weight", avg)
                && drop("mask_token", avg)
                && drop("head.bias", avg)
        );
        // Past the depth, an unknown parameter, a bias the first block lacks, layer scale: unknown.
        assert!(role("blocks.2.norm1.weight", avg, 2, true).is_none());
        assert!(role("blocks.0.ls1.gamma", avg, 2, true).is_none());
        assert!(role("blocks.0.attn.qkv.bias", avg, 2, false).is_none());
        assert!(role("reg_token", avg, 2, true).is_none());
        assert!(role("head.fc.weight", avg, 2, true).is_none());
    }
}
