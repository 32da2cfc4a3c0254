//! `calibra features --encoder <ResNet checkpoint dir>` end to end (issue #17 item 5): a timm ResNet
//! `save_for_hf` directory takes its eval transform from `pretrained_cfg`, and a `--layers` fraction
//! picks a stage output, as wide as that stage; several fractions of different widths in one file are
//! refused (a features file holds one width).
mod common;

use std::path::{Path, PathBuf};

use common::calibra;

fn copy_checkpoint(variant: &str, to: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/calibra-models/tests/fixtures/resnet")
        .join(variant);
    let dir = to.join(variant);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    dir
}

fn features(ck: &Path, out: &Path, layers: &str) -> std::process::Output {
    calibra(&[
        "features",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        "synth:derm?n=12&size=40",
        "--split",
        "test",
        "--layers",
        layers,
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The width of the one feature tensor of a features file.
fn width(out: &Path) -> u64 {
    // the safetensors header: 8-byte length, then JSON naming each tensor's shape
    let bytes = std::fs::read(out).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let widths: Vec<u64> = header
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("features"))
        .map(|(_, e)| e["shape"][1].as_u64().unwrap())
        .collect();
    assert_eq!(widths.len(), 1, "{header}");
    widths[0]
}

/// The fixture's stages are 16, 32, 48 and 64 wide (timm `channels` 4, 8, 12, 16, × 4): depth 0.25 is
/// stage 1, 0.5 stage 2, 1.0 stage 4 (the pooled feature).
#[test]
fn stage_features_from_a_timm_resnet() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = copy_checkpoint("timm_resnet50", tmp.path());
    for (layers, want) in [("0.25", 16), ("0.5", 32), ("1.0", 64)] {
        let out = tmp.path().join(format!("f{layers}.safetensors"));
        let run = features(&ck, &out, layers);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "{layers}: {stderr}");
        assert_eq!(width(&out), want, "{layers}");
    }
    // Several depths of different widths cannot share one file: refused, naming the widths.
    let out = tmp.path().join("all.safetensors");
    let run = features(&ck, &out, "0.25,1.0");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("[16, 64] wide") && !stderr.contains("panicked"), "{stderr}");
    assert!(!out.exists());
}

/// `calibra run`'s frozen regime at several depths on a transformers ResNet: one feature pass per
/// depth, so every stage's width works, and a logistic probe is fitted at each.
#[test]
fn frozen_run_probes_every_stage_of_a_resnet() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = copy_checkpoint("hf_bottleneck", tmp.path());
    let pre = r#"{"size": {"height": 32, "width": 32}, "resample": 2, "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5]}"#;
    std::fs::write(ck.join("preprocessor_config.json"), pre).unwrap();
    let recipe = tmp.path().join("frozen.toml");
    std::fs::write(
        &recipe,
        format!(
            r#"name = "frozen-resnet"
seeds = [0]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
name = "tiny-resnet"
source = "{}"

[[datasets]]
name = "derm"
spec = "synth:derm?n=120&size=32"

[regimes.frozen]
probes = ["logistic"]
layers = [0.25, 0.5, 1.0]
"#,
            ck.display()
        ),
    )
    .unwrap();
    let store = tmp.path().join("store");
    let out = calibra(&["run", recipe.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 3, "{records:?}");
    // The depth is part of the probe's name (the final depth unsuffixed).
    let mut probes: Vec<&str> = records.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    probes.sort();
    assert_eq!(probes, ["logistic", "logistic@0.25", "logistic@0.5"], "{records:?}");
    for r in &records {
        let auroc = r["metrics"]["macro_auroc"].as_f64().expect("AUROC recorded");
        assert!((0.0..=1.0).contains(&auroc), "{r}");
    }
}
