//! The quickstart's promises (issue #9, "Done when"), kept on a miniature of `recipes/quickstart.toml`
//! small enough for every CI build: the shipped tiny panel (`checkpoints/`), real frozen logistic
//! probes at the five label fractions, LoRA, a perturbation and an institutional shift target,
//! Dirichlet calibration on the single-label task, and `calibra run --report` (the evaluator with its
//! bootstrap). One test, three promises, sharing the uninterrupted run:
//!
//! 1. a run killed with SIGKILL mid-grid and resumed writes the same report as the uninterrupted one;
//! 2. `--shard I/N` + `calibra merge` give the records of one process;
//! 3. every metric-row number of the report (and of its calibration-stability table) is recomputed from
//!    the run records, and every reliability diagram reads a predictions file a record points to.
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const MINI_QUICKSTART: &str = r#"seeds = [0, 1]
label_fractions = [0.01, 0.05, 0.1, 0.25, 1.0]
calibrators = ["none", "temperature", "dirichlet"]

[[encoders]]
source = "checkpoints/scratch"

[[encoders]]
source = "checkpoints/generalist"

[[encoders]]
source = "checkpoints/derm-specialist"

[[datasets]]
name = "derm"
spec = "synth:derm?n=80&size=32&seed=5"

[[datasets]]
name = "chest"
spec = "synth:chest?n=240&size=32&seed=5"
shift = [{ name = "chest-b", spec = "synth:chest-site-b?n=240&size=32&seed=5" }]
calibrators = ["none", "temperature"]

[perturbations]
names = ["jpeg"]
severities = [2]
label_fractions = [1.0]

[regimes.frozen]
probes = ["logistic"]

[regimes.lora]
r = 2
alpha = 4.0
dropout = 0.0
lr = 1e-3
epochs = 1
targets = ["query", "value"]
encoders = ["derm-specialist"]
label_fractions = [1.0]

[[losses]]
name = "ce"
regimes = ["lora"]

[evaluator]
bootstrap = 20
seed = 0
regime = "frozen"
"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `calibra ARGS` from the repository root (the recipe's `checkpoints/...` paths are relative to it).
fn calibra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).current_dir(root()).output().unwrap()
}

fn ok(args: &[&str]) -> Output {
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn sorted_records(store: &Path) -> Vec<String> {
    let mut lines: Vec<String> =
        std::fs::read_to_string(store.join("runs.jsonl")).unwrap().lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Every file under `dir` (relative path → bytes), with the store's own path written as `STORE` so
/// two stores' reports compare.
fn tree(dir: &Path, store: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, store: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, store, out);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).replace(store, "STORE");
                out.insert(path.strip_prefix(base).unwrap().display().to_string(), text.into_bytes());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &store.display().to_string(), &mut out);
    out
}

fn records(store: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(store.join("runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The condition columns the report's CSVs use: (kind, perturbation, severity, shift target).
fn condition_cells(c: &serde_json::Value) -> [String; 4] {
    let s = |k: &str| c.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
    [
        s("kind").unwrap(),
        s("perturbation").unwrap_or_default(),
        s("severity").unwrap_or_default(),
        s("target").unwrap_or_default(),
    ]
}

/// Mean and sample standard deviation (ddof 1; `None` below two values).
fn mean_std(v: &[f64]) -> (f64, Option<f64>) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let std = (v.len() > 1).then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    (mean, std)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    reader
        .records()
        .map(|r| header.iter().cloned().zip(r.unwrap().iter().map(str::to_string)).collect())
        .collect()
}

/// Promise 3: the report's metric rows and calibration-stability rows are the records' seed
/// aggregates, and its reliability diagrams read the records' predictions files.
fn check_report_traces_to_records(store: &Path) {
    let records = records(store);
    // Record values by (encoder, dataset, regime, probe, calibrator, fraction, condition…, metric).
    let mut by_row: BTreeMap<Vec<String>, Vec<f64>> = BTreeMap::new();
    for r in &records {
        let s = |k: &str| r[k].as_str().unwrap().to_string();
        let mut key = vec![
            s("encoder"),
            s("dataset"),
            s("regime"),
            s("probe"),
            s("calibrator"),
            r["label_fraction"].as_f64().unwrap().to_string(),
        ];
        key.extend(condition_cells(&r["condition"]));
        for (metric, value) in r["metrics"].as_object().unwrap() {
            let mut k = key.clone();
            k.push(metric.clone());
            by_row.entry(k).or_default().push(value.as_f64().unwrap());
        }
    }
    let report = store.join("report");
    let rows = csv_rows(&report.join("metric_rows.csv"));
    assert!(!rows.is_empty());
    for row in &rows {
        let key: Vec<String> = [
            "encoder",
            "dataset",
            "regime",
            "probe",
            "calibrator",
            "label_fraction",
            "condition",
            "perturbation",
            "severity",
            "shift_target",
            "metric",
        ]
        .iter()
        .map(|c| row[*c].clone())
        .collect();
        let values = by_row.get(&key).unwrap_or_else(|| panic!("metric row {key:?} has no run record"));
        let (mean, std) = mean_std(values);
        assert_eq!(row["n_seeds"], values.len().to_string(), "{key:?}");
        assert!(close(row["mean"].parse().unwrap(), mean), "{key:?}: {} vs {mean}", row["mean"]);
        match std {
            Some(s) => assert!(close(row["std"].parse().unwrap(), s), "{key:?}: {} vs {s}", row["std"]),
            None => assert_eq!(row["std"], "", "{key:?}"),
        }
    }
    // Every record metric is in the report.
    assert_eq!(rows.len(), by_row.len(), "metric rows vs distinct (run cell, metric) of the records");

    // Calibration stability across seeds: the same aggregates per (cell, metric).
    let mut seen = 0;
    for row in csv_rows(&report.join("calibration_stability.csv")) {
        assert_eq!(row["axis"], "seeds", "no templates in this study");
        for metric in ["accuracy", "ece", "mce", "adaptive_ece"] {
            let mean_cell = &row[&format!("{metric}_mean")];
            if mean_cell.is_empty() {
                continue;
            }
            let key: Vec<String> = [
                "encoder",
                "dataset",
                "regime",
                "method",
                "calibrator",
                "label_fraction",
                "condition",
                "perturbation",
                "severity",
                "shift_target",
            ]
            .iter()
            .map(|c| row[*c].clone())
            .chain([metric.to_string()])
            .collect();
            let values = &by_row[&key];
            assert!(close(mean_cell.parse().unwrap(), mean_std(values).0), "{key:?}");
            seen += 1;
        }
    }
    assert!(seen > 0, "the report has a calibration-stability table");

    // Reliability diagrams: each figure reads a predictions file that a record points to.
    let pointed: std::collections::BTreeSet<String> =
        records.iter().filter_map(|r| r["paths"]["predictions"].as_str().map(str::to_string)).collect();
    let figures = std::fs::read_dir(report.join("figures")).unwrap().count();
    assert!(figures > 0, "the report has figures");
    let text = String::from_utf8_lossy(&std::fs::read(report.join("report.md")).unwrap()).to_string();
    for source in text.split("predictions/").skip(1).map(|t| {
        format!(
            "predictions/{}",
            t.split(|c: char| c == '`' || c == ')' || c.is_whitespace()).next().unwrap()
        )
    }) {
        assert!(pointed.contains(&source), "report.md cites {source}, which no record points to");
    }
}

#[test]
fn mini_quickstart_resumes_to_the_same_report_shards_merge_and_traces_to_records() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("mini-quickstart.toml");
    std::fs::write(&recipe, MINI_QUICKSTART).unwrap();
    let recipe = recipe.display().to_string();
    let path = |name: &str| -> PathBuf { dir.path().join(name) };

    // The uninterrupted run, with its report.
    let whole = path("whole");
    let out = ok(&["run", &recipe, "--out", &whole.display().to_string(), "--report"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains(&format!("{}", whole.join("report/report.md").display())), "{err}");
    let fits_total = std::fs::read_to_string(whole.join("journal/fits.jsonl")).unwrap().lines().count();
    assert_eq!(
        fits_total,
        3 * 2 * 5 * 2 + 2 * 2,
        "frozen: 3 encoders × 2 datasets × 5 fractions × 2 seeds; LoRA: 2 × 2"
    );
    check_report_traces_to_records(&whole);

    // Promise 1: SIGKILL mid-grid, resume, same report.
    let killed = path("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(["run", &recipe, "--out", &killed.display().to_string(), "--report"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = killed.join("journal/fits.jsonl");
    let committed = || std::fs::read_to_string(&journal).map(|t| t.matches('\n').count()).unwrap_or(0);
    let started = Instant::now();
    // Kill in the second half of the grid, where the LoRA fits (trained with checkpoints) run.
    while committed() < fits_total / 2 {
        assert!(started.elapsed() < Duration::from_secs(900), "the run never got half way");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let at_kill = committed();
    assert!(at_kill < fits_total, "the kill came after the last fit");
    assert!(!killed.join("report").exists(), "no report from a killed run");
    let out =
        ok(&["run", &recipe, "--out", &killed.display().to_string(), "--resume", "--break-lock", "--report"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains(&format!("({at_kill} already finished")), "{err}");
    assert_eq!(sorted_records(&killed), sorted_records(&whole));
    let (a, b) = (tree(&whole.join("report"), &whole), tree(&killed.join("report"), &killed));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "report file {name} differs after kill + resume");
    }

    // Promise 2: two shards + merge = one process.
    let mut shards = Vec::new();
    for i in 0..2 {
        let shard = path(&format!("shard{i}"));
        ok(&["run", &recipe, "--out", &shard.display().to_string(), "--shard", &format!("{i}/2")]);
        shards.push(shard.display().to_string());
    }
    let merged = path("merged");
    let merged_s = merged.display().to_string();
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--out", &merged_s]);
    ok(&args);
    assert_eq!(sorted_records(&merged), sorted_records(&whole));
}
