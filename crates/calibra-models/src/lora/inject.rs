//! Putting LoRA branches into an encoder, by the module names PEFT uses.
//!
//! A LoRA-capable linear is named as in transformers 5.x's in-memory model (the names PEFT writes
//! into adapters made with transformers 5): ViT / DeiT `vit.layers.{i}.attention.{q,k,v,o}_proj` and
//! `vit.layers.{i}.mlp.fc{1,2}` (`deit.` for DeiT). Adapters made with transformers 4.x name the same
//! layers `vit.encoder.layer.{i}.attention.attention.{query,key,value}`,
//! `….attention.output.dense`, `….intermediate.dense`, `….output.dense`; both are accepted on read.
//! Only the ViT family is wired so far; other families return a clear error.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use regex::Regex;

use super::linear::{BranchSettings, LoraBranch, LoraLinear};
use super::peft::{AdapterTensor, LoraFactors, PeftAdapter};
use super::{LoraConfig, LoraError};
use crate::encoder::{Encoder, EncoderModel};

const PROJECTIONS: [&str; 6] = ["q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"];

/// transformers 4.x ViT names → 5.x names (layer index kept).
fn v4_to_v5(name: &str) -> String {
    static RE: std::sync::OnceLock<Vec<(Regex, &'static str)>> = std::sync::OnceLock::new();
    let table = RE.get_or_init(|| {
        [
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.attention\.query$", "$1.layers.$2.attention.q_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.attention\.key$", "$1.layers.$2.attention.k_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.attention\.value$", "$1.layers.$2.attention.v_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.attention\.output\.dense$", "$1.layers.$2.attention.o_proj"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.intermediate\.dense$", "$1.layers.$2.mlp.fc1"),
            (r"^(\w+)\.encoder\.layer\.(\d+)\.output\.dense$", "$1.layers.$2.mlp.fc2"),
        ]
        .into_iter()
        .map(|(p, r)| (Regex::new(p).expect("static regex"), r))
        .collect()
    });
    for (re, rep) in table {
        if re.is_match(name) {
            return re.replace(name, *rep).into_owned();
        }
    }
    name.to_string()
}

/// The encoder's LoRA-capable linears with their PEFT (transformers 5.x) names, in a fixed order.
fn named_linears(encoder: &mut Encoder) -> Result<Vec<(String, &mut LoraLinear)>, LoraError> {
    let prefix = match encoder
        .config
        .model_type()
        .map_err(|e| LoraError::Config { field: "model_type".into(), why: e.to_string() })?
    {
        t if t == "deit" => "deit",
        _ => "vit",
    };
    match &mut encoder.model {
        EncoderModel::Vit(m) => {
            let mut out = Vec::new();
            for (i, block) in m.blocks.iter_mut().enumerate() {
                let attn = &mut block.attn;
                let mlp = &mut block.mlp;
                let base = format!("{prefix}.layers.{i}");
                out.push((format!("{base}.attention.q_proj"), &mut attn.q_proj));
                out.push((format!("{base}.attention.k_proj"), &mut attn.k_proj));
                out.push((format!("{base}.attention.v_proj"), &mut attn.v_proj));
                out.push((format!("{base}.attention.o_proj"), &mut attn.o_proj));
                out.push((format!("{base}.mlp.fc1"), &mut mlp.fc1));
                out.push((format!("{base}.mlp.fc2"), &mut mlp.fc2));
            }
            debug_assert_eq!(out.len() % PROJECTIONS.len(), 0);
            Ok(out)
        }
        _ => Err(LoraError::Config {
            field: "model_type".into(),
            why: "LoRA injection is implemented for ViT / DeiT encoders so far".into(),
        }),
    }
}

/// Attach fresh branches to every linear `config` targets (B = 0, so the encoder's outputs are
/// unchanged) and freeze every encoder weight (as PEFT does). Returns the wrapped module names. Each branch's A is drawn
/// from its own seeded stream (`seed` mixed with the module's position), so the result does not
/// depend on anything else in the process.
pub fn apply_lora(encoder: &mut Encoder, config: &LoraConfig, seed: u64) -> Result<Vec<String>, LoraError> {
    config.validate()?;
    // PEFT freezes the whole base model (norms, embeddings, unwrapped projections), not only the
    // wrapped layers; the new branches are the only trainable encoder parameters.
    *encoder = encoder.clone().no_grad();
    let mut wrapped = Vec::new();
    for (position, (name, linear)) in named_linears(encoder)?.into_iter().enumerate() {
        if !config.wraps(&name)? {
            continue;
        }
        let (rank, alpha) = config.rank_and_alpha(&name);
        let (d_in, d_out) = linear.dims();
        let device = linear.base.weight.val().device();
        let settings = BranchSettings {
            rank,
            scale: config.scale(rank, alpha),
            dropout: config.lora_dropout,
            init: config.init_lora_weights,
            seed: seed ^ (position as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        linear.base = linear.base.clone().no_grad();
        linear.lora = Some(LoraBranch::new(d_in, d_out, &settings, &device));
        wrapped.push(name);
    }
    if wrapped.is_empty() {
        return Err(LoraError::Config {
            field: "target_modules".into(),
            why: format!(
                "matched no module of this encoder (its linears are named like `vit.layers.0.attention.q_proj`; {:?})",
                config.target_modules
            ),
        });
    }
    Ok(wrapped)
}

/// Put the factors of a PEFT adapter into the encoder (5.x or 4.x module names), with the adapter's
/// scale and dropout. Every adapter module must exist in the encoder with matching shapes; all
/// problems are listed.
pub fn load_adapter(
    encoder: &mut Encoder,
    adapter: &PeftAdapter,
    device: &Device,
) -> Result<Vec<String>, LoraError> {
    let config = &adapter.config;
    let mut by_name: std::collections::BTreeMap<String, &LoraFactors> =
        adapter.factors.iter().map(|(k, v)| (v4_to_v5(k), v)).collect();
    let mut problems = Vec::new();
    let mut loaded = Vec::new();
    for (name, linear) in named_linears(encoder)? {
        let Some(f) = by_name.remove(&name) else { continue };
        let (d_in, d_out) = linear.dims();
        if f.a.shape[1] != d_in || f.b.shape[0] != d_out {
            problems.push(format!(
                "`{name}`: lora_A {:?} / lora_B {:?} do not fit a {d_in} → {d_out} layer",
                f.a.shape, f.b.shape
            ));
            continue;
        }
        let (rank, alpha) = config.rank_and_alpha(&name);
        let a = Tensor::<2>::from_data(TensorData::new(f.a.data.clone(), [f.a.shape[0], d_in]), device);
        let b = Tensor::<2>::from_data(TensorData::new(f.b.data.clone(), [d_out, f.b.shape[1]]), device);
        linear.base = linear.base.clone().no_grad();
        linear.lora = Some(LoraBranch::from_factors(a, b, config.scale(rank, alpha), config.lora_dropout));
        linear.merged = false;
        loaded.push(name);
    }
    for name in by_name.keys() {
        problems.push(format!("`{name}`: no such LoRA-capable module in this encoder"));
    }
    if !problems.is_empty() {
        return Err(LoraError::Mismatch { path: "adapter_model.safetensors".into(), problems });
    }
    Ok(loaded)
}

/// The adapter an encoder carries: the factors of every branch under its PEFT (transformers 5.x)
/// module name, `config` as the adapter's configuration, and `saved` (e.g. a classifier head as
/// `classifier.weight` / `classifier.bias`, PyTorch layout) as its `modules_to_save` tensors.
/// Merged branches are refused: their factors are still in the base weight.
pub fn extract_adapter(
    encoder: &Encoder,
    config: &LoraConfig,
    saved: std::collections::BTreeMap<String, AdapterTensor>,
) -> Result<PeftAdapter, LoraError> {
    let mut encoder = encoder.clone();
    let mut factors = std::collections::BTreeMap::new();
    for (name, linear) in named_linears(&mut encoder)? {
        let Some(branch) = &linear.lora else { continue };
        if linear.merged {
            return Err(LoraError::Config {
                field: name,
                why: "the branch is merged into the base weight; unmerge before saving the adapter".into(),
            });
        }
        let tensor = |t: Tensor<2>| -> Result<AdapterTensor, LoraError> {
            let shape = t.dims().to_vec();
            let data = t
                .into_data()
                .convert::<f32>()
                .try_into_vec::<f32>()
                .map_err(|e| LoraError::Config { field: "lora factors".into(), why: format!("{e:?}") })?;
            Ok(AdapterTensor { shape, data })
        };
        factors.insert(name, LoraFactors { a: tensor(branch.a.val())?, b: tensor(branch.b.val())? });
    }
    if factors.is_empty() {
        return Err(LoraError::Config {
            field: "target_modules".into(),
            why: "the encoder carries no LoRA branch; nothing to save".into(),
        });
    }
    Ok(PeftAdapter { config: config.clone(), factors, saved })
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::SafeTensors;
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lora")
    }

    fn golden(name: &str) -> (Vec<usize>, Vec<f32>) {
        let bytes = std::fs::read(fixtures().join("golden.safetensors")).unwrap();
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let t = file.tensor(name).unwrap();
        let v = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        (t.shape().to_vec(), v)
    }

    /// The classifier of ViTForImageClassification: logits = W · CLS + b, W stored [K, d] (PyTorch).
    fn logits(encoder: &Encoder, w: &AdapterTensor, b: &AdapterTensor, device: &Device) -> Vec<f32> {
        let (shape, pixels) = golden("pixel_values");
        let images =
            Tensor::<4>::from_data(TensorData::new(pixels, [shape[0], shape[1], shape[2], shape[3]]), device);
        let cls = encoder.embed(images).unwrap();
        let w = Tensor::<2>::from_data(TensorData::new(w.data.clone(), [w.shape[0], w.shape[1]]), device);
        let b = Tensor::<1>::from_data(TensorData::new(b.data.clone(), [b.shape[0]]), device);
        (cls.matmul(w.transpose()) + b.unsqueeze()).into_data().try_to_vec::<f32>().unwrap()
    }

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    fn base_head() -> (AdapterTensor, AdapterTensor) {
        let bytes = std::fs::read(fixtures().join("base/model.safetensors")).unwrap();
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let get = |n: &str| {
            let t = file.tensor(n).unwrap();
            AdapterTensor {
                shape: t.shape().to_vec(),
                data: t
                    .data()
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            }
        };
        (get("classifier.weight"), get("classifier.bias"))
    }

    /// A peft-made adapter (scripts/golden/lora_peft.py: peft 0.21.2 on transformers 5.24.0's
    /// ViTForImageClassification, random non-zero factors) gives PEFT's logits here.
    #[test]
    fn a_peft_adapter_reproduces_peft_logits_and_merging_keeps_them() {
        let device = Device::flex();
        let mut encoder = Encoder::load_dir(&fixtures().join("base"), &device).unwrap();
        let (w, b) = base_head();
        let base = logits(&encoder, &w, &b, &device);
        assert!(max_abs_diff(&base, &golden("base_logits").1) < 1e-4, "base model");

        let adapter = PeftAdapter::read(&fixtures().join("adapter")).unwrap();
        let loaded = load_adapter(&mut encoder, &adapter, &device).unwrap();
        assert_eq!(loaded.len(), 6);
        let (w, b) = (&adapter.saved["classifier.weight"], &adapter.saved["classifier.bias"]);
        let adapted = logits(&encoder, w, b, &device);
        let want = golden("adapted_logits").1;
        let d = max_abs_diff(&adapted, &want);
        assert!(d < 1e-4, "adapted logits vs peft: max |diff| {d}");
        assert!(max_abs_diff(&adapted, &base) > 0.1, "the adapter must change the logits");

        // Merging every branch into its base weight gives the same logits (peft merge_and_unload).
        if let EncoderModel::Vit(m) = &mut encoder.model {
            for block in m.blocks.iter_mut() {
                let q = std::mem::replace(
                    &mut block.attn.q_proj,
                    LoraLinear::plain(block.attn.k_proj.base.clone()),
                );
                block.attn.q_proj = q.merge();
                let v = std::mem::replace(
                    &mut block.attn.v_proj,
                    LoraLinear::plain(block.attn.k_proj.base.clone()),
                );
                block.attn.v_proj = v.merge();
            }
        }
        let merged = logits(&encoder, w, b, &device);
        assert!(max_abs_diff(&merged, &golden("merged_logits").1) < 1e-4);
    }

    #[test]
    fn fresh_branches_leave_outputs_unchanged_and_bad_adapters_are_listed() {
        let device = Device::flex();
        let mut encoder = Encoder::load_dir(&fixtures().join("base"), &device).unwrap();
        let (w, b) = base_head();
        let before = logits(&encoder, &w, &b, &device);
        let wrapped = apply_lora(&mut encoder, &LoraConfig::vit_default(), 3).unwrap();
        assert_eq!(
            wrapped,
            vec![
                "vit.layers.0.attention.q_proj",
                "vit.layers.0.attention.v_proj",
                "vit.layers.1.attention.q_proj",
                "vit.layers.1.attention.v_proj",
                "vit.layers.2.attention.q_proj",
                "vit.layers.2.attention.v_proj",
            ]
        );
        assert_eq!(max_abs_diff(&logits(&encoder, &w, &b, &device), &before), 0.0);

        let mut adapter = PeftAdapter::read(&fixtures().join("adapter")).unwrap();
        let f = adapter.factors.remove("vit.layers.0.attention.q_proj").unwrap();
        adapter.factors.insert("vit.layers.7.attention.q_proj".into(), f);
        let err = load_adapter(&mut encoder, &adapter, &device).unwrap_err().to_string();
        assert!(err.contains("vit.layers.7.attention.q_proj`: no such"), "{err}");
        // transformers 4.x names of the same layers are accepted.
        assert_eq!(
            v4_to_v5("vit.encoder.layer.3.attention.attention.query"),
            "vit.layers.3.attention.q_proj"
        );
        assert_eq!(v4_to_v5("vit.encoder.layer.3.output.dense"), "vit.layers.3.mlp.fc2");
    }

    #[test]
    fn an_adapter_loaded_then_extracted_is_the_same_adapter() {
        let device = Device::flex();
        let mut encoder = Encoder::load_dir(&fixtures().join("base"), &device).unwrap();
        let adapter = PeftAdapter::read(&fixtures().join("adapter")).unwrap();
        load_adapter(&mut encoder, &adapter, &device).unwrap();
        let back = extract_adapter(&encoder, &adapter.config, adapter.saved.clone()).unwrap();
        let names: Vec<_> = back.factors.keys().map(|k| v4_to_v5(k)).collect();
        let expected: Vec<_> = adapter.factors.keys().map(|k| v4_to_v5(k)).collect();
        assert_eq!(names, expected);
        for (k, f) in &adapter.factors {
            assert_eq!(&back.factors[&v4_to_v5(k)], f, "{k}");
        }
        let plain = Encoder::load_dir(&fixtures().join("base"), &device).unwrap();
        let err = extract_adapter(&plain, &adapter.config, Default::default()).unwrap_err().to_string();
        assert!(err.contains("no LoRA branch"), "{err}");
    }
}
