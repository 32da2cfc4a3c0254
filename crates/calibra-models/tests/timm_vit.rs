//! timm ViT checkpoints (issue #17 item 3): the Hugging Face layout timm's `save_for_hf` writes,
//! loaded as frozen encoders, against timm 1.0.31.
//!
//! Fixtures and reference outputs come from `scripts/golden/encoders_timm.py` (tiny random models,
//! float32, re-created by timm from the fixture directory). Tolerance: 1e-4 absolute per element.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::encoder::{Encoder, EncoderModel};

mod common;
use common::{copy_with_config, load_err, max_abs_diff, read_tensors};

const TOL: f32 = 1e-4;
const VARIANTS: &[&str] = &["token", "avg_fc_norm", "reg4", "deit3_layerscale", "clip_prenorm"];

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/timm").join(rel)
}

fn images(g: &HashMap<String, (Vec<usize>, Vec<f32>)>, device: &Device) -> Tensor<4> {
    common::golden_images(g, "pixel_values", device)
}

/// Every tensor of a safetensors file but the classifier `head`: name → (dtype, shape, bytes).
fn tensors_without_head(path: &Path) -> std::collections::BTreeMap<String, (String, Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensors()
        .into_iter()
        .filter(|(n, _)| !n.starts_with("head."))
        .map(|(n, t)| (n, (format!("{:?}", t.dtype()), t.shape().to_vec(), t.data().to_vec())))
        .collect()
}

/// `save_pretrained` writes timm's own layout back: for every variant, the saved file holds exactly
/// the tensors of timm's `save_for_hf` file (the classifier `head` aside), with the same names,
/// types, shapes and bytes (`qkv` re-fused), and reloads to the same features. This is what a full
/// fine-tune of a timm ViT (RETFound, PanDerm after their conversion) writes.
#[test]
fn timm_checkpoints_save_back_in_timms_layout() {
    let device = Device::flex();
    for variant in VARIANTS {
        let dir = fixture(variant);
        let encoder = Encoder::load_dir(&dir, &device).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("saved");
        encoder.save_pretrained(&out).unwrap_or_else(|e| panic!("{variant}: {e}"));
        let saved = std::fs::read(out.join("model.safetensors")).unwrap();
        let names = safetensors::SafeTensors::deserialize(&saved).unwrap().names().len();
        let (want, got) = (
            tensors_without_head(&dir.join("model.safetensors")),
            tensors_without_head(&out.join("model.safetensors")),
        );
        assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{variant}: names");
        assert_eq!(names, got.len(), "{variant}: no classifier `head` in the encoder's file");
        for (name, w) in &want {
            assert!(got[name] == *w, "{variant}: '{name}' differs from timm's file");
        }
        let g = read_tensors(&dir.join("golden.safetensors"));
        let reloaded = Encoder::load_dir(&out, &device).unwrap();
        let (a, b) =
            (encoder.embed(images(&g, &device)).unwrap(), reloaded.embed(images(&g, &device)).unwrap());
        assert_eq!(a.into_data(), b.into_data(), "{variant}: features after the round trip");
    }
}

/// `Encoder::embed` equals timm's `forward_head(forward_features(x), pre_logits=True)`, the last
/// hidden state equals `forward_features`, block 0's output equals `forward_intermediates`, and
/// depth 1.0 equals `embed`, for every variant.
#[test]
fn timm_features_match_timm() {
    let device = Device::flex();
    for variant in VARIANTS {
        let dir = fixture(variant);
        let encoder = Encoder::load_dir(&dir, &device).unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert!(matches!(encoder.model, EncoderModel::TimmVit(_)), "{variant}");
        let g = read_tensors(&dir.join("golden.safetensors"));
        let x = images(&g, &device);
        let features = encoder.embed(x.clone()).unwrap();
        let d = max_abs_diff(&features, &g["features"]);
        println!("{variant}: features max |diff| {d:.2e}");
        assert!(d < TOL, "{variant}: features max |diff| {d}");
        let out = encoder.forward(x.clone(), true).unwrap();
        let d_last = max_abs_diff(&out.last_hidden_state, &g["last"]);
        assert!(d_last < TOL, "{variant}: forward_features max |diff| {d_last}");
        let d_block = max_abs_diff(&out.hidden_states[1], &g["block0"]);
        assert!(d_block < TOL, "{variant}: block 0 output max |diff| {d_block}");
        println!("{variant}: forward_features {d_last:.2e}, block0 {d_block:.2e}");
        assert_eq!(encoder.num_layers(), 2);
        let depths = encoder.embed_at_depths(x.clone(), &[1.0]).unwrap();
        let same =
            (depths[0].clone() - features.clone()).abs().max().into_data().as_slice::<f32>().unwrap()[0];
        assert!(same < 1e-5, "{variant}: depth 1.0 vs embed {same}");
        let cls = encoder.classification_feature(x).unwrap();
        assert_eq!(cls.dims(), [2, encoder.classification_dim()], "{variant}");
    }
}

/// Options calibra does not implement are refused by name, never loaded approximately.
#[test]
fn timm_unsupported_options_are_refused_by_name() {
    for (key, value, words) in [
        ("qk_norm", serde_json::json!(true), "LayerNorm of queries and keys"),
        ("global_pool", serde_json::json!("map"), "attention pooling"),
        ("global_pool", serde_json::json!(""), "no pooling"),
        ("class_token", serde_json::json!(false), "'token' pooling needs the class token"),
        ("norm_layer", serde_json::json!("rmsnorm"), "only LayerNorm"),
        ("act_layer", serde_json::json!("silu"), "only 'gelu'"),
        ("block_fn", serde_json::json!("ParallelScalingBlock"), "default Block"),
        ("img_size", serde_json::json!([32, 48]), "only square"),
        ("use_naflex", serde_json::json!(true), "does not implement this option"),
    ] {
        let tmp = copy_with_config(&fixture("token"), |c| {
            c["model_args"][key] = value.clone();
        });
        let err = load_err(tmp.path());
        assert!(err.contains(&format!("option '{key}'")), "{key}: {err}");
        assert!(err.contains(words), "{key}: {err}");
        assert!(err.contains("config.json"), "{key}: {err}");
    }
    // An architecture's own default that calibra does not implement (SigLIP's attention pool).
    let tmp = copy_with_config(&fixture("token"), |c| {
        c["architecture"] = "vit_base_patch16_siglip_224".into();
        c["model_args"].as_object_mut().unwrap().remove("global_pool");
    });
    let err = load_err(tmp.path());
    assert!(err.contains("option 'global_pool' = \"map\""), "{err}");
}

/// A timm architecture that is not a ViT (nor a ResNet, which `tests/resnet_parity.rs` covers)
/// names itself and lists the supported ones.
#[test]
fn timm_non_vit_architecture_is_refused() {
    let tmp = copy_with_config(&fixture("token"), |c| {
        c["architecture"] = "convnext_tiny".into();
    });
    let err = load_err(tmp.path());
    assert!(err.contains("timm architecture 'convnext_tiny'"), "{err}");
    assert!(err.contains("vit_base_patch16_224"), "{err}");
    assert!(err.contains("deit3_small_patch16_224"), "{err}");
}

/// Inputs of another size than timm accepts are an error, not a wrong feature; a corrupt fused qkv
/// is an error naming the tensor; LoRA reaching the patch Conv2d is refused; saving is refused.
#[test]
fn timm_bad_inputs_are_errors() {
    let device = Device::flex();
    let encoder = Encoder::load_dir(&fixture("token"), &device).unwrap();
    let err = encoder.embed(Tensor::zeros([1, 3, 40, 40], &device)).unwrap_err().to_string();
    assert!(err.contains("takes exactly 32x32"), "{err}");
    let err = encoder.embed(Tensor::zeros([1, 1, 32, 32], &device)).unwrap_err().to_string();
    assert!(err.contains("channels"), "{err}");
    // LoRA names timm's modules as PEFT does; `proj` alone also reaches the patch Conv2d, refused.
    let mut lora_target = Encoder::load_dir(&fixture("token"), &device).unwrap();
    let lora: calibra_models::lora::LoraConfig =
        serde_json::from_str(r#"{"r": 2, "target_modules": ["qkv"]}"#).unwrap();
    let wrapped = calibra_models::lora::apply_lora(&mut lora_target, &lora, 0).unwrap();
    assert_eq!(wrapped, ["blocks.0.attn.qkv", "blocks.1.attn.qkv"]);
    let lora: calibra_models::lora::LoraConfig =
        serde_json::from_str(r#"{"r": 2, "target_modules": ["proj"]}"#).unwrap();
    let err = calibra_models::lora::apply_lora(&mut lora_target, &lora, 0).unwrap_err().to_string();
    assert!(err.contains("`patch_embed.proj`: timm's patch embedding is a Conv2d"), "{err}");

    // a qkv whose rows are not a multiple of 3
    let bytes = std::fs::read(fixture("token").join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut owned: Vec<(String, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, v)| {
            let (mut shape, mut data) = (v.shape().to_vec(), v.data().to_vec());
            if n == "blocks.1.attn.qkv.bias" {
                shape[0] -= 1;
                data.truncate(data.len() - 4);
            }
            (n, shape, data)
        })
        .collect();
    owned.sort();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = owned
        .iter()
        .map(|(n, s, d)| {
            (n.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), d).unwrap())
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("token").join("config.json"), tmp.path().join("config.json")).unwrap();
    safetensors::serialize_to_file(views, None, &tmp.path().join("model.safetensors")).unwrap();
    let err = load_err(tmp.path());
    assert!(err.contains("blocks.1.attn.qkv.bias"), "{err}");
}

/// Odd values for every option either load or are an error: never a panic, an abort or a huge
/// allocation (sizes are checked against the weights file before any tensor is made).
#[test]
fn timm_odd_option_values_are_errors_not_panics() {
    let odd = [
        serde_json::json!(0),
        serde_json::json!(-1),
        serde_json::json!(1e30),
        serde_json::json!(1048576),
        serde_json::json!("x"),
        serde_json::json!([]),
        serde_json::json!([0, 0]),
        serde_json::json!(null),
        serde_json::json!(true),
    ];
    let keys = [
        "img_size",
        "patch_size",
        "in_chans",
        "embed_dim",
        "depth",
        "num_heads",
        "mlp_ratio",
        "reg_tokens",
        "init_values",
        "global_pool",
        "class_token",
        "no_embed_class",
        "fc_norm",
        "pre_norm",
        "final_norm",
        "qkv_bias",
        "norm_layer",
        "act_layer",
        "num_classes",
    ];
    let device = Device::flex();
    for key in keys {
        for value in &odd {
            let tmp = copy_with_config(&fixture("reg4"), |c| {
                c["model_args"][key] = value.clone();
            });
            if let Ok(e) = Encoder::load_dir(tmp.path(), &device) {
                // loaded: the forward pass is fine too, or an input error
                let _ = e.embed(Tensor::zeros([1, 3, 32, 32], &device));
            }
        }
    }
    for edit in [
        serde_json::json!({"pretrained_cfg": {"input_size": [3, 1048576, 1048576], "fixed_input_size": true}}),
        serde_json::json!({"pretrained_cfg": "x"}),
        serde_json::json!({"model_args": [1]}),
        serde_json::json!({"architecture": 5}),
    ] {
        let tmp = copy_with_config(&fixture("reg4"), |c| {
            for (k, v) in edit.as_object().unwrap() {
                c[k] = v.clone();
            }
            c["model_args"].as_object_mut().map(|m| m.remove("img_size"));
        });
        assert!(Encoder::load_dir(tmp.path(), &device).is_err(), "{edit}");
    }
}
