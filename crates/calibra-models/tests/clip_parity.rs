//! CLIP parity with transformers 5.24.0 `CLIPModel` on the tiny random checkpoint written by
//! scripts/golden/encoders_clip.py (tests/fixtures/clip/). Tolerance: 1e-4 absolute (f32).

use std::path::PathBuf;

use burn::prelude::*;
use calibra_models::clip::{ClipModel, ClipVisionTransformer};
use serde_json::Value;

mod common;
use common::{assert_within, flat};

const TOL: f32 = 1e-4;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clip")
}

fn golden() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture().join("golden.json")).unwrap()).unwrap()
}

fn tensor4(v: &Value, device: &Device) -> Tensor<4> {
    let (data, shape) = flat(v);
    Tensor::from_data(TensorData::new(data, [shape[0], shape[1], shape[2], shape[3]]), device)
}

fn assert_close<const D: usize>(name: &str, got: Tensor<D>, want: &Value) -> f32 {
    assert_within(name, got, want, TOL)
}

fn ids(g: &Value) -> Vec<Vec<u32>> {
    g["input_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect())
        .collect()
}

#[test]
fn clip_model_matches_transformers() {
    let device = Device::flex();
    let g = golden();
    let (model, config) = ClipModel::load(fixture().to_str().unwrap(), &device).unwrap();
    assert_eq!(config.vision.n_layers, 3);
    assert_eq!(config.projection_dim, 32);
    let block = g["intermediate_block"].as_u64().unwrap() as usize;
    let images = tensor4(&g["pixel_values"], &device);
    let ids = ids(&g);
    let out = model.forward(images.clone(), &ids, true).unwrap();

    assert_close(
        "vision last_hidden_state",
        out.vision.last_hidden_state.clone(),
        &g["vision_last_hidden_state"],
    );
    assert_close("vision block output", out.vision.hidden_states[block].clone(), &g["vision_block_output"]);
    assert_close("vision pooled", out.vision.pooled.clone(), &g["vision_pooled"]);
    assert_close("image_embeds", out.image_embeds.clone(), &g["image_embeds"]);
    assert_close("text last_hidden_state", out.text.last_hidden_state.clone(), &g["text_last_hidden_state"]);
    assert_close("text block output", out.text.hidden_states[block].clone(), &g["text_block_output"]);
    assert_close("text pooled", out.text.pooled.clone(), &g["text_pooled"]);
    assert_close("text_embeds", out.text_embeds.clone(), &g["text_embeds"]);
    assert_close("logits_per_image", out.logits_per_image.clone(), &g["logits_per_image"]);

    assert_close("get_image_features", model.image_features(images).unwrap(), &g["image_features"]);
    assert_close("get_text_features", model.text_features(&ids, &device).unwrap(), &g["text_features"]);
    let scale = g["logit_scale"].as_f64().unwrap() as f32;
    assert!((model.logit_scale_exp() - scale.exp()).abs() <= 1e-5 * scale.exp());
}

#[test]
fn clip_vision_tower_alone_matches_transformers() {
    let device = Device::flex();
    let g = golden();
    let (tower, _) = ClipVisionTransformer::load(fixture().to_str().unwrap(), &device).unwrap();
    let out = tower.forward(tensor4(&g["pixel_values"], &device)).unwrap();
    assert_close("vision pooled (tower alone)", out.pooled, &g["vision_pooled"]);
}

#[test]
fn clip_vision_interpolates_positions_like_transformers() {
    // 36x42 px = 6x7 patches against a 5x5 training grid: HF `interpolate_pos_encoding=True`.
    let device = Device::flex();
    let g = golden();
    let hr = &g["interpolated"];
    let (tower, _) = ClipVisionTransformer::load(fixture().to_str().unwrap(), &device).unwrap();
    let out = tower.forward(tensor4(&hr["pixel_values"], &device)).unwrap();
    assert_close("interpolated last_hidden_state", out.last_hidden_state, &hr["last_hidden_state"]);
    assert_close("interpolated pooled", out.pooled, &hr["pooled"]);
}

#[test]
fn a_renamed_key_is_reported_by_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture().join("config.json"), dir.path().join("config.json")).unwrap();
    let bytes = std::fs::read(fixture().join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let renamed: Vec<(String, safetensors::tensor::TensorView<'_>)> = st
        .tensors()
        .into_iter()
        .map(|(k, v)| {
            (
                if k == "text_model.final_layer_norm.weight" {
                    "text_model.final_norm.weight".into()
                } else {
                    k
                },
                v,
            )
        })
        .collect();
    safetensors::serialize_to_file(renamed, None, &dir.path().join("model.safetensors")).unwrap();
    let err = ClipModel::load(dir.path().to_str().unwrap(), &Device::flex()).unwrap_err().to_string();
    assert!(err.contains("text_model.final_norm.weight"), "unused key not named: {err}");
    assert!(err.contains("final_layer_norm"), "missing parameter not named: {err}");
}
