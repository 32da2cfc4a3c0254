//! A BiomedCLIP-style OpenCLIP directory (timm ViT trunk + BERT text tower + WordPiece tokenizer
//! files; the tiny fixture of calibra-models written by scripts/golden/encoders_biomedclip.py) is
//! routed by `calibra zero-shot` / `calibra features` / `calibra train --regime coop` to calibra's
//! timm-trunk + BERT loader, and `--method maple` / `--regime lora` refuse it by name.
//!
//! The fixture's trunk has reduced sizes that open_clip's `TimmModel` would not build from the name
//! `vit_base_patch16_224` alone (its numerics are checked against open_clip in calibra-models'
//! biomedclip_parity test, given those sizes), so here the loaders find the BERT config in the
//! fixture's hub cache, reach the weights file and refuse it as too small for timm's ViT-B/16: the
//! proof that they took the BiomedCLIP path.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::calibra;

const DATA: &str = "synth:derm?n=60&size=32";

fn checkpoint(dir: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/biomedclip/model");
    let ck = dir.join("tiny-biomedclip");
    fs::create_dir_all(&ck).unwrap();
    for f in [
        "open_clip_config.json",
        "open_clip_model.safetensors",
        "vocab.txt",
        "tokenizer.json",
        "tokenizer_config.json",
    ] {
        fs::copy(src.join(f), ck.join(f)).unwrap();
    }
    ck
}

/// `calibra ARGS` with `HF_HUB_CACHE` set to `hub` (for the child process only).
fn calibra_with_cache(args: &[&str], hub: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(args)
        .env("HF_HUB_CACHE", hub)
        .output()
        .expect("the calibra binary runs")
}

#[test]
fn zero_shot_and_features_take_the_biomedclip_loader() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let hub =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/biomedclip/hub");
    let out = tmp.path().join("zs");
    let zero_shot = [
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "P1",
        "--out",
        out.to_str().unwrap(),
    ];
    // Without the BERT config.json of hf_model_name in the hub cache: named, with what to download.
    let empty = tmp.path().join("empty-hub");
    let run = calibra_with_cache(&zero_shot, &empty);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(
            "huggingface-cli download microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract config.json"
        ),
        "{stderr}"
    );
    // With it: the BERT config is read, then the trunk (timm's ViT-B/16 sizes) does not fit the file.
    let run = calibra_with_cache(&zero_shot, &hub);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("BiomedCLIP-style") && stderr.contains("holds only"), "{stderr}");

    let out = tmp.path().join("f.safetensors");
    let run = calibra(&[
        "features",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--split",
        "test",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("open_clip_model.safetensors holds only"), "{stderr}");
}

/// CoOp (and KgCoOp, ProGrad) runs on the BERT text tower (checked step by step against torch in
/// calibra-train's coop_biomedclip test): here it reaches the BiomedCLIP loader; MaPLe, which prompts
/// the image tower (CLIP and SigLIP towers only), is refused by name.
#[test]
fn coop_takes_the_biomedclip_loader_and_maple_and_lora_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let hub =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/biomedclip/hub");
    let coop = |method: &str, store: &Path| {
        calibra_with_cache(
            &[
                "train",
                "--encoder",
                ck.to_str().unwrap(),
                "--data",
                DATA,
                "--regime",
                "coop",
                "--method",
                method,
                "--n-ctx",
                "4",
                "--epochs",
                "1",
                "--out",
                store.to_str().unwrap(),
            ],
            &hub,
        )
    };
    let run = coop("kgcoop", &tmp.path().join("store"));
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("open_clip_model.safetensors holds only"), "{stderr}");

    let run = coop("maple", &tmp.path().join("maple"));
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("MaPLe")
            && stderr.contains("BERT text tower")
            && stderr.contains("CLIP and SigLIP checkpoints"),
        "{stderr}"
    );

    // LoRA on the trunk is refused as for every OpenCLIP checkpoint.
    let lora = tmp.path().join("lora");
    let run = calibra(&[
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "lora",
        "--out",
        lora.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("LoRA") && stderr.contains("open_clip"), "{stderr}");
}
