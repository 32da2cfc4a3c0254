//! The report shows the optional fifth axis ("selective", −AUGRC) only when the evaluation has it.

use calibra_crs::bootstrap::BootstrapConfig;
use calibra_crs::{
    AxisConfig, AxisWeights, Condition, Evaluation, EvaluationOptions, RunRecord, RunRecordSet,
    SELECTIVE_METRIC, ScoreWeights,
};
use calibra_report::eval_report;
use std::path::PathBuf;

fn report_md(evaluation: &Evaluation) -> String {
    let files = eval_report(evaluation, &[]);
    files.iter().find(|f| f.path == "report.md").unwrap().contents.clone()
}

fn profiles_svg(evaluation: &Evaluation) -> String {
    let files = eval_report(evaluation, &[]);
    files.iter().find(|f| f.path == "figures/profiles.svg").unwrap().contents.clone()
}

#[test]
fn the_fifth_axis_column_appears_only_when_present() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/run_records.jsonl");
    let set = RunRecordSet::from_path(&path).unwrap();
    // An AUGRC per clean full-label run (any value with spread between encoders will do).
    let records: Vec<RunRecord> = set
        .records()
        .iter()
        .map(|r| {
            let mut x = r.record.clone();
            if x.condition == Condition::Clean && x.label_fraction == 1.0 {
                let auroc = x.metrics["macro_auroc"];
                x.metrics.insert(SELECTIVE_METRIC.to_string(), (1.0 - auroc) / 2.0);
            }
            x
        })
        .collect();
    let set = RunRecordSet::from_records(records, "with-augrc").unwrap();
    let base = EvaluationOptions {
        bootstrap: Some(BootstrapConfig { replicates: 20, ..BootstrapConfig::default() }),
        stability_seed: None,
        ..EvaluationOptions::default()
    };
    let four = Evaluation::build(&set, &base).unwrap();
    let five = Evaluation::build(
        &set,
        &EvaluationOptions {
            axes: AxisConfig { selective_metric: Some(SELECTIVE_METRIC.into()), ..AxisConfig::default() },
            weights: ScoreWeights {
                axis: AxisWeights::from_slice(&[0.2; 5]).unwrap(),
                ..ScoreWeights::default()
            },
            ..base
        },
    )
    .unwrap();
    let (md4, md5) = (report_md(&four), report_md(&five));
    for needle in ["sel̃", "AUGRC", "(disc, cal, le, rob, sel)", "fifth axis **selective**"] {
        assert!(md5.contains(needle), "five-axis report lacks {needle:?}");
        assert!(!md4.contains(needle), "four-axis report has {needle:?}");
    }
    assert!(md4.contains("(disc, cal, le, rob)"));
    assert!(profiles_svg(&five).contains("selective"));
    assert!(!profiles_svg(&four).contains("selective"));
}
