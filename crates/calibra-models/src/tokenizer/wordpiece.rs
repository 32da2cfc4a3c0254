//! The BERT WordPiece tokenizer (transformers 5.24 `BertTokenizerFast` / tokenizers 0.23 numerics),
//! implemented here rather than with the `tokenizers` crate: the pipeline is small, and this keeps the
//! dependency tree as it is (the crate's default features pull `onig` and `esaxx`, C/C++ builds).
//!
//! Pipeline, as the `tokenizer.json` transformers writes for BERT (`BertNormalizer`,
//! `BertPreTokenizer`, `WordPiece`, `TemplateProcessing` `[CLS] $A [SEP]`):
//! 1. special tokens (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`, `[MASK]` and any other added token) are split
//!    out of the raw text first (exact, case-sensitive, leftmost-longest) and map to their ids;
//! 2. every other segment is normalised: `clean_text` drops U+0000, U+FFFD and control characters
//!    (Unicode category C\*, except tab, newline and carriage return) and maps whitespace (tab, newline,
//!    carriage return, `char::is_whitespace`) to a space; `handle_chinese_chars` puts spaces around CJK
//!    ideographs (the CJK Unified Ideograph blocks and compatibility ideographs); `strip_accents`
//!    (default: when lower-casing) decomposes (NFD) and drops non-spacing marks (Mn); `lowercase` maps
//!    each character with `char::to_lowercase` (no final-sigma rule, as tokenizers does);
//! 3. pre-tokenised: split on whitespace (removed), then every punctuation character (ASCII
//!    punctuation or Unicode category P\*) is its own word;
//! 4. WordPiece: a word longer than `max_input_chars_per_word` (100) characters is `[UNK]`; otherwise
//!    greedy longest-match-first from the left, continuation pieces prefixed `##`; a word with any
//!    position no vocabulary entry matches is `[UNK]` as a whole;
//! 5. `[CLS]` … `[SEP]` around the ids; with truncation the content keeps its first
//!    `max_length − 2` ids; padding appends `[PAD]`.
//!
//! Loads from a `tokenizer.json` (model `WordPiece`, normaliser `BertNormalizer`) or from a
//! `vocab.txt` (one token a line, id = line number) with the flags of an optional
//! `tokenizer_config.json` (`do_lower_case`, `strip_accents`, `tokenize_chinese_chars`), as
//! transformers converts it.
//!
//! [`WordPieceTokenizer::encode_open_clip`] is open_clip's `HFTokenizer.__call__` (default
//! `clean="whitespace"`): [`super::open_clip_clean::clean_whitespace`], then
//! `tokenizer(text, max_length=context_length, padding="max_length", truncation=True).input_ids`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

use super::{TokenizerError, format_err, read_json, read_text};

/// transformers' `max_input_chars_per_word` for BERT.
pub const MAX_INPUT_CHARS_PER_WORD: usize = 100;

/// A BERT WordPiece tokenizer; see the module documentation for the exact pipeline.
#[derive(Debug, Clone)]
pub struct WordPieceTokenizer {
    vocab: HashMap<String, u32>,
    /// Added tokens matched verbatim before normalisation, longest first.
    added: Vec<(String, u32)>,
    cls_id: u32,
    sep_id: u32,
    pad_id: u32,
    unk_id: u32,
    lowercase: bool,
    strip_accents: bool,
    chinese_chars: bool,
    continuing_prefix: String,
    max_chars_per_word: usize,
}

fn categories() -> &'static (Regex, Regex, Regex) {
    static RE: OnceLock<(Regex, Regex, Regex)> = OnceLock::new();
    RE.get_or_init(|| {
        let re = |p: &str| Regex::new(p).unwrap_or_else(|e| unreachable!("static pattern {p}: {e}"));
        (re(r"^\p{C}$"), re(r"^\p{P}$"), re(r"^\p{Mn}$"))
    })
}

fn in_category(re: &Regex, c: char) -> bool {
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf))
}

/// tokenizers' `is_control` (category C\*, except `\t`, `\n`, `\r`).
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && in_category(&categories().0, c)
}

/// tokenizers' BERT `is_whitespace`.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// tokenizers' `is_bert_punc`: ASCII punctuation or Unicode category P\*.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || in_category(&categories().1, c)
}

/// tokenizers' `is_chinese_char`.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

fn json_bool(v: &serde_json::Value, key: &str, default: bool) -> bool {
    v.get(key).and_then(serde_json::Value::as_bool).unwrap_or(default)
}

impl WordPieceTokenizer {
    /// Loads from a directory: `tokenizer.json` if present, else `vocab.txt` (+ optional
    /// `tokenizer_config.json`).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let dir = dir.as_ref();
        let json = dir.join("tokenizer.json");
        let vocab = dir.join("vocab.txt");
        if json.is_file() {
            Self::from_tokenizer_json(&json)
        } else if vocab.is_file() {
            Self::from_vocab_txt(&vocab, dir.join("tokenizer_config.json"))
        } else {
            Err(format_err(
                dir,
                "no tokenizer.json and no vocab.txt (a BERT WordPiece tokenizer) in this directory",
            ))
        }
    }

    /// Loads a Hugging Face `tokenizer.json` with a `WordPiece` model and a `BertNormalizer`.
    pub fn from_tokenizer_json(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let path = path.as_ref();
        let v = read_json(path)?;
        let model = &v["model"];
        if model["type"].as_str() != Some("WordPiece") {
            return Err(format_err(
                path,
                format!("model.type must be \"WordPiece\", found {}", model["type"]),
            ));
        }
        let norm = &v["normalizer"];
        if norm["type"].as_str() != Some("BertNormalizer") {
            return Err(format_err(
                path,
                format!("normalizer.type must be \"BertNormalizer\", found {}", norm["type"]),
            ));
        }
        if !json_bool(norm, "clean_text", true) {
            return Err(format_err(path, "normalizer.clean_text false is not implemented"));
        }
        match v["pre_tokenizer"]["type"].as_str() {
            Some("BertPreTokenizer") => {}
            _ => {
                return Err(format_err(
                    path,
                    format!(
                        "pre_tokenizer.type must be \"BertPreTokenizer\", found {}",
                        v["pre_tokenizer"]["type"]
                    ),
                ));
            }
        }
        let vocab = super::parse_vocab(&model["vocab"], path, "model.vocab")?;
        let lowercase = json_bool(norm, "lowercase", true);
        let strip_accents = norm["strip_accents"].as_bool().unwrap_or(lowercase);
        let mut added = Vec::new();
        if let Some(list) = v["added_tokens"].as_array() {
            for t in list {
                let (Some(content), Some(id)) = (t["content"].as_str(), t["id"].as_u64()) else {
                    return Err(format_err(
                        path,
                        format!("added token {t} needs a content string and an id"),
                    ));
                };
                let id = u32::try_from(id)
                    .map_err(|_| format_err(path, format!("added token id {id} does not fit u32")))?;
                // Matched in the normalised text by tokenizers; only raw matching is implemented.
                if t["normalized"].as_bool() == Some(true) {
                    return Err(format_err(
                        path,
                        format!("added token {content:?} has normalized=true, which is not implemented"),
                    ));
                }
                added.push((content.to_string(), id));
            }
        }
        let unk = model["unk_token"].as_str().unwrap_or("[UNK]").to_string();
        let prefix = model["continuing_subword_prefix"].as_str().unwrap_or("##").to_string();
        let max_chars =
            model["max_input_chars_per_word"].as_u64().map_or(MAX_INPUT_CHARS_PER_WORD, |m| m as usize);
        Self::build(
            path,
            vocab,
            added,
            &unk,
            lowercase,
            strip_accents,
            json_bool(norm, "handle_chinese_chars", true),
            prefix,
            max_chars,
        )
    }

    /// Loads a `vocab.txt` (one token a line; id = line number) with the flags of `config` (a
    /// `tokenizer_config.json`, optional: `do_lower_case` true, `strip_accents` null,
    /// `tokenize_chinese_chars` true by default). The five BERT special tokens are the added tokens.
    pub fn from_vocab_txt(
        vocab_path: impl AsRef<Path>,
        config: impl AsRef<Path>,
    ) -> Result<Self, TokenizerError> {
        let path = vocab_path.as_ref();
        let text = read_text(path)?;
        let mut vocab = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let id = u32::try_from(i).map_err(|_| format_err(path, "more than u32::MAX lines"))?;
            vocab.entry(line.trim_end_matches('\r').to_string()).or_insert(id);
        }
        let config = config.as_ref();
        let cfg = if config.is_file() { read_json(config)? } else { serde_json::Value::Null };
        let name =
            |key: &str, default: &str| super::token_field(&cfg, key).unwrap_or_else(|| default.to_string());
        let lowercase = json_bool(&cfg, "do_lower_case", true);
        let strip_accents = cfg["strip_accents"].as_bool().unwrap_or(lowercase);
        let unk = name("unk_token", "[UNK]");
        let mut added = Vec::new();
        for (key, default) in [
            ("pad_token", "[PAD]"),
            ("unk_token", "[UNK]"),
            ("cls_token", "[CLS]"),
            ("sep_token", "[SEP]"),
            ("mask_token", "[MASK]"),
        ] {
            let token = name(key, default);
            if let Some(&id) = vocab.get(&token) {
                added.push((token, id));
            }
        }
        Self::build(
            path,
            vocab,
            added,
            &unk,
            lowercase,
            strip_accents,
            json_bool(&cfg, "tokenize_chinese_chars", true),
            "##".into(),
            MAX_INPUT_CHARS_PER_WORD,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        path: &Path,
        vocab: HashMap<String, u32>,
        mut added: Vec<(String, u32)>,
        unk: &str,
        lowercase: bool,
        strip_accents: bool,
        chinese_chars: bool,
        continuing_prefix: String,
        max_chars_per_word: usize,
    ) -> Result<Self, TokenizerError> {
        let id = |token: &str| {
            vocab
                .get(token)
                .copied()
                .or_else(|| added.iter().find(|(t, _)| t == token).map(|&(_, i)| i))
                .ok_or_else(|| format_err(path, format!("special token {token:?} is not in the vocabulary")))
        };
        let (cls_id, sep_id, pad_id, unk_id) = (id("[CLS]")?, id("[SEP]")?, id("[PAD]")?, id(unk)?);
        added.retain(|(t, _)| !t.is_empty());
        added.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        Ok(Self {
            vocab,
            added,
            cls_id,
            sep_id,
            pad_id,
            unk_id,
            lowercase,
            strip_accents,
            chinese_chars,
            continuing_prefix,
            max_chars_per_word,
        })
    }

    /// `[PAD]`'s id (open_clip's `HFTextEncoder` masks the positions holding it).
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// `[CLS]`'s id.
    pub fn cls_id(&self) -> u32 {
        self.cls_id
    }

    /// `[SEP]`'s id.
    pub fn sep_id(&self) -> u32 {
        self.sep_id
    }

    /// The id of `token` (vocabulary or added token).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab
            .get(token)
            .copied()
            .or_else(|| self.added.iter().find(|(t, _)| t == token).map(|&(_, i)| i))
    }

    /// `BertNormalizer` on one segment.
    fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || is_control(c) {
                continue;
            }
            let c = if is_whitespace(c) { ' ' } else { c };
            if self.chinese_chars && is_chinese_char(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        let out: String = if self.strip_accents {
            out.nfd().filter(|&c| !in_category(&categories().2, c)).collect()
        } else {
            out
        };
        if self.lowercase { out.chars().flat_map(char::to_lowercase).collect() } else { out }
    }

    /// WordPiece ids of one pre-tokenised word.
    fn word_ids(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > self.max_chars_per_word {
            out.push(self.unk_id);
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let mut piece: String = chars[start..end].iter().collect();
                if start > 0 {
                    piece.insert_str(0, &self.continuing_prefix);
                }
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            let Some(id) = found else {
                out.push(self.unk_id);
                return;
            };
            pieces.push(id);
            start = end;
        }
        out.extend(pieces);
    }

    /// Normalise, pre-tokenise and WordPiece one segment without added tokens.
    fn segment_ids(&self, text: &str, out: &mut Vec<u32>) {
        let normalized = self.normalize(text);
        for chunk in normalized.split(char::is_whitespace).filter(|w| !w.is_empty()) {
            let mut word_start = 0;
            for (i, c) in chunk.char_indices() {
                if is_punctuation(c) {
                    if word_start < i {
                        self.word_ids(&chunk[word_start..i], out);
                    }
                    self.word_ids(&chunk[i..i + c.len_utf8()], out);
                    word_start = i + c.len_utf8();
                }
            }
            if word_start < chunk.len() {
                self.word_ids(&chunk[word_start..], out);
            }
        }
    }

    /// The content ids of `text` (no `[CLS]` / `[SEP]`).
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut rest = text;
        let mut i = 0;
        while i < rest.len() {
            if let Some((t, id)) = self.added.iter().find(|(t, _)| rest[i..].starts_with(t.as_str())) {
                self.segment_ids(&rest[..i], &mut out);
                out.push(*id);
                rest = &rest[i + t.len()..];
                i = 0;
                continue;
            }
            i += rest[i..].chars().next().map_or(1, char::len_utf8);
        }
        self.segment_ids(rest, &mut out);
        out
    }

    /// `[CLS] tokenize(text) [SEP]` (`BertTokenizerFast(text).input_ids`).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.cls_id];
        ids.extend(self.tokenize(text));
        ids.push(self.sep_id);
        ids
    }

    /// `tokenizer(text, max_length=n, padding="max_length", truncation=True).input_ids`: the content
    /// cut to `n − 2` ids, `[CLS]` / `[SEP]` around it, `[PAD]` up to `n`. Errors when `n < 2`.
    pub fn encode_padded(&self, text: &str, max_length: usize) -> Result<Vec<u32>, TokenizerError> {
        if max_length < 2 {
            return Err(TokenizerError::Format {
                path: Path::new("<wordpiece>").into(),
                message: format!("max_length {max_length} leaves no room for [CLS] and [SEP]"),
            });
        }
        let mut content = self.tokenize(text);
        content.truncate(max_length - 2);
        let mut ids = Vec::with_capacity(max_length);
        ids.push(self.cls_id);
        ids.extend(content);
        ids.push(self.sep_id);
        ids.resize(max_length, self.pad_id);
        Ok(ids)
    }

    /// open_clip's `HFTokenizer(text)` (default `clean="whitespace"`, no `strip_sep_token`):
    /// [`super::open_clip_clean::clean_whitespace`] then [`Self::encode_padded`].
    pub fn encode_open_clip(&self, text: &str, context_length: usize) -> Result<Vec<u32>, TokenizerError> {
        self.encode_padded(&super::open_clip_clean::clean_whitespace(text), context_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPieceTokenizer {
        let vocab: HashMap<String, u32> =
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "a", ",", "日", "cafe"]
                .iter()
                .enumerate()
                .map(|(i, t)| (t.to_string(), i as u32))
                .collect();
        let added = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .map(|t| (t.to_string(), vocab[*t]))
            .collect();
        WordPieceTokenizer::build(Path::new("t"), vocab, added, "[UNK]", true, true, true, "##".into(), 100)
            .unwrap()
    }

    #[test]
    fn greedy_longest_match_and_unknown_words() {
        let t = tiny();
        // "unaffable" = un ##aff ##able; "unx" has no piece for "x": the whole word is [UNK].
        assert_eq!(t.tokenize("UNaffable, unx"), vec![5, 6, 7, 9, 1]);
        // Accents stripped when lower-casing; CJK ideographs are words of their own.
        assert_eq!(t.tokenize("Café日a"), vec![11, 10, 8]);
        // Added tokens are matched before normalisation, case-sensitively: "[sep]" is the words
        // "[", "sep", "]" (none in this vocabulary).
        assert_eq!(t.tokenize("a[SEP][sep]"), vec![8, 3, 1, 1, 1]);
        assert_eq!(t.tokenize(&"a".repeat(101)), vec![1]);
        assert_eq!(t.encode_padded("a a a", 4).unwrap(), vec![2, 8, 8, 3]);
        assert_eq!(t.encode_padded("", 4).unwrap(), vec![2, 3, 0, 0]);
        assert!(t.encode_padded("a", 1).is_err());
    }
}
