//! `calibra run` with frozen probes on a real encoder: the transformers-made tiny ViT fixture of
//! calibra-models over a synthetic dataset. Features are computed once per (split, condition) and
//! shared by both probes; every record's metrics match the predictions file written beside it.

mod common;

use std::fs;
use std::path::Path;

use common::calibra;

fn setup(dir: &Path) -> std::path::PathBuf {
    let ck = common::tiny_vit_checkpoint(dir);
    let recipe = dir.join("frozen.toml");
    fs::write(
        &recipe,
        format!(
            r#"name = "frozen-probes"
seeds = [0]
label_fractions = [1.0]
calibrators = ["none", "temperature"]

[[encoders]]
name = "tiny-vit"
source = "{}"

[[datasets]]
name = "derm"
spec = "synth:derm?n=400&size=32"

[perturbations]
names = ["contrast"]
severities = [2]

[regimes.frozen]
probes = ["logistic", "knn"]
"#,
            ck.display()
        ),
    )
    .unwrap();
    recipe
}

#[test]
fn frozen_probes_run_on_a_real_encoder_and_resume_without_recomputing() {
    let tmp = tempfile::tempdir().unwrap();
    let recipe = setup(tmp.path());
    let store = tmp.path().join("store");
    let (recipe, store_s) = (recipe.to_str().unwrap(), store.to_str().unwrap());
    let out = calibra(&["run", recipe, "--out", store_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // 2 probes × (clean + contrast:2) × (none + temperature).
    assert_eq!(records.len(), 8);
    for r in &records {
        let auroc = r["metrics"]["macro_auroc"].as_f64().expect("AUROC recorded");
        assert!((0.0..=1.0).contains(&auroc));
        assert!(r["metrics"]["ece"].as_f64().is_some());
    }
    // The encoder ran once per (split, condition): train, calibration, clean test, contrast test.
    let feature_files: usize = fs::read_dir(store.join("features"))
        .unwrap()
        .map(|d| fs::read_dir(d.unwrap().path()).unwrap().count())
        .sum();
    assert_eq!(feature_files, 4);

    // Each record's metrics are those of the predictions file it points to.
    for r in &records {
        let rel = r["paths"]["predictions"].as_str().expect("predictions path");
        let file = store.join(rel);
        let metrics = common::json_of(&["metrics", file.to_str().unwrap(), "--format", "json"]);
        let recorded = r["metrics"]["macro_auroc"].as_f64().unwrap();
        let recomputed = metrics["macro_auroc"].as_f64().expect("calibra metrics reports macro_auroc");
        assert!((recorded - recomputed).abs() < 1e-12, "{rel}: {recorded} vs {recomputed}");
        let (ece, ece_again) = (r["metrics"]["ece"].as_f64().unwrap(), metrics["ece"].as_f64().unwrap());
        assert!((ece - ece_again).abs() < 1e-12, "{rel}: ECE {ece} vs {ece_again}");
    }

    // Resuming a finished grid changes nothing.
    let again = calibra(&["run", recipe, "--out", store_s, "--resume"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(fs::read_to_string(store.join("runs.jsonl")).unwrap(), text);
}
