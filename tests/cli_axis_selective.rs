//! End-to-end tests of the optional fifth CRS axis "selective" (issue 24): `--axis-weights a,b,c,d,e` in
//! `calibra eval --selective` and `calibra crs`, and the refusals of requests that cannot be served.
//! (The library tests, crates/calibra-crs/tests/selective_axis.rs, check the numbers; these check the
//! command line and the files.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn calibra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).output().expect("run calibra")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "calibra failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed(out: &Output) -> String {
    assert!(!out.status.success(), "calibra should have failed: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// examples/selective_runs as a run set with the four default axes too (calibra-testkit).
fn five_axis_runs(dir: &Path) -> String {
    calibra_testkit::five_axis_runs(&root().join("examples/selective_runs"), dir).display().to_string()
}

#[test]
fn five_axis_weights_add_the_selective_axis_to_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = five_axis_runs(tmp.path());
    let five = tmp.path().join("five");
    let reference = tmp.path().join("five.json");
    ok(&calibra(&[
        "eval",
        &runs,
        "--bootstrap",
        "20",
        "--no-stability",
        "--selective",
        "--axis-weights",
        "0.2,0.2,0.2,0.2,0.2",
        "--save-reference",
        reference.to_str().unwrap(),
        "--out",
        five.to_str().unwrap(),
    ]));
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(five.join("evaluation.json")).unwrap()).unwrap();
    assert_eq!(e["axis_weights"].as_array().unwrap().len(), 5);
    assert_eq!(e["estimators"]["selective"], "augrc_msp");
    assert_eq!(e["crs"][0]["normalized"].as_array().unwrap().len(), 5);
    let profiles = std::fs::read_to_string(five.join("profiles.csv")).unwrap();
    assert!(
        profiles.starts_with("encoder,discrimination,calibration,label_efficiency,robustness,selective\n")
    );
    let crs = std::fs::read_to_string(five.join("crs.csv")).unwrap();
    assert!(crs.lines().next().unwrap().contains("robustness_normalized,selective_normalized,dominance"));
    assert!(std::fs::read_to_string(five.join("report.md")).unwrap().contains("sel̃"));

    // The profiles table eval wrote is a five-axis `calibra crs` input.
    let table = ok(&calibra(&[
        "crs",
        five.join("profiles.csv").to_str().unwrap(),
        "--axis-weights",
        "0.2,0.2,0.2,0.2,0.2",
    ]));
    assert!(table.contains("axis weights (disc, cal, le, rob, sel)"), "{table}");
    let err = failed(&calibra(&["crs", five.join("profiles.csv").to_str().unwrap()]));
    assert!(err.contains("has a `selective` column"), "{err}");

    // A saved five-axis reference is refused with four weights, and eval without --selective cannot use it.
    let four = tmp.path().join("four");
    ok(&calibra(&["eval", &runs, "--bootstrap", "0", "--no-stability", "--out", four.to_str().unwrap()]));
    let four_profiles = four.join("profiles.csv");
    let four_text = std::fs::read_to_string(&four_profiles).unwrap();
    assert!(four_text.starts_with("encoder,discrimination,calibration,label_efficiency,robustness\n"));
    let err = failed(&calibra(&[
        "crs",
        four_profiles.to_str().unwrap(),
        "--reference",
        reference.to_str().unwrap(),
    ]));
    assert!(err.contains("reference has 5 axes but the request has 4"), "{err}");
    let err =
        failed(&calibra(&["eval", &runs, "--bootstrap", "0", "--reference", reference.to_str().unwrap()]));
    assert!(err.contains("add --selective"), "{err}");
}

#[test]
fn requests_without_what_the_axis_needs_are_refused() {
    let runs = root().join("examples/selective_runs/runs.jsonl").display().to_string();
    let err = failed(&calibra(&["eval", &runs, "--bootstrap", "0", "--axis-weights", "0.2,0.2,0.2,0.2,0.2"]));
    assert!(err.contains("the selective axis needs the selective analyses"), "{err}");
    assert!(err.contains("add --selective"), "{err}");
    let profiles = root().join("examples/profiles_crsbench.csv").display().to_string();
    let err = failed(&calibra(&["crs", &profiles, "--normalized", "--axis-weights", "0.2,0.2,0.2,0.2,0.2"]));
    assert!(err.contains("needs a `selective` column"), "{err}");
    let err = failed(&calibra(&["crs", &profiles, "--axis-weights", "0.2,0.2,0.2,0.2,0.1,0.1"]));
    assert!(err.contains("expected 4 comma-separated numbers (or 5 to add the selective axis)"), "{err}");
}
