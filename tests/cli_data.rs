//! End-to-end tests of `calibra data inspect` and `calibra data perturb`: synthetic and fixture
//! datasets, the JSON contract, the bad-image policy and error messages.

use std::path::{Path, PathBuf};

mod common;
use common::{calibra, json_of};

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/calibra-data/tests/fixtures")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn inspect_synthetic_counts_add_up() {
    let v = json_of(&["data", "inspect", "synth:derm?n=120&size=28", "--format", "json"]);
    assert_eq!(v["task"], "multiclass");
    assert_eq!(v["samples"], 120);
    let splits = v["splits"].as_array().unwrap();
    let total: u64 = splits.iter().map(|s| s["samples"].as_u64().unwrap()).sum();
    assert_eq!(total, 120);
    for s in splits {
        let per_class: u64 =
            s["classes"].as_array().unwrap().iter().map(|c| c["count"].as_u64().unwrap()).sum();
        assert_eq!(
            per_class,
            s["samples"].as_u64().unwrap(),
            "multiclass: class counts sum to the split size"
        );
    }
    let fractions = v["label_fractions"].as_array().unwrap();
    assert_eq!(fractions.len(), 5);
    assert_eq!(fractions[4]["samples"], splits[0]["samples"], "fraction 1.0 is the whole train split");
    assert_eq!(v["metadata_coverage"]["age"], 120);
}

#[test]
fn inspect_table_of_a_real_format_fixture() {
    let out = calibra(&["data", "inspect", &format!("chexpert:{}", fixture("chexpert/CheXpert-v1.0-small"))]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("7 samples, task multilabel, 14 labels"), "{text}");
    assert!(text.contains("Support Devices"));
    assert!(text.contains("problems:"));
}

#[test]
fn bad_images_fail_by_default_and_are_counted_when_skipped() {
    let spec = format!("csv:{}", fixture("bad/corrupt_image.csv"));
    let out = calibra(&["data", "inspect", &spec, "--check-images"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken") && err.contains("corrupt.png"), "{err}");
    let v =
        json_of(&["data", "inspect", &spec, "--check-images", "--on-bad-image", "skip", "--format", "json"]);
    assert_eq!(v["samples"], 1);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
    let missing = format!("csv:{}", fixture("bad/missing_image.csv"));
    let out = calibra(&["data", "inspect", &missing]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("missing_image.csv, line 3"), "{err}");
    let v = json_of(&["data", "inspect", &missing, "--on-bad-image", "skip", "--format", "json"]);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_specs_are_explained() {
    for (spec, needle) in
        [("nope:/x", "unknown format `nope`"), ("synth:derm?colour=red", "unknown option `colour`")]
    {
        let out = calibra(&["data", "inspect", spec]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{spec}: {err}");
    }
}

#[test]
fn perturb_writes_every_severity_and_is_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &PathBuf| {
        let o = calibra(&[
            "data",
            "perturb",
            "synth:fundus?n=40&size=32",
            "--out",
            out.to_str().unwrap(),
            "--samples",
            "2",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run(&a);
    run(&b);
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("index.json")).unwrap()).unwrap();
    let samples = index["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    for s in samples {
        let folder = s["folder"].as_str().unwrap();
        let files: Vec<_> =
            std::fs::read_dir(a.join(folder)).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(files.len(), 1 + 5 * 3, "clean + 5 perturbations × 3 severities");
        for f in files {
            let (x, y) = (
                std::fs::read(a.join(folder).join(&f)).unwrap(),
                std::fs::read(b.join(folder).join(&f)).unwrap(),
            );
            assert_eq!(x, y, "{f:?} differs between runs");
        }
    }
    let only = dir.path().join("c");
    let o = calibra(&[
        "data",
        "perturb",
        "synth:chest?n=20&size=28",
        "--out",
        only.to_str().unwrap(),
        "--samples",
        "1",
        "--perturbation",
        "jpeg",
    ]);
    assert!(o.status.success());
    let bad = calibra(&[
        "data",
        "perturb",
        "synth:chest?n=20",
        "--out",
        only.to_str().unwrap(),
        "--perturbation",
        "snow",
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown perturbation `snow`"));
}

/// `calibra data export` writes a generated set as a JPEG ImageFolder that `imagefolder:` reads with
/// the same size and classes; a second run writes nothing; a multilabel set is refused by name.
#[test]
fn export_writes_an_imagefolder_that_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("derm");
    let spec = "synth:derm?n=40&size=32";
    let run = calibra(&["data", "export", spec, "--out", out.to_str().unwrap(), "--quality", "85"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(String::from_utf8_lossy(&run.stdout).contains("40 images written, 0 already there"));
    let source = json_of(&["data", "inspect", spec, "--format", "json"]);
    let back = json_of(&["data", "inspect", &format!("imagefolder:{}", out.display()), "--format", "json"]);
    assert_eq!(back["samples"], source["samples"]);
    let sorted = |v: &serde_json::Value| {
        let mut names: Vec<String> =
            v["labels"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(sorted(&back), sorted(&source), "ImageFolder classes are the sorted label names");
    let again = calibra(&["data", "export", spec, "--out", out.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 images written, 40 already there"));
    let chest =
        calibra(&["data", "export", "synth:chest?n=10", "--out", tmp.path().join("c").to_str().unwrap()]);
    assert!(!chest.status.success());
    assert!(String::from_utf8_lossy(&chest.stderr).contains("multilabel"));
}
