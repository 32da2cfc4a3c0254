//! `calibra zero-shot` end to end on the transformers-made tiny CLIP fixture of calibra-models
//! (scripts/golden/encoders_clip.py) over a small synthetic dermatology set: one predictions file and
//! one run record per template, records the strict run-record parser accepts, metrics that match the
//! predictions files, the across-template spread, and errors that name the bad input.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use calibra_crs::RunRecordSet;
use calibra_predictions::read_predictions;
use common::calibra;

fn setup(dir: &Path) -> PathBuf {
    common::tiny_clip_checkpoint(dir)
}

const DATA: &str = "synth:derm?n=120&size=32";

fn accuracy_of(path: &Path) -> f64 {
    let p = read_predictions(path).unwrap();
    let k = p.num_classes();
    let calibra_predictions::Targets::Classes(labels) = p.targets() else { panic!("single-label") };
    let scores = p.scores();
    let correct = labels
        .iter()
        .enumerate()
        .filter(|(i, y)| {
            let row = &scores[i * k..(i + 1) * k];
            let best = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
            best == **y
        })
        .count();
    correct as f64 / labels.len() as f64
}

#[test]
fn zero_shot_writes_one_predictions_file_and_record_per_template() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = setup(tmp.path());
    let out = tmp.path().join("zs");
    let run = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "all",
        "--template",
        "a dermoscopy image of {}.",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("P7") && stdout.contains("C1") && stdout.contains("std"), "{stdout}");

    // The strict parser of the evaluator accepts the records; one per template, in order.
    let set = RunRecordSet::from_path(&out.join("runs.jsonl")).unwrap();
    let ids = ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "C1"];
    assert_eq!(set.len(), ids.len());
    let mut accuracies = Vec::new();
    for (located, id) in set.records().iter().zip(ids) {
        let r = &located.record;
        assert_eq!(r.probe, format!("zero-shot:{id}"));
        assert_eq!(r.regime.name(), "zero-shot");
        assert_eq!(
            (r.encoder.as_str(), r.dataset.as_str(), r.calibrator.as_str()),
            ("tiny-clip", "synth:derm", "none")
        );
        for m in ["accuracy", "ece", "mce", "adaptive_ece", "nll", "brier"] {
            assert!(r.metrics.contains_key(m), "{id}: no {m}");
        }
        // The record's accuracy is the predictions file's (identity: same rows, argmax).
        let pred = out.join(&r.paths["predictions"]);
        assert_eq!(pred, out.join(format!("predictions/{id}.csv")));
        let acc = accuracy_of(&pred);
        assert!((acc - r.metrics["accuracy"]).abs() < 1e-12, "{id}: {acc} vs {}", r.metrics["accuracy"]);
        accuracies.push(acc);
    }
    // Different templates give different predictions on this model (not one file copied 8 times).
    let p1 = fs::read_to_string(out.join("predictions/P1.csv")).unwrap();
    let p2 = fs::read_to_string(out.join("predictions/P2.csv")).unwrap();
    assert_ne!(p1, p2);

    // templates.json: the spread across templates is the sample std (ddof 1) of the records' values.
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("templates.json")).unwrap()).unwrap();
    let spread = &report["across_templates"]["accuracy"];
    let n = accuracies.len() as f64;
    let mean = accuracies.iter().sum::<f64>() / n;
    let std = (accuracies.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    assert_eq!(spread["n"].as_u64().unwrap(), 8);
    assert!((spread["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!((spread["std"].as_f64().unwrap() - std).abs() < 1e-12);
    assert_eq!(report["templates"][0]["template"].as_str().unwrap(), "a photo of a {}.");
    assert_eq!(report["templates"][7]["template"].as_str().unwrap(), "a dermoscopy image of {}.");

    // A rerun writes byte-identical records (no timings in them).
    let before = fs::read(out.join("runs.jsonl")).unwrap();
    let again = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--template",
        "a dermoscopy image of {}.",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(before, fs::read(out.join("runs.jsonl")).unwrap());
}

#[test]
fn zero_shot_errors_name_the_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = setup(tmp.path());
    let out = tmp.path().join("zs");
    let err = |extra: &[&str]| {
        let mut args = vec![
            "zero-shot",
            "--encoder",
            ck.to_str().unwrap(),
            "--data",
            DATA,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let r = calibra(&args);
        assert!(!r.status.success(), "{extra:?} should fail");
        String::from_utf8_lossy(&r.stderr).into_owned()
    };
    let e = err(&["--classnames", "a,b,c"]);
    assert!(e.contains("3 names given") && e.contains("6 classes") && e.contains("melanoma"), "{e}");
    let e = err(&["--templates", "P1,P9"]);
    assert!(e.contains("`P9`"), "{e}");
    let e = err(&["--template", "no slot"]);
    assert!(e.contains("exactly one"), "{e}");
    let e = err(&["--templates", "none"]);
    assert!(e.contains("no template"), "{e}");
}
