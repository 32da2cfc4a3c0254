//! Fuzzing without nightly (issue 20): the run-record reader on arbitrary bytes and on mutated valid
//! lines returns records or an error naming the file and line, never a panic or a hang, and never
//! accepts an impossible value of a known metric. CI-sized case counts.

use calibra_crs::{RunRecordSet, run_record::metric_range};
use proptest::prelude::*;

const SEEDS: &[&str] = &[
    r#"{"encoder":"E","dataset":"D","regime":"frozen","probe":"linear","calibrator":"none","label_fraction":1.0,"seed":0,"condition":{"kind":"clean"},"metrics":{"macro_auroc":0.9,"ece":0.05}}"#,
    r#"{"encoder":"E","dataset":"D","regime":"lora","probe":"ce","calibrator":"temperature","label_fraction":0.1,"seed":3,"condition":{"kind":"perturbation","perturbation":"jpeg","severity":2},"metrics":{"brier":0.3,"nll":1.2},"paths":{"predictions":"p.csv"},"timings":{"fit_s":1.5}}"#,
    r#"{"encoder":"E","dataset":"D","regime":"zero-shot","probe":"zero-shot:P1","calibrator":"none","label_fraction":1.0,"seed":0,"condition":{"kind":"shift","target":"b"},"metrics":{"accuracy":0.5},"versions":{"calibra":"0.1"}}"#,
];

#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = bytes.len().max(1);
        match *e {
            Edit::Set(i, b) if !bytes.is_empty() => bytes[i % len] = b,
            Edit::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Edit::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % len);
            }
            _ => {}
        }
    }
    bytes
}

fn edit() -> impl Strategy<Value = Edit> {
    let byte = prop_oneof![any::<u8>(), prop::sample::select(b"{}[]\":,\n-.eE0123456789 ".to_vec())];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = RunRecordSet::from_reader(bytes.as_slice(), "fuzz.jsonl");
    }

    #[test]
    fn mutated_records_are_valid_or_named_errors(
        seeds in prop::collection::vec(0..SEEDS.len(), 1..4),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let text: String = seeds.iter().enumerate()
            .map(|(i, &s)| SEEDS[s].replace("\"encoder\":\"E\"", &format!("\"encoder\":\"E{i}\"")) + "\n").collect();
        let bytes = apply(text.into_bytes(), &edits);
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
