//! The trainer options of `calibra train` (issue 16):
//! - `--batch-size B --accumulate N`: LoRA with two accumulated batches of 8 writes the records of
//!   batches of 16 (metrics within 1e-4: the same optimiser steps up to float rounding);
//! - `--augment crop-flip`: a run is reproducible (same seed, same predictions) and differs from the
//!   unaugmented one; likewise for MaPLe (`--regime coop --method maple`), which trains on images;
//! - the recipe records each option, and a regime that does not take them refuses them.

mod common;

use std::path::Path;

use common::calibra;

fn train(store: &Path, batch: &[&str]) -> std::process::Output {
    let encoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/generalist");
    let mut args = vec![
        "train",
        "--encoder",
        encoder.to_str().unwrap(),
        "--data",
        "synth:derm?n=80&size=32",
        "--regime",
        "lora",
        "--epochs",
        "2",
        "--lr",
        "1e-3",
        "--lora-dropout",
        "0",
        "--out",
        store.to_str().unwrap(),
    ];
    args.extend_from_slice(batch);
    calibra(&args)
}

fn clean_metrics(store: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let record: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    record["metrics"].clone()
}

#[test]
fn two_accumulated_batches_of_8_give_the_records_of_batches_of_16() {
    let tmp = tempfile::tempdir().unwrap();
    let (whole, accumulated) = (tmp.path().join("whole"), tmp.path().join("acc"));
    let out = train(&whole, &["--batch-size", "16"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = train(&accumulated, &["--batch-size", "8", "--accumulate", "2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (a, b) = (clean_metrics(&whole), clean_metrics(&accumulated));
    for (name, value) in a.as_object().unwrap() {
        let (Some(x), Some(y)) = (value.as_f64(), b[name].as_f64()) else { continue };
        assert!((x - y).abs() <= 1e-4, "{name}: {y} accumulated, {x} whole");
    }
    let recipe = std::fs::read_to_string(accumulated.join("journal/recipe.toml")).unwrap();
    assert!(recipe.contains("batch_size = 8") && recipe.contains("accumulate = 2"), "{recipe}");
}

#[test]
fn accumulate_is_refused_for_a_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let encoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/generalist");
    let out = calibra(&[
        "train",
        "--encoder",
        encoder.to_str().unwrap(),
        "--data",
        "synth:derm?n=40&size=32",
        "--regime",
        "probe",
        "--accumulate",
        "2",
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--accumulate applies to --regime lora and full"), "{err}");
}

fn predictions(store: &Path) -> String {
    let text = std::fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let record: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    std::fs::read_to_string(store.join(record["paths"]["predictions"].as_str().unwrap())).unwrap()
}

#[test]
fn augmented_runs_are_reproducible_and_differ_from_plain_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, plain) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("plain"));
    for store in [&a, &b] {
        let out = train(store, &["--augment", "crop-flip", "--threads", if store == &a { "1" } else { "2" }]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = train(&plain, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(predictions(&a), predictions(&b), "same seed, same augmented run, whatever the thread count");
    assert_ne!(predictions(&a), predictions(&plain), "the augmentation changes training");
    let recipe = std::fs::read_to_string(a.join("journal/recipe.toml")).unwrap();
    assert!(recipe.contains("augment = \"crop-flip\""), "{recipe}");
}

/// MaPLe on the shipped tiny CLIP with `--augment crop-flip`: reproducible at 1 and 2 threads, and
/// different from the unaugmented run.
#[test]
fn augmented_maple_runs_are_reproducible_and_differ_from_plain_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let encoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let maple = |store: &Path, extra: &[&str]| {
        let mut args = vec![
            "train",
            "--encoder",
            encoder.to_str().unwrap(),
            "--data",
            "synth:fundus?n=60&size=32",
            "--regime",
            "coop",
            "--method",
            "maple",
            "--maple-depth",
            "2",
            "--epochs",
            "1",
            "--calibrators",
            "none",
            "--out",
            store.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = calibra(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let (a, b, plain) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("plain"));
    maple(&a, &["--augment", "crop-flip", "--threads", "1"]);
    maple(&b, &["--augment", "crop-flip", "--threads", "2"]);
    maple(&plain, &[]);
    assert_eq!(predictions(&a), predictions(&b), "same seed, same augmented run, whatever the thread count");
    assert_ne!(predictions(&a), predictions(&plain), "the augmentation changes MaPLe's training");
}
