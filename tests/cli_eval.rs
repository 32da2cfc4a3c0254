//! End-to-end tests of `calibra eval` on the committed example run set (examples/run_records.jsonl,
//! written by scripts/examples/make_run_records.py).

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::calibra;

fn calibra_threads(threads: &str, args: &[&str]) -> Output {
    common::calibra_with_env(args, &[("RAYON_NUM_THREADS", threads)])
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run_records.jsonl")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "calibra failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

fn eval_into(dir: &Path, extra: &[&str]) -> Output {
    let example = example();
    let mut args = vec!["eval", example.to_str().unwrap(), "--out", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    calibra(&args)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn crs_by_encoder(rows: &serde_json::Value) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["encoder"].as_str().unwrap().to_string(), r["crs"].as_f64().unwrap()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn writes_every_output_and_they_parse() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eval");
    ok(&eval_into(&out, &["--bootstrap", "50", "--seed", "3"]));
    let e = json(&out.join("evaluation.json"));
    assert_eq!(e["format"], "calibra-evaluation");
    assert_eq!(e["input"]["records"], 324);
    assert_eq!(e["crs"].as_array().unwrap().len(), 6);
    assert_eq!(e["bootstrap"]["replicates"], 50);
    // Per encoder: the interval contains... not necessarily the point, but lower ≤ upper, probabilities
    // in [0, 1], P(rank 1) sums to 1 over encoders (exactly one rank-1 encoder per replicate).
    let mut p1 = 0.0;
    for c in e["crs"].as_array().unwrap() {
        assert!(c["lower"].as_f64().unwrap() <= c["upper"].as_f64().unwrap());
        p1 += c["p_rank1"].as_f64().unwrap();
        assert!(c["p_top3"].as_f64().unwrap() >= c["p_rank1"].as_f64().unwrap());
    }
    assert!((p1 - 1.0).abs() < 1e-12);
    let names: Vec<&str> =
        e["rank_comparisons"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"auroc_vs_crs"), "{names:?}");
    assert!(names.contains(&"frozen_vs_lora_discrimination"), "{names:?}");
    assert!(e["stability"]["leave_one_out"].as_array().unwrap().len() == 6);
    // CSVs parse with their headers; one metric row per (group, metric) with n_seeds = 3.
    let mut rows = csv::Reader::from_path(out.join("metric_rows.csv")).unwrap();
    let n = rows.records().map(|r| r.unwrap()).inspect(|r| assert_eq!(&r[13], "3")).count();
    assert_eq!(n, e["input"]["metric_rows"].as_u64().unwrap() as usize);
    // evaluation.json leaves the per-row tables to their CSV files and says where each went, with its
    // row count; the first keys keep the evaluation's own order.
    let tables = e["tables"].as_array().unwrap();
    for t in tables {
        let file = t["file"].as_str().unwrap();
        let rows = csv::Reader::from_path(out.join(file)).unwrap().records().count();
        assert_eq!(t["rows"].as_u64().unwrap() as usize, rows, "{file}");
        assert!(e.get(t["key"].as_str().unwrap()).is_none());
    }
    let keys: Vec<&str> = tables.iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["metric_rows", "calibration_stability", "focus.adaptation"]);
    assert!(e["focus"].get("adaptation").is_none() && e["focus"].get("run_gaps").is_some());
    let text = std::fs::read_to_string(out.join("evaluation.json")).unwrap();
    assert!(text.starts_with(r#"{"format":"calibra-evaluation","version":"#), "{}", &text[..80]);
    assert!(!out.join("calibration_stability.json").exists());
    assert_eq!(csv::Reader::from_path(out.join("crs.csv")).unwrap().records().count(), 6);
    assert_eq!(csv::Reader::from_path(out.join("profiles.csv")).unwrap().records().count(), 6);
    // The report links figures that exist; three runs point to predictions files → three diagrams.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let mut linked = 0;
    for line in report.lines() {
        if let Some(start) = line.find("](figures/") {
            let rel = &line[start + 2..line.len() - 1];
            let svg = std::fs::read_to_string(out.join(rel)).unwrap();
            assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{rel}");
            linked += 1;
        }
    }
    assert_eq!(std::fs::read_dir(out.join("figures")).unwrap().count(), linked);
    // The three clean full-label isic2019 runs: one reliability grid with three panels (one per encoder).
    assert_eq!(report.matches("figures/reliability_").count(), 1);
    let grid = std::fs::read_to_string(out.join("figures/reliability_isic2019.svg")).unwrap();
    assert_eq!(grid.matches("stroke=\"#888\"").count(), 3, "one framed panel per run");
    // report.html: the same report, self-contained, every figure inlined.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<figure").count(), linked);
    assert!(!html.contains("<img") && !html.contains("<script"));
    // No temporary directory is left next to the output.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn crs_equals_the_crs_command_on_the_same_profiles() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("eval");
    ok(&eval_into(&out, &["--bootstrap", "0", "--no-stability"]));
    let e = json(&out.join("evaluation.json"));
    let crs = calibra(&["crs", out.join("profiles.csv").to_str().unwrap(), "--format", "json"]);
    ok(&crs);
    let from_crs: serde_json::Value = serde_json::from_slice(&crs.stdout).unwrap();
    // Exact equality: profiles.csv is written in shortest round-trip form and both paths use the same
    // reference code.
    assert_eq!(crs_by_encoder(&e["crs"]), crs_by_encoder(&from_crs));
    assert!(e["bootstrap"].is_null());
}

#[test]
fn same_seed_gives_identical_bytes_at_any_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let example = example();
    let run = |name: &str, threads: &str, seed: &str| {
        let dir = tmp.path().join(name);
        ok(&calibra_threads(
            threads,
            &[
                "eval",
                example.to_str().unwrap(),
                "--bootstrap",
                "300",
                "--seed",
                seed,
                "--out",
                dir.to_str().unwrap(),
            ],
        ));
        dir
    };
    let a = run("a", "1", "11");
    let b = run("b", "3", "11");
    let c = run("c", "1", "12");
    let mut files = 0;
    for entry in walk(&a) {
        let rel = entry.strip_prefix(&a).unwrap();
        assert_eq!(std::fs::read(&entry).unwrap(), std::fs::read(b.join(rel)).unwrap(), "{}", rel.display());
        files += 1;
    }
    assert!(files >= 10);
    assert_ne!(
        std::fs::read(a.join("evaluation.json")).unwrap(),
        std::fs::read(c.join("evaluation.json")).unwrap(),
        "another seed draws other replicates"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_saved_reference_reproduces_the_panel_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("ref.json");
    let first = tmp.path().join("first");
    ok(&eval_into(
        &first,
        &["--bootstrap", "0", "--no-stability", "--save-reference", reference.to_str().unwrap()],
    ));
    let second = tmp.path().join("second");
    ok(&eval_into(
        &second,
        &["--bootstrap", "0", "--no-stability", "--reference", reference.to_str().unwrap()],
    ));
    let (a, b) = (json(&first.join("evaluation.json")), json(&second.join("evaluation.json")));
    assert_eq!(b["reference_origin"], "saved");
    assert_eq!(crs_by_encoder(&a["crs"]), crs_by_encoder(&b["crs"]));
    // A reference frozen with other weights refuses conflicting --weights.
    let third = tmp.path().join("third");
    let out = eval_into(&third, &["--reference", reference.to_str().unwrap(), "--weights", "0.5,0.25,0.25"]);
    assert!(!out.status.success());
    assert!(!third.exists());
}

/// Writes the example with `edit` applied to its lines and runs eval on it; returns (output, out dir).
fn eval_edited(tmp: &Path, edit: impl Fn(Vec<String>) -> Vec<String>) -> (Output, PathBuf) {
    let text = std::fs::read_to_string(example()).unwrap();
    let lines = edit(text.lines().map(str::to_string).collect());
    let input = tmp.join("runs.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = tmp.join("out");
    let output =
        calibra(&["eval", input.to_str().unwrap(), "--bootstrap", "10", "--out", out.to_str().unwrap()]);
    (output, out)
}

fn fails_without_output(output: &Output, out: &Path, needles: &[&str]) {
    assert!(!output.status.success(), "expected failure");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for needle in needles {
        assert!(stderr.contains(needle), "`{needle}` not in: {stderr}");
    }
    assert!(!out.exists(), "no output directory after an error");
    let parent = out.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.contains(".out."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_unknown_key_names_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (output, out) = eval_edited(tmp.path(), |mut lines| {
        lines[4] = lines[4].replacen("\"seed\"", "\"sede\":1,\"seed\"", 1);
        lines
    });
    fails_without_output(&output, &out, &["runs.jsonl:5", "sede"]);
}

#[test]
fn a_duplicate_run_key_is_reported_not_averaged() {
    let tmp = tempfile::tempdir().unwrap();
    let (output, out) = eval_edited(tmp.path(), |mut lines| {
        let dup = lines[2].replace("\"ece\":", "\"ece\":0.5,\"x\":");
        lines.push(dup);
        lines
    });
    fails_without_output(&output, &out, &["duplicate", "runs.jsonl"]);
}

#[test]
fn an_encoder_missing_a_whole_axis_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (output, out) = eval_edited(tmp.path(), |lines| {
        lines
            .into_iter()
            .filter(|l| !(l.contains("\"encoder\":\"CheXzero\"") && l.contains("\"kind\":\"perturbation\"")))
            .collect()
    });
    fails_without_output(&output, &out, &["CheXzero", "robustness"]);
}

#[test]
fn a_missing_input_or_existing_output_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let output =
        calibra(&["eval", tmp.path().join("nope.jsonl").to_str().unwrap(), "--out", out.to_str().unwrap()]);
    fails_without_output(&output, &out, &["nope.jsonl"]);
    // An existing directory is kept unless --force.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let output = eval_into(&out, &["--bootstrap", "0", "--no-stability"]);
    assert!(!output.status.success());
    assert_eq!(std::fs::read_to_string(out.join("keep.txt")).unwrap(), "mine");
    ok(&eval_into(&out, &["--bootstrap", "0", "--no-stability", "--force"]));
    assert!(out.join("evaluation.json").exists() && !out.join("keep.txt").exists());
}

#[test]
fn a_run_directory_is_read_like_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("runs");
    std::fs::create_dir(&dir).unwrap();
    let text = std::fs::read_to_string(example()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (head, tail) = lines.split_at(100);
    std::fs::write(dir.join("a.jsonl"), head.join("\n")).unwrap();
    std::fs::write(dir.join("b.jsonl"), tail.join("\n")).unwrap();
    let from_dir =
        calibra(&["eval", dir.to_str().unwrap(), "--bootstrap", "0", "--no-stability", "--format", "json"]);
    let from_file = calibra(&[
        "eval",
        example().to_str().unwrap(),
        "--bootstrap",
        "0",
        "--no-stability",
        "--format",
        "json",
    ]);
    ok(&from_dir);
    ok(&from_file);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&from_dir.stdout).unwrap(),
        serde_json::from_slice(&from_file.stdout).unwrap(),
    );
    assert_eq!(a["crs"], b["crs"]);
    assert_eq!(a["metric_rows"], b["metric_rows"]);
}

#[test]
fn point_crs_matches_the_numpy_oracle() {
    // tests/golden/eval_example.json: scripts/golden/eval_example.py (numpy, benches/peers/eval_peer.py).
    let golden = json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/eval_example.json"));
    let out = calibra(&[
        "eval",
        example().to_str().unwrap(),
        "--bootstrap",
        "0",
        "--no-stability",
        "--format",
        "json",
    ]);
    ok(&out);
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = crs_by_encoder(&e["crs"]);
    let names = golden["encoders"].as_array().unwrap();
    assert_eq!(ours.len(), names.len());
    for ((name, crs), (g_name, g_crs)) in ours.iter().zip(names.iter().zip(golden["crs"].as_array().unwrap()))
    {
        assert_eq!(name, g_name.as_str().unwrap());
        assert!((crs - g_crs.as_f64().unwrap()).abs() <= 1e-12, "{name}: {crs} vs {g_crs}");
    }
}
