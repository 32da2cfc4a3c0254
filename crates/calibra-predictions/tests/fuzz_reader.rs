//! Fuzzing without nightly (issue 20): the predictions reader on arbitrary bytes and on mutated valid
//! files must return `Ok` or an error naming the file, never panic or hang. Case counts are CI-sized (a
//! few seconds in a debug build); set `PROPTEST_CASES=N` or `CALIBRA_FUZZ_SCALE=K` for a longer run.

use calibra_predictions::read_predictions_from;
use calibra_testkit::{apply_edits, byte_edit, fuzz_config};
use proptest::prelude::*;

/// Valid inputs the mutations start from: multiclass probabilities, logits, multilabel with a blank,
/// a BOM and a quoted id.
const SEEDS: &[&str] = &[
    "id,label,prob_a,prob_b\ns0,0,0.25,0.75\ns1,1,0.5,0.5\n",
    "id,label,logit_a,logit_b,logit_c\nx,2,0.1,-3.5,7e2\ny,0,1,2,3\n",
    "id,label_a,label_b,prob_a,prob_b\ni1,1,,0.9,0.2\ni2,0,1,0.1,0.8\n",
    "\u{feff}id,label,prob_neg,prob_pos\n\"q,1\",1,0.4,0.6\n",
];

/// One edit of a byte string: overwrite, insert or delete at a position (taken modulo the length).
/// Bytes that matter to this format, drawn more often than chance would.
const INTERESTING: &[u8] = b",\n\r\"-.eE0123456789 \xef\xbb\xbfNnaIif";

proptest! {
    #![proptest_config(fuzz_config(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Err(e) = read_predictions_from(bytes.as_slice(), "fuzz.csv") {
            prop_assert!(e.to_string().contains("fuzz.csv"), "{}", e);
        }
    }

    #[test]
    fn mutated_valid_files_never_panic(
        seed in 0..SEEDS.len(),
        edits in prop::collection::vec(byte_edit(INTERESTING), 1..8),
    ) {
        let bytes = apply_edits(SEEDS[seed].as_bytes().to_vec(), &edits);
        match read_predictions_from(bytes.as_slice(), "fuzz.csv") {
            // Whatever is accepted holds finite scores only.
            Ok(p) => prop_assert!(p.probabilities().iter().all(|v| v.is_finite())),
            Err(e) => prop_assert!(e.to_string().contains("fuzz.csv"), "{}", e),
        }
    }
}

#[test]
fn the_seed_corpus_is_valid() {
    for s in SEEDS {
        read_predictions_from(s.as_bytes(), "seed.csv").unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}
