//! CLIP tokenizer parity with transformers 5.24.0 `CLIPTokenizer` on the golden strings produced by
//! scripts/golden/encoders_clip.py (tiny BPE vocabulary in CLIP's layout, tests/fixtures/tokenizer/).

use std::path::PathBuf;

use calibra_models::tokenizer::{ClipTokenizer, TokenizerError};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer")
}

fn golden() -> Value {
    let text = std::fs::read_to_string(fixtures().join("golden.json")).expect("golden.json");
    serde_json::from_str(&text).expect("golden json")
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().expect("id list").iter().map(|x| x.as_u64().expect("id") as u32).collect()
}

fn check_all(tok: &ClipTokenizer, layout: &str) {
    let g = golden();
    assert_eq!(tok.bos_id() as u64, g["bos_id"].as_u64().unwrap(), "{layout}: bos");
    assert_eq!(tok.eos_id() as u64, g["eos_id"].as_u64().unwrap(), "{layout}: eos");
    assert_eq!(tok.pad_id() as u64, g["pad_id"].as_u64().unwrap(), "{layout}: pad");
    let cases = g["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected = ids(&case["ids"]);
        assert_eq!(tok.encode(text).unwrap(), expected, "{layout}: ids of {text:?}");
        let expected77 = ids(&case["ids_77"]);
        assert_eq!(tok.encode_padded(text).unwrap(), expected77, "{layout}: padded ids of {text:?}");
        let tokens: Vec<&str> = expected.iter().map(|&i| tok.id_to_token(i).unwrap()).collect();
        let golden_tokens: Vec<&str> =
            case["tokens"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert_eq!(tokens, golden_tokens, "{layout}: token strings of {text:?}");
    }
}

#[test]
fn tokenizer_json_matches_transformers() {
    let tok = ClipTokenizer::from_dir(fixtures().join("hf")).unwrap();
    assert_eq!(tok.context_length(), 77);
    check_all(&tok, "tokenizer.json");
}

#[test]
fn vocab_and_merges_match_transformers() {
    let dir = fixtures().join("bpe");
    let tok = ClipTokenizer::from_vocab_merges(dir.join("vocab.json"), dir.join("merges.txt")).unwrap();
    check_all(&tok, "vocab.json + merges.txt");
    let tok = ClipTokenizer::from_dir(&dir).unwrap();
    check_all(&tok, "vocab.json + merges.txt via from_dir");
}

#[test]
fn truncation_keeps_sot_and_eot_and_exact_length() {
    let tok = ClipTokenizer::from_dir(fixtures().join("hf")).unwrap();
    let long = "melanoma ".repeat(200);
    let ids = tok.encode_padded(&long).unwrap();
    assert_eq!(ids.len(), 77);
    assert_eq!(ids[0], tok.bos_id());
    assert_eq!(ids[76], tok.eos_id());
    assert_eq!(tok.eot_position(&ids), Some(76));
    let short = tok.encode_padded("melanoma").unwrap();
    assert_eq!(tok.eot_position(&short), Some(2));
    let ten = tok.clone().with_context_length(10).encode_padded(&long).unwrap();
    assert_eq!(ten.len(), 10);
    assert_eq!(&ten[..9], &ids[..9]);
    assert_eq!(ten[9], tok.eos_id());
}

#[test]
fn missing_files_and_bad_json_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = ClipTokenizer::from_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("no tokenizer.json"), "{err}");
    let bad = dir.path().join("tokenizer.json");
    std::fs::write(&bad, "{\"model\": {\"type\": \"WordPiece\"}}").unwrap();
    let err = ClipTokenizer::from_tokenizer_json(&bad).unwrap_err();
    assert!(matches!(err, TokenizerError::Format { .. }), "{err}");
    assert!(err.to_string().contains("tokenizer.json") && err.to_string().contains("WordPiece"), "{err}");
    std::fs::write(&bad, "not json").unwrap();
    let err = ClipTokenizer::from_tokenizer_json(&bad).unwrap_err().to_string();
    assert!(err.contains("invalid JSON"), "{err}");
}

#[test]
fn merges_line_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("bpe");
    std::fs::copy(src.join("vocab.json"), dir.path().join("vocab.json")).unwrap();
    std::fs::write(dir.path().join("merges.txt"), "#version: 0.2\nt h\nbad-line-without-space\n").unwrap();
    let err = ClipTokenizer::from_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("merges.txt") && err.contains("merge 3"), "{err}");
}
