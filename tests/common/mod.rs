//! Helpers shared by the end-to-end tests of the `calibra` binary.
#![allow(dead_code)] // each test file uses the subset it needs

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the calibra binary built for these tests.
pub fn calibra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).output().expect("the calibra binary runs")
}

/// Path of a file shipped in `examples/`.
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name).display().to_string()
}

/// Run calibra, require success, and parse stdout as one JSON document.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures")
}

/// `dir/tiny-vit`: the transformers-made tiny ViT fixture of calibra-models with a 30×30
/// preprocessor config (mean / std 0.5), as a checkpoint directory calibra can train and embed with.
pub fn tiny_vit_checkpoint(dir: &Path) -> PathBuf {
    let ck = dir.join("tiny-vit");
    fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        fs::copy(fixtures().join("vit").join(f), ck.join(f)).unwrap();
    }
    fs::write(
        ck.join("preprocessor_config.json"),
        r#"{"do_resize": true, "size": {"height": 30, "width": 30}, "resample": 2,
            "do_rescale": true, "rescale_factor": 0.00392156862745098,
            "do_normalize": true, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#,
    )
    .unwrap();
    ck
}

/// `dir/tiny-clip`: the tiny random CLIP fixture with the CLIP tokenizer files and CLIP's
/// normalisation at 30×30.
pub fn tiny_clip_checkpoint(dir: &Path) -> PathBuf {
    let ck = dir.join("tiny-clip");
    fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        fs::copy(fixtures().join("clip").join(f), ck.join(f)).unwrap();
    }
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        fs::copy(fixtures().join("tokenizer/hf").join(f), ck.join(f)).unwrap();
    }
    fs::write(
        ck.join("preprocessor_config.json"),
        r#"{"do_resize": true, "size": {"height": 30, "width": 30}, "resample": 3,
            "do_rescale": true, "rescale_factor": 0.00392156862745098, "do_normalize": true,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711]}"#,
    )
    .unwrap();
    ck
}
