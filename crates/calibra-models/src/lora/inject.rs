//! Putting LoRA branches into a model, by the module names PEFT uses.
//!
//! The walk is generic over [`LoraModel`]: every family lists its LoRA-capable linears under their
//! PEFT names (see `families.rs` for the table), and `config` picks among them by PEFT's rules
//! ([`LoraConfig::wraps`]). Adapters may name modules in another known spelling (transformers 4.x,
//! the standalone `*Model` classes); they are mapped onto the canonical names on read.

use burn::tensor::{Device, Tensor, TensorData};

pub use super::families::LoraModel;
#[cfg(test)]
use super::families::v4_to_v5;
#[cfg(test)]
use super::linear::LoraLinear;
use super::linear::{BranchSettings, LoraBranch};
use super::peft::{AdapterTensor, LoraFactors, PeftAdapter};
use super::{LoraConfig, LoraError};
#[cfg(test)]
use crate::encoder::{Encoder, EncoderModel};

/// Refuse a config whose targets reach a module PEFT would wrap but calibra cannot.
fn check_refused<M: LoraModel>(model: &M, config: &LoraConfig) -> Result<(), LoraError> {
    let mut problems = Vec::new();
    for (name, why) in model.lora_refused()? {
        if config.wraps(&name)? {
            problems.push(format!("`{name}`: {why}"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(LoraError::Config {
        field: "target_modules".into(),
        why: format!("reaches modules calibra cannot wrap:\n{}\n{}", problems.join("\n"), capable(model)?),
    })
}

/// "the LoRA-capable modules of this model end in q_proj, k_proj, … (e.g. `…`)", for error messages.
fn capable<M: LoraModel>(model: &M) -> Result<String, LoraError> {
    let mut model = model.clone();
    let names: Vec<String> = model.lora_linears()?.into_iter().map(|(n, _)| n).collect();
    let mut suffixes: Vec<String> = Vec::new();
    for n in &names {
        let s = n.rsplit('.').next().unwrap_or(n).to_string();
        if !suffixes.contains(&s) {
            suffixes.push(s);
        }
    }
    Ok(format!(
        "the LoRA-capable modules of this model end in {} (e.g. `{}`)",
        suffixes.join(", "),
        names.first().map(String::as_str).unwrap_or("")
    ))
}

/// Attach fresh branches to every linear `config` targets (B = 0, so the model's outputs are
/// unchanged) and freeze every model weight (as PEFT does). Returns the wrapped module names. Each branch's A is drawn
/// from its own seeded stream (`seed` mixed with the module's position), so the result does not
/// depend on anything else in the process.
pub fn apply_lora<M: LoraModel>(
    model: &mut M,
    config: &LoraConfig,
    seed: u64,
) -> Result<Vec<String>, LoraError> {
    config.validate()?;
    check_refused(model, config)?;
    // PEFT freezes the whole base model (norms, embeddings, unwrapped projections), not only the
    // wrapped layers; the new branches are the only trainable model parameters.
    *model = model.clone().no_grad();
    let mut wrapped = Vec::new();
    for (position, (name, mut slot)) in model.lora_linears()?.into_iter().enumerate() {
        if !config.wraps(&name)? {
            continue;
        }
        let (rank, alpha) = config.rank_and_alpha(&name);
        let (d_in, d_out) = slot.dims();
        let settings = BranchSettings {
            rank,
            scale: config.scale(rank, alpha),
            dropout: config.lora_dropout,
            init: config.init_lora_weights,
            seed: seed ^ (position as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        slot.attach(LoraBranch::new(d_in, d_out, &settings, &slot.device()));
        wrapped.push(name);
    }
    if wrapped.is_empty() {
        return Err(LoraError::Config {
            field: "target_modules".into(),
            why: format!(
                "{:?} matched no module of this encoder; {}",
                config.target_modules,
                capable(model)?
            ),
        });
    }
    Ok(wrapped)
}

/// Put the factors of a PEFT adapter into the model (canonical or other known module names), with
/// the adapter's scale and dropout. Every adapter module must exist in the model with matching
/// shapes; all problems are listed.
pub fn load_adapter<M: LoraModel>(
    model: &mut M,
    adapter: &PeftAdapter,
    device: &Device,
) -> Result<Vec<String>, LoraError> {
    let config = &adapter.config;
    check_refused(model, config)?;
    let mut by_name: std::collections::BTreeMap<String, &LoraFactors> = std::collections::BTreeMap::new();
    let mut problems = Vec::new();
    for (k, v) in &adapter.factors {
        let canonical = model.canonical_name(k)?;
        if by_name.insert(canonical.clone(), v).is_some() {
            problems
                .push(format!("`{k}`: a second spelling of `{canonical}`, which the adapter already has"));
        }
    }
    let mut loaded = Vec::new();
    for (name, mut slot) in model.lora_linears()? {
        let Some(f) = by_name.remove(&name) else { continue };
        let (d_in, d_out) = slot.dims();
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
        slot.attach(LoraBranch::from_factors(a, b, config.scale(rank, alpha), config.lora_dropout));
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

/// The adapter a model carries: the factors of every branch under its canonical PEFT module name,
/// `config` as the adapter's configuration, and `saved` (e.g. a classifier head as
/// `classifier.weight` / `classifier.bias`, PyTorch layout) as its `modules_to_save` tensors.
/// Merged branches are refused: their factors are still in the base weight.
pub fn extract_adapter<M: LoraModel>(
    model: &M,
    config: &LoraConfig,
    saved: std::collections::BTreeMap<String, AdapterTensor>,
) -> Result<PeftAdapter, LoraError> {
    let mut model = model.clone();
    let mut factors = std::collections::BTreeMap::new();
    for (name, slot) in model.lora_linears()? {
        let Some(branch) = slot.branch() else { continue };
        if slot.is_merged() {
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
