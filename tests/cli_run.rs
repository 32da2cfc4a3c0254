//! End-to-end tests of `calibra run`, `calibra merge` and `calibra report`: recipe validation, the
//! shipped recipes' dry runs, a real `kill -9` of a running grid and its resume, the lock, shards +
//! merge, and the report regenerated from a store alone.
mod common;

use common::{PRIOR_RECIPE, calibra};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path).display().to_string()
}

fn write_recipe(dir: &Path, text: &str) -> String {
    let path = dir.join("recipe.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn sorted_lines(store: &Path) -> Vec<String> {
    let mut lines: Vec<String> =
        std::fs::read_to_string(store.join("runs.jsonl")).unwrap().lines().map(str::to_string).collect();
    lines.sort();
    lines
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn the_shipped_recipes_pass_the_dry_run() {
    for name in [
        "recipes/crs-bench.toml",
        "recipes/mvc-bench.toml",
        "recipes/quickstart.toml",
        "recipes/rehearsal-224.toml",
    ] {
        let out = calibra(&["run", &repo(name), "--dry-run", "--no-check-paths"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("recipe valid") && text.contains("feature passes"), "{name}: {text}");
        let out = calibra(&["run", &repo(name), "--dry-run", "--no-check-paths", "--format", "json"]);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let per_regime = summary["per_regime"].as_object().unwrap();
        let fits: u64 = per_regime.values().map(|c| c["fits"].as_u64().unwrap()).sum();
        assert_eq!(fits, summary["fits"].as_u64().unwrap(), "{name}");
    }
}

#[test]
fn a_recipe_typo_is_an_error_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = PRIOR_RECIPE.replace("severities = [1, 3]", "severities = [1, 3]\nseverity = 2");
    let recipe = write_recipe(dir.path(), &text);
    let out = calibra(&["run", &recipe, "--dry-run"]);
    assert!(!out.status.success());
    let line = text.lines().position(|l| l == "severity = 2").unwrap() + 1;
    let err = stderr(&out);
    assert!(err.contains(&format!("recipe.toml:{line}")) && err.contains("severity"), "{err}");
    let text = PRIOR_RECIPE.replace("probes = [\"prior\"]", "probes = [\"priors\"]");
    let out = calibra(&["run", &write_recipe(dir.path(), &text), "--dry-run"]);
    let err = stderr(&out);
    assert!(
        err.contains("key `regimes.frozen.probes[0]`") && err.contains("unknown probe `priors`"),
        "{err}"
    );
}

#[test]
fn a_missing_local_encoder_is_an_error_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let text = PRIOR_RECIPE.replace("source = \"hf:calibra/none\"", "source = \"checkpoints/not-there\"");
    let recipe = write_recipe(dir.path(), &text);
    let store = dir.path().join("store");
    let out = calibra(&["run", &recipe, "--out", &store.display().to_string()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("encoders[0].source") && err.contains("checkpoints/not-there"), "{err}");
    assert!(!store.exists(), "nothing is created when the recipe is invalid");
}

#[test]
fn fits_the_executor_cannot_run_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    // Zero-shot fits (1 encoder × 1 dataset × 1 template × 5 seeds) need a CLIP checkpoint; the hub
    // id `hf:calibra/none` resolves to none.
    let text = format!(
        "{PRIOR_RECIPE}\n[regimes.zero-shot]\ntemplates = [\"a photo of a {{}}.\"]\ndatasets = [\"derm\"]\n"
    );
    let recipe = write_recipe(dir.path(), &text);
    let store = dir.path().join("store");
    // Recipe validation already finds that the hub id is not in the local cache (issue 20).
    let out = calibra(&["run", &recipe, "--out", &store.display().to_string()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("hf:calibra/none") && err.contains("not in the local Hugging Face cache"), "{err}");
    assert!(!store.exists(), "nothing is created for a recipe that cannot run");
    // Without path checks, the executor's own check refuses the fits before anything is created.
    let out = calibra(&["run", &recipe, "--out", &store.display().to_string(), "--no-check-paths"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cannot run 5 fit(s)") && err.contains("zero-shot:C1") && err.contains("encoder `none`"),
        "{err}"
    );
    assert!(!store.exists(), "nothing is created for a grid that cannot run");
}

#[test]
fn an_unwritable_store_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = write_recipe(dir.path(), PRIOR_RECIPE);
    let out = calibra(&["run", &recipe, "--out", "/proc/calibra-store"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("/proc/calibra-store") && err.contains("cannot create"), "{err}");
}

/// Kills a real `calibra run` with SIGKILL mid-grid (after some fits are committed), checks that a
/// second process is refused by the lock meanwhile, then resumes: the store ends with exactly the
/// records of an uninterrupted run — none lost, none duplicated.
#[test]
fn a_killed_run_resumes_to_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = write_recipe(dir.path(), PRIOR_RECIPE);
    let whole = dir.path().join("whole");
    let out = calibra(&["run", &recipe, "--out", &whole.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = sorted_lines(&whole);
    let fits_total = std::fs::read_to_string(whole.join("journal/fits.jsonl")).unwrap().lines().count();
    assert_eq!(fits_total, 50);

    let killed = dir.path().join("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(["run", &recipe, "--out", &killed.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = killed.join("journal/fits.jsonl");
    let started = Instant::now();
    // Complete journal lines (a torn last line has no newline yet).
    let committed = || std::fs::read_to_string(&journal).map(|t| t.matches('\n').count()).unwrap_or(0);
    while committed() < 3 {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never committed 3 fits");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be killed");
        std::thread::sleep(Duration::from_millis(5));
    }
    // While it runs, a second process on the same store is refused, naming the holder.
    let second = calibra(&["run", &recipe, "--out", &killed.display().to_string(), "--resume"]);
    let holder_pid = child.id();
    let err = stderr(&second);
    assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be killed");
    assert!(!second.status.success());
    assert!(err.contains(&format!("locked by pid {holder_pid}")) && err.contains("--break-lock"), "{err}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let at_kill = committed();
    assert!(at_kill < fits_total, "the kill came after the last fit");
    // The killed process left its lock: resuming without --break-lock names it as stale.
    let out = calibra(&["run", &recipe, "--out", &killed.display().to_string(), "--resume"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("looks stale"), "{}", stderr(&out));
    let out = calibra(&["run", &recipe, "--out", &killed.display().to_string(), "--resume", "--break-lock"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("({at_kill} already finished")), "{}", stderr(&out));
    assert_eq!(sorted_lines(&killed), expected);
    assert_eq!(committed(), fits_total);
}

#[test]
fn shards_and_merge_give_the_records_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = write_recipe(dir.path(), PRIOR_RECIPE);
    let whole = dir.path().join("whole");
    assert!(calibra(&["run", &recipe, "--out", &whole.display().to_string()]).status.success());
    let mut shards = Vec::new();
    for i in 0..3 {
        let shard = dir.path().join(format!("shard{i}"));
        let out =
            calibra(&["run", &recipe, "--out", &shard.display().to_string(), "--shard", &format!("{i}/3")]);
        assert!(out.status.success(), "{}", stderr(&out));
        shards.push(shard.display().to_string());
    }
    let merged = dir.path().join("merged");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    let merged_s = merged.display().to_string();
    args.extend(["--out", &merged_s]);
    let out = calibra(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sorted_lines(&merged), sorted_lines(&whole));
    assert_eq!(
        std::fs::read_to_string(merged.join("journal/recipe.toml")).unwrap(),
        std::fs::read_to_string(&recipe).unwrap()
    );
    let bad = calibra(&["run", &recipe, "--dry-run", "--shard", "3/3"]);
    assert!(!bad.status.success() && stderr(&bad).contains("0 <= I < N"), "{}", stderr(&bad));
}

/// `calibra report STORE` equals `calibra eval STORE` with the recipe's evaluator settings. The store
/// is built by the library with an executor defined here whose metrics vary by encoder (the `prior`
/// baseline gives every encoder AUROC 0.5, and a CRS reference needs spread on every axis).
#[test]
fn report_regenerates_the_evaluation_from_the_store_alone() {
    use calibra_crs::RunRecord;
    use calibra_run::executor::{ExecError, Executor, RunContext};
    use calibra_run::fitted::FitOutcome;
    use calibra_run::store::{PredictionsData, RunOutput, RunStore, StoreOptions};
    use calibra_run::{FitSpec, Recipe, ValidationOptions};
    use std::collections::BTreeMap;

    /// Metrics from the encoder's index, the fraction and the condition (a smooth, ordered profile).
    struct Profiled;
    impl Executor for Profiled {
        fn supports(&self, _fit: &FitSpec) -> Result<(), String> {
            Ok(())
        }
        fn fit<'e>(&'e self, fit: &FitSpec, ctx: &mut RunContext<'_>) -> Result<FitOutcome<'e>, ExecError> {
            let c = &fit.config;
            let e: f64 = c.encoder.name.trim_start_matches('e').parse()?;
            Ok(FitOutcome::Records(
                ctx.missing
                    .iter()
                    .map(|slot| {
                        let drop = if slot.condition == calibra_crs::Condition::Clean {
                            0.0
                        } else {
                            0.02 * (3.0 - e)
                        };
                        let auroc = 0.6 + 0.05 * e + 0.05 * c.label_fraction - drop + 0.001 * c.seed as f64;
                        let ece = 0.02 + 0.03 * ((e * 7.0) % 4.0) + 0.001 * c.seed as f64;
                        RunOutput {
                            record: RunRecord {
                                encoder: c.encoder.name.clone(),
                                dataset: c.dataset.name.clone(),
                                regime: c.regime,
                                probe: c.probe.clone(),
                                calibrator: slot.calibrator.clone(),
                                label_fraction: c.label_fraction,
                                seed: c.seed,
                                condition: slot.condition.clone(),
                                metrics: BTreeMap::from([("macro_auroc".into(), auroc), ("ece".into(), ece)]),
                                paths: BTreeMap::new(),
                                timings: BTreeMap::new(),
                                versions: BTreeMap::new(),
                                training: None,
                            },
                            predictions: PredictionsData::None,
                        }
                    })
                    .collect(),
            ))
        }
    }

    let text = r#"seeds = [0, 1, 2]
label_fractions = [0.01, 0.05, 0.1, 0.25, 1.0]
calibrators = ["none"]
encoders = [
  { name = "e0", source = "hf:x/e0" },
  { name = "e1", source = "hf:x/e1" },
  { name = "e2", source = "hf:x/e2" },
  { name = "e3", source = "hf:x/e3" },
]
datasets = [{ spec = "synth:derm" }]

[perturbations]
names = ["jpeg"]
severities = [1, 2]

[regimes.frozen]
probes = ["logistic"]

[evaluator]
bootstrap = 50
seed = 7
"#;
    let recipe = Recipe::parse(text, "report.toml", ValidationOptions { check_paths: false }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let mut store = RunStore::open(&store_dir, StoreOptions::default()).unwrap();
    store.save_recipe(text).unwrap();
    calibra_run::run_grid(&recipe, &mut store, &Profiled, None, true, &mut calibra_run::NoProgress).unwrap();
    drop(store);

    let s = store_dir.display().to_string();
    let out = calibra(&["report", &s, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("report.md"));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(store_dir.join("report/report.md").is_file() && store_dir.join("report/crs.csv").is_file());
    let eval_out = dir.path().join("eval");
    let eval = common::json_of(&[
        "eval",
        &s,
        "--bootstrap",
        "50",
        "--seed",
        "7",
        "--out",
        &eval_out.display().to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(report, eval);
    assert_eq!(report["crs"].as_array().unwrap().len(), 4);
    // Regenerating replaces the report in place.
    assert!(calibra(&["report", &s]).status.success());
}
