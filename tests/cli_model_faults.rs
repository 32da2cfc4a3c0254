//! Issue 20 end to end: a checkpoint with a non-finite weight, a config the forward pass cannot run
//! with, or weights that make the encoder compute non-finite features make `calibra features` and
//! `calibra zero-shot` fail with a message naming the tensor, key or sample — exit 1, never a panic
//! (101) and never a written output file.
mod common;

use std::path::Path;

use common::{calibra, tiny_clip_checkpoint, tiny_vit_checkpoint};

/// Overwrites values of the F32 tensor `name` of a safetensors file in place: `value(i)` for the
/// `i`-th element, `None` keeps it.
fn patch_f32(path: &Path, name: &str, value: impl Fn(usize) -> Option<f32>) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let entry = &header[name];
    assert_eq!(entry["dtype"], "F32", "{name}");
    let start = 8 + n + entry["data_offsets"][0].as_u64().unwrap() as usize;
    let end = 8 + n + entry["data_offsets"][1].as_u64().unwrap() as usize;
    for (i, chunk) in bytes[start..end].chunks_exact_mut(4).enumerate() {
        if let Some(v) = value(i) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).unwrap();
}

fn features(encoder: &Path, out: &Path) -> std::process::Output {
    calibra(&[
        "features",
        "--encoder",
        encoder.to_str().unwrap(),
        "--data",
        "synth:derm?n=12&size=32",
        "--split",
        "test",
        "--out",
        out.to_str().unwrap(),
    ])
}

fn assert_refused(out: &std::process::Output, expect: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for e in expect {
        assert!(stderr.contains(e), "expected `{e}` in: {stderr}");
    }
}

#[test]
fn a_nan_weight_is_refused_naming_the_tensor_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ck = tiny_vit_checkpoint(dir.path());
    let key = "encoder.layer.0.attention.attention.key.weight";
    patch_f32(&ck.join("model.safetensors"), key, |i| (i == 5).then_some(f32::NAN));
    let out_file = dir.path().join("f.safetensors");
    assert_refused(&features(&ck, &out_file), &[key, "not finite"]);
    assert!(!out_file.exists());
}

#[test]
fn a_zero_patch_size_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let ck = tiny_vit_checkpoint(dir.path());
    let cfg = ck.join("config.json");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("\"patch_size\": 6", "\"patch_size\": 0");
    std::fs::write(&cfg, text).unwrap();
    let out_file = dir.path().join("f.safetensors");
    assert_refused(&features(&ck, &out_file), &["config.json", "'patch_size'"]);
    assert!(!out_file.exists());
}

/// Finite weights can still overflow: a final LayerNorm scale of 3e38 makes the features infinite.
/// The feature pass names the first sample and writes nothing (before, the file was written).
#[test]
fn non_finite_features_are_refused_naming_the_sample_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ck = tiny_vit_checkpoint(dir.path());
    patch_f32(&ck.join("model.safetensors"), "layernorm.weight", |_| Some(3e38));
    let out_file = dir.path().join("f.safetensors");
    assert_refused(&features(&ck, &out_file), &["non-finite feature", "for sample `"]);
    assert!(!out_file.exists());
}

#[test]
fn zero_shot_refuses_non_finite_image_features_naming_the_sample() {
    let dir = tempfile::tempdir().unwrap();
    let ck = tiny_clip_checkpoint(dir.path());
    patch_f32(&ck.join("model.safetensors"), "vision_model.post_layernorm.weight", |_| Some(3e38));
    let out = dir.path().join("zs");
    let result = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        "synth:derm?n=12&size=32",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_refused(&result, &["non-finite image feature", "for sample `"]);
    assert!(!out.join("runs.jsonl").exists());
}
