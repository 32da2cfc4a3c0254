//! Rewriting an OpenCLIP state dict (`open_clip_model.safetensors`) in memory into the tensor names
//! and layouts of a Hugging Face `CLIPModel` checkpoint, which [`crate::clip::ClipModel`] loads.
//!
//! | OpenCLIP (`text.` before the text names with `custom_text`) | Hugging Face `CLIPModel` |
//! |---|---|
//! | `visual.class_embedding` | `vision_model.embeddings.class_embedding` |
//! | `visual.conv1.weight` | `vision_model.embeddings.patch_embedding.weight` |
//! | `visual.positional_embedding` | `vision_model.embeddings.position_embedding.weight` |
//! | `visual.ln_pre.*` / `visual.ln_post.*` | `vision_model.pre_layrnorm.*` / `vision_model.post_layernorm.*` |
//! | `….resblocks.{i}.attn.in_proj_weight` `[3d, d]` (`in_proj_bias` `[3d]`) | `….layers.{i}.self_attn.{q,k,v}_proj.weight` (`.bias`): rows `0..d`, `d..2d`, `2d..3d` (the order of `F.multi_head_attention_forward`'s `_in_projection_packed`) |
//! | `….attn.out_proj.*` | `….self_attn.out_proj.*` |
//! | `….ln_1.*` / `….ln_2.*` | `….layer_norm1.*` / `….layer_norm2.*` |
//! | `….mlp.c_fc.*` / `….mlp.c_proj.*` | `….mlp.fc1.*` / `….mlp.fc2.*` |
//! | `visual.proj` `[width, embed]` (`x @ proj`) | `visual_projection.weight` `[embed, width]` (transposed) |
//! | `token_embedding.weight`, `positional_embedding` | `text_model.embeddings.{token,position}_embedding.weight` |
//! | `ln_final.*` | `text_model.final_layer_norm.*` |
//! | `text_projection` `[width, embed]` | `text_projection.weight` `[embed, width]` (transposed) |
//! | `logit_scale` | `logit_scale` |
//!
//! Every expected tensor must be present (a missing one is an error naming its OpenCLIP name) and
//! every tensor of the file must be used (a leftover one, e.g. `logit_bias` or a layer-scale
//! `ls_1.gamma`, is an error naming it): nothing is loaded approximately. Bytes are copied as
//! stored (any float dtype); the loader converts to f32.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use crate::error::ModelError;

use super::config::OpenClipConfig;

/// A tensor to re-serialise.
pub(crate) struct Owned {
    pub(crate) dtype: Dtype,
    pub(crate) shape: Vec<usize>,
    pub(crate) data: Vec<u8>,
}

impl safetensors::View for &Owned {
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

fn element_size(dtype: Dtype) -> Option<usize> {
    match dtype {
        Dtype::F16 | Dtype::BF16 => Some(2),
        Dtype::F32 => Some(4),
        Dtype::F64 => Some(8),
        _ => None,
    }
}

/// Pulls tensors out of the OpenCLIP file by name, recording which ones were used.
struct Source<'a> {
    st: SafeTensors<'a>,
    path: &'a Path,
    used: std::collections::BTreeSet<String>,
    out: Vec<(String, Owned)>,
}

impl Source<'_> {
    fn err(&self, message: String) -> ModelError {
        ModelError::Store { path: self.path.into(), message }
    }

    fn take(&mut self, name: &str) -> Result<(Dtype, Vec<usize>, &[u8]), ModelError> {
        let t = self.st.tensor(name).map_err(|_| {
            self.err(format!("missing OpenCLIP weight '{name}' (the config describes a model that has it)"))
        })?;
        if element_size(t.dtype()).is_none() {
            return Err(self.err(format!("tensor '{name}' has dtype {:?}, expected a float type", t.dtype())));
        }
        self.used.insert(name.to_string());
        Ok((t.dtype(), t.shape().to_vec(), t.data()))
    }

    /// Copies `name` as `hf` unchanged.
    fn copy(&mut self, name: &str, hf: &str) -> Result<(), ModelError> {
        let (dtype, shape, data) = self.take(name)?;
        let t = Owned { dtype, shape, data: data.to_vec() };
        self.out.push((hf.to_string(), t));
        Ok(())
    }

    /// Copies the 2-D `name` transposed as `hf` (`x @ W` → Linear weight `Wᵀ`).
    fn transpose(&mut self, name: &str, hf: &str) -> Result<(), ModelError> {
        let (dtype, shape, data) = self.take(name)?;
        let [rows, cols] = shape[..] else {
            return Err(self.err(format!("tensor '{name}' has shape {shape:?}, expected a matrix")));
        };
        let size = element_size(dtype).unwrap_or(4);
        let mut t = vec![0u8; data.len()];
        for r in 0..rows {
            for c in 0..cols {
                let (from, to) = ((r * cols + c) * size, (c * rows + r) * size);
                t[to..to + size].copy_from_slice(&data[from..from + size]);
            }
        }
        self.out.push((hf.to_string(), Owned { dtype, shape: vec![cols, rows], data: t }));
        Ok(())
    }

    /// Splits the fused `name` (`[3d, …]`) into three row blocks named `hf_{q,k,v}_proj.{kind}`.
    fn split_qkv(&mut self, name: &str, hf_attn: &str, kind: &str) -> Result<(), ModelError> {
        let (dtype, shape, data) = self.take(name)?;
        if shape.is_empty() || shape[0] == 0 || !shape[0].is_multiple_of(3) {
            return Err(self.err(format!(
                "tensor '{name}' has shape {shape:?}: a fused in_proj needs a first axis that is a multiple of 3"
            )));
        }
        let chunk = data.len() / 3;
        let mut part_shape = shape.clone();
        part_shape[0] /= 3;
        let parts: Vec<Owned> = (0..3)
            .map(|j| Owned {
                dtype,
                shape: part_shape.clone(),
                data: data[j * chunk..(j + 1) * chunk].to_vec(),
            })
            .collect();
        for (p, t) in ["q", "k", "v"].iter().zip(parts) {
            self.out.push((format!("{hf_attn}{p}_proj.{kind}"), t));
        }
        Ok(())
    }

    /// One residual block `{oc}resblocks.{i}.` → `{hf}encoder.layers.{i}.`.
    fn block(&mut self, oc: &str, hf: &str, i: usize) -> Result<(), ModelError> {
        let (oc, hf) = (format!("{oc}transformer.resblocks.{i}."), format!("{hf}encoder.layers.{i}."));
        let attn = format!("{hf}self_attn.");
        self.split_qkv(&format!("{oc}attn.in_proj_weight"), &attn, "weight")?;
        self.split_qkv(&format!("{oc}attn.in_proj_bias"), &attn, "bias")?;
        for kind in ["weight", "bias"] {
            for (from, to) in [
                ("attn.out_proj", "self_attn.out_proj"),
                ("ln_1", "layer_norm1"),
                ("ln_2", "layer_norm2"),
                ("mlp.c_fc", "mlp.fc1"),
                ("mlp.c_proj", "mlp.fc2"),
            ] {
                self.copy(&format!("{oc}{from}.{kind}"), &format!("{hf}{to}.{kind}"))?;
            }
        }
        Ok(())
    }
}

/// Rewrites the OpenCLIP file `bytes` (read from `path`, described by `config`) as a Hugging Face
/// `CLIPModel` safetensors file in memory (see the module docs).
pub fn open_clip_to_hf(bytes: &[u8], path: &Path, config: &OpenClipConfig) -> Result<Vec<u8>, ModelError> {
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| ModelError::Store { path: path.into(), message: e.to_string() })?;
    let mut src = Source { st, path, used: Default::default(), out: Vec::new() };
    // Vision tower.
    src.copy("visual.class_embedding", "vision_model.embeddings.class_embedding")?;
    src.copy("visual.conv1.weight", "vision_model.embeddings.patch_embedding.weight")?;
    src.copy("visual.positional_embedding", "vision_model.embeddings.position_embedding.weight")?;
    for kind in ["weight", "bias"] {
        src.copy(&format!("visual.ln_pre.{kind}"), &format!("vision_model.pre_layrnorm.{kind}"))?;
        src.copy(&format!("visual.ln_post.{kind}"), &format!("vision_model.post_layernorm.{kind}"))?;
    }
    for i in 0..config.clip.vision.n_layers {
        src.block("visual.", "vision_model.", i)?;
    }
    src.transpose("visual.proj", "visual_projection.weight")?;
    // Text tower.
    let t = if config.custom_text { "text." } else { "" };
    src.copy(&format!("{t}token_embedding.weight"), "text_model.embeddings.token_embedding.weight")?;
    src.copy(&format!("{t}positional_embedding"), "text_model.embeddings.position_embedding.weight")?;
    for i in 0..config.clip.text.n_layers {
        src.block(t, "text_model.", i)?;
    }
    for kind in ["weight", "bias"] {
        src.copy(&format!("{t}ln_final.{kind}"), &format!("text_model.final_layer_norm.{kind}"))?;
    }
    src.transpose(&format!("{t}text_projection"), "text_projection.weight")?;
    src.copy("logit_scale", "logit_scale")?;
    let mut leftover: Vec<&str> = src.st.names().into_iter().filter(|n| !src.used.contains(*n)).collect();
    leftover.sort_unstable();
    if !leftover.is_empty() {
        return Err(src.err(format!(
            "OpenCLIP tensors not part of the configured model (an option calibra does not implement, \
             e.g. logit_bias, layer scale or extra blocks?): {}",
            leftover.join(", ")
        )));
    }
    serialize_tensors(&src.out, None, path)
}

/// The safetensors bytes of named tensors, with `metadata` in the header (`{"format": "pt"}` for a
/// file written to disk, as transformers writes them); errors name `path`.
pub(crate) fn serialize_tensors(
    tensors: &[(String, Owned)],
    metadata: Option<std::collections::HashMap<String, String>>,
    path: &Path,
) -> Result<Vec<u8>, ModelError> {
    let views: Vec<(&str, &Owned)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    safetensors::serialize(views, metadata)
        .map_err(|e| ModelError::Store { path: path.into(), message: e.to_string() })
}

/// `{"format": "pt"}`: the header metadata of a safetensors file written for transformers / open_clip.
pub(crate) fn pt_format() -> Option<std::collections::HashMap<String, String>> {
    Some(std::collections::HashMap::from([("format".to_string(), "pt".to_string())]))
}
