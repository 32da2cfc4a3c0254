//! What the ViT conversions (`calibra convert retfound`, `calibra convert panderm`) share: reading a
//! plain ViT's architecture off a PyTorch state dict's shapes (timm's names), and the timm
//! `config.json` they write for it.

use std::path::Path;

use pytorch_reader::Tensor;
use serde_json::{Value, json};

use crate::error::ModelError;
use crate::hf::torch_state_dict::{invalid, required_shape};

/// The parameters every pre-norm ViT block of timm's naming has, after `blocks.{i}.`, besides its
/// attention input projection (`attn.qkv`, whose bias varies between checkpoints) and any LayerScale.
pub const BLOCK_PARAMS: [&str; 11] = [
    "norm1.weight",
    "norm1.bias",
    "attn.qkv.weight",
    "attn.proj.weight",
    "attn.proj.bias",
    "norm2.weight",
    "norm2.bias",
    "mlp.fc1.weight",
    "mlp.fc1.bias",
    "mlp.fc2.weight",
    "mlp.fc2.bias",
];

/// A plain ViT's architecture, read off its shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VitShape {
    pub embed_dim: usize,
    pub patch: usize,
    pub depth: usize,
    pub mlp_hidden: usize,
    /// Patches per side (`pos_embed` holds a class token and `grid²` patches).
    pub grid: usize,
}

impl VitShape {
    /// The input size in pixels.
    pub fn img_size(&self) -> usize {
        self.grid * self.patch
    }
}

fn required<'a>(
    get: &dyn Fn(&str) -> Option<&'a Tensor>,
    path: &Path,
    name: &str,
    rank: usize,
    what: &str,
) -> Result<Vec<usize>, ModelError> {
    required_shape(get(name), path, name, rank, what)
}

/// Reads the architecture from `patch_embed.proj.weight`, `cls_token`, `blocks.{i}.mlp.fc1.weight`
/// and, when present, `pos_embed` (else `grid` must be given: the caller computes the embedding).
/// `get` looks a tensor up by its timm name; `names` are all the (timm) names.
pub fn read_vit_shape<'a>(
    get: &dyn Fn(&str) -> Option<&'a Tensor>,
    names: &[String],
    path: &Path,
    what: &str,
    grid_without_pos_embed: Option<usize>,
) -> Result<VitShape, ModelError> {
    let patch_w = required(get, path, "patch_embed.proj.weight", 4, what)?;
    let (embed_dim, patch) = (patch_w[0], patch_w[3]);
    if patch_w[1] != 3 || patch_w[2] != patch || patch == 0 || embed_dim == 0 {
        return Err(invalid(
            path,
            format!("'patch_embed.proj.weight' has shape {patch_w:?}: expected [width, 3, patch, patch]"),
        ));
    }
    let cls = required(get, path, "cls_token", 3, what)?;
    if cls != [1, 1, embed_dim] {
        return Err(invalid(path, format!("'cls_token' has shape {cls:?}, expected [1, 1, {embed_dim}]")));
    }
    let grid = match (get("pos_embed"), grid_without_pos_embed) {
        (None, Some(grid)) => grid,
        _ => {
            let pos = required(get, path, "pos_embed", 3, what)?;
            let tokens = pos[1];
            let grid = ((tokens.saturating_sub(1)) as f64).sqrt().round() as usize;
            if pos[0] != 1 || pos[2] != embed_dim || grid == 0 || grid * grid + 1 != tokens {
                return Err(invalid(
                    path,
                    format!(
                        "'pos_embed' has shape {pos:?}: expected [1, 1 + n·n, {embed_dim}] (a class token and \
                         a square grid of patches)"
                    ),
                ));
            }
            grid
        }
    };
    let mut depth = 0;
    while names.iter().any(|n| n.starts_with(&format!("blocks.{depth}."))) {
        depth += 1;
    }
    if depth == 0 {
        return Err(invalid(path, format!("no 'blocks.0.*' weights: not {what}")));
    }
    let fc1 = required(get, path, "blocks.0.mlp.fc1.weight", 2, what)?;
    Ok(VitShape { embed_dim, patch, depth, mlp_hidden: fc1[0], grid })
}

/// The head count: `num_heads`, or width / 64 (ViT-B's 12, ViT-L's 16), checked to divide the width.
pub fn head_count(embed_dim: usize, num_heads: Option<usize>, path: &Path) -> Result<usize, ModelError> {
    let heads = match num_heads {
        Some(h) => h,
        None if embed_dim >= 64 && embed_dim.is_multiple_of(64) => embed_dim / 64,
        None => {
            return Err(invalid(
                path,
                format!(
                    "the width {embed_dim} is not a multiple of 64, so the head count cannot be defaulted to \
                     width / 64: pass --num-heads"
                ),
            ));
        }
    };
    if heads == 0 || !embed_dim.is_multiple_of(heads) {
        return Err(ModelError::Input(format!(
            "--num-heads {heads}: must divide the width {embed_dim} of {}",
            path.display()
        )));
    }
    Ok(heads)
}

/// The eval-time preprocessing written as `pretrained_cfg`.
#[derive(Debug, Clone, PartialEq)]
pub struct ViTPreprocess {
    pub interpolation: &'static str,
    pub crop_pct: f64,
    pub mean: [f64; 3],
    pub std: [f64; 3],
}

/// A timm `config.json` for `vit_large_patch16_224` with every architecture option overridden by
/// `model_args` (the entrypoint only names the family), `global_pool`, no classifier, and
/// `extra_args` merged in (e.g. `init_values` for LayerScale).
pub fn timm_vit_config(
    shape: &VitShape,
    heads: usize,
    global_pool: &str,
    extra_args: Value,
    preprocess: &ViTPreprocess,
    path: &Path,
) -> Result<Value, ModelError> {
    let mlp_ratio = shape.mlp_hidden as f64 / shape.embed_dim as f64;
    if (shape.embed_dim as f64 * mlp_ratio) as usize != shape.mlp_hidden {
        return Err(invalid(
            path,
            format!(
                "the MLP width {} is not int(width · ratio) for any ratio timm would store",
                shape.mlp_hidden
            ),
        ));
    }
    let img_size = shape.img_size();
    let mut model_args = json!({
        "img_size": img_size,
        "patch_size": shape.patch,
        "embed_dim": shape.embed_dim,
        "depth": shape.depth,
        "num_heads": heads,
        "mlp_ratio": mlp_ratio,
        "qkv_bias": true,
        "global_pool": global_pool,
        "num_classes": 0,
    });
    if let (Some(args), Value::Object(extra)) = (model_args.as_object_mut(), extra_args) {
        args.extend(extra);
    }
    Ok(json!({
        "architecture": "vit_large_patch16_224",
        "num_classes": 0,
        "num_features": shape.embed_dim,
        "global_pool": global_pool,
        "model_args": model_args,
        "pretrained_cfg": {
            "input_size": [3, img_size, img_size],
            "interpolation": preprocess.interpolation,
            "crop_pct": preprocess.crop_pct,
            "crop_mode": "center",
            "mean": preprocess.mean,
            "std": preprocess.std,
            "num_classes": 0,
            "first_conv": "patch_embed.proj",
            "classifier": "head",
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_default_to_width_over_64_and_must_divide() {
        let p = Path::new("ck.pth");
        assert_eq!(head_count(1024, None, p).unwrap(), 16);
        assert_eq!(head_count(768, None, p).unwrap(), 12);
        assert!(head_count(32, None, p).unwrap_err().to_string().contains("--num-heads"));
        assert!(head_count(32, Some(5), p).unwrap_err().to_string().contains("must divide the width 32"));
        assert_eq!(head_count(32, Some(4), p).unwrap(), 4);
    }

    #[test]
    fn the_config_overrides_the_entrypoint_and_checks_the_mlp_width() {
        let shape = VitShape { embed_dim: 32, patch: 8, depth: 2, mlp_hidden: 128, grid: 4 };
        let pre = ViTPreprocess { interpolation: "bicubic", crop_pct: 0.875, mean: [0.5; 3], std: [0.5; 3] };
        let cfg =
            timm_vit_config(&shape, 4, "token", json!({"init_values": 0.1}), &pre, Path::new("x")).unwrap();
        assert_eq!(cfg["model_args"]["img_size"], 32);
        assert_eq!(cfg["model_args"]["mlp_ratio"], 4.0);
        assert_eq!(cfg["model_args"]["init_values"], 0.1);
        assert_eq!(cfg["pretrained_cfg"]["input_size"], json!([3, 32, 32]));
        // 1 / 49 · 49 is 0.999…: no ratio timm could store gives this MLP width back.
        let odd = VitShape { embed_dim: 49, mlp_hidden: 1, ..shape };
        let e = timm_vit_config(&odd, 7, "avg", json!({}), &pre, Path::new("x")).unwrap_err().to_string();
        assert!(e.contains("MLP width 1"), "{e}");
    }
}
