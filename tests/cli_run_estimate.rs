//! `calibra run` with `[regimes.estimate]` (issue 18): transferability estimators on the frozen
//! train-split features the probes cache. One record per encoder × dataset × layer at the first
//! seed, with the scores as metrics and no predictions; the depth the frozen probe uses adds no
//! encoder pass, another depth adds exactly one (its train split); the recorded scores are exactly
//! what `calibra transfer score` gives on the cached feature file; a resumed run adds nothing.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use calibra_crs::transfer_prediction::ESTIMATORS;
use common::calibra;

fn setup(dir: &Path) -> PathBuf {
    let ck = common::tiny_vit_checkpoint(dir);
    let recipe = dir.join("estimate.toml");
    fs::write(
        &recipe,
        format!(
            r#"seeds = [3, 4]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
name = "tiny-vit"
source = "{}"

[[datasets]]
name = "derm"
spec = "synth:derm?n=200&size=32"

[regimes.frozen]
probes = ["logistic"]

[regimes.estimate]
layers = [0.5, 1.0]
"#,
            ck.display()
        ),
    )
    .unwrap();
    recipe
}

fn feature_files(store: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(store.join("features"))
        .unwrap()
        .flat_map(|d| fs::read_dir(d.unwrap().path()).unwrap().map(|f| f.unwrap().path()))
        .collect();
    files.sort();
    files
}

#[test]
fn estimates_are_records_of_the_cached_frozen_features() {
    let tmp = tempfile::tempdir().unwrap();
    let recipe = setup(tmp.path());
    let store = tmp.path().join("store");
    let (recipe, store_s) = (recipe.to_str().unwrap(), store.to_str().unwrap());
    let out = calibra(&["run", recipe, "--out", store_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let estimates: Vec<&serde_json::Value> = records.iter().filter(|r| r["regime"] == "estimate").collect();
    // 1 encoder × 1 dataset × 2 layers, first seed only; the frozen probe has one record per seed.
    assert_eq!(estimates.len(), 2, "{text}");
    assert_eq!(records.iter().filter(|r| r["regime"] == "frozen").count(), 2);
    let probes: Vec<&str> = estimates.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["estimators@0.5", "estimators"]);
    for r in &estimates {
        assert_eq!((r["seed"].as_u64(), r["label_fraction"].as_f64()), (Some(3), Some(1.0)));
        assert_eq!(
            (r["condition"]["kind"].as_str(), r["calibrator"].as_str()),
            (Some("clean"), Some("none"))
        );
        assert!(r["paths"].as_object().is_none_or(|p| p.is_empty()), "no predictions file: {r}");
        let metrics = r["metrics"].as_object().unwrap();
        assert!(metrics.keys().all(|k| ESTIMATORS.contains(&k.as_str())), "{r}");
        for name in ["logme", "hscore", "gbc", "transrate", "effective_dimensionality", "knn_agreement"] {
            assert!(metrics[name].as_f64().is_some_and(f64::is_finite), "{name} missing: {r}");
        }
    }

    // Frozen: train, calibration and test at depth 1; the estimate adds the train split at 0.5 only.
    let files = feature_files(&store);
    let names: Vec<String> =
        files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names.iter().filter(|n| n.ends_with(".safetensors")).count(), 4, "feature files: {names:?}");
    assert!(names.iter().any(|n| n == "train@0.5.safetensors"), "{names:?}");

    // The depth-1 record holds exactly `calibra transfer score` on the cached train features.
    let train = files.iter().find(|f| f.ends_with("train@1.safetensors")).expect("train@1 cached");
    let scored =
        common::json_of(&["transfer", "score", "--features", train.to_str().unwrap(), "--format", "json"]);
    let full = estimates.iter().find(|r| r["probe"] == "estimators").unwrap();
    for name in ESTIMATORS {
        assert_eq!(full["metrics"].get(name), scored["scores"].get(name).filter(|v| !v.is_null()), "{name}");
    }

    // A resumed run has nothing left to do.
    let again = calibra(&["run", recipe, "--out", store_s, "--resume"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(fs::read_to_string(store.join("runs.jsonl")).unwrap(), text);
    assert_eq!(feature_files(&store), files);
}
