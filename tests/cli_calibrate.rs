//! End-to-end tests of `calibra calibrate` on the shipped miscalibrated examples (examples/, generated
//! by scripts/examples/miscalibrated.py).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::calibra;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(args: &[&str]) -> Output {
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?} failed:\n{}", text(&out.stderr));
    out
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Fit → save → load → apply gives byte-identical calibrated files, for every method.
#[test]
fn fit_save_load_apply_round_trips_identically() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("temperature", "miscalibrated_cal.csv", "miscalibrated_test.csv"),
        ("vector", "miscalibrated_cal.csv", "miscalibrated_test.csv"),
        ("matrix", "miscalibrated_cal.csv", "miscalibrated_test.csv"),
        ("isotonic", "miscalibrated_cal.csv", "miscalibrated_test.csv"),
        ("dirichlet", "miscalibrated_cal.csv", "miscalibrated_test.csv"),
        ("platt", "miscalibrated_binary_cal.csv", "miscalibrated_binary_test.csv"),
        ("platt", "miscalibrated_multilabel_cal.csv", "miscalibrated_multilabel_test.csv"),
        ("temperature", "miscalibrated_multilabel_cal.csv", "miscalibrated_multilabel_test.csv"),
        ("isotonic", "miscalibrated_multilabel_cal.csv", "miscalibrated_multilabel_test.csv"),
    ];
    for (i, (method, cal, test)) in cases.iter().enumerate() {
        let saved = dir.path().join(format!("{i}-{method}.json"));
        let first = dir.path().join(format!("{i}-{method}-fit.csv"));
        let second = dir.path().join(format!("{i}-{method}-load.csv"));
        let (cal, test) = (example(cal), example(test));
        let mut args = vec!["calibrate", "--method", method, "--fit", p(&cal), "--apply", p(&test)];
        args.extend(["--out", p(&first), "--save", p(&saved)]);
        if *method == "dirichlet" {
            args.extend(["--reg-lambda", "0.1", "--reg-mu", "0.1"]); // keep the test quick: no CV
        }
        ok(&args);
        ok(&["calibrate", "--load", p(&saved), "--apply", p(&test), "--out", p(&second)]);
        let (a, b) = (std::fs::read(&first).unwrap(), std::fs::read(&second).unwrap());
        assert!(a == b, "{method}: loaded calibrator gives different output");
        let header = text(&a).lines().next().unwrap().to_string();
        assert!(header.contains(",prob_") && !header.contains("logit_"), "{method}: header {header}");
        let json: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
        assert_eq!(json["method"], *method);
        assert_eq!(json["format_version"], 1);
        assert!(json["class_names"].as_array().is_some_and(|c| !c.is_empty()));
        assert!(json["params"].is_object() && json["report"].is_object());
    }
}

fn report(cal: &str, test: &str, method: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let (cal, test) = (example(cal), example(test));
    let o = ok(&[
        "calibrate",
        "--method",
        method,
        "--fit",
        p(&cal),
        "--apply",
        p(&test),
        "--out",
        p(&out),
        "--report",
        "--format",
        "json",
    ]);
    serde_json::from_slice(&o.stdout).expect("--report --format json prints JSON")
}

fn row(r: &Value, metric: &str) -> (f64, f64) {
    let row = r["rows"].as_array().unwrap().iter().find(|x| x["metric"] == metric).expect(metric);
    (row["before"].as_f64().unwrap(), row["after"].as_f64().unwrap())
}

/// The acceptance test: on the shipped miscalibrated example, temperature scaling lowers ECE
/// and leaves AUROC unchanged. On the binary example the calibrated positive-class probability is a
/// strictly increasing function of the log-odds, so AUROC is identical (exact). On the 4-class
/// example top-label accuracy is identical (argmax preserved), and one-vs-rest AUROC, which compares
/// p_k across samples whose other logits differ, moves only slightly (we bound it by 0.005).
#[test]
fn temperature_report_shows_ece_falling_and_auroc_unchanged() {
    let r = report("miscalibrated_binary_cal.csv", "miscalibrated_binary_test.csv", "temperature");
    let (ece_before, ece_after) = row(&r, "ECE");
    assert!(ece_after < ece_before, "binary ECE {ece_before} → {ece_after}");
    let (auc_before, auc_after) = row(&r, "macro AUROC");
    assert_eq!(auc_before, auc_after, "binary AUROC must be unchanged");
    assert_eq!(r["delta_auroc"].as_f64(), Some(0.0));
    let (acc_before, acc_after) = row(&r, "accuracy");
    assert_eq!(acc_before, acc_after);

    let r = report("miscalibrated_cal.csv", "miscalibrated_test.csv", "temperature");
    let (ece_before, ece_after) = row(&r, "ECE");
    assert!(ece_after < 0.5 * ece_before, "multiclass ECE {ece_before} → {ece_after}");
    let (acc_before, acc_after) = row(&r, "accuracy");
    assert_eq!(acc_before, acc_after, "temperature scaling must not change the argmax");
    let delta = r["delta_auroc"].as_f64().unwrap();
    assert!(delta.abs() < 0.005, "multiclass ΔAUROC {delta}");
}

#[test]
fn report_table_lists_the_e2_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let (cal, test) = (example("miscalibrated_cal.csv"), example("miscalibrated_test.csv"));
    let o = ok(&[
        "calibrate",
        "--method",
        "isotonic",
        "--fit",
        p(&cal),
        "--apply",
        p(&test),
        "--out",
        p(&out),
        "--report",
    ]);
    let table = text(&o.stdout);
    for metric in ["ECE", "adaptive ECE", "Brier", "NLL", "accuracy", "macro AUROC", "ΔAUROC"] {
        assert!(table.contains(metric), "missing {metric} in\n{table}");
    }
}

/// Write a predictions CSV into `dir`.
fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

const CAL: &str =
    "id,label,logit_a,logit_b,logit_c\nr1,0,2,0,0\nr2,1,0,2,1\nr3,2,0,1,3\nr4,0,1,0,0\nr5,1,0,1,0\n";

#[test]
fn mismatched_classes_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cal = write(dir.path(), "cal.csv", CAL);
    let reordered = write(dir.path(), "reordered.csv", "id,label,logit_b,logit_a,logit_c\nt1,0,1,2,0\n");
    let other = write(dir.path(), "other.csv", "id,label,logit_a,logit_b,logit_d\nt1,0,1,2,0\n");
    let out = dir.path().join("out.csv");
    for (file, what) in [(&reordered, "different column order"), (&other, "different class sets")] {
        let o = calibra(&[
            "calibrate",
            "--method",
            "temperature",
            "--fit",
            p(&cal),
            "--apply",
            p(file),
            "--out",
            p(&out),
        ]);
        assert!(!o.status.success());
        let err = text(&o.stderr);
        assert!(err.contains(what) && err.contains("cal.csv"), "{err}");
        assert!(!out.exists(), "no output on error");
    }
    // A saved calibrator applied to other classes.
    let saved = dir.path().join("t.json");
    ok(&["calibrate", "--method", "temperature", "--fit", p(&cal), "--save", p(&saved)]);
    std::fs::write(&out, "previous content").unwrap();
    let o = calibra(&["calibrate", "--load", p(&saved), "--apply", p(&other), "--out", p(&out)]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("class mismatch"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous content", "existing output untouched");
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let nan = write(dir.path(), "nan.csv", "id,label,logit_a,logit_b\nr1,0,1,NaN\nr2,1,0,1\n");
    let o = calibra(&[
        "calibrate",
        "--method",
        "temperature",
        "--fit",
        p(&nan),
        "--apply",
        p(&nan),
        "--out",
        p(&out),
    ]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("nan.csv") && err.contains("line 2") && err.contains("logit_b"), "{err}");

    let one = write(dir.path(), "one.csv", "id,label,logit_a,logit_b\nr1,0,1,0\n");
    let o = calibra(&[
        "calibrate",
        "--method",
        "isotonic",
        "--fit",
        p(&one),
        "--apply",
        p(&one),
        "--out",
        p(&out),
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("at least 2"), "{}", text(&o.stderr));

    let junk = write(dir.path(), "junk.json", "{\"method\": \"temperature\"}");
    let o = calibra(&["calibrate", "--load", p(&junk), "--apply", p(&one), "--out", p(&out)]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("junk.json") && text(&o.stderr).contains("format_version"));
    assert!(!out.exists());
}

#[test]
fn a_class_missing_from_the_calibration_split_is_a_named_warning() {
    let dir = tempfile::tempdir().unwrap();
    // Class c never occurs as a label.
    let cal = write(
        dir.path(),
        "cal.csv",
        "id,label,logit_a,logit_b,logit_c\nr1,0,2,0,0\nr2,1,0,2,1\nr3,0,1,0,0\nr4,1,0,1,0\n",
    );
    let out = dir.path().join("out.csv");
    for method in ["temperature", "isotonic", "platt", "vector"] {
        let o =
            ok(&["calibrate", "--method", method, "--fit", p(&cal), "--apply", p(&cal), "--out", p(&out)]);
        let err = text(&o.stderr);
        assert!(err.contains("warning[class-missing]") && err.contains("`c`"), "{method}: {err}");
    }
}

#[test]
fn sals_maps_logits_into_the_zero_shot_range() {
    let dir = tempfile::tempdir().unwrap();
    let cal = write(dir.path(), "cal.csv", CAL);
    // Zero-shot logits in another row order; r1's adapted logits (2,0,0) map onto [1, 3] → (3, 1, 1).
    let zs = write(
        dir.path(),
        "zs.csv",
        "id,label,logit_a,logit_b,logit_c\nr2,1,0,0,0\nr1,0,1,3,2\nr3,2,0,0,1\nr4,0,0,1,0\nr5,1,0,0,1\n",
    );
    let out = dir.path().join("out.csv");
    let o =
        calibra(&["calibrate", "--method", "sals", "--fit", p(&cal), "--apply", p(&cal), "--out", p(&out)]);
    assert!(!o.status.success() && text(&o.stderr).contains("--zero-shot"));
    ok(&[
        "calibrate",
        "--method",
        "sals",
        "--fit",
        p(&cal),
        "--apply",
        p(&cal),
        "--out",
        p(&out),
        "--zero-shot",
        p(&zs),
    ]);
    let written = std::fs::read_to_string(&out).unwrap();
    let r1: Vec<f64> =
        written.lines().nth(1).unwrap().split(',').skip(2).map(|v| v.parse().unwrap()).collect();
    // softmax(3, 1, 1) (exact up to the 1e-12 range guard).
    let e = [3f64.exp(), 1f64.exp(), 1f64.exp()];
    let s: f64 = e.iter().sum();
    for (got, want) in r1.iter().zip(e.iter().map(|v| v / s)) {
        assert!((got - want).abs() < 1e-9, "{r1:?}");
    }
}

/// `--method lac` writes the same sets as MAPIE's SplitConformalClassifier on the shipped examples
/// (`tests/golden/conformal_examples.json`, `scripts/golden/conformal.py`), per label for multilabel.
#[test]
fn lac_sets_match_mapie_on_the_examples() {
    let golden: Value = serde_json::from_str(include_str!("golden/conformal_examples.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (i, case) in golden["cases"].as_array().unwrap().iter().enumerate() {
        let out = dir.path().join(format!("sets-{i}.csv"));
        let alpha = case["alpha"].to_string();
        let cal = example(case["cal"].as_str().unwrap());
        let test = example(case["test"].as_str().unwrap());
        let args = ["calibrate", "--method", "lac", "--alpha", &alpha, "--fit", p(&cal), "--apply", p(&test)];
        let mut args = args.to_vec();
        args.extend(["--out", p(&out)]);
        ok(&args);
        let written = std::fs::read_to_string(&out).unwrap();
        let mut lines = written.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        let ids: Vec<&str> = case["ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ids);
        if let Some(sets) = case.get("set") {
            assert_eq!(header, ["id", "label", "set"]);
            for (r, want) in rows.iter().zip(sets.as_array().unwrap()) {
                assert_eq!(r[2], want.as_str().unwrap(), "row {}", r[0]);
            }
        } else {
            assert_eq!(header, ["id", "set_effusion", "set_edema", "set_cardiomegaly"]);
            for (j, sets) in case["set_per_label"].as_array().unwrap().iter().enumerate() {
                for (r, want) in rows.iter().zip(sets.as_array().unwrap()) {
                    assert_eq!(r[1 + j], want.as_str().unwrap(), "row {} label {j}", r[0]);
                }
            }
        }
    }
}

/// APS / RAPS sets with --report: coverage near 1 − α on exchangeable examples, deterministic per
/// seed, and the bad inputs the issue lists are refused with a message saying why.
#[test]
fn conformal_report_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let (cal, test) = (example("miscalibrated_cal.csv"), example("miscalibrated_test.csv"));
    let run = |method: &str, extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        let mut args =
            vec!["calibrate", "--method", method, "--fit", p(&cal), "--apply", p(&test), "--out", p(&out)];
        args.extend_from_slice(extra);
        args.extend(["--report", "--format", "json"]);
        let o = ok(&args);
        (serde_json::from_slice::<Value>(&o.stdout).unwrap(), std::fs::read_to_string(&out).unwrap())
    };
    for (method, extra) in [
        ("aps", vec!["--last-label", "randomized", "--seed", "3"]),
        ("raps", vec!["--raps-lambda", "0.1", "--k-reg", "2"]),
        ("lac", vec![]),
    ] {
        let (report, csv) = run(method, &extra, &format!("{method}-a.csv"));
        let (again, csv2) = run(method, &extra, &format!("{method}-b.csv"));
        assert_eq!(report, again, "{method}: same seed, same report");
        assert_eq!(csv, csv2, "{method}: same seed, same sets");
        let coverage = report["coverage"].as_f64().unwrap();
        assert!((0.85..=1.0).contains(&coverage), "{method}: coverage {coverage} at α = 0.1");
        assert!(report["mean_set_size"].as_f64().unwrap() >= 1.0 - 1e-12 || method == "aps");
        assert_eq!(report["class_coverage"].as_array().unwrap().len(), 4);
    }
    let bad = |args: &[&str], needle: &str| {
        let out = dir.path().join("bad.csv");
        let mut all = vec!["calibrate", "--fit", p(&cal), "--apply", p(&test), "--out", p(&out)];
        all.extend_from_slice(args);
        let o = calibra(&all);
        assert!(!o.status.success(), "{args:?} must fail");
        let err = text(&o.stderr);
        assert!(err.contains(needle), "{args:?}: expected `{needle}` in `{err}`");
        assert!(!out.exists(), "{args:?}: nothing written on failure");
    };
    bad(&["--method", "lac", "--alpha", "1.5"], "must be in (0, 1)");
    bad(&["--method", "aps", "--alpha", "0"], "must be in (0, 1)");
    bad(&["--method", "lac", "--alpha", "0.0001"], "too small");
    bad(&["--method", "temperature", "--alpha", "0.1"], "apply to the conformal methods");
    let (mcal, mtest) =
        (example("miscalibrated_multilabel_cal.csv"), example("miscalibrated_multilabel_test.csv"));
    let out = dir.path().join("ml.csv");
    let o =
        calibra(&["calibrate", "--method", "aps", "--fit", p(&mcal), "--apply", p(&mtest), "--out", p(&out)]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("no multilabel form"), "{}", text(&o.stderr));
}
