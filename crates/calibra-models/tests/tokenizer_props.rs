//! Invariants of the CLIP tokenizer on arbitrary text (proptest), on the tiny fixture vocabulary.

use std::path::PathBuf;
use std::sync::OnceLock;

use calibra_models::tokenizer::ClipTokenizer;
use proptest::prelude::*;

fn tok() -> &'static ClipTokenizer {
    static TOK: OnceLock<ClipTokenizer> = OnceLock::new();
    TOK.get_or_init(|| {
        ClipTokenizer::from_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer/hf"))
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Padded ids: exactly the context length, SOT first, the content is a prefix of the unpadded
    /// encoding, one EOT right after it, then only padding.
    #[test]
    fn padded_layout(text in "\\PC{0,120}") {
        let t = tok();
        let full = t.encode(&text).unwrap();
        let padded = t.encode_padded(&text).unwrap();
        prop_assert_eq!(padded.len(), t.context_length());
        prop_assert_eq!(padded[0], t.bos_id());
        let content = &full[1..full.len() - 1];
        let kept = content.len().min(t.context_length() - 2);
        prop_assert_eq!(&padded[1..1 + kept], &content[..kept]);
        prop_assert_eq!(padded[1 + kept], t.eos_id());
        prop_assert!(padded[2 + kept..].iter().all(|&i| i == t.pad_id()));
    }

    /// Normalisation: case and whitespace runs do not change the ids (ASCII text, where
    /// lower-casing is one-to-one).
    #[test]
    fn case_and_whitespace_insensitive(words in proptest::collection::vec("[a-zA-Z0-9.,!?']{1,8}", 1..8)) {
        let t = tok();
        let single = words.join(" ");
        let messy = format!("  {}\t", words.join(" \n  ")).to_uppercase();
        prop_assert_eq!(t.encode(&single).unwrap(), t.encode(&messy).unwrap());
    }

    /// Tokenisation is word-local: the ids of "a b" are the ids of "a" followed by those of "b"
    /// (words of letters, separated by a space).
    #[test]
    fn words_concatenate(a in "[a-z]{1,10}", b in "[a-z]{1,10}") {
        let t = tok();
        let mut ab = t.tokenize(&a).unwrap();
        ab.extend(t.tokenize(&b).unwrap());
        prop_assert_eq!(t.tokenize(&format!("{a} {b}")).unwrap(), ab);
    }
}
