//! End-to-end tests of the FOCUS additions and the encoder analyses of `calibra eval`, on the committed
//! example examples/focus_runs/ (written by scripts/examples/make_focus_runs.py).

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn runs() -> String {
    root().join("examples/focus_runs/runs.jsonl").display().to_string()
}

fn groups() -> String {
    root().join("examples/focus_runs/groups.csv").display().to_string()
}

fn calibra(threads: &str, args: &[&str]) -> Output {
    common::calibra_with_env(args, &[("RAYON_NUM_THREADS", threads)])
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "calibra failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `calibra eval` on the example with the FOCUS flags, into `dir`.
fn eval(dir: &Path, threads: &str, with_groups_file: bool, extra: &[&str]) -> Output {
    let runs = runs();
    let groups = groups();
    let mut args = vec![
        "eval",
        runs.as_str(),
        "--probe",
        "linear",
        "--bootstrap",
        "20",
        "--no-stability",
        "--delta-bootstrap",
        "300",
        "--group-column",
        "age:median",
        "--group-column",
        "sex",
        "--quality-column",
        "quality:median",
        "--specialist",
        "RETFound=brset-dr",
        "--crossover-reference",
        "ViT-B16",
        "--out",
        dir.to_str().unwrap(),
    ];
    if !extra.contains(&"--seed") {
        args.extend(["--seed", "4"]);
    }
    if with_groups_file {
        args.extend(["--groups", groups.as_str()]);
    }
    args.extend_from_slice(extra);
    calibra(threads, &args)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn csv_rows(path: &Path) -> Vec<csv::StringRecord> {
    csv::Reader::from_path(path).unwrap().records().map(|r| r.unwrap()).collect()
}

#[test]
fn writes_gaps_deltas_and_encoder_analyses() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eval");
    // The whole evaluation is on stdout; evaluation.json leaves the adaptation deltas to their CSV.
    let run = eval(&out, "2", true, &["--format", "json"]);
    ok(&run);
    let e: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let f = &e["focus"];
    assert_eq!(f["min_group_size"], 30);
    let file = json(&out.join("evaluation.json"));
    assert!(file["focus"].get("adaptation").is_none());
    assert_eq!(file["focus"]["run_gaps"], f["run_gaps"]);

    // Gaps: one RunGaps per (clean run with predictions, column): 8 frozen + 6 LoRA runs × 3 columns.
    let run_gaps = f["run_gaps"].as_array().unwrap();
    assert_eq!(run_gaps.len(), 14 * 3);
    for g in run_gaps {
        for m in g["metrics"].as_array().unwrap() {
            let values: Vec<f64> =
                m["groups"].as_array().unwrap().iter().filter_map(|v| v["value"].as_f64()).collect();
            // Invariant: the gap is max − min of the group values.
            if values.len() >= 2 {
                let hi = values.iter().copied().fold(f64::MIN, f64::max);
                let lo = values.iter().copied().fold(f64::MAX, f64::min);
                assert_eq!(m["gap"].as_f64().unwrap(), hi - lo);
            } else {
                assert!(m["gap"].is_null());
            }
        }
        if g["column"] == "sex" {
            // The 4-sample `U` group is reported as skipped, never dropped.
            let u = &g["metrics"][0]["groups"][2];
            assert_eq!((u["group"].as_str(), u["n"].as_u64()), (Some("U"), Some(4)));
            assert!(u["skipped"].as_str().unwrap().contains("minimum group size 30"));
        }
    }
    let metrics_csv = csv_rows(&out.join("group_metrics.csv"));
    assert_eq!(metrics_csv.len(), 14 * 4 * (2 + 3 + 2));
    // Cell gaps: (7 cells: 4 frozen + 3 LoRA) × 3 columns × 4 metrics, 2 seeds each.
    let gaps_csv = csv_rows(&out.join("group_gaps.csv"));
    assert_eq!(gaps_csv.len(), 7 * 3 * 4);
    assert!(gaps_csv.iter().all(|r| &r[11] == "2"));

    // Adaptation: 3 encoders × 2 seeds paired with their frozen `linear` run.
    let pairs = f["adaptation"].as_array().unwrap();
    assert_eq!(pairs.len(), 6);
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(runs()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for p in pairs {
        assert_eq!(p["base"]["probe"], "linear");
        assert_eq!(p["samples"], 150);
        for d in p["deltas"].as_array().unwrap() {
            let metric = d["metric"].as_str().unwrap();
            // The point values on all samples equal the metrics the generator recorded from the same
            // files (4 decimals there).
            for (side, value) in [("base", &d["base"]), ("adapted", &d["adapted"])] {
                let run = &p[side];
                let rec = records
                    .iter()
                    .find(|r| {
                        r["encoder"] == run["encoder"]
                            && r["regime"] == run["regime"]
                            && r["probe"] == run["probe"]
                            && r["seed"] == run["seed"]
                            && r["dataset"] == run["dataset"]
                            && r["calibrator"] == "none"
                            && r["label_fraction"] == 1.0
                            && r["condition"]["kind"] == "clean"
                    })
                    .unwrap();
                let recorded = rec["metrics"][metric].as_f64().unwrap();
                assert!((value.as_f64().unwrap() - recorded).abs() <= 5.01e-5, "{metric} {side}");
            }
            let (p, q) = (d["p_value"].as_f64().unwrap(), d["p_adjusted"].as_f64().unwrap());
            assert!(p > 0.0 && p <= q && q <= 1.0);
            assert!(d["lower"].as_f64().unwrap() <= d["upper"].as_f64().unwrap());
        }
    }
    assert_eq!(csv_rows(&out.join("adaptation_deltas.csv")).len(), 6 * 4);

    // Encoder analyses.
    let a = &e["encoder_analyses"];
    let e1 = &a["specialist"]["rows"][0];
    assert_eq!(e1["encoder"], "RETFound");
    assert!(e1["delta_spec"].as_f64().unwrap() > 0.0 && !e1["delta_ood"].is_null());
    // Temperature scaling records ECE × 0.35 (4 decimals): reductions near 65 %.
    let e2 = a["calibration_repair"]["rows"].as_array().unwrap();
    assert_eq!(e2.len(), 8);
    for r in e2 {
        assert!((r["ece_reduction"].as_f64().unwrap() - 0.65).abs() < 0.01, "{r}");
    }
    let e3 = a["feature_depth"]["rows"].as_array().unwrap();
    assert_eq!(e3.len(), 2);
    assert_eq!(e3[0]["depths"].as_array().unwrap().len(), 4);
    assert_eq!(a["corruption_miscalibration"]["rows"].as_array().unwrap().len(), 8);
    assert_eq!(a["corruption_correlation"]["cells"], 8);
    assert_eq!(a["prompting"]["rows"].as_array().unwrap().len(), 2);
    assert_eq!(a["label_crossover"]["rows"].as_array().unwrap().len(), 6);
    for name in [
        "e1_specialist.csv",
        "e2_calibration_repair.csv",
        "e3_feature_depth.csv",
        "e4_corruption_miscalibration.csv",
        "e5_prompting.csv",
        "e6_label_crossover.csv",
    ] {
        assert!(!csv_rows(&out.join(name)).is_empty(), "{name}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for heading in [
        "## Encoder analyses (E1–E6)",
        "## Subgroup gaps",
        "## Image-quality strata gaps",
        "## Adaptation deltas",
    ] {
        assert!(report.contains(heading), "{heading}");
    }
}

#[test]
fn group_columns_from_predictions_files_equal_the_group_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    ok(&eval(&a, "1", true, &[]));
    ok(&eval(&b, "1", false, &[]));
    for name in ["group_metrics.csv", "group_gaps.csv", "adaptation_deltas.csv"] {
        assert_eq!(std::fs::read(a.join(name)).unwrap(), std::fs::read(b.join(name)).unwrap(), "{name}");
    }
}

#[test]
fn deltas_do_not_depend_on_the_thread_count_and_follow_the_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
    ok(&eval(&a, "1", true, &[]));
    ok(&eval(&b, "4", true, &[]));
    ok(&eval(&c, "4", true, &["--seed", "5"]));
    let read = |d: &Path| std::fs::read(d.join("adaptation_deltas.csv")).unwrap();
    assert_eq!(read(&a), read(&b));
    assert_ne!(read(&a), read(&c));
}

#[test]
fn a_smaller_minimum_group_size_keeps_the_small_group() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eval");
    ok(&eval(&out, "2", true, &["--min-group-size", "3"]));
    let rows = csv_rows(&out.join("group_metrics.csv"));
    let u: Vec<_> = rows.iter().filter(|r| &r[8] == "sex" && &r[13] == "U").collect();
    assert!(!u.is_empty());
    assert!(u.iter().all(|r| !r[15].contains("minimum group size")));
}

#[test]
fn bad_group_inputs_name_the_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    // A declared column that the group table lacks.
    let out = eval(&tmp.path().join("x"), "1", true, &["--group-column", "site"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("groups.csv: header") && err.contains("`site`"), "{err}");
    // A non-numeric age under a median split.
    let text = std::fs::read_to_string(groups()).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let fields: Vec<&str> = lines[3].split(',').collect();
    lines[3] = format!("{},old,{},{}", fields[0], fields[2], fields[3]);
    let bad = tmp.path().join("groups.csv");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let runs = runs();
    let out = calibra(
        "1",
        &[
            "eval",
            &runs,
            "--probe",
            "linear",
            "--bootstrap",
            "0",
            "--no-stability",
            "--group-column",
            "age:median",
            "--groups",
            bad.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 4, column `age`") && err.contains("`old`"), "{err}");
    // A malformed column declaration is refused by the argument parser.
    let out = calibra("1", &["eval", &runs, "--group-column", "age:mean"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAME:median"));
}
