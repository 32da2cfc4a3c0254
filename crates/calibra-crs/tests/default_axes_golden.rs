//! The default (four-axis) evaluation must stay byte-identical: `evaluation.json` of committed example
//! run sets, serialised exactly as `calibra eval` writes it (compact JSON), against goldens written by
//! the code before the optional fifth axis ("selective", issue 24) existed.
//!
//! The goldens in `tests/golden/default_axes/` were produced by this test with `CALIBRA_BLESS=1` on the
//! unmodified code; never re-bless them to make a change pass — a difference is a regression of the
//! default output.

use calibra_crs::bootstrap::BootstrapConfig;
use calibra_crs::selective_analyses::{SelectiveOptions, selective_analyses};
use calibra_crs::{AxisConfig, Evaluation, EvaluationOptions, RunRecordSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Default options with a smaller bootstrap (the golden only needs a fixed design, and the test stays
/// fast); stability on.
fn options() -> EvaluationOptions {
    EvaluationOptions {
        bootstrap: Some(BootstrapConfig { replicates: 200, ..BootstrapConfig::default() }),
        ..EvaluationOptions::default()
    }
}

/// The FOCUS example has two probes per cell; its CRS is the linear probe's.
fn linear_probe() -> EvaluationOptions {
    EvaluationOptions {
        axes: AxisConfig { probe: Some("linear".into()), ..AxisConfig::default() },
        ..options()
    }
}

/// The evaluation as `calibra eval` writes it, with the checkout's path (it reaches the selective
/// analyses' record locations) written as `<repo>`, so the golden holds for any clone.
fn check(name: &str, evaluation: &Evaluation) {
    let json = serde_json::to_string(evaluation).unwrap().replace(&root().display().to_string(), "<repo>");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/default_axes").join(name);
    if std::env::var_os("CALIBRA_BLESS").is_some() {
        std::fs::write(&path, &json).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if json != want {
        let at =
            json.bytes().zip(want.bytes()).position(|(a, b)| a != b).unwrap_or(json.len().min(want.len()));
        let lo = at.saturating_sub(200);
        panic!(
            "{name}: the default evaluation changed at byte {at}\n got: …{}…\nwant: …{}…",
            &json[lo..(at + 200).min(json.len())],
            &want[lo..(at + 200).min(want.len())]
        );
    }
}

#[test]
fn run_records_example_is_unchanged() {
    let set = RunRecordSet::from_path(&root().join("examples/run_records.jsonl")).unwrap();
    check("run_records.json", &Evaluation::build(&set, &options()).unwrap());
}

#[test]
fn focus_example_is_unchanged_with_and_without_selective_analyses() {
    let set = RunRecordSet::from_path(&root().join("examples/focus_runs/runs.jsonl")).unwrap();
    let evaluation = Evaluation::build(&set, &linear_probe()).unwrap();
    assert!(evaluation.crs_not_computed.is_none(), "{:?}", evaluation.crs_not_computed);
    check("focus_runs.json", &evaluation);
    let selective = selective_analyses(&set, &SelectiveOptions::default()).unwrap();
    check("focus_runs_selective.json", &evaluation.with_selective(selective));
}
