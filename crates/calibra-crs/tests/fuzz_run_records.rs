//! Fuzzing without nightly (issue 20): the run-record reader on arbitrary bytes and on mutated valid
//! lines returns records or an error naming the file and line, never a panic or a hang, and never
//! accepts an impossible value of a known metric. CI-sized case counts
//! (`PROPTEST_CASES=N` or `CALIBRA_FUZZ_SCALE=K` runs more; see calibra-testkit).

use calibra_crs::{RunRecordSet, run_record::metric_range};
use calibra_testkit::{apply_edits, byte_edit, fuzz_config};
use proptest::prelude::*;

const SEEDS: &[&str] = &[
    r#"{"encoder":"E","dataset":"D","regime":"frozen","probe":"linear","calibrator":"none","label_fraction":1.0,"seed":0,"condition":{"kind":"clean"},"metrics":{"macro_auroc":0.9,"ece":0.05}}"#,
    r#"{"encoder":"E","dataset":"D","regime":"lora","probe":"ce","calibrator":"temperature","label_fraction":0.1,"seed":3,"condition":{"kind":"perturbation","perturbation":"jpeg","severity":2},"metrics":{"brier":0.3,"nll":1.2},"paths":{"predictions":"p.csv"},"timings":{"fit_s":1.5}}"#,
    r#"{"encoder":"E","dataset":"D","regime":"zero-shot","probe":"zero-shot:P1","calibrator":"none","label_fraction":1.0,"seed":0,"condition":{"kind":"shift","target":"b"},"metrics":{"accuracy":0.5},"versions":{"calibra":"0.1"}}"#,
];

/// Bytes that matter to this format, drawn more often than chance would.
const INTERESTING: &[u8] = b"{}[]\":,\n-.eE0123456789 ";

proptest! {
    #![proptest_config(fuzz_config(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = RunRecordSet::from_reader(bytes.as_slice(), "fuzz.jsonl");
    }

    #[test]
    fn mutated_records_are_valid_or_named_errors(
        seeds in prop::collection::vec(0..SEEDS.len(), 1..4),
        edits in prop::collection::vec(byte_edit(INTERESTING), 1..6),
    ) {
        let text: String = seeds.iter().enumerate()
            .map(|(i, &s)| SEEDS[s].replace("\"encoder\":\"E\"", &format!("\"encoder\":\"E{i}\"")) + "\n").collect();
        let bytes = apply_edits(text.into_bytes(), &edits);
        match RunRecordSet::from_reader(bytes.as_slice(), "fuzz.jsonl") {
            Ok(set) => {
                for r in set.records() {
                    for (name, v) in &r.record.metrics {
                        prop_assert!(v.is_finite());
                        if let Some((lo, hi)) = metric_range(name) {
                            prop_assert!((lo..=hi).contains(v), "{} = {}", name, v);
                        }
                    }
                }
            }
            Err(e) => prop_assert!(e.to_string().contains("fuzz.jsonl"), "{}", e),
        }
    }
}

#[test]
fn the_seed_corpus_is_valid() {
    let text = SEEDS.join("\n");
    assert_eq!(RunRecordSet::from_reader(text.as_bytes(), "seed.jsonl").unwrap().len(), 3);
}
