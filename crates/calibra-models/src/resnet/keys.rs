//! The tensor names of the two ResNet layouts, and the BatchNorm counters (`num_batches_tracked`,
//! int64 scalars) that burn's `BatchNorm` has no field for: read at load, written back on save.
//!
//! Module paths: `embedder.{convolution,normalization}`, `stages.{s}.layers.{j}.layer.{k}.…`,
//! `stages.{s}.layers.{j}.shortcut.…` (transformers' names without `embedder.` doubled and without
//! `encoder.`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use super::ResNet;
use crate::error::ModelError;
use crate::hf::{KeyMap, save_safetensors};

const COUNTER: &str = "num_batches_tracked";

/// transformers `ResNetModel` names: `embedder.embedder.{convolution,normalization}.*`,
/// `encoder.stages.{s}.layers.{j}.{layer.{k},shortcut}.{convolution,normalization}.*`. The prefix
/// `resnet.` of `ResNetForImageClassification` is stripped and its `classifier.*` ignored;
/// `num_batches_tracked` is read separately ([`read_num_batches_tracked`]).
pub fn hf_resnet_key_map() -> KeyMap {
    let build = || -> Result<KeyMap, ModelError> {
        KeyMap::new("resnet")
            .strip_prefix("resnet.")
            .rule("embedder.embedder.", "embedder.")?
            .rule("encoder.stages.", "stages.")?
            .ignore(r"^classifier\.")?
            .ignore(r"\.num_batches_tracked$")
    };
    build().expect("static ResNet key table compiles")
}

/// timm `ResNet` names for `num_stages` stages: `conv1` / `bn1` (stem), `layer{s+1}.{j}.conv{k+1}` /
/// `bn{k+1}` (block convolution `k`), `layer{s+1}.{j}.downsample.{0,1}` (shortcut). The classifier `fc`
/// is ignored.
pub fn timm_resnet_key_map(num_stages: usize) -> KeyMap {
    let build = || -> Result<KeyMap, ModelError> {
        let mut m = KeyMap::new("timm-resnet")
            .rule("conv1.", "embedder.convolution.")?
            .rule("bn1.", "embedder.normalization.")?;
        for s in 0..num_stages {
            let (timm, ours) = (format!("layer{}.{{i}}.", s + 1), format!("stages.{s}.layers.{{i}}."));
            for k in 0..3 {
                m = m
                    .rule(&format!("{timm}conv{}.", k + 1), &format!("{ours}layer.{k}.convolution."))?
                    .rule(&format!("{timm}bn{}.", k + 1), &format!("{ours}layer.{k}.normalization."))?;
            }
            m = m
                .rule(&format!("{timm}downsample.0."), &format!("{ours}shortcut.convolution."))?
                .rule(&format!("{timm}downsample.1."), &format!("{ours}shortcut.normalization."))?;
        }
        m.ignore(r"^fc\.")?.ignore(r"\.num_batches_tracked$")
    };
    build().expect("ResNet key table compiles")
}

/// Every `<norm>.num_batches_tracked` of `weights` (int64 or int32 scalars), by the module path of
/// the BatchNorm (`map` translates `<norm>.running_mean`). Another dtype or shape is an error naming
/// the tensor.
pub fn read_num_batches_tracked(weights: &Path, map: &KeyMap) -> Result<BTreeMap<String, i64>, ModelError> {
    let bytes = std::fs::read(weights).map_err(|source| ModelError::Io { path: weights.into(), source })?;
    let store_err = |message: String| ModelError::Store { path: weights.into(), message };
    let st = SafeTensors::deserialize(&bytes).map_err(|e| store_err(e.to_string()))?;
    let mut out = BTreeMap::new();
    for (name, t) in st.tensors() {
        let Some(norm) = name.strip_suffix(&format!(".{COUNTER}")) else { continue };
        if map.is_ignored(&format!("{norm}.running_mean")) {
            continue;
        }
        let n = t.shape().iter().product::<usize>();
        let value = match (t.dtype(), n) {
            (Dtype::I64, 1) => i64::from_le_bytes(t.data()[..8].try_into().expect("8 bytes")),
            (Dtype::I32, 1) => i64::from(i32::from_le_bytes(t.data()[..4].try_into().expect("4 bytes"))),
            (d, _) => {
                return Err(store_err(format!(
                    "tensor '{name}' is {d:?} of shape {:?}; a BatchNorm counter is one int64",
                    t.shape()
                )));
            }
        };
        let path = map.to_burn(&format!("{norm}.running_mean"));
        let module = path.strip_suffix(".running_mean").unwrap_or(&path).to_string();
        out.insert(module, value);
    }
    Ok(out)
}

/// A tensor re-serialised as is.
struct Raw<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    data: std::borrow::Cow<'a, [u8]>,
}

impl safetensors::View for Raw<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        self.data.clone()
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// Saves the module ([`save_safetensors`]: PyTorch layout, names from `map`), then adds one int64
/// scalar `<norm>.num_batches_tracked` per BatchNorm (the loaded value, 0 when the checkpoint had
/// none, as torch initialises it), as torch's `state_dict` holds it.
pub(crate) fn save_resnet(model: &ResNet, path: &Path, map: &KeyMap) -> Result<(), ModelError> {
    save_safetensors(model, path, map)?;
    let bytes = std::fs::read(path).map_err(|source| ModelError::Io { path: path.into(), source })?;
    let store_err = |message: String| ModelError::Store { path: path.into(), message };
    let st = SafeTensors::deserialize(&bytes).map_err(|e| store_err(e.to_string()))?;
    let mut views: Vec<(String, Raw<'_>)> = Vec::new();
    let mut counters = Vec::new();
    for (name, t) in st.tensors() {
        if let Some(norm) = name.strip_suffix(".running_mean") {
            let module = map.to_burn(&name);
            let module = module.strip_suffix(".running_mean").unwrap_or(&module);
            let value = model.num_batches_tracked.get(module).copied().unwrap_or(0);
            counters.push((format!("{norm}.{COUNTER}"), value));
        }
        views.push((
            name,
            Raw { dtype: t.dtype(), shape: t.shape().to_vec(), data: std::borrow::Cow::Borrowed(t.data()) },
        ));
    }
    for (name, value) in counters {
        let data = std::borrow::Cow::Owned(value.to_le_bytes().to_vec());
        views.push((name, Raw { dtype: Dtype::I64, shape: vec![], data }));
    }
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    let out = safetensors::serialize(views, Some(metadata)).map_err(|e| store_err(e.to_string()))?;
    drop(st);
    let tmp = path.with_extension("safetensors.tmp");
    std::fs::write(&tmp, out).map_err(|source| ModelError::Io { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, path).map_err(|source| ModelError::Io { path: path.into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_names_round_trip() {
        let m = hf_resnet_key_map();
        for (hf, ours) in [
            ("embedder.embedder.convolution.weight", "embedder.convolution.weight"),
            (
                "encoder.stages.2.layers.1.layer.0.normalization.running_var",
                "stages.2.layers.1.layer.0.normalization.running_var",
            ),
            (
                "encoder.stages.0.layers.0.shortcut.convolution.weight",
                "stages.0.layers.0.shortcut.convolution.weight",
            ),
        ] {
            assert_eq!(m.to_burn(hf), ours);
            assert_eq!(m.to_burn(&format!("resnet.{hf}")), ours);
            assert_eq!(m.to_hf(ours), hf);
        }
        assert!(m.is_ignored("classifier.1.weight"));
        assert!(m.is_ignored("resnet.embedder.embedder.normalization.num_batches_tracked"));
    }

    #[test]
    fn timm_names_round_trip() {
        let m = timm_resnet_key_map(4);
        for (timm, ours) in [
            ("conv1.weight", "embedder.convolution.weight"),
            ("bn1.running_mean", "embedder.normalization.running_mean"),
            ("layer1.0.conv1.weight", "stages.0.layers.0.layer.0.convolution.weight"),
            ("layer3.12.bn3.bias", "stages.2.layers.12.layer.2.normalization.bias"),
            ("layer4.0.downsample.0.weight", "stages.3.layers.0.shortcut.convolution.weight"),
            ("layer2.0.downsample.1.running_var", "stages.1.layers.0.shortcut.normalization.running_var"),
        ] {
            assert_eq!(m.to_burn(timm), ours);
            assert_eq!(m.to_hf(ours), timm);
        }
        assert!(m.is_ignored("fc.weight"));
    }
}
