//! PanDerm's checkpoints converted by `calibra_models::timm::panderm::convert_panderm`, against
//! PanDerm's own `modeling_finetune.py` (scripts/golden/encoders_panderm.py runs it and writes
//! tests/fixtures/panderm/): the encoder's feature within 1e-4 of PanDerm's linear-probing
//! `forward_features`, with the checkpoint's `pos_embed` and with PanDerm's sin-cos table computed
//! here; names PanDerm's ViT does not have are dropped, as its strict=False load ignores them.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::Encoder;
use calibra_models::timm::panderm::{convert_panderm, sincos_position_embedding};

mod common;
use common::{GoldenTensors, assert_close_to, golden_images, read_tensors};

const TOL: f32 = 1e-4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/panderm").join(name)
}

fn golden() -> GoldenTensors {
    read_tensors(&fixture("golden.safetensors"))
}

#[test]
fn a_checkpoint_gives_panderms_linear_probe_feature() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("panderm");
    let done = convert_panderm(&fixture("checkpoint.pth"), &out, None, Some(4)).unwrap();
    let s = done.shape;
    assert_eq!((s.embed_dim, s.depth, done.num_heads, s.patch, s.img_size()), (32, 2, 4, 8, 32));
    assert!(!done.pos_embed_computed);
    assert_eq!(done.ignored, 4, "{}", done.ignored_sample);
    let device = Device::flex();
    let g = golden();
    let encoder = Encoder::load_dir(&out, &device).unwrap();
    let got = encoder.embed(golden_images(&g, "pixel_values", &device)).unwrap();
    assert_close_to("features", &got, &g["features"], TOL);
}

#[test]
fn without_pos_embed_panderms_sincos_table_is_used() {
    let g = golden();
    let table = sincos_position_embedding(32, 14);
    let (shape, want) = &g["pos_embed_224"];
    assert_eq!(shape, &[1, 197, 32]);
    let diff = table.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    eprintln!("sin-cos table: max |diff| {diff:e}");
    assert!(diff <= 1e-5, "{diff:e}");

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("panderm-224");
    let done = convert_panderm(&fixture("no_pos_embed.pth"), &out, None, Some(4)).unwrap();
    assert!(done.pos_embed_computed);
    assert_eq!(done.shape.img_size(), 224);
    let device = Device::flex();
    let encoder = Encoder::load_dir(&out, &device).unwrap();
    // The script's image: x[0, c, h, w] = sin(0.01 · (97c + 13h + 7w)).
    let mut pixels = Vec::with_capacity(3 * 224 * 224);
    for c in 0..3 {
        for h in 0..224 {
            for w in 0..224 {
                pixels.push((0.01f32 * (97 * c + 13 * h + 7 * w) as f32).sin());
            }
        }
    }
    let image = Tensor::from_data(TensorData::new(pixels, [1, 3, 224, 224]), &device);
    assert_close_to("features_224", &encoder.embed(image).unwrap(), &g["features_224"], TOL);
}

#[test]
fn missing_parameters_are_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    // The RETFound fixture has no LayerScale or q/v biases: not PanDerm's ViT.
    let retfound = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/retfound/mae_pretrain.pth");
    let e = convert_panderm(&retfound, &out, None, Some(4)).unwrap_err().to_string();
    assert!(e.contains("gamma_1") || e.contains("q_bias"), "{e}");
    let e = convert_panderm(&fixture("checkpoint.pth"), &out, None, None).unwrap_err().to_string();
    assert!(e.contains("--num-heads"), "{e}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
}
