//! `calibra train --regime lora` on a family other than ViT (issue #17): the shipped tiny CLIP's
//! vision tower trains, the adapter names the modules as PEFT does on `CLIPForImageClassification`
//! (the recipe target `out_proj` reaching `self_attn.out_proj`), and loaded back onto the base
//! checkpoint it gives the recorded logits.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::calibra;

const DATA: &str = "synth:derm?n=64&size=32";

#[test]
fn lora_trains_on_the_tiny_clip_vision_tower_with_peft_names() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let store = tmp.path().join("store");
    let out = calibra(&[
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "lora",
        "--epochs",
        "1",
        "--lr",
        "1e-3",
        "--lora-targets",
        "query,value,out_proj",
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let fits: Vec<PathBuf> = fs::read_dir(store.join("fits")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(fits.len(), 1);
    let adapter = fits[0].join("adapter");
    let read = calibra_models::lora::peft::PeftAdapter::read(&adapter).unwrap();
    let modules: Vec<&String> = read.factors.keys().collect();
    // 4 blocks × (q, v, out).
    assert_eq!(modules.len(), 12, "{modules:?}");
    assert!(modules.iter().all(|n| n.starts_with("vision_model.encoder.layers.")), "{modules:?}");
    assert!(read.factors.contains_key("vision_model.encoder.layers.3.self_attn.out_proj"), "{modules:?}");
    assert!(read.saved.contains_key("classifier.weight"));

    // Loaded back onto the base checkpoint, the adapter gives the recorded clean-test logits.
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let clean =
        records.iter().find(|r| r["condition"]["kind"] == "clean" && r["calibrator"] == "none").unwrap();
    common::assert_adapter_reproduces(
        &ck,
        &adapter,
        &store.join(clean["paths"]["predictions"].as_str().unwrap()),
        DATA,
    );
}
