//! The report of a default (four-axis) evaluation must stay byte-identical: every file `eval_report`
//! gives for committed example run sets (report.md, figures, capped tables), against goldens written by
//! the code before the optional fifth axis ("selective", issue 24) existed. `CALIBRA_BLESS=1` writes
//! them; never re-bless to make a change pass.

use calibra_crs::bootstrap::BootstrapConfig;
use calibra_crs::selective_analyses::{SelectiveOptions, selective_analyses};
use calibra_crs::{AxisConfig, Evaluation, EvaluationOptions, RunRecordSet};
use calibra_report::eval_report;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn options() -> EvaluationOptions {
    EvaluationOptions {
        bootstrap: Some(BootstrapConfig { replicates: 200, ..BootstrapConfig::default() }),
        ..EvaluationOptions::default()
    }
}

/// Every report file, `== <path>\n<contents>\n` in report order.
fn bundle(evaluation: &Evaluation) -> String {
    eval_report(evaluation, &[]).iter().map(|f| format!("== {}\n{}\n", f.path, f.contents)).collect()
}

/// The FOCUS example has two probes per cell; its CRS is the linear probe's.
fn linear_probe() -> EvaluationOptions {
    EvaluationOptions {
        axes: AxisConfig { probe: Some("linear".into()), ..AxisConfig::default() },
        ..options()
    }
}

fn check(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/default_axes").join(name);
    if std::env::var_os("CALIBRA_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if got != want {
        let line = got.lines().zip(want.lines()).position(|(a, b)| a != b);
        panic!(
            "{name}: the default report changed (first differing line {line:?}: {:?} vs {:?})",
            line.and_then(|l| got.lines().nth(l)),
            line.and_then(|l| want.lines().nth(l))
        );
    }
}

#[test]
fn reports_of_the_examples_are_unchanged() {
    let set = RunRecordSet::from_path(&root().join("examples/run_records.jsonl")).unwrap();
    check("run_records.txt", &bundle(&Evaluation::build(&set, &options()).unwrap()));
    let set = RunRecordSet::from_path(&root().join("examples/focus_runs/runs.jsonl")).unwrap();
    let evaluation = Evaluation::build(&set, &linear_probe()).unwrap();
    assert!(evaluation.crs_not_computed.is_none(), "{:?}", evaluation.crs_not_computed);
    check("focus_runs.txt", &bundle(&evaluation));
    let selective = selective_analyses(&set, &SelectiveOptions::default()).unwrap();
    check("focus_runs_selective.txt", &bundle(&evaluation.with_selective(selective)));
}
