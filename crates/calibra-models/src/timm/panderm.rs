//! PanDerm's released checkpoints (`panderm_ll_data6_checkpoint-499.pth` for PanDerm-Large,
//! `panderm_bb_data6_checkpoint-499.pth` for PanDerm-Base) converted into a timm ViT checkpoint
//! directory whose feature is PanDerm's linear-probing feature.
//!
//! PanDerm (SiyuanYan1/PanDerm at 97e09d0, `classification/models/modeling_finetune.py` and
//! `builder.py`) builds `panderm_large_patch16_224()`: its own CAE/BEiT-style `VisionTransformer`
//! (ViT-L/16, LayerNorm eps 1e-6) with
//! - a fused `qkv` Linear without bias plus separate `q_bias` and `v_bias` (the key bias is zero);
//! - LayerScale `gamma_1`, `gamma_2` on the attention and MLP branches (`init_values` 0.1);
//! - fixed 2-D sin-cos position embeddings with a zero class-token row (a non-trainable
//!   `pos_embed`, overwritten by the checkpoint's when it has one);
//! - for linear probing (`lin_probe=True`, `linear_type='standard'`, the `PanDerm_*_LP` models), the
//!   feature `forward_features(x)`: the final `norm`, then the class token.
//!
//! Every piece is a timm option: the fused bias is `cat(q_bias, 0, v_bias)` (timm's `attn.qkv.bias`),
//! `gamma_k` is timm's LayerScale `ls{k}.gamma` (`init_values` set), and the class-token feature is
//! `global_pool='token'` after `norm`. The checkpoint is read as PanDerm's builder reads
//! PanDerm-Large's (its Base loader renames nothing; a Base checkpoint's names carry no `encoder.`):
//! every `encoder.` in a name removed, then `load_state_dict(strict=False)`, so names PanDerm's ViT does not
//! have (the CAE pre-training's decoder, regressor, teacher, a task head) are ignored by PanDerm
//! too: they are dropped and counted. Every parameter PanDerm's ViT has must be present, except
//! `pos_embed`, which is then computed as PanDerm computes it.
//!
//! The preprocessing recorded is PanDerm's `get_eval_transforms('imagenet')`: `Resize(256)`
//! (torchvision's default, bilinear), `CenterCrop(224)`, and PanDerm's ImageNet constants, whose
//! standard deviation is `(0.228, 0.224, 0.225)` (not timm's 0.229 for red).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pytorch_reader::Tensor;
use safetensors::Dtype;
use serde_json::json;

use super::vit_checkpoint::{
    BLOCK_PARAMS, ViTPreprocess, VitShape, head_count, read_vit_shape, timm_vit_config,
};
use super::write_dir::publish_timm_dir;
use crate::clip::open_clip::convert::Owned;
use crate::error::ModelError;
use crate::hf::staged_dir::refuse_existing;
use crate::hf::torch_state_dict::{SourceCheckpoint, TorchStateDict, float_tensor, invalid, name_sample};

const WHAT: &str = "a PanDerm (CAE ViT) state dict";

/// PanDerm's normalisation (`get_norm_constants('imagenet')` in `builder.py`).
pub const PANDERM_MEAN: [f64; 3] = [0.485, 0.456, 0.406];
/// See [`PANDERM_MEAN`]; the red deviation is PanDerm's 0.228.
pub const PANDERM_STD: [f64; 3] = [0.228, 0.224, 0.225];

/// What one PanDerm block has besides timm's [`BLOCK_PARAMS`], after `blocks.{i}.`: its q and v
/// biases (fused into timm's `attn.qkv.bias`) and LayerScale.
const PANDERM_BLOCK_PARAMS: [&str; 4] = ["attn.q_bias", "attn.v_bias", "gamma_1", "gamma_2"];

/// What a conversion read and wrote.
#[derive(Debug, Clone)]
pub struct ConvertedPanderm {
    pub out: PathBuf,
    /// Where the weights came from.
    pub source: SourceCheckpoint,
    /// The architecture read off the shapes (the grid of 224 px when `pos_embed` was computed).
    pub shape: VitShape,
    pub num_heads: usize,
    /// Whether `pos_embed` was computed (absent from the checkpoint).
    pub pos_embed_computed: bool,
    /// Names PanDerm's ViT does not have, dropped (PanDerm's strict=False load ignores them).
    pub ignored: usize,
    /// The first of them, sorted, to show ([`name_sample`]).
    pub ignored_sample: String,
    pub parameters: u64,
}

/// PanDerm's `build_2d_sincos_position_embedding` for a `grid × grid` patch grid: a zero class-token
/// row, then for patch `k` (row-major) `[sin(r·ω), cos(r·ω), sin(c·ω), cos(c·ω)]` with `r = k / grid`,
/// `c = k % grid` (its `meshgrid` names them w and h) and `ω_j = 10000^(−j / (width/4))`. Computed
/// in f32 as PyTorch does.
pub fn sincos_position_embedding(width: usize, grid: usize) -> Vec<f32> {
    let pos_dim = width / 4;
    let omega: Vec<f32> = (0..pos_dim).map(|j| 1.0 / 10000f32.powf(j as f32 / pos_dim as f32)).collect();
    let mut out = vec![0.0f32; width];
    for k in 0..grid * grid {
        let (r, c) = ((k / grid) as f32, (k % grid) as f32);
        out.extend(omega.iter().map(|w| (r * w).sin()));
        out.extend(omega.iter().map(|w| (r * w).cos()));
        out.extend(omega.iter().map(|w| (c * w).sin()));
        out.extend(omega.iter().map(|w| (c * w).cos()));
    }
    out
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Converts the PanDerm checkpoint `source` into a timm checkpoint directory `out` (which must not
/// exist). `key`: the entry holding the weights (default: the top level, else `model`, else
/// `state_dict`); `num_heads`: default width / 64 (16 for PanDerm-Large, 12 for PanDerm-Base).
pub fn convert_panderm(
    source: &Path,
    out: &Path,
    key: Option<&str>,
    num_heads: Option<usize>,
) -> Result<ConvertedPanderm, ModelError> {
    refuse_existing(out)?;
    let top = |names: &[String]| names.iter().any(|n| n.replace("encoder.", "") == "patch_embed.proj.weight");
    let state = TorchStateDict::open(source, key, &["model", "state_dict"], top, WHAT)?;
    // PanDerm's builder: `{k.replace("encoder.", ""): v}`; a later name wins a collision, as in the
    // dict comprehension (in file order, which the reader does not keep: a collision is refused).
    let mut renamed: BTreeMap<String, &str> = BTreeMap::new();
    for (name, _) in state.iter() {
        if let Some(previous) = renamed.insert(name.replace("encoder.", ""), name) {
            return Err(invalid(
                source,
                format!(
                    "'{previous}' and '{name}' both become '{}' once 'encoder.' is removed",
                    name.replace("encoder.", "")
                ),
            ));
        }
    }
    let get = |n: &str| -> Option<&Tensor> { renamed.get(n).and_then(|orig| state.get(orig)) };
    let names: Vec<String> = renamed.keys().cloned().collect();
    let pos_embed_computed = get("pos_embed").is_none();
    // Without pos_embed, the grid is that of PanDerm's image size, 224 (set below, once the patch
    // size is known).
    let mut shape = read_vit_shape(&get, &names, source, WHAT, pos_embed_computed.then_some(0))?;
    if pos_embed_computed {
        shape.grid = 224 / shape.patch;
        if !shape.embed_dim.is_multiple_of(4) || shape.grid == 0 {
            return Err(invalid(
                source,
                format!(
                    "no 'pos_embed', and PanDerm's sin-cos embedding needs a width divisible by 4 and a patch \
                     of at most 224 (width {}, patch {})",
                    shape.embed_dim, shape.patch
                ),
            ));
        }
    }
    let heads = head_count(shape.embed_dim, num_heads, source)?;

    // (timm name, PanDerm name) of every tensor copied as it is.
    let mut copies: Vec<(String, String)> =
        ["cls_token", "patch_embed.proj.weight", "patch_embed.proj.bias", "norm.weight", "norm.bias"]
            .iter()
            .map(|n| (n.to_string(), n.to_string()))
            .collect();
    if !pos_embed_computed {
        copies.push(("pos_embed".into(), "pos_embed".into()));
    }
    for i in 0..shape.depth {
        for p in BLOCK_PARAMS.into_iter().chain(PANDERM_BLOCK_PARAMS) {
            let timm = match p {
                "attn.q_bias" | "attn.v_bias" => continue,
                "gamma_1" => "ls1.gamma",
                "gamma_2" => "ls2.gamma",
                other => other,
            };
            copies.push((format!("blocks.{i}.{timm}"), format!("blocks.{i}.{p}")));
        }
    }
    let owned = |name: &str| -> Result<Owned, ModelError> {
        let t = get(name).ok_or_else(|| {
            invalid(
                source,
                format!("missing '{name}': PanDerm's ViT has it, and this command does not guess it"),
            )
        })?;
        float_tensor(t, name, source)
    };
    let mut tensors: Vec<(String, Owned)> = Vec::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    for (timm, panderm) in &copies {
        tensors.push((timm.clone(), owned(panderm)?));
        used.insert(panderm.clone());
    }
    if pos_embed_computed {
        let values = sincos_position_embedding(shape.embed_dim, shape.grid);
        let tokens = shape.grid * shape.grid + 1;
        tensors.push((
            "pos_embed".into(),
            Owned { dtype: Dtype::F32, shape: vec![1, tokens, shape.embed_dim], data: f32_bytes(&values) },
        ));
    }
    for i in 0..shape.depth {
        // timm's fused bias: q_bias, a zero key bias, v_bias (PanDerm's `torch.cat` in Attention).
        let (qn, vn) = (format!("blocks.{i}.attn.q_bias"), format!("blocks.{i}.attn.v_bias"));
        let (q, v) = (owned(&qn)?, owned(&vn)?);
        if q.dtype != v.dtype || q.shape != v.shape || q.shape.len() != 1 {
            return Err(invalid(source, format!("'{qn}' and '{vn}' must be vectors of one type and length")));
        }
        let mut data = q.data.clone();
        data.extend(std::iter::repeat_n(0u8, q.data.len()));
        data.extend_from_slice(&v.data);
        tensors.push((
            format!("blocks.{i}.attn.qkv.bias"),
            Owned { dtype: q.dtype, shape: vec![3 * q.shape[0]], data },
        ));
        used.extend([qn, vn]);
    }
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    let parameters: u64 = tensors.iter().map(|(_, t)| t.shape.iter().product::<usize>() as u64).sum();
    let mut ignored: Vec<String> = names.iter().filter(|n| !used.contains(*n)).cloned().collect();

    let preprocess = ViTPreprocess {
        interpolation: "bilinear",
        crop_pct: 224.0 / 256.0,
        mean: PANDERM_MEAN,
        std: PANDERM_STD,
    };
    let config = timm_vit_config(&shape, heads, "token", json!({ "init_values": 0.1 }), &preprocess, source)?;
    let from = state.source()?;
    publish_timm_dir(out, &config, &tensors, source, "a timm ViT")?;
    Ok(ConvertedPanderm {
        out: out.into(),
        source: from,
        shape,
        num_heads: heads,
        pos_embed_computed,
        ignored: ignored.len(),
        ignored_sample: name_sample(&mut ignored),
        parameters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sincos_embedding_has_a_zero_class_row_and_panderms_layout() {
        let (width, grid) = (8, 3);
        let e = sincos_position_embedding(width, grid);
        assert_eq!(e.len(), (grid * grid + 1) * width);
        assert!(e[..width].iter().all(|v| *v == 0.0));
        // Patch k = 5: row 1, column 2; ω = [1, 10000^-0.5] for width / 4 = 2.
        let row = &e[(1 + 5) * width..(2 + 5) * width];
        let w1 = 1.0 / 10000f32.powf(0.5);
        let want = [
            1f32.sin(),
            w1.sin(),
            1f32.cos(),
            w1.cos(),
            2f32.sin(),
            (2.0 * w1).sin(),
            2f32.cos(),
            (2.0 * w1).cos(),
        ];
        for (a, b) in row.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{row:?}");
        }
    }
}
