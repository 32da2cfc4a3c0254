//! Learning a CLIP byte-level BPE vocabulary from a text corpus and writing it in the layouts both
//! [`crate::tokenizer::ClipTokenizer`] and transformers' `CLIPTokenizer` read: `vocab.json` +
//! `merges.txt` (CLIP's original files), `tokenizer.json` (Hugging Face `tokenizers`) and
//! `tokenizer_config.json`.
//!
//! Learning is Sennrich's BPE over CLIP's pre-tokenised words (NFC, whitespace runs → one space,
//! lower-cased, split by CLIP's pattern, bytes mapped by GPT-2's byte → unicode table, `</w>` appended
//! to the last symbol of each word): repeatedly merge the most frequent adjacent pair, ties broken by
//! the smallest pair in code-point order, until `max_merges` merges are learnt or every word is one
//! symbol. The same procedure as `learn_bpe` in `scripts/golden/encoders_clip.py`.
//!
//! The vocabulary is CLIP's layout: the 256 byte symbols, the same 256 with `</w>`, one token per
//! merge in merge order, then `<|startoftext|>` and `<|endoftext|>` (so EOT is the largest id, as CLIP's
//! text tower pooling expects).

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use serde_json::{Value, json};
use unicode_normalization::UnicodeNormalization;

use crate::tokenizer::{
    CLIP_PATTERN, END_OF_TEXT, END_OF_WORD, START_OF_TEXT, TokenizerError, bytes_to_unicode,
};

/// A learnt vocabulary: the merges in rank order and the token → id table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedBpe {
    /// Merge rules, rank 0 first.
    pub merges: Vec<(String, String)>,
    /// Tokens in id order (`tokens[id]`).
    pub tokens: Vec<String>,
}

impl LearnedBpe {
    /// Vocabulary size (including the two special tokens).
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// Id of `<|startoftext|>` (second largest).
    pub fn bos_id(&self) -> u32 {
        (self.tokens.len() - 2) as u32
    }

    /// Id of `<|endoftext|>` (the largest; also padding and unknown).
    pub fn eos_id(&self) -> u32 {
        (self.tokens.len() - 1) as u32
    }
}

/// CLIP's pre-tokenised words of `text` as byte-level symbol sequences (`</w>` on the last symbol).
fn corpus_words(text: &str, pattern: &Regex, bytes: &[char; 256]) -> Vec<Vec<String>> {
    let nfc: String = text.nfc().collect();
    let spaced = nfc.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower: String = spaced.chars().flat_map(char::to_lowercase).collect();
    pattern
        .find_iter(&lower)
        .filter(|m| m.as_str() != START_OF_TEXT && m.as_str() != END_OF_TEXT)
        .map(|m| {
            let mut symbols: Vec<String> =
                m.as_str().bytes().map(|b| bytes[b as usize].to_string()).collect();
            if let Some(last) = symbols.last_mut() {
                last.push_str(END_OF_WORD);
            }
            symbols
        })
        .collect()
}

/// Learns at most `max_merges` BPE merges from `corpus` (each string one document) and builds CLIP's
/// vocabulary around them. Deterministic: the result depends on the multiset of words only.
pub fn learn_clip_bpe<S: AsRef<str>>(corpus: &[S], max_merges: usize) -> LearnedBpe {
    let pattern = Regex::new(CLIP_PATTERN).expect("CLIP's pattern compiles");
    let bytes = bytes_to_unicode();
    let mut words: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for doc in corpus {
        for w in corpus_words(doc.as_ref(), &pattern, &bytes) {
            *words.entry(w).or_default() += 1;
        }
    }
    let mut merges = Vec::new();
    while merges.len() < max_merges {
        let mut pairs: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (w, &c) in &words {
            for p in w.windows(2) {
                *pairs.entry((p[0].as_str(), p[1].as_str())).or_default() += c;
            }
        }
        // Most frequent; among equals the smallest pair (BTreeMap iterates in ascending order, and
        // only a strictly larger count replaces the best).
        let Some(best) = pairs
            .iter()
            .fold(None::<((&str, &str), usize)>, |best, (&p, &c)| match best {
                Some((_, bc)) if bc >= c => best,
                _ => Some((p, c)),
            })
            .map(|((a, b), _)| (a.to_string(), b.to_string()))
        else {
            break;
        };
        let merged = format!("{}{}", best.0, best.1);
        let mut next: BTreeMap<Vec<String>, usize> = BTreeMap::new();
        for (w, c) in words {
            let mut out = Vec::with_capacity(w.len());
            let mut i = 0;
            while i < w.len() {
                if i + 1 < w.len() && w[i] == best.0 && w[i + 1] == best.1 {
                    out.push(merged.clone());
                    i += 2;
                } else {
                    out.push(w[i].clone());
                    i += 1;
                }
            }
            *next.entry(out).or_default() += c;
        }
        words = next;
        merges.push(best);
    }
    let mut tokens: Vec<String> = bytes.iter().map(|c| c.to_string()).collect();
    tokens.extend(bytes.iter().map(|c| format!("{c}{END_OF_WORD}")));
    tokens.extend(merges.iter().map(|(a, b)| format!("{a}{b}")));
    tokens.push(START_OF_TEXT.to_string());
    tokens.push(END_OF_TEXT.to_string());
    LearnedBpe { merges, tokens }
}

fn write_file(path: &Path, text: &str) -> Result<(), TokenizerError> {
    std::fs::write(path, text).map_err(|source| TokenizerError::Io { path: path.to_path_buf(), source })
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("a JSON value serialises") + "\n"
}

/// Writes `vocab.json`, `merges.txt`, `tokenizer.json` and `tokenizer_config.json` (context length
/// `context_length`; bos `<|startoftext|>`, eos = pad = unk `<|endoftext|>`) into `dir` (created).
///
/// Errors: a duplicate token in the vocabulary (two merges producing the same string), or I/O.
pub fn write_clip_tokenizer(
    bpe: &LearnedBpe,
    context_length: usize,
    dir: &Path,
) -> Result<(), TokenizerError> {
    std::fs::create_dir_all(dir).map_err(|source| TokenizerError::Io { path: dir.to_path_buf(), source })?;
    let mut vocab = serde_json::Map::new();
    for (id, token) in bpe.tokens.iter().enumerate() {
        if vocab.insert(token.clone(), json!(id)).is_some() {
            return Err(TokenizerError::Format {
                path: dir.to_path_buf(),
                message: format!("token {token:?} occurs twice in the learnt vocabulary"),
            });
        }
    }
    let vocab = Value::Object(vocab);
    write_file(&dir.join("vocab.json"), &(serde_json::to_string(&vocab).expect("JSON serialises") + "\n"))?;
    let mut merges = String::from("#version: 0.2\n");
    for (a, b) in &bpe.merges {
        merges += &format!("{a} {b}\n");
    }
    write_file(&dir.join("merges.txt"), &merges)?;

    let (bos, eos) = (bpe.bos_id(), bpe.eos_id());
    let special = |id: u32, content: &str| {
        json!({"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false,
               "normalized": false, "special": true})
    };
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(bos, START_OF_TEXT), special(eos, END_OF_TEXT)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFC"},
            {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
            {"type": "Lowercase"},
        ]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CLIP_PATTERN}, "behavior": "Removed", "invert": true},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        ]},
        "post_processor": {"type": "RobertaProcessing", "sep": [END_OF_TEXT, eos], "cls": [START_OF_TEXT, bos],
                           "trim_offsets": false, "add_prefix_space": false},
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": END_OF_TEXT,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": END_OF_WORD,
            "fuse_unk": false,
            "byte_fallback": false,
            "ignore_merges": false,
            "vocab": vocab,
            "merges": bpe.merges.iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>(),
        },
    });
    write_file(&dir.join("tokenizer.json"), &pretty(&tokenizer))?;
    let config = json!({
        "backend": "tokenizers",
        "bos_token": START_OF_TEXT,
        "eos_token": END_OF_TEXT,
        "model_max_length": context_length,
        "pad_token": END_OF_TEXT,
        "tokenizer_class": "CLIPTokenizer",
        "unk_token": END_OF_TEXT,
    });
    write_file(&dir.join("tokenizer_config.json"), &pretty(&config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::ClipTokenizer;

    const CORPUS: [&str; 3] =
        ["a photo of a melanoma.", "a chest x-ray showing Pleural Effusion.", "The DR level is 3."];

    /// Run to completion, every corpus word is one token, in both file layouts.
    #[test]
    fn every_corpus_word_becomes_one_token_in_both_layouts() {
        let bpe = learn_clip_bpe(&CORPUS, usize::MAX);
        assert_eq!(bpe.vocab_size(), 512 + bpe.merges.len() + 2);
        let dir = tempfile::tempdir().unwrap();
        write_clip_tokenizer(&bpe, 77, dir.path()).unwrap();
        let json = ClipTokenizer::from_dir(dir.path()).unwrap();
        let files =
            ClipTokenizer::from_vocab_merges(dir.path().join("vocab.json"), dir.path().join("merges.txt"))
                .unwrap();
        assert_eq!(json.context_length(), 77);
        assert_eq!((json.bos_id(), json.eos_id(), json.pad_id()), (bpe.bos_id(), bpe.eos_id(), bpe.eos_id()));
        for text in CORPUS {
            let ids = json.encode(text).unwrap();
            assert_eq!(ids, files.encode(text).unwrap(), "{text}");
            let words = text.split_whitespace().count() + 1; // the final "." is its own word
            // "x-ray" is three words in CLIP's pattern (x, -, ray).
            let extra = usize::from(text.contains("x-ray")) * 2;
            assert_eq!(ids.len(), words + extra + 2, "{text}: {ids:?}");
            // One-letter words are byte symbols (`a</w>`), longer ones learnt merges; none is special.
            assert!(ids[1..ids.len() - 1].iter().all(|&i| i < bpe.bos_id()), "{ids:?}");
        }
        // Words outside the corpus still encode (byte symbols), never to the unknown token.
        let ids = json.encode("zebra").unwrap();
        assert!(!ids[1..ids.len() - 1].contains(&bpe.eos_id()));
    }

    #[test]
    fn learning_is_deterministic_and_capped() {
        let a = learn_clip_bpe(&CORPUS, 10);
        assert_eq!(a.merges.len(), 10);
        assert_eq!(a, learn_clip_bpe(&CORPUS, 10));
        // A prefix of a longer run: merges are learnt greedily, one at a time.
        assert_eq!(a.merges[..], learn_clip_bpe(&CORPUS, 20).merges[..10]);
        // The first merge is a most frequent adjacent pair of the corpus words (recounted here).
        let words: Vec<Vec<String>> = CORPUS
            .iter()
            .flat_map(|d| corpus_words(d, &Regex::new(CLIP_PATTERN).unwrap(), &bytes_to_unicode()))
            .collect();
        let count = |a: &str, b: &str| {
            words.iter().map(|w| w.windows(2).filter(|p| p[0] == a && p[1] == b).count()).sum::<usize>()
        };
        let first = count(&a.merges[0].0, &a.merges[0].1);
        for w in &words {
            for p in w.windows(2) {
                assert!(count(&p[0], &p[1]) <= first, "{p:?} is more frequent than {:?}", a.merges[0]);
            }
        }
    }
}
