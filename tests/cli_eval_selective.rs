//! End-to-end tests of `calibra eval --selective` (issue 24 item 4): the selective, conformal and
//! shift-detection section on the committed example examples/selective_runs/ (written by
//! scripts/golden/selective_eval.py, whose golden values are compared here through evaluation.json),
//! byte-identity of every default output when the flag is absent, and the refusals of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn calibra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).output().expect("run calibra")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "calibra failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

fn failed(out: &Output) -> String {
    assert!(!out.status.success(), "calibra should have failed: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn selective_runs() -> String {
    root().join("examples/selective_runs/runs.jsonl").display().to_string()
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn the_example_gives_the_golden_coverage_tables_and_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eval");
    let runs = selective_runs();
    ok(&calibra(&[
        "eval",
        &runs,
        "--bootstrap",
        "0",
        "--no-stability",
        "--strict",
        "--selective",
        "--conformal-alpha",
        "0.1",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]));
    let e = json(&out.join("evaluation.json"));
    let s = &e["selective"];
    assert_eq!(s["method"]["method"], "lac");
    assert_eq!(s["runs"].as_array().unwrap().len(), 12);
    let golden = json(&root().join("crates/calibra-crs/tests/golden/selective_eval.json"));
    assert_eq!(golden["eval_seed"], 7);
    for g in golden["conformal"].as_array().unwrap() {
        let c = s["conformal"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["run"]["encoder"] == g["encoder"]
                    && c["run"]["seed"] == g["seed"]
                    && c["run"]["condition"] == g["condition"]
            })
            .unwrap();
        for key in ["coverage", "mean_set_size"] {
            let (got, want) = (c[key].as_f64().unwrap(), g[key].as_f64().unwrap());
            assert!((got - want).abs() < 1e-12, "{key}: {got} vs {want} for {g}");
        }
    }
    let cells = std::fs::read_to_string(out.join("selective_cells.csv")).unwrap();
    assert_eq!(cells.lines().count(), 1 + 6, "{cells}");
    assert!(cells.starts_with("encoder,dataset,regime,probe,calibrator,label_fraction,condition,runs,aurc"));
    for f in ["selective_runs.csv", "conformal_sets.csv", "shift_detection.csv"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    assert_eq!(std::fs::read_to_string(out.join("shift_detection.csv")).unwrap().lines().count(), 1 + 4);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Selective prediction, conformal sets and shift detection"), "{md}");
    assert!(md.contains("**Calibration set**: each fit's clean test predictions split by a seeded draw"));
    for f in ["figures/risk_coverage_derm.svg", "figures/coverage_shift_derm.svg"] {
        assert!(md.contains(f) && out.join(f).is_file(), "{f}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("risk–coverage") && html.contains("<svg"));
}

#[test]
fn without_the_flag_every_output_is_what_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = root().join("examples/focus_runs/runs.jsonl").display().to_string();
    let base =
        ["eval", runs.as_str(), "--probe", "linear", "--bootstrap", "20", "--no-stability", "--seed", "3"];
    let plain = tmp.path().join("plain");
    let with = tmp.path().join("with");
    let mut args = base.to_vec();
    args.extend(["--out", plain.to_str().unwrap()]);
    ok(&calibra(&args));
    let mut args = base.to_vec();
    args.extend(["--selective", "--out", with.to_str().unwrap()]);
    ok(&calibra(&args));
    let (plain_files, with_files) = (tree(&plain), tree(&with));
    let e = json(&plain.join("evaluation.json"));
    assert!(e.get("selective").is_none(), "the default evaluation.json must not carry the key");
    assert_eq!(e["axis_weights"].as_array().unwrap().len(), 4);
    assert!(
        !plain_files.keys().any(|f| f.contains("selective") || f.contains("conformal")),
        "{plain_files:?}"
    );
    // Every default file is unchanged by --selective, except the three that gain the section.
    for (path, bytes) in &plain_files {
        if ["evaluation.json", "report.md", "report.html"].contains(&path.as_str()) {
            continue;
        }
        assert!(with_files.get(path) == Some(bytes), "{path} differs with --selective");
    }
    let mut w = json(&with.join("evaluation.json"));
    assert!(w.as_object_mut().unwrap().remove("selective").is_some());
    assert_eq!(w, e, "evaluation.json differs beyond the `selective` key");
    let md = std::fs::read_to_string(with.join("report.md")).unwrap();
    let plain_md = std::fs::read_to_string(plain.join("report.md")).unwrap();
    assert!(!plain_md.contains("Selective prediction") && md.contains("Selective prediction"));
}

#[test]
fn bad_alpha_small_splits_and_multilabel_aps_are_refused() {
    let runs = selective_runs();
    let err = failed(&calibra(&["eval", &runs, "--selective", "--conformal-alpha", "1.5"]));
    assert!(err.contains("strictly between 0 and 1"), "{err}");
    let err = failed(&calibra(&["eval", &runs, "--conformal-alpha", "0.1"]));
    assert!(err.contains("--selective"), "{err}");
    // 120 clean test rows → a calibration half of 60 < 1/0.01 − 1 = 99.
    let err =
        failed(&calibra(&["eval", &runs, "--bootstrap", "0", "--selective", "--conformal-alpha", "0.01"]));
    assert!(err.contains("runs.jsonl:1") && err.contains("60 of 120") && err.contains("too small"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let mut csv = String::from("id,label_a,label_b,prob_a,prob_b\n");
    for i in 0..40 {
        csv.push_str(&format!(
            "r{i},{},{},{},{}\n",
            i % 2,
            (i / 2) % 2,
            0.3 + 0.01 * i as f64,
            0.6 - 0.01 * i as f64
        ));
    }
    std::fs::write(tmp.path().join("ml.csv"), csv).unwrap();
    let record = r#"{"encoder":"E","dataset":"cxr","regime":"frozen","probe":"linear","calibrator":"none","label_fraction":1.0,"seed":0,"condition":{"kind":"clean"},"metrics":{},"paths":{"predictions":"ml.csv"}}"#;
    let records = tmp.path().join("runs.jsonl");
    std::fs::write(&records, format!("{record}\n")).unwrap();
    let records = records.display().to_string();
    let err =
        failed(&calibra(&["eval", &records, "--bootstrap", "0", "--selective", "--conformal-method", "aps"]));
    assert!(err.contains("no multilabel form") && err.contains("--conformal-method lac"), "{err}");
    ok(&calibra(&["eval", &records, "--bootstrap", "0", "--selective"]));
}
