//! `calibra train --regime lora` on families other than ViT (issue #17): the shipped tiny CLIP's
//! vision tower and a tiny ViT-MAE train, each adapter names the modules as PEFT does on the family's
//! transformers classifier (`CLIPForImageClassification`, with the recipe target `out_proj` reaching
//! `self_attn.out_proj`; `ViTForImageClassification` for MAE), and loaded back onto the base
//! checkpoint it gives the recorded logits. A timm ViT trains too, with timm's PEFT names (the fused
//! `attn.qkv`) and its head saved as `head`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use calibra_models::lora::peft::PeftAdapter;
use common::{calibra, fit_dirs};

const DATA: &str = "synth:derm?n=64&size=32";

/// Trains one LoRA fit of `ck` into `store` (1 epoch, lr 1e-3, `extra` arguments) and returns its
/// adapter directory, read back.
fn train_lora(ck: &Path, store: &Path, extra: &[&str]) -> (PathBuf, PeftAdapter) {
    let mut args = vec!["train", "--encoder", ck.to_str().unwrap(), "--data", DATA, "--regime", "lora"];
    args.extend(["--epochs", "1", "--lr", "1e-3", "--out", store.to_str().unwrap()]);
    args.extend(extra);
    let out = calibra(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fits = fit_dirs(store);
    assert_eq!(fits.len(), 1);
    let adapter = fits[0].join("adapter");
    let read = PeftAdapter::read(&adapter).unwrap();
    let head = &read.config.modules_to_save.as_ref().unwrap()[0];
    assert!(read.saved.contains_key(&format!("{head}.weight")), "{:?}", read.saved.keys());
    (adapter, read)
}

/// `dir/timm`: the tiny timm ViT of calibra-models (`token` pooling, scripts/golden/encoders_timm.py)
/// in timm's Hugging Face layout.
fn timm_checkpoint(dir: &Path) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/timm/token");
    let ck = dir.join("timm");
    fs::create_dir(&ck).unwrap();
    for file in ["config.json", "model.safetensors"] {
        fs::copy(fixture.join(file), ck.join(file)).unwrap();
    }
    ck
}

/// Loaded back onto `ck`, the adapter gives the clean-test logits the run recorded.
fn assert_reproduces_recorded_logits(ck: &Path, store: &Path, adapter: &Path) {
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let clean =
        records.iter().find(|r| r["condition"]["kind"] == "clean" && r["calibrator"] == "none").unwrap();
    let predictions = store.join(clean["paths"]["predictions"].as_str().unwrap());
    common::assert_adapter_reproduces(ck, adapter, &predictions, DATA);
}

#[test]
fn lora_trains_on_the_tiny_clip_vision_tower_with_peft_names() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let store = tmp.path().join("store");
    let (adapter, read) = train_lora(&ck, &store, &["--lora-targets", "query,value,out_proj"]);
    let modules: Vec<&String> = read.factors.keys().collect();
    // 4 blocks × (q, v, out).
    assert_eq!(modules.len(), 12, "{modules:?}");
    assert!(modules.iter().all(|n| n.starts_with("vision_model.encoder.layers.")), "{modules:?}");
    assert!(read.factors.contains_key("vision_model.encoder.layers.3.self_attn.out_proj"), "{modules:?}");
    assert_reproduces_recorded_logits(&ck, &store, &adapter);
}

/// A ViT-MAE checkpoint: the tiny `ViTMAEForPreTraining` fixture of scripts/golden/encoders_mae.py
/// (decoder included) with a 30-px ViT image processor beside it.
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
    let (adapter, read) = train_lora(&ck, &store, &[]);
    let modules: Vec<&String> = read.factors.keys().collect();
    assert!(!modules.is_empty() && modules.iter().all(|n| n.starts_with("vit.layers.")), "{modules:?}");
    assert_reproduces_recorded_logits(&ck, &store, &adapter);
}

/// A timm ViT (timm's Hugging Face layout, the tiny `token` fixture of scripts/golden/encoders_timm.py):
/// the recipe target `qkv` reaches timm's fused `attn.qkv` (one A `[r, d]`, one B `[3·d, r]`, as
/// PEFT adapts it) and `out_proj` its `attn.proj`; the head is saved as `modules_to_save = ["head"]`.
#[test]
fn lora_trains_on_a_timm_vit_with_peft_names() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = timm_checkpoint(tmp.path());
    let store = tmp.path().join("store");
    let (adapter, read) = train_lora(&ck, &store, &["--lora-targets", "qkv,out_proj"]);
    let modules: Vec<&String> = read.factors.keys().collect();
    assert_eq!(
        modules,
        ["blocks.0.attn.proj", "blocks.0.attn.qkv", "blocks.1.attn.proj", "blocks.1.attn.qkv"]
    );
    let qkv = &read.factors["blocks.1.attn.qkv"];
    assert_eq!((qkv.a.shape.as_slice(), qkv.b.shape.as_slice()), (&[8, 32][..], &[96, 8][..]));
    assert_eq!(read.config.modules_to_save.as_deref(), Some(&["head".to_string()][..]));
    assert_reproduces_recorded_logits(&ck, &store, &adapter);
}

/// `calibra train --regime lora` on a timm ViT without `--lora-targets` adapts its fused `qkv` (the
/// query and value projections of the other families live there); a recipe asking for `query` /
/// `value` alone on it is refused up front, naming the fix.
#[test]
fn the_default_lora_targets_of_a_timm_vit_are_its_fused_qkv() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = timm_checkpoint(tmp.path());
    let (_, read) = train_lora(&ck, &tmp.path().join("store"), &[]);
    let modules: Vec<&String> = read.factors.keys().collect();
    assert_eq!(modules, ["blocks.0.attn.qkv", "blocks.1.attn.qkv"]);

    let args = ["train", "--encoder", ck.to_str().unwrap(), "--data", DATA, "--regime", "lora"];
    let store = tmp.path().join("refused");
    let out =
        calibra(&[&args[..], &["--lora-targets", "query,value", "--out", store.to_str().unwrap()]].concat());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("regimes.lora.targets") && err.contains("add \"qkv\""), "{err}");
    assert!(!store.join("fits").exists(), "nothing trained before the refusal");
}
