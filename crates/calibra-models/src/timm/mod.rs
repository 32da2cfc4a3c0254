//! timm Vision Transformers (`timm.models.vision_transformer.VisionTransformer`, timm 1.0.31) from
//! the Hugging Face layout timm writes (`save_for_hf` / the `timm/<name>` hub repos): `config.json`
//! with `architecture`, `num_classes`, `num_features`, `model_args`, `pretrained_cfg`, plus
//! `model.safetensors` with timm's own state-dict names.
//!
//! The options are resolved as timm resolves them ([`config`]); the fused `attn.qkv` Linear is split
//! into calibra's `q_proj` / `k_proj` / `v_proj` at load (rows `0..d`, `d..2d`, `2d..3d`, the order
//! of timm's `reshape(B, N, 3, heads, head_dim)`). The probe feature ([`TimmVit::forward`]'s `cls`)
//! is timm's `forward_head(forward_features(x), pre_logits=True)`: the pooled (`global_pool`),
//! `fc_norm`-ed feature. The classifier `head` is not loaded. [`TimmVit::save`] writes timm's layout
//! back (`q`/`k`/`v` re-fused by [`fuse_qkv`]), for full fine-tuning.

pub mod config;
pub mod panderm;
pub mod retfound;
pub mod vit_checkpoint;
pub mod write_dir;

use std::path::Path;

use crate::layers::{LayerNorm, LayerNormConfig};
use burn::module::{Module, Param};
use burn::prelude::*;
use safetensors::{Dtype, SafeTensors};

pub use config::{TimmPool, TimmVitConfig, is_timm_config, supported_architectures};

use crate::encoder_output::EncoderOutput;
use crate::error::ModelError;
use crate::hf::load::{check_fits_file, load_safetensors_bytes, save_safetensors_bytes};
use crate::hf::{HfConfig, KeyMap, LoadOptions};
use crate::layers::{PatchEmbedding, PatchEmbeddingConfig, TransformerBlock, TransformerBlockConfig};

/// A timm `VisionTransformer` with timm's numerics.
#[derive(Module, Debug)]
pub struct TimmVit {
    /// `cls_token`, `[1, 1, d]` (absent with `class_token=False`).
    pub cls_token: Option<Param<Tensor<3>>>,
    /// `reg_token`, `[1, reg_tokens, d]`.
    pub reg_token: Option<Param<Tensor<3>>>,
    /// `pos_embed`, `[1, (prefix unless no_embed_class) + g·g, d]`.
    pub pos_embed: Param<Tensor<3>>,
    /// `patch_embed.proj`.
    pub patch_embed: PatchEmbedding,
    /// `norm_pre` (`pre_norm=True`).
    pub norm_pre: Option<LayerNorm>,
    /// `blocks.{i}` (pre-norm; LayerScale `ls1`/`ls2` with `init_values`).
    pub blocks: Vec<TransformerBlock>,
    /// `norm` (on every token, when the final norm is not moved after pooling).
    pub norm: Option<LayerNorm>,
    /// `fc_norm` (on the pooled feature).
    pub fc_norm: Option<LayerNorm>,
    /// `global_pool`.
    #[module(skip)]
    pub pool: TimmPool,
    /// `no_embed_class`.
    #[module(skip)]
    pub no_embed_class: bool,
    /// `pool_include_prefix`.
    #[module(skip)]
    pub pool_include_prefix: bool,
    /// `dynamic_img_size` (when false, timm requires inputs of exactly `img_size`).
    #[module(skip)]
    pub dynamic_img_size: bool,
    /// `img_size`.
    #[module(skip)]
    pub img_size: usize,
}

impl TimmVitConfig {
    /// Builds the module with placeholder weights (load a checkpoint afterwards).
    pub fn init(&self, device: &Device) -> TimmVit {
        let d = self.embed_dim;
        let g = self.grid();
        let n_pos = g * g + if self.no_embed_class { 0 } else { self.num_prefix_tokens() };
        let norm = || LayerNormConfig::new(d).with_epsilon(self.layer_norm_eps).init(device);
        let mut block = TransformerBlockConfig::new(d, self.num_heads, self.mlp_hidden, self.activation)
            .with_layer_norm_eps(self.layer_norm_eps)
            .with_qkv_bias(self.qkv_bias);
        block.layer_scale = self.init_values;
        TimmVit {
            cls_token: self.class_token.then(|| Param::from_tensor(Tensor::zeros([1, 1, d], device))),
            reg_token: (self.reg_tokens > 0)
                .then(|| Param::from_tensor(Tensor::zeros([1, self.reg_tokens, d], device))),
            pos_embed: Param::from_tensor(Tensor::zeros([1, n_pos, d], device)),
            patch_embed: PatchEmbeddingConfig::new(self.in_chans, d, self.patch_size)
                .with_bias(!self.pre_norm)
                .init(device),
            norm_pre: self.pre_norm.then(norm),
            blocks: (0..self.depth).map(|_| block.init(device)).collect(),
            norm: self.norm.then(norm),
            fc_norm: self.fc_norm.then(norm),
            pool: self.pool,
            no_embed_class: self.no_embed_class,
            pool_include_prefix: self.pool_include_prefix,
            dynamic_img_size: self.dynamic_img_size,
            img_size: self.img_size,
        }
    }
}

impl TimmVit {
    /// Resolves `config` ([`TimmVitConfig::from_timm`]) and loads `weights` (timm names, fused `qkv`
    /// split at load).
    pub fn load(
        config: &HfConfig,
        weights: &Path,
        device: &Device,
    ) -> Result<(Self, TimmVitConfig), ModelError> {
        let cfg = TimmVitConfig::from_timm(config)?;
        check_fits_file(config, weights, cfg.min_weights())?;
        let bytes =
            std::fs::read(weights).map_err(|source| ModelError::Io { path: weights.into(), source })?;
        let split = split_fused_qkv(&bytes, weights)?;
        drop(bytes);
        let mut m = cfg.init(device);
        load_safetensors_bytes(&mut m, split, weights, &timm_vit_key_map(), &LoadOptions::default())?;
        Ok((m, cfg))
    }

    /// Writes the weights to `path` in timm's layout (the names `save_for_hf` writes; `q`/`k`/`v`
    /// re-fused into `attn.qkv`, rows in that order), atomically. Only the encoder: no `head`.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let split = save_safetensors_bytes(self, &timm_vit_key_map(), path)?;
        let fused = fuse_qkv(&split, path)?;
        calibra_core::write_bytes_atomically(path, &fused)
            .map_err(|source| ModelError::Io { path: path.into(), source })
    }

    /// Number of class + register tokens.
    pub fn num_prefix_tokens(&self) -> usize {
        usize::from(self.cls_token.is_some()) + self.reg_token.as_ref().map_or(0, |r| r.dims()[1])
    }

    /// Model width.
    pub fn embed_dim(&self) -> usize {
        self.pos_embed.dims()[2]
    }

    /// timm's `patch_embed` + `_pos_embed` + `norm_pre` for `images: [b, c, H, W]`.
    ///
    /// Inputs must give the patch grid the position embeddings were trained at; without
    /// `dynamic_img_size` they must be exactly `img_size` (timm asserts both). Resampling the
    /// position embeddings (timm's antialiased bicubic `resample_abs_pos_embed`) is not implemented.
    pub fn embed_tokens(&self, images: Tensor<4>) -> Result<Tensor<3>, ModelError> {
        let [b, c, h, w] = images.dims();
        let conv = &self.patch_embed.projection;
        let expected_c = conv.weight.dims()[1];
        let p = conv.kernel_size[0];
        if c != expected_c {
            return Err(ModelError::Input(format!(
                "images have {c} channels, the model expects {expected_c}"
            )));
        }
        let g = self.img_size / p;
        let (gh, gw) = self.patch_embed.grid(h, w);
        if !self.dynamic_img_size && (h != self.img_size || w != self.img_size) {
            return Err(ModelError::Input(format!(
                "image {h}x{w}: this timm model (dynamic_img_size=False) takes exactly {0}x{0}",
                self.img_size
            )));
        }
        if (gh, gw) != (g, g) {
            return Err(ModelError::Input(format!(
                "image {h}x{w} gives a {gh}x{gw} patch grid; resampling timm position embeddings to \
                 another grid than the trained {g}x{g} is not implemented"
            )));
        }
        let patches = self.patch_embed.forward(images);
        let d = patches.dims()[2];
        let mut prefix = Vec::new();
        if let Some(cls) = &self.cls_token {
            prefix.push(cls.val().expand([b, 1, d]));
        }
        if let Some(reg) = &self.reg_token {
            let r = reg.dims()[1];
            prefix.push(reg.val().expand([b, r, d]));
        }
        let pos = self.pos_embed.val();
        let x = if self.no_embed_class {
            prefix.push(patches + pos);
            Tensor::cat(prefix, 1)
        } else {
            prefix.push(patches);
            Tensor::cat(prefix, 1) + pos
        };
        Ok(match &self.norm_pre {
            Some(n) => n.forward(x),
            None => x,
        })
    }

    /// timm's `forward_head(x, pre_logits=True)` on `forward_features` output `x: [b, n, d]`:
    /// `global_pool`, then `fc_norm`.
    pub fn head_feature(&self, x: Tensor<3>) -> Tensor<2> {
        let [b, n, d] = x.dims();
        let pooled = if self.pool == TimmPool::Token {
            x.narrow(1, 0, 1).reshape([b, d])
        } else {
            let start = if self.pool_include_prefix { 0 } else { self.num_prefix_tokens() };
            let tokens = x.narrow(1, start, n - start);
            match self.pool {
                TimmPool::Avg => tokens.mean_dim(1).reshape([b, d]),
                TimmPool::Max => tokens.max_dim(1).reshape([b, d]),
                _ => (tokens.clone().max_dim(1) + tokens.mean_dim(1)).reshape([b, d]) * 0.5,
            }
        };
        match &self.fc_norm {
            Some(n) => n.forward(pooled),
            None => pooled,
        }
    }

    /// The feature timm's head reads from a block output `h` (not yet normed): `norm` then
    /// [`Self::head_feature`]; for the last block this is the probe feature.
    pub fn feature_from_hidden(&self, h: Tensor<3>) -> Tensor<2> {
        let h = match &self.norm {
            Some(n) => n.forward(h),
            None => h,
        };
        self.head_feature(h)
    }

    /// Full forward pass: `last_hidden_state` = timm's `forward_features` (after `norm`), `cls` = the
    /// probe feature (pooled, `fc_norm`-ed), `hidden_states` (with `collect_hidden`) = the input of
    /// block 0 (after `norm_pre`) then every block's output, prefix tokens first, before `norm`
    /// (block `k`'s output is timm's `forward_intermediates(indices=[k-1], norm=False)` with its
    /// prefix tokens put back in front).
    pub fn forward(&self, images: Tensor<4>, collect_hidden: bool) -> Result<EncoderOutput, ModelError> {
        let (x, hidden) = crate::layers::run_blocks(&self.blocks, self.embed_tokens(images)?, collect_hidden);
        let last = match &self.norm {
            Some(n) => n.forward(x),
            None => x,
        };
        let cls = self.head_feature(last.clone());
        Ok(EncoderOutput { last_hidden_state: last, cls, pooler_output: None, hidden_states: hidden })
    }
}

/// Key table for timm ViT checkpoints (after [`split_fused_qkv`]): `patch_embed.proj` →
/// `patch_embed.projection`, `blocks.{i}.attn.{q,k,v}` (split from `qkv`) → `q_proj`/`k_proj`/`v_proj`,
/// `attn.proj` → `o_proj`, `ls{1,2}.gamma` → `layer_scale{1,2}.lambda1`; `cls_token`, `reg_token`,
/// `pos_embed`, `norm_pre`, `norm1`/`norm2`, `mlp.fc1`/`fc2`, `norm`, `fc_norm` keep their names. The
/// classifier `head` is ignored.
pub fn timm_vit_key_map() -> KeyMap {
    let build = || -> Result<KeyMap, ModelError> {
        let mut m = KeyMap::new("timm-vit");
        for (timm, burn) in [
            ("attn.q.", "attn.q_proj."),
            ("attn.k.", "attn.k_proj."),
            ("attn.v.", "attn.v_proj."),
            ("attn.proj.", "attn.o_proj."),
            ("ls1.gamma", "layer_scale1.lambda1"),
            ("ls2.gamma", "layer_scale2.lambda1"),
        ] {
            m = m.rule(&format!("blocks.{{i}}.{timm}"), &format!("blocks.{{i}}.{burn}"))?;
        }
        m = m.rule("patch_embed.proj.", "patch_embed.projection.")?;
        m.ignore(r"^head\.")
    };
    build().expect("static timm key table compiles")
}

/// A tensor of any dtype, re-serialised as is.
struct RawView<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    data: std::borrow::Cow<'a, [u8]>,
}

impl safetensors::View for RawView<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// Rewrites a timm safetensors file in memory: every `blocks.{i}.attn.qkv.weight` `[3·d, d]` /
/// `.bias` `[3·d]` becomes `blocks.{i}.attn.{q,k,v}.weight|bias` (the three consecutive row blocks,
/// bytes copied unchanged, any dtype); other tensors are kept. An unsplittable `qkv` (first axis not
/// a multiple of 3) is an error naming it.
pub fn split_fused_qkv(bytes: &[u8], path: &Path) -> Result<Vec<u8>, ModelError> {
    let store_err = |m: String| ModelError::Store { path: path.into(), message: m };
    let st = SafeTensors::deserialize(bytes).map_err(|e| store_err(e.to_string()))?;
    let mut views: Vec<(String, RawView<'_>)> = Vec::new();
    for (name, t) in st.tensors() {
        let fused = name.strip_prefix("blocks.").and_then(|r| {
            let (i, rest) = r.split_once('.')?;
            let kind = rest.strip_prefix("attn.qkv.")?;
            (i.parse::<usize>().is_ok() && (kind == "weight" || kind == "bias"))
                .then(|| (i.to_string(), kind.to_string()))
        });
        let Some((i, kind)) = fused else {
            views.push((
                name.clone(),
                RawView { dtype: t.dtype(), shape: t.shape().to_vec(), data: t.data().into() },
            ));
            continue;
        };
        let shape = t.shape().to_vec();
        if shape.is_empty() || shape[0] % 3 != 0 || shape[0] == 0 {
            return Err(store_err(format!(
                "tensor '{name}' has shape {shape:?}: a fused qkv needs a first axis that is a multiple of 3"
            )));
        }
        let chunk = t.data().len() / 3;
        let mut part_shape = shape.clone();
        part_shape[0] /= 3;
        for (j, part) in ["q", "k", "v"].iter().enumerate() {
            views.push((
                format!("blocks.{i}.attn.{part}.{kind}"),
                RawView {
                    dtype: t.dtype(),
                    shape: part_shape.clone(),
                    data: t.data()[j * chunk..(j + 1) * chunk].into(),
                },
            ));
        }
    }
    safetensors::serialize(views, None).map_err(|e| store_err(e.to_string()))
}

/// The inverse of [`split_fused_qkv`]: every `blocks.{i}.attn.{q,k,v}.weight|bias` triple becomes
/// `blocks.{i}.attn.qkv.weight|bias` (the rows of q, then k, then v, bytes copied unchanged); other
/// tensors are kept. A triple with a part missing, or parts of different types or trailing shapes,
/// is an error naming it.
pub fn fuse_qkv(bytes: &[u8], path: &Path) -> Result<Vec<u8>, ModelError> {
    let store_err = |m: String| ModelError::Store { path: path.into(), message: m };
    let st = SafeTensors::deserialize(bytes).map_err(|e| store_err(e.to_string()))?;
    let part_of = |name: &str| -> Option<(String, String, usize)> {
        let rest = name.strip_prefix("blocks.")?;
        let (i, rest) = rest.split_once('.')?;
        let rest = rest.strip_prefix("attn.")?;
        let (part, kind) = rest.split_once('.')?;
        let j = ["q", "k", "v"].iter().position(|p| *p == part)?;
        (i.parse::<usize>().is_ok() && (kind == "weight" || kind == "bias"))
            .then(|| (i.to_string(), kind.to_string(), j))
    };
    let mut fused: std::collections::BTreeMap<String, [Option<safetensors::tensor::TensorView<'_>>; 3]> =
        Default::default();
    // Every other tensor is written from the input's bytes; only the fused ones are new.
    let mut out: Vec<(String, RawView<'_>)> = Vec::new();
    for (name, t) in st.tensors() {
        match part_of(&name) {
            Some((i, kind, j)) => {
                fused.entry(format!("blocks.{i}.attn.qkv.{kind}")).or_default()[j] = Some(t)
            }
            None => out
                .push((name, RawView { dtype: t.dtype(), shape: t.shape().to_vec(), data: t.data().into() })),
        }
    }
    for (name, parts) in fused {
        let [Some(q), Some(k), Some(v)] = parts else {
            return Err(store_err(format!("'{name}': one of its q, k, v parts is missing")));
        };
        if [&k, &v].iter().any(|p| p.dtype() != q.dtype() || p.shape() != q.shape()) || q.shape().is_empty() {
            return Err(store_err(format!("'{name}': its q, k, v parts differ in type or shape")));
        }
        let mut shape = q.shape().to_vec();
        shape[0] *= 3;
        let data = [q.data(), k.data(), v.data()].concat();
        out.push((name, RawView { dtype: q.dtype(), shape, data: data.into() }));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    safetensors::serialize(out, crate::clip::open_clip::convert::pt_format())
        .map_err(|e| store_err(e.to_string()))
}
