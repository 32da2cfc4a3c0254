//! SigLIP vision parity with transformers 5.24.0 `SiglipVisionModel` on the tiny random checkpoint
//! written by scripts/golden/encoders_clip.py (tests/fixtures/siglip/). Tolerance: 1e-4 absolute (f32).

use std::path::PathBuf;

use burn::prelude::*;
use calibra_models::hf::read_config;
use calibra_models::siglip::SiglipVisionTransformer;
use serde_json::Value;

mod common;
use common::flat;

const TOL: f32 = 1e-4;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/siglip")
}

fn golden() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture().join("golden.json")).unwrap()).unwrap()
}

fn max_diff<const D: usize>(name: &str, got: Tensor<D>, want: &Value) -> f32 {
    let (want, shape) = flat(want);
    assert_eq!(got.dims().to_vec(), shape, "{name}: shape");
    let got: Vec<f32> = got.into_data().try_to_vec::<f32>().unwrap();
    got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max)
}

fn images(g: &Value, device: &Device) -> Tensor<4> {
    let (data, s) = flat(&g["pixel_values"]);
    Tensor::from_data(TensorData::new(data, [s[0], s[1], s[2], s[3]]), device)
}

fn check(tower: &SiglipVisionTransformer, g: &Value, device: &Device, what: &str) {
    let out = tower.forward_full(images(g, device), true).unwrap();
    let block = g["intermediate_block"].as_u64().unwrap() as usize;
    for (name, got, want) in [
        ("last_hidden_state", out.last_hidden_state.clone(), &g["last_hidden_state"]),
        ("block output", out.hidden_states[block].clone(), &g["block_output"]),
    ] {
        let d = max_diff(name, got, want);
        eprintln!("{what}: {name}: max |diff| {d:e}");
        assert!(d <= TOL, "{what}: {name}: max |diff| {d:e} > {TOL:e}");
    }
    let d = max_diff("pooled", out.pooled, &g["pooled"]);
    eprintln!("{what}: pooled: max |diff| {d:e}");
    assert!(d <= TOL, "{what}: pooled (attention-pool head): max |diff| {d:e} > {TOL:e}");
}

#[test]
fn siglip_vision_matches_transformers() {
    let device = Device::flex();
    let (tower, config) = SiglipVisionTransformer::load(fixture().to_str().unwrap(), &device).unwrap();
    assert!(config.use_head);
    check(&tower, &golden(), &device, "5.x key names");
}

#[test]
fn siglip_vision_loads_transformers_4x_key_names() {
    let device = Device::flex();
    let cfg = read_config(&fixture().join("config.json")).unwrap();
    let (tower, _) =
        SiglipVisionTransformer::load_with(&cfg, &fixture().join("v4/model.safetensors"), &device).unwrap();
    check(&tower, &golden(), &device, "4.x key names (vision_model. prefix)");
}

#[test]
fn siglip_vision_interpolates_positions_like_transformers() {
    // 36x42 px = 6x7 patches against a 5x5 training grid: HF `interpolate_pos_encoding=True`.
    let device = Device::flex();
    let g = golden();
    let hr = &g["interpolated"];
    let (tower, _) = SiglipVisionTransformer::load(fixture().to_str().unwrap(), &device).unwrap();
    let out = tower.forward(images(hr, &device)).unwrap();
    let d = max_diff("last_hidden_state", out.last_hidden_state, &hr["last_hidden_state"]);
    eprintln!("interpolated: last_hidden_state: max |diff| {d:e}");
    assert!(d <= TOL, "interpolated last_hidden_state: max |diff| {d:e}");
    let d = max_diff("pooled", out.pooled, &hr["pooled"]);
    eprintln!("interpolated: pooled: max |diff| {d:e}");
    assert!(d <= TOL, "interpolated pooled: max |diff| {d:e}");
}
