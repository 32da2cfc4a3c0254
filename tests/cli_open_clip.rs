//! A native OpenCLIP checkpoint directory (`open_clip_config.json` + `open_clip_model.safetensors`,
//! no tokenizer or preprocessor files: the tiny `gelu` fixture of calibra-models, written by
//! scripts/golden/encoders_open_clip.py) works wherever a CLIP directory works: `calibra features`
//! (the vision tower as a frozen encoder), `calibra zero-shot` and `calibra train --regime coop`
//! (CoOp, KgCoOp, ProGrad); `--regime lora` is refused up front.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use calibra_crs::RunRecordSet;
use common::{calibra, feature_width};

const DATA: &str = "synth:derm?n=60&size=32";

/// A copy of the OpenCLIP fixture (the two hub files only) under `dir/tiny-open-clip`.
fn checkpoint(dir: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/open_clip/gelu");
    let ck = dir.join("tiny-open-clip");
    fs::create_dir_all(&ck).unwrap();
    for f in ["open_clip_config.json", "open_clip_model.safetensors"] {
        fs::copy(src.join(f), ck.join(f)).unwrap();
    }
    ck
}

#[test]
fn zero_shot_runs_on_an_open_clip_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let out = tmp.path().join("zs");
    let run = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "P1,P3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let set = RunRecordSet::from_path(&out.join("runs.jsonl")).unwrap();
    assert_eq!(set.len(), 2);
    for located in set.records() {
        let r = &located.record;
        assert_eq!(r.encoder, "tiny-open-clip");
        assert!(r.metrics["accuracy"].is_finite() && r.metrics["nll"].is_finite(), "{:?}", r.metrics);
    }
}

#[test]
fn features_from_an_open_clip_vision_tower() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    // The fixture's vision width (ln_post of the class token, before visual.proj).
    assert_eq!(feature_width(&ck, DATA, &tmp.path().join("f.safetensors")), 16);
}

#[test]
fn coop_methods_train_on_an_open_clip_directory_and_lora_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let store = tmp.path().join("store");
    let base = ["train", "--encoder", ck.to_str().unwrap(), "--data", DATA];
    let mut args = base.to_vec();
    args.extend(["--regime", "coop", "--n-ctx", "4", "--epochs", "2", "--lr", "0.02", "--out"]);
    args.push(store.to_str().unwrap());
    let run = calibra(&args);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r["regime"] == "coop"), "{text}");

    for method in ["kgcoop", "prograd"] {
        let method_store = tmp.path().join(method);
        let mut args = base.to_vec();
        args.extend(["--regime", "coop", "--method", method, "--n-ctx", "4", "--epochs", "1", "--out"]);
        args.push(method_store.to_str().unwrap());
        let run = calibra(&args);
        assert!(run.status.success(), "{method}: {}", String::from_utf8_lossy(&run.stderr));
        assert!(method_store.join("runs.jsonl").is_file(), "{method}");
    }

    let lora_store = tmp.path().join("lora");
    let mut args = base.to_vec();
    args.extend(["--regime", "lora", "--out"]);
    args.push(lora_store.to_str().unwrap());
    let run = calibra(&args);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("open_clip") && stderr.contains("LoRA"), "{stderr}");
}
