//! `calibra features --encoder <timm checkpoint dir>` end to end (issue #17 item 3): a timm
//! `save_for_hf` directory (no preprocessor_config.json) loads, takes its eval transform from
//! `pretrained_cfg`, and writes probe features of the model's width; a timm option calibra does not
//! implement is refused naming it (exit 1, no panic, nothing written).
mod common;

use std::path::{Path, PathBuf};

use common::calibra;

fn timm_fixture(variant: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/timm").join(variant)
}

fn copy_checkpoint(variant: &str, to: &Path) -> PathBuf {
    let dir = to.join(variant);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(timm_fixture(variant).join(f), dir.join(f)).unwrap();
    }
    dir
}

fn features(encoder: &Path, out: &Path) -> std::process::Output {
    calibra(&[
        "features",
        "--encoder",
        encoder.to_str().unwrap(),
        "--data",
        "synth:derm?n=12&size=40",
        "--split",
        "test",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn features_from_a_timm_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = copy_checkpoint("reg4", tmp.path());
    let out = tmp.path().join("f.safetensors");
    let run = features(&ck, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // the safetensors header: 8-byte length, then JSON naming each tensor's shape
    let bytes = std::fs::read(&out).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let (key, entry) = header
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.starts_with("features"))
        .unwrap_or_else(|| panic!("{header}"));
    let shape: Vec<u64> = entry["shape"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    assert_eq!(shape[1], 32, "{key}: {shape:?}");
    assert!(shape[0] > 0);
}

#[test]
fn an_unsupported_timm_option_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = copy_checkpoint("token", tmp.path());
    let cfg = ck.join("config.json");
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    json["model_args"]["qk_norm"] = true.into();
    std::fs::write(&cfg, json.to_string()).unwrap();
    let out = tmp.path().join("f.safetensors");
    let run = features(&ck, &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("option 'qk_norm'"), "{stderr}");
    assert!(!out.exists());
}
