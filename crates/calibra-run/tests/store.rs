//! The run store: resume, crash recovery at every byte of an interrupted commit, failures, the lock.
mod support;

use calibra_crs::RunRecordSet;
use calibra_run::store::{RunStore, StoreOptions};
use calibra_run::{NoProgress, RunError, expand, run_grid};
use support::{TestExecutor, copy_dir, recipe, sorted_lines};

fn open(dir: &std::path::Path) -> RunStore {
    RunStore::open(dir, StoreOptions::default()).unwrap()
}

#[test]
fn a_grid_runs_once_and_a_rerun_skips_every_finished_fit() {
    let dir = tempfile::tempdir().unwrap();
    let exec = TestExecutor::default();
    let summary = run_grid(&recipe(), &mut open(dir.path()), &exec, None, false, &mut NoProgress).unwrap();
    assert_eq!((summary.fits, summary.completed, summary.records_written), (18, 18, 216));
    assert_eq!(*exec.calls.borrow(), 18);
    // The evaluator reads the store as it is: 216 records, no duplicate run key.
    let set = RunRecordSet::from_paths(&[dir.path().join("runs.jsonl")]).unwrap();
    assert_eq!(set.len(), 216);
    // Every record points at an existing predictions file inside the store.
    for r in set.records() {
        assert!(dir.path().join(&r.record.paths["predictions"]).is_file());
    }
    let again = run_grid(&recipe(), &mut open(dir.path()), &exec, None, false, &mut NoProgress).unwrap();
    assert_eq!((again.already_done, again.completed, again.records_written), (18, 0, 0));
    assert_eq!(*exec.calls.borrow(), 18);
}

/// Simulates a kill at every stage of the last commit: the journal's last line not written, torn
/// after one byte, half, or all but its newline, combined with runs.jsonl cut within the last fit's
/// bytes (none, one byte, half, all but the last newline, all). Reopening and resuming must give exactly the uninterrupted store.
#[test]
fn an_interrupted_commit_is_cut_and_redone_without_loss_or_duplicate() {
    let reference = tempfile::tempdir().unwrap();
    let exec = TestExecutor::default();
    run_grid(&recipe(), &mut open(reference.path()), &exec, None, false, &mut NoProgress).unwrap();
    let expected = std::fs::read(reference.path().join("runs.jsonl")).unwrap();
    let journal = std::fs::read(reference.path().join("journal/fits.jsonl")).unwrap();
    let last_line_start = journal[..journal.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let entry: serde_json::Value = serde_json::from_slice(&journal[last_line_start..]).unwrap();
    let fit_start = entry["start"].as_u64().unwrap() as usize;
    let fit_len = expected.len() - fit_start;
    let line_len = journal.len() - last_line_start;
    for journal_keep in
        [last_line_start, last_line_start + 1, last_line_start + line_len / 2, journal.len() - 1]
    {
        for runs_keep in
            [fit_start, fit_start + 1, fit_start + fit_len / 2, expected.len() - 1, expected.len()]
        {
            let dir = tempfile::tempdir().unwrap();
            copy_dir(reference.path(), dir.path());
            std::fs::write(dir.path().join("journal/fits.jsonl"), &journal[..journal_keep]).unwrap();
            std::fs::write(dir.path().join("runs.jsonl"), &expected[..runs_keep]).unwrap();
            let mut store = open(dir.path());
            assert_eq!(store.recovery().runs_bytes_cut, (runs_keep - fit_start) as u64);
            assert_eq!(store.recovery().journal_bytes_cut, (journal_keep - last_line_start) as u64);
            let s = run_grid(&recipe(), &mut store, &exec, None, false, &mut NoProgress).unwrap();
            assert_eq!((s.completed, s.records_written), (1, 12), "journal {journal_keep} runs {runs_keep}");
            drop(store);
            assert_eq!(std::fs::read(dir.path().join("runs.jsonl")).unwrap(), expected);
            assert_eq!(std::fs::read(dir.path().join("journal/fits.jsonl")).unwrap(), journal);
        }
    }
}

#[test]
fn a_journal_that_commits_missing_bytes_is_an_error_not_a_silent_loss() {
    let dir = tempfile::tempdir().unwrap();
    run_grid(&recipe(), &mut open(dir.path()), &TestExecutor::default(), None, false, &mut NoProgress)
        .unwrap();
    let runs = std::fs::read(dir.path().join("runs.jsonl")).unwrap();
    std::fs::write(dir.path().join("runs.jsonl"), &runs[..runs.len() / 2]).unwrap();
    let err = RunStore::open(dir.path(), StoreOptions::default()).unwrap_err().to_string();
    assert!(err.contains("runs.jsonl") && err.contains("records were lost"), "{err}");
}

#[test]
fn failed_fits_are_recorded_apart_and_the_grid_continues_unless_fail_fast() {
    let dir = tempfile::tempdir().unwrap();
    let failing = TestExecutor { fail_on: Some("/lora/".into()), ..Default::default() };
    let s = run_grid(&recipe(), &mut open(dir.path()), &failing, None, false, &mut NoProgress).unwrap();
    assert_eq!((s.completed, s.failed.len()), (16, 2));
    assert!(s.failed[0].1.contains("simulated failure"));
    let failures = std::fs::read_to_string(dir.path().join("journal/failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count(), 2);
    assert!(failures.contains("simulated failure"));
    assert!(!std::fs::read_to_string(dir.path().join("runs.jsonl")).unwrap().contains("\"lora\""));
    // Resuming with a working executor runs only the failed fits.
    let fixed = TestExecutor::default();
    let s = run_grid(&recipe(), &mut open(dir.path()), &fixed, None, false, &mut NoProgress).unwrap();
    assert_eq!((s.already_done, s.completed), (16, 2));
    assert_eq!(*fixed.calls.borrow(), 2);
    // --fail-fast stops at the first failure.
    let dir = tempfile::tempdir().unwrap();
    let failing = TestExecutor { fail_on: Some("knn".into()), ..Default::default() };
    let err = run_grid(&recipe(), &mut open(dir.path()), &failing, None, true, &mut NoProgress).unwrap_err();
    assert!(matches!(err, RunError::FitFailed { .. }), "{err}");
    assert_eq!(*failing.calls.borrow(), 5); // 4 logistic fits of the first encoder, then the first knn
}

/// Every file name under `dir`, recursively (empty when `dir` does not exist).
fn all_names(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type().unwrap().is_dir() {
            out.extend(all_names(&entry.path()));
        }
    }
    out
}

/// Issue 20: a panic inside one fit (here an assertion, as burn's dtype check was) is that fit's
/// failure record, the grid continues, nothing half-written is left, and `--fail-fast` stops.
#[test]
fn a_panicking_fit_is_a_failure_record_and_the_grid_continues_unless_fail_fast() {
    let dir = tempfile::tempdir().unwrap();
    let panicking = TestExecutor { panic_on: Some("/lora/".into()), ..Default::default() };
    let s = run_grid(&recipe(), &mut open(dir.path()), &panicking, None, false, &mut NoProgress).unwrap();
    assert_eq!((s.completed, s.failed.len()), (16, 2));
    assert!(
        s.failed[0].1.contains("executor panicked") && s.failed[0].1.contains("simulated panic"),
        "{:?}",
        s.failed
    );
    let failures = std::fs::read_to_string(dir.path().join("journal/failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count(), 2);
    assert!(failures.contains("executor panicked"), "{failures}");
    assert_eq!(RunRecordSet::from_paths(&[dir.path().join("runs.jsonl")]).unwrap().len(), 16 * 12);
    let names = [all_names(&dir.path().join("features")), all_names(&dir.path().join("fits"))].concat();
    assert!(!names.iter().any(|n| n.contains(".tmp")), "half-written outputs left: {names:?}");
    // Resuming with a working executor runs only the two fits that panicked.
    let fixed = TestExecutor::default();
    let s = run_grid(&recipe(), &mut open(dir.path()), &fixed, None, false, &mut NoProgress).unwrap();
    assert_eq!((s.already_done, s.completed), (16, 2));
    // --fail-fast stops at the first panicking fit, with the panic as the error.
    let dir = tempfile::tempdir().unwrap();
    let panicking = TestExecutor { panic_on: Some("knn".into()), ..Default::default() };
    let err =
        run_grid(&recipe(), &mut open(dir.path()), &panicking, None, true, &mut NoProgress).unwrap_err();
    assert!(
        matches!(&err, RunError::FitFailed { message, .. } if message.contains("simulated panic")),
        "{err}"
    );
    assert_eq!(*panicking.calls.borrow(), 5);
    let failures = std::fs::read_to_string(dir.path().join("journal/failures.jsonl")).unwrap();
    assert_eq!(failures.lines().count(), 1);
}

#[test]
fn executor_outputs_that_do_not_match_the_fit_are_failures() {
    let dir = tempfile::tempdir().unwrap();
    let buggy = TestExecutor { wrong_encoder: true, ..Default::default() };
    let s = run_grid(&recipe(), &mut open(dir.path()), &buggy, None, false, &mut NoProgress).unwrap();
    assert_eq!(s.failed.len(), 18);
    assert!(s.failed[0].1.contains("field `encoder` is `nobody`"), "{}", s.failed[0].1);
    assert_eq!(std::fs::read_to_string(dir.path().join("runs.jsonl")).unwrap(), "");
}

#[test]
fn a_write_error_fails_the_fit_and_leaves_the_store_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let fits = expand(&recipe());
    // A file where the first fit's predictions directory must go: creating it fails (ENOTDIR/EEXIST),
    // as on a read-only or full disk.
    std::fs::create_dir_all(dir.path().join("predictions")).unwrap();
    std::fs::write(dir.path().join("predictions").join(fits[0].key.as_str()), "in the way").unwrap();
    let s =
        run_grid(&recipe(), &mut open(dir.path()), &TestExecutor::default(), None, false, &mut NoProgress)
            .unwrap();
    assert_eq!((s.completed, s.failed.len()), (17, 1));
    assert!(s.failed[0].1.contains("predictions"), "{}", s.failed[0].1);
    assert_eq!(RunRecordSet::from_paths(&[dir.path().join("runs.jsonl")]).unwrap().len(), 17 * 12);
    std::fs::remove_file(dir.path().join("predictions").join(fits[0].key.as_str())).unwrap();
    let s =
        run_grid(&recipe(), &mut open(dir.path()), &TestExecutor::default(), None, false, &mut NoProgress)
            .unwrap();
    assert_eq!(s.completed, 1);
    assert_eq!(sorted_lines(dir.path()).len(), 216);
}

#[test]
fn a_second_process_is_refused_with_the_holder_named() {
    let dir = tempfile::tempdir().unwrap();
    let _held = open(dir.path());
    let err = RunStore::open(dir.path(), StoreOptions::default()).unwrap_err().to_string();
    assert!(err.contains("locked by pid") && err.contains(&std::process::id().to_string()), "{err}");
}

#[test]
fn a_grown_recipe_appends_only_the_new_slots() {
    let dir = tempfile::tempdir().unwrap();
    let exec = TestExecutor::default();
    run_grid(&recipe(), &mut open(dir.path()), &exec, None, false, &mut NoProgress).unwrap();
    let grown = calibra_run::Recipe::parse(
        &support::RECIPE.replace(
            "calibrators = [\"none\", \"temperature\"]",
            "calibrators = [\"none\", \"temperature\", \"isotonic\"]",
        ),
        "g.toml",
        calibra_run::ValidationOptions { check_paths: false },
    )
    .unwrap();
    let s = run_grid(&grown, &mut open(dir.path()), &exec, None, false, &mut NoProgress).unwrap();
    assert_eq!((s.completed, s.records_written), (18, 18 * 6));
    assert_eq!(RunRecordSet::from_paths(&[dir.path().join("runs.jsonl")]).unwrap().len(), 18 * 18);
}

/// Issue 20 defect 1: two processes appending to one store (a broken live lock) leave journal entries
/// in pairs claiming the same bytes, and every later open refuses the store. Repair keeps every
/// committed record exactly once: the result is byte for byte the store one process writes; records
/// of an append that never committed are dropped.
#[test]
fn repair_rebuilds_a_store_written_by_two_processes() {
    let reference = tempfile::tempdir().unwrap();
    let exec = TestExecutor::default();
    run_grid(&recipe(), &mut open(reference.path()), &exec, None, false, &mut NoProgress).unwrap();
    let runs = std::fs::read(reference.path().join("runs.jsonl")).unwrap();
    let journal = std::fs::read_to_string(reference.path().join("journal/fits.jsonl")).unwrap();
    // Interleave: each fit's records appended twice (once per writer), each journal line twice.
    let mut doubled_runs = Vec::new();
    let mut doubled_journal = String::new();
    for line in journal.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let (s, t) = (e["start"].as_u64().unwrap() as usize, e["end"].as_u64().unwrap() as usize);
        doubled_runs.extend_from_slice(&runs[s..t]);
        doubled_runs.extend_from_slice(&runs[s..t]);
        doubled_journal.push_str(&format!("{line}\n{line}\n"));
    }
    // A third writer's append that never reached the journal, and a torn last line.
    let first_line = &runs[..runs.iter().position(|&b| b == b'\n').unwrap() + 1];
    let stray = String::from_utf8(first_line.to_vec()).unwrap().replace("\"seed\":0", "\"seed\":7");
    let v: serde_json::Value = serde_json::from_str(&stray).unwrap();
    let fit = v["paths"]["predictions"].as_str().unwrap().split('/').nth(1).unwrap().to_string();
    let stray = stray.replace(&fit, &"f".repeat(64));
    doubled_runs.extend_from_slice(stray.as_bytes());
    doubled_runs.extend_from_slice(b"{\"encoder\":\"to");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(reference.path(), dir.path());
    std::fs::write(dir.path().join("runs.jsonl"), &doubled_runs).unwrap();
    std::fs::write(dir.path().join("journal/fits.jsonl"), &doubled_journal).unwrap();
    let err = RunStore::open(dir.path(), StoreOptions::default()).unwrap_err().to_string();
    assert!(err.contains("expected it to start at"), "{err}");

    let summary = calibra_run::repair_store(dir.path(), false).unwrap();
    assert!(summary.changed);
    assert_eq!(summary.records_kept, 216);
    assert_eq!(summary.duplicates_dropped, 216);
    assert_eq!(summary.uncommitted_dropped, 1);
    assert_eq!(summary.unreadable_lines, 1);
    assert!(summary.incomplete_fits.is_empty());
    assert_eq!(std::fs::read(dir.path().join("runs.jsonl")).unwrap(), runs);
    assert_eq!(std::fs::read_to_string(dir.path().join("journal/fits.jsonl")).unwrap(), journal);
    let backup = summary.backup.unwrap();
    assert_eq!(std::fs::read(backup.join("runs.jsonl")).unwrap(), doubled_runs);
    // The store is usable again: resume runs nothing, and a second repair changes nothing.
    let s = run_grid(&recipe(), &mut open(dir.path()), &exec, None, false, &mut NoProgress).unwrap();
    assert_eq!((s.already_done, s.completed), (18, 0));
    let again = calibra_run::repair_store(dir.path(), false).unwrap();
    assert!(!again.changed && again.records_kept == 216, "{again:?}");
}

#[test]
fn repair_refuses_conflicting_duplicates_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    run_grid(&recipe(), &mut open(dir.path()), &TestExecutor::default(), None, false, &mut NoProgress)
        .unwrap();
    let runs = std::fs::read_to_string(dir.path().join("runs.jsonl")).unwrap();
    let journal = std::fs::read_to_string(dir.path().join("journal/fits.jsonl")).unwrap();
    let first = runs.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    let auroc = v["metrics"]["macro_auroc"].as_f64().unwrap();
    let other = first.replace(&format!("{auroc}"), "0.123");
    let broken_journal = format!("{journal}{}\n", journal.lines().next().unwrap());
    let broken_runs = format!("{runs}{other}\n");
    std::fs::write(dir.path().join("runs.jsonl"), &broken_runs).unwrap();
    std::fs::write(dir.path().join("journal/fits.jsonl"), &broken_journal).unwrap();
    let err = calibra_run::repair_store(dir.path(), false).unwrap_err();
    assert!(matches!(err, RunError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("runs.jsonl:1") && err.to_string().contains("runs.jsonl:217"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("runs.jsonl")).unwrap(), broken_runs);
    assert!(
        !dir.path().join("journal").read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("before-repair"))
    );
}
