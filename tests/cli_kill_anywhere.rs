//! SIGKILL at random points of `calibra run` and `calibra report` (issue 20's fault injection).
//!
//! Each round kills a real process after a seeded random delay drawn over the whole length of an
//! uninterrupted run (so some kills land before the store or the report directory exists, most in the
//! middle, some after the end), then resumes it (`run --resume --break-lock`, or the same `report`
//! command again). Afterwards the output directory holds exactly the files of the uninterrupted run,
//! byte for byte — records, journal, predictions, report, figures — and its parent holds nothing else:
//! no temporary file or directory survives.
mod common;

use calibra_testkit::sorted_names;
use common::{PRIOR_RECIPE, calibra, tree_files};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kill rounds per command: CI-sized; raise `CALIBRA_KILL_ROUNDS` for a longer hunt.
fn rounds() -> u64 {
    std::env::var("CALIBRA_KILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(8)
}

/// splitmix64: the round's kill delay is a pure function of the round number.
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A delay in [0, 1.1 × `whole`), drawn for `round`.
fn kill_delay(round: u64, whole: Duration) -> Duration {
    let u = (splitmix(round) >> 11) as f64 / (1u64 << 53) as f64;
    whole.mul_f64(1.1 * u)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Start `calibra ARGS`, kill it with SIGKILL after `delay` (unless it ended first); whether it was
/// killed.
fn run_and_kill(args: &[&str], delay: Duration) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let killed = child.try_wait().unwrap().is_none();
    let _ = child.kill(); // SIGKILL
    child.wait().unwrap();
    killed
}

/// `got` has exactly `expected`'s files with the same bytes; the failure names the first difference.
fn same_tree(got: &BTreeMap<String, Vec<u8>>, expected: &BTreeMap<String, Vec<u8>>, what: &str) {
    let extra: Vec<&String> = got.keys().filter(|k| !expected.contains_key(*k)).collect();
    let missing: Vec<&String> = expected.keys().filter(|k| !got.contains_key(*k)).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{what}: extra files {extra:?}, missing files {missing:?}"
    );
    for (name, bytes) in expected {
        assert!(got[name] == *bytes, "{what}: {name} differs");
    }
}

fn timed(args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?}: {}", stderr(&out));
    started.elapsed()
}

#[test]
fn run_killed_anywhere_resumes_to_the_same_store_with_no_stray_file() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("recipe.toml");
    std::fs::write(&recipe, PRIOR_RECIPE).unwrap();
    let recipe = recipe.display().to_string();
    let whole = dir.path().join("whole");
    let length = timed(&["run", &recipe, "--out", &whole.display().to_string()]);
    let expected = tree_files(&whole);
    assert!(expected.contains_key("runs.jsonl") && expected.keys().any(|k| k.starts_with("predictions/")));

    let mut killed_mid_run = 0;
    for round in 0..rounds() {
        let parent = dir.path().join(format!("round{round}"));
        std::fs::create_dir_all(&parent).unwrap();
        let store = parent.join("store").display().to_string();
        let delay = kill_delay(round, length);
        if run_and_kill(&["run", &recipe, "--out", &store], delay) {
            killed_mid_run += 1;
        }
        let out = calibra(&["run", &recipe, "--out", &store, "--resume", "--break-lock"]);
        assert!(out.status.success(), "round {round} (killed after {delay:?}): resume: {}", stderr(&out));
        same_tree(
            &tree_files(Path::new(&store)),
            &expected,
            &format!("round {round} (killed after {delay:?})"),
        );
        assert_eq!(sorted_names(&parent), ["store"], "round {round}: something was left beside the store");
    }
    assert!(killed_mid_run > 0, "no round killed a running process (every kill came after the end)");
}

#[test]
fn report_killed_anywhere_is_rewritten_whole_with_no_stray_directory() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("recipe.toml");
    std::fs::write(&recipe, PRIOR_RECIPE).unwrap();
    let store = dir.path().join("store").display().to_string();
    assert!(calibra(&["run", &recipe.display().to_string(), "--out", &store]).status.success());
    let parent = dir.path().join("reports");
    let out = parent.join("report");
    let out_s = out.display().to_string();
    let args = ["report", &store, "--out", &out_s, "--figures", "svg,png"];
    let length = timed(&args);
    let expected = tree_files(&out);
    assert!(expected.contains_key("report.md") && expected.contains_key("evaluation.json"));

    let mut killed_mid_run = 0;
    for round in 0..rounds() {
        // Even rounds write a fresh report; odd rounds replace a complete one (the swap path).
        if round % 2 == 0 {
            std::fs::remove_dir_all(&out).unwrap();
        }
        let delay = kill_delay(1000 + round, length);
        if run_and_kill(&args, delay) {
            killed_mid_run += 1;
        }
        let again = calibra(&args);
        assert!(again.status.success(), "round {round} (killed after {delay:?}): {}", stderr(&again));
        same_tree(&tree_files(&out), &expected, &format!("round {round} (killed after {delay:?})"));
        assert_eq!(sorted_names(&parent), ["report"], "round {round}: something was left beside the report");
    }
    assert!(killed_mid_run > 0, "no round killed a running process (every kill came after the end)");
}
