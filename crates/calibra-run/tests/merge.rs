//! Shards and merge: N shards merged equal one process; conflicts are named; identical duplicates drop.
mod support;

use calibra_run::store::{RunStore, StoreOptions};
use calibra_run::{NoProgress, RunError, Shard, merge_stores, run_grid};
use support::{TestExecutor, recipe, sorted_lines};

fn run(dir: &std::path::Path, shard: Option<Shard>, exec: &TestExecutor) {
    let mut store = RunStore::open(dir, StoreOptions::default()).unwrap();
    run_grid(&recipe(), &mut store, exec, shard, false, &mut NoProgress).unwrap();
}

#[test]
fn shards_merged_equal_one_process() {
    let exec = TestExecutor::default();
    let whole = tempfile::tempdir().unwrap();
    run(whole.path(), None, &exec);
    let root = tempfile::tempdir().unwrap();
    let shards: Vec<_> = (0..3).map(|i| root.path().join(format!("shard{i}"))).collect();
    let mut sizes = Vec::new();
    for (i, dir) in shards.iter().enumerate() {
        run(dir, Some(Shard { index: i as u64, count: 3 }), &exec);
        sizes.push(sorted_lines(dir).len());
    }
    assert_eq!(sizes.iter().sum::<usize>(), 216, "the shards partition the grid: {sizes:?}");
    let merged = root.path().join("merged");
    let summary = merge_stores(&shards, &merged, StoreOptions::default()).unwrap();
    assert_eq!((summary.records_written, summary.identical_duplicates), (216, 0));
    assert_eq!(sorted_lines(&merged), sorted_lines(whole.path()));
    // Predictions files travelled with their records, byte for byte.
    for line in sorted_lines(&merged) {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let rel = v["paths"]["predictions"].as_str().unwrap();
        assert_eq!(std::fs::read(merged.join(rel)).unwrap(), std::fs::read(whole.path().join(rel)).unwrap());
    }
    // The merged store is a store: resuming it runs nothing.
    let mut store = RunStore::open(&merged, StoreOptions::default()).unwrap();
    let s = run_grid(&recipe(), &mut store, &exec, None, false, &mut NoProgress).unwrap();
    assert_eq!(s.completed, 0);
}

#[test]
fn identical_duplicates_are_dropped() {
    let exec = TestExecutor::default();
    let a = tempfile::tempdir().unwrap();
    run(a.path(), None, &exec);
    let out = tempfile::tempdir().unwrap();
    let merged = out.path().join("m");
    let s = merge_stores(&[a.path().to_path_buf(), a.path().to_path_buf()], &merged, StoreOptions::default())
        .unwrap();
    assert_eq!((s.records_read, s.records_written, s.identical_duplicates), (432, 216, 216));
    assert_eq!(sorted_lines(&merged), sorted_lines(a.path()));
}

#[test]
fn conflicting_duplicates_name_both_sources_and_lines() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    run(a.path(), None, &TestExecutor::default());
    run(b.path(), None, &TestExecutor { salt: "other".into(), ..Default::default() });
    let out = tempfile::tempdir().unwrap();
    let err = merge_stores(
        &[a.path().to_path_buf(), b.path().to_path_buf()],
        &out.path().join("m"),
        StoreOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, RunError::Conflict { .. }));
    let msg = err.to_string();
    let a_runs = a.path().join("runs.jsonl").display().to_string();
    let b_runs = b.path().join("runs.jsonl").display().to_string();
    assert!(msg.contains(&format!("{a_runs}:1")) && msg.contains(&format!("{b_runs}:1")), "{msg}");
    assert!(msg.contains("different metrics"), "{msg}");
}

/// Issue 20 defect 9: a refused merge left a partial output store (the records before the conflict)
/// that `eval` then evaluated. A merge is all-or-nothing.
#[test]
fn a_refused_merge_leaves_nothing_behind() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    run(a.path(), None, &TestExecutor::default());
    run(b.path(), None, &TestExecutor { salt: "other".into(), ..Default::default() });
    let out = tempfile::tempdir().unwrap();
    let sources = [a.path().to_path_buf(), b.path().to_path_buf()];
    merge_stores(&sources, &out.path().join("m"), StoreOptions::default()).unwrap_err();
    let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "a refused merge left {left:?}");
    // Extending an existing store: a conflict found anywhere leaves it byte for byte as it was.
    let halves = tempfile::tempdir().unwrap();
    let half = |i| {
        let dir = halves.path().join(format!("half{i}"));
        run(&dir, Some(Shard { index: i, count: 2 }), &TestExecutor::default());
        dir
    };
    let (first, second) = (half(0), half(1));
    let existing = out.path().join("existing");
    merge_stores(&[first], &existing, StoreOptions::default()).unwrap();
    let before = std::fs::read(existing.join("runs.jsonl")).unwrap();
    let journal = std::fs::read(existing.join("journal/fits.jsonl")).unwrap();
    // `second` adds new records, then `b` conflicts: before the fix the new records were kept.
    merge_stores(&[second, b.path().to_path_buf()], &existing, StoreOptions::default()).unwrap_err();
    assert_eq!(std::fs::read(existing.join("runs.jsonl")).unwrap(), before);
    assert_eq!(std::fs::read(existing.join("journal/fits.jsonl")).unwrap(), journal);
    // A file as the output is refused by name.
    let file = out.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let err = merge_stores(&sources[..1], &file, StoreOptions::default()).unwrap_err().to_string();
    assert!(err.contains("not a directory"), "{err}");
}
