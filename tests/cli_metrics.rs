//! End-to-end tests of `calibra metrics`: the shipped examples, the JSON contract, and bad files.

use std::path::{Path, PathBuf};

mod common;
use common::{calibra, example, json_of};

const REQUIRED_KEYS: [&str; 15] = [
    "n",
    "num_classes",
    "task",
    "accuracy",
    "macro_auroc",
    "macro_auprc",
    "ece",
    "adaptive_ece",
    "ace",
    "mce",
    "classwise_ece",
    "brier",
    "nll",
    "macro_f1",
    "reliability",
];

#[test]
fn json_has_the_contract_keys_for_every_example() {
    for (file, task, k) in [
        ("predictions_multiclass.csv", "multiclass", 7),
        ("predictions_binary.csv", "binary", 2),
        ("predictions_ordinal.csv", "multiclass", 5),
        ("predictions_multilabel.csv", "multilabel", 5),
    ] {
        let v = json_of(&["metrics", &example(file), "--format", "json"]);
        for key in REQUIRED_KEYS {
            assert!(v.get(key).is_some(), "{file}: key `{key}` missing from {v}");
        }
        assert_eq!(v["task"], task, "{file}");
        assert_eq!(v["num_classes"], k, "{file}");
        assert!(v.get("qwk").is_none(), "{file}: qwk only with --ordinal");
        let bins = v["reliability"].as_array().unwrap();
        assert_eq!(bins.len(), 15, "{file}");
        let count: u64 = bins.iter().map(|b| b["count"].as_u64().unwrap()).sum();
        if task != "multilabel" {
            assert_eq!(count, v["n"].as_u64().unwrap(), "{file}: bin counts cover every sample");
        }
        for b in bins {
            for key in ["lower", "upper", "count", "confidence", "accuracy"] {
                assert!(b.get(key).is_some(), "{file}: bin key `{key}` missing");
            }
        }
    }
}

#[test]
fn ordinal_flag_adds_kappa_and_mae_and_bins_flag_changes_the_diagram() {
    let v = json_of(&[
        "metrics",
        &example("predictions_ordinal.csv"),
        "--ordinal",
        "--bins",
        "10",
        "--format",
        "json",
    ]);
    assert!(v["qwk"].as_f64().is_some_and(|q| (-1.0..=1.0).contains(&q)));
    assert!(v["ordinal_mae"].as_f64().is_some_and(|m| m >= 0.0));
    assert_eq!(v["reliability"].as_array().unwrap().len(), 10);
    let t = json_of(&[
        "metrics",
        &example("predictions_ordinal.csv"),
        "--binning",
        "torchmetrics",
        "--format",
        "json",
    ]);
    assert_eq!(t["reliability"].as_array().unwrap().len(), 16, "torchmetrics keeps an extra bin for 1.0");
}

#[test]
fn table_output_names_the_metrics() {
    let out = calibra(&["metrics", &example("predictions_multiclass.csv")]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in ["400 samples, 7 classes", "macro AUROC", "ECE (top-label)", "reliability diagram"] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
}

fn write_temp(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_files_fail_with_a_message_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("empty.csv", "", "the file is empty"),
        ("noid.csv", "label,logit_a,logit_b\n0,1,2\n", "missing column `id`"),
        ("dup.csv", "id,label,logit_a,logit_a\nx,0,1,2\n", "duplicate column `logit_a`"),
        (
            "both.csv",
            "id,label,logit_a,logit_b,prob_a,prob_b\nx,0,1,2,0.5,0.5\n",
            "both logit_ (2) and prob_ (2)",
        ),
        (
            "nan.csv",
            "id,label,logit_a,logit_b\nx,0,1,2\ny,1,oops,2\n",
            "line 3, column `logit_a`: `oops` is not a number",
        ),
        (
            "ragged.csv",
            "id,label,logit_a,logit_b\nx,0,1,2\ny,1,2\n",
            "line 3: expected 4 fields as in the header, found 3",
        ),
        ("sum.csv", "id,label,prob_a,prob_b\nx,0,0.2,0.2\n", "line 2: probabilities sum to 0.4"),
        (
            "range.csv",
            "id,label,logit_a,logit_b\nx,5,1,2\n",
            "line 2, column `label`: class index 5 is out of range 0..2",
        ),
    ];
    for (name, text, expected) in cases {
        let path = write_temp(dir.path(), name, text);
        let out = calibra(&["metrics", path.to_str().unwrap(), "--format", "json"]);
        assert!(!out.status.success(), "{name} must fail");
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout when failing");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(expected), "{name}: expected `{expected}` in `{err}`");
        assert!(err.contains(name), "{name}: the message names the file: `{err}`");
    }
    let out = calibra(&["metrics", dir.path().join("absent.csv").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.csv: cannot read"));
}

#[test]
fn bad_options_are_rejected() {
    let f = example("predictions_binary.csv");
    assert!(!calibra(&["metrics", &f, "--bins", "0"]).status.success());
    let out = calibra(&["metrics", &f, "--binning", "middle"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("middle"));
    let out = calibra(&["metrics", &example("predictions_multilabel.csv"), "--ordinal"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ordinal metrics need a single-label task"));
}

/// Compare `actual` with `expected` recursively: numbers within `tol`, everything else equal.
fn assert_close(path: &str, actual: &serde_json::Value, expected: &serde_json::Value, tol: f64) {
    use serde_json::Value;
    match (actual, expected) {
        (Value::Number(a), Value::Number(e)) => {
            let (a, e) = (a.as_f64().unwrap(), e.as_f64().unwrap());
            assert!((a - e).abs() <= tol, "{path}: calibra {a} vs peer {e} (|Δ| = {:e})", (a - e).abs());
        }
        (Value::Array(a), Value::Array(e)) => {
            assert_eq!(a.len(), e.len(), "{path}: length");
            for (i, (x, y)) in a.iter().zip(e).enumerate() {
                assert_close(&format!("{path}[{i}]"), x, y, tol);
            }
        }
        (Value::Object(a), Value::Object(e)) => {
            for (key, y) in e {
                let x = a.get(key).unwrap_or_else(|| panic!("{path}.{key}: missing from calibra's output"));
                assert_close(&format!("{path}.{key}"), x, y, tol);
            }
        }
        _ => assert_eq!(actual, expected, "{path}"),
    }
}

#[test]
fn example_metric_sets_match_sklearn_and_the_numpy_oracles() {
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("golden/metrics_examples.json")).unwrap();
    for case in golden["cases"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let mut args = vec!["metrics".to_string(), example(file), "--format".into(), "json".into()];
        if case["ordinal"].as_bool().unwrap() {
            args.push("--ordinal".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let actual = json_of(&args);
        assert_close(file, &actual, &case["expected"], case["tolerance"].as_f64().unwrap());
    }
}

/// The selective-prediction keys (`aurc`, `eaurc`, `augrc`, ...) against torch-uncertainty, relplot and
/// uncertainty-calibration on the shipped examples (`tests/golden/selective_examples.json`, made by
/// `scripts/golden/selective.py`), and the old keys are still first and unchanged in order.
#[test]
fn selective_keys_match_torch_uncertainty_relplot_and_kumar() {
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("golden/selective_examples.json")).unwrap();
    let tol = golden["tolerance"].as_f64().unwrap();
    for case in golden["cases"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let actual = json_of(&["metrics", &example(file), "--format", "json"]);
        assert_close(file, &actual, &case["expected"], tol);
        let msp = &actual["selective_by_score"]["msp"];
        assert_eq!(msp["aurc"], actual["aurc"], "{file}: msp ranking is the main AURC");
        for score in ["max-logit", "energy", "entropy", "margin"] {
            let a = actual["selective_by_score"][score]["aurc"].as_f64().unwrap();
            let e = actual["selective_by_score"][score]["eaurc"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&a) && e >= -1e-15, "{file}: {score}: AURC {a}, E-AURC {e}");
        }
        let out = calibra(&["metrics", &example(file), "--format", "json"]);
        let text = String::from_utf8(out.stdout).unwrap();
        let keys: Vec<&str> = ["\"n\"", "\"reliability\"", "\"aurc\"", "\"selective_by_score\""]
            .into_iter()
            .filter(|k| text.contains(*k))
            .collect();
        assert_eq!(keys.len(), 4, "{file}");
        assert!(
            text.find("\"reliability\"").unwrap() < text.find("\"aurc\"").unwrap(),
            "{file}: new keys come last"
        );
    }
    let out = calibra(&["metrics", &example("predictions_multilabel.csv")]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["AURC", "AUGRC", "smooth ECE (relplot)", "debiased ECE"] {
        assert!(text.contains(needle), "multilabel table misses `{needle}`:\n{text}");
    }
}
