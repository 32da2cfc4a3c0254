//! Calibration stability in `calibra eval` / `calibra report` end to end: on the records of
//! `calibra zero-shot` (tiny CLIP fixture; one seed, one label fraction, one record per template) the
//! evaluator exits 0, writes the metric rows and the stability table, and says why there is no CRS; on
//! the committed multi-seed example set it still writes everything and adds the stability files, whose
//! seed aggregates agree with the metric rows.

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::calibra;

const DATA: &str = "synth:derm?n=120&size=32";

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "calibra failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// The rows of a CSV file as column → cell maps.
fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| header.iter().map(String::from).zip(r.unwrap().iter().map(String::from)).collect())
        .collect()
}

fn cell<'a>(row: &'a HashMap<String, String>, column: &str) -> &'a str {
    row.get(column).unwrap_or_else(|| panic!("no column {column}"))
}

/// `calibra zero-shot` over every MVC-Bench template (P1…P7) into `dir/zs`.
fn zero_shot_records(dir: &Path) -> PathBuf {
    let ck = common::tiny_clip_checkpoint(dir);
    let out = dir.join("zs");
    ok(&calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "all",
        "--out",
        out.to_str().unwrap(),
    ]));
    out
}

#[test]
fn zero_shot_records_give_stability_and_say_why_there_is_no_crs() {
    let tmp = tempfile::tempdir().unwrap();
    let zs = zero_shot_records(tmp.path());
    let runs = zs.join("runs.jsonl");
    let runs = runs.to_str().unwrap();
    let out = tmp.path().join("eval");
    let run = calibra(&["eval", runs, "--out", out.to_str().unwrap(), "--bootstrap", "100"]);
    let stdout = ok(&run);
    assert!(stdout.contains("CRS not computed: no runs of regime `frozen`"), "{stdout}");
    assert!(stdout.contains("std across 7 templates"), "{stdout}");
    assert!(String::from_utf8_lossy(&run.stderr).contains("note: CRS not computed"));

    // What can be computed is written; what needs the CRS is empty or absent.
    let e = json(&out.join("evaluation.json"));
    let why = e["crs_not_computed"].as_str().unwrap();
    assert!(why.contains("the run set holds regimes: zero-shot"), "{why}");
    assert!(e["crs"].as_array().unwrap().is_empty() && e["bootstrap"].is_null());
    assert_eq!(e["reference_origin"], "none");
    assert!(!out.join("reference.json").exists());
    assert_eq!(csv_rows(&out.join("crs.csv")).len(), 0);
    assert_eq!(
        csv_rows(&out.join("metric_rows.csv")).len(),
        e["input"]["metric_rows"].as_u64().unwrap() as usize
    );
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("**CRS not computed") && report.contains("## Calibration stability"), "{report}");
    assert!(report.contains("| P1, P2, P3, P4, P5, P6, P7 |"), "{report}");

    // The std across templates equals `calibra zero-shot`'s own templates.json (an independent
    // computation of the same ddof-1 std over the same records).
    let spread = json(&zs.join("templates.json"));
    // The stability table is whole on stdout (`--format json`); evaluation.json leaves it to its CSV.
    let whole = calibra(&["eval", runs, "--bootstrap", "100", "--format", "json"]);
    let whole: serde_json::Value = serde_json::from_str(&ok(&whole)).unwrap();
    let stability = &whole["calibration_stability"];
    assert!(e.get("calibration_stability").is_none() && !out.join("calibration_stability.json").exists());
    let templates: Vec<&serde_json::Value> =
        stability["rows"].as_array().unwrap().iter().filter(|r| r["axis"] == "templates").collect();
    assert_eq!(templates.len(), 1);
    let row = templates[0];
    assert_eq!((row["method"].as_str(), row["seed"].as_u64()), (Some("zero-shot"), Some(0)));
    let rows = csv_rows(&out.join("calibration_stability.csv"));
    let csv_row = rows.iter().find(|r| cell(r, "axis") == "templates").unwrap();
    for m in ["accuracy", "ece", "mce", "adaptive_ece"] {
        let ours = row["metrics"].as_array().unwrap().iter().find(|s| s["metric"] == m).unwrap();
        let theirs = &spread["across_templates"][m];
        assert_eq!(ours["n"], 7, "{m}");
        assert_eq!(theirs["n"], 7, "{m}");
        for stat in ["mean", "std"] {
            let (a, b) = (ours[stat].as_f64().unwrap(), theirs[stat].as_f64().unwrap());
            assert!((a - b).abs() <= 1e-12, "{m} {stat}: {a} vs templates.json {b}");
        }
        // The CSV holds the same numbers (shortest round-trip text).
        let csv_std: f64 = cell(csv_row, &format!("{m}_std")).parse().unwrap();
        assert_eq!(csv_std, ours["std"].as_f64().unwrap(), "{m}");
    }
    // Seeds axis: one seed per template → n 1 and an empty std cell, never NaN.
    let seed_rows: Vec<_> = rows.iter().filter(|r| cell(r, "axis") == "seeds").collect();
    assert_eq!(seed_rows.len(), 7);
    assert!(seed_rows.iter().all(|r| cell(r, "ece_n") == "1" && cell(r, "ece_std").is_empty()));
    assert!(!fs::read_to_string(out.join("calibration_stability.csv")).unwrap().contains("NaN"));

    // Axes from the zero-shot regime: the reason names what is missing, still exit 0.
    let stdout = ok(&calibra(&["eval", runs, "--regime", "zero-shot", "--bootstrap", "0"]));
    assert!(stdout.contains("zero-shot:P1") && stdout.contains("select one"), "{stdout}");
    let stdout =
        ok(&calibra(&["eval", runs, "--regime", "zero-shot", "--probe", "zero-shot:P1", "--bootstrap", "0"]));
    assert!(
        stdout.contains("the label_efficiency axis needs") && stdout.contains("robustness axis"),
        "{stdout}"
    );

    // Asking for what needs a CRS is an error, and no output is left behind.
    let refused = tmp.path().join("refused");
    let saved = tmp.path().join("ref.json");
    let run = calibra(&[
        "eval",
        runs,
        "--out",
        refused.to_str().unwrap(),
        "--save-reference",
        saved.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("no reference to save") && stderr.contains("CRS not computed"), "{stderr}");
    assert!(!refused.exists() && !saved.exists());
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run_records.jsonl");
    ok(&calibra(&[
        "eval",
        example.to_str().unwrap(),
        "--bootstrap",
        "0",
        "--no-stability",
        "--save-reference",
        saved.to_str().unwrap(),
    ]));
    let run = calibra(&["eval", runs, "--reference", saved.to_str().unwrap(), "--bootstrap", "0"]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("cannot score against the saved reference"), "{stderr}");

    // `calibra report` on a run store holding these records shows the same table.
    let store = tmp.path().join("store");
    fs::create_dir_all(store.join("predictions")).unwrap();
    fs::copy(zs.join("runs.jsonl"), store.join("runs.jsonl")).unwrap();
    for entry in fs::read_dir(zs.join("predictions")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, store.join("predictions").join(path.file_name().unwrap())).unwrap();
    }
    ok(&calibra(&["report", store.to_str().unwrap(), "--bootstrap", "0"]));
    assert_eq!(
        fs::read(store.join("report/calibration_stability.csv")).unwrap(),
        fs::read(out.join("calibration_stability.csv")).unwrap()
    );
    assert!(fs::read_to_string(store.join("report/report.md")).unwrap().contains("## Calibration stability"));
}

#[test]
fn a_multi_seed_set_keeps_its_outputs_and_gains_seed_stability() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eval");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run_records.jsonl");
    ok(&calibra(&["eval", example.to_str().unwrap(), "--out", out.to_str().unwrap(), "--bootstrap", "20"]));
    let e = json(&out.join("evaluation.json"));
    assert!(e["crs_not_computed"].is_null());
    assert_eq!(e["crs"].as_array().unwrap().len(), 6);
    for f in ["reference.json", "crs.csv", "profiles.csv", "calibration_stability.csv"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // Every group carries `ece` (the example records have macro_auroc and ece): one seeds row per
    // metric-rows group, no templates rows; the seed mean is the metric row's mean bit for bit (same
    // values summed in the same seed order) and the std the same ddof-1 estimator within 1e-12.
    let metric_rows = csv_rows(&out.join("metric_rows.csv"));
    let ece_rows: Vec<_> = metric_rows.iter().filter(|r| cell(r, "metric") == "ece").collect();
    let stability = csv_rows(&out.join("calibration_stability.csv"));
    assert_eq!(stability.len(), ece_rows.len());
    for (s, m) in stability.iter().zip(&ece_rows) {
        assert_eq!(cell(s, "axis"), "seeds");
        for col in
            ["encoder", "dataset", "regime", "calibrator", "label_fraction", "condition", "perturbation"]
        {
            assert_eq!(cell(s, col), cell(m, col), "{col}");
        }
        assert_eq!(cell(s, "method"), cell(m, "probe"));
        assert_eq!((cell(s, "ece_n"), cell(s, "members")), (cell(m, "n_seeds"), "0;1;2"));
        assert_eq!(cell(s, "ece_mean"), cell(m, "mean"));
        let (a, b): (f64, f64) = (cell(s, "ece_std").parse().unwrap(), cell(m, "std").parse().unwrap());
        assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
        assert!(cell(s, "accuracy_n").is_empty() && cell(s, "mce_mean").is_empty());
    }
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Clinical Reliability Score") && report.contains("### Across seeds"));
    assert!(report.contains("No clean runs with a prompt-template probe"));
}
