//! Fault injection into the run store's writes (issue 20): a disk that fills up after N bytes, at
//! every point of the commit protocol (inside a predictions file, inside the records append, inside
//! the journal line), and a rename that fails. After each fault, `--resume` (reopening the store and
//! running the grid again) gives byte-identical records and journal, the same predictions files, and
//! no stray file.
mod support;

use std::collections::BTreeMap;
use std::path::Path;

use calibra_run::store::{FaultInjection, RunStore, StoreOptions};
use calibra_run::{NoProgress, Recipe, ValidationOptions, run_grid};
use support::{TestExecutor, sorted_lines};

/// 2 fits (2 seeds) × 3 slots (clean, jpeg at severity 2, the shift target; one calibrator).
const TINY: &str = r#"seeds = [0, 1]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
source = "hf:org/alpha"

[[datasets]]
spec = "synth:derm?n=40"
shift = [{ name = "derm-b", spec = "synth:fundus?n=40" }]

[perturbations]
names = ["jpeg"]
severities = [2]

[regimes.frozen]
probes = ["logistic"]
"#;

fn tiny() -> Recipe {
    Recipe::parse(TINY, "tiny.toml", ValidationOptions { check_paths: false }).unwrap()
}

/// Every file of the store (relative path → bytes), without the failure log (a log of what happened,
/// not part of the store's state).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                if rel != "journal/failures.jsonl" {
                    out.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn run(dir: &Path, faults: FaultInjection) -> usize {
    let mut store = RunStore::open(dir, StoreOptions::default()).unwrap();
    store.inject_faults(faults);
    let s = run_grid(&tiny(), &mut store, &TestExecutor::default(), None, false, &mut NoProgress).unwrap();
    s.failed.len()
}

#[test]
fn a_disk_full_at_any_byte_then_resume_gives_the_uninterrupted_store() {
    let reference = tempfile::tempdir().unwrap();
    assert_eq!(run(reference.path(), FaultInjection::default()), 0);
    let expected = files(reference.path());
    // Bytes one fit writes: its predictions files, its records, its journal line.
    let journal = String::from_utf8(expected["journal/fits.jsonl"].clone()).unwrap();
    let first: serde_json::Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    let fit = first["fit"].as_str().unwrap();
    let predictions: usize = expected.iter().filter(|(k, _)| k.contains(fit)).map(|(_, v)| v.len()).sum();
    let per_fit =
        predictions + first["end"].as_u64().unwrap() as usize + journal.lines().next().unwrap().len() + 1;
    let mut failures_seen = 0;
    for n in (0..per_fit + 8).step_by(29).chain([predictions, predictions + 1, per_fit - 1, per_fit]) {
        let dir = tempfile::tempdir().unwrap();
        let failed = run(dir.path(), FaultInjection { fail_after_bytes: Some(n as u64), fail_renames: 0 });
        assert!(failed >= 1, "a budget of {n} bytes cannot hold the grid");
        failures_seen += failed;
        assert_eq!(run(dir.path(), FaultInjection::default()), 0, "resume after a fault at byte {n}");
        let got = files(dir.path());
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "files after byte {n}"
        );
        assert!(got == expected, "contents differ after a fault at byte {n}");
    }
    assert!(failures_seen > 0);
}

#[test]
fn a_failing_rename_fails_the_fit_and_resume_completes_it() {
    let reference = tempfile::tempdir().unwrap();
    run(reference.path(), FaultInjection::default());
    let expected = files(reference.path());
    for renames in [1, 3, 4] {
        let dir = tempfile::tempdir().unwrap();
        let failed = run(dir.path(), FaultInjection { fail_after_bytes: None, fail_renames: renames });
        assert!(failed >= 1);
        // No temporary file is left by the failed renames.
        let stray: Vec<String> = files(dir.path()).into_keys().filter(|k| k.contains(".tmp-")).collect();
        assert!(stray.is_empty(), "{stray:?}");
        assert_eq!(run(dir.path(), FaultInjection::default()), 0);
        // The fit that failed ran last on resume: the same records, in another order.
        assert_eq!(sorted_lines(dir.path()), sorted_lines(reference.path()));
        let got = files(dir.path());
        assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
        for (k, v) in &expected {
            if !k.ends_with(".jsonl") {
                assert_eq!(&got[k], v, "{k}");
            }
        }
    }
}
