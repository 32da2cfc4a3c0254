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

/// `calibra train --regime lora` on a ViT-MAE checkpoint (the tiny `ViTMAEForPreTraining` fixture of
/// scripts/golden/encoders_mae.py, decoder included, with a 30-px ViT image processor beside it): the
/// adapter uses `ViTForImageClassification`'s names, and loaded back it gives the recorded logits.
#[test]
fn lora_trains_on_a_vit_mae_pretraining_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/calibra-models/tests/fixtures/vit_mae/pretraining");
    let ck = tmp.path().join("mae");
    fs::create_dir(&ck).unwrap();
    for file in ["config.json", "model.safetensors"] {
        fs::copy(fixture.join(file), ck.join(file)).unwrap();
    }
    let processor = serde_json::json!({
        "image_processor_type": "ViTImageProcessor", "do_resize": true, "do_rescale": true,
        "do_normalize": true, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
        "resample": 3, "rescale_factor": 1.0 / 255.0, "size": {"height": 30, "width": 30}
    });
    fs::write(ck.join("preprocessor_config.json"), processor.to_string()).unwrap();
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
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let fits: Vec<PathBuf> = fs::read_dir(store.join("fits")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(fits.len(), 1);
    let adapter = fits[0].join("adapter");
    let read = calibra_models::lora::peft::PeftAdapter::read(&adapter).unwrap();
    let modules: Vec<&String> = read.factors.keys().collect();
    assert!(!modules.is_empty() && modules.iter().all(|n| n.starts_with("vit.layers.")), "{modules:?}");
    assert!(read.saved.contains_key("classifier.weight"));

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
