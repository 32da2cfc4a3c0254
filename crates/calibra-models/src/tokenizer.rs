//! The CLIP byte-level BPE tokenizer (Hugging Face `CLIPTokenizer` numerics, transformers 5.24 /
//! tokenizers 0.23).
//!
//! Pipeline, exactly as the `tokenizer.json` that transformers writes for CLIP:
//! 1. special tokens (`added_tokens`, e.g. `<|startoftext|>`, `<|endoftext|>`) are split out of the raw
//!    text first (exact, case-sensitive, leftmost-longest match) and map straight to their ids;
//! 2. every other segment is normalised: Unicode NFC, every run of whitespace (`\s+`) → one space, then
//!    per-character lower-casing (`char::to_lowercase`, no final-sigma rule — as tokenizers does);
//! 3. pre-tokenised with CLIP's pattern
//!    `<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+`
//!    (matches kept, whitespace dropped; digits are split one by one), then GPT-2's byte-level split on
//!    each piece and the byte → unicode map of GPT-2;
//! 4. byte-pair merges by rank with the end-of-word marker `</w>` appended to the last symbol of each
//!    word; a symbol missing from the vocabulary becomes the unknown token (`fuse_unk = false`);
//! 5. `<|startoftext|>` … `<|endoftext|>` around the ids (RobertaProcessing); with truncation the content
//!    keeps its first `context_length − 2` ids; padding appends the pad id (CLIP: `<|endoftext|>`).
//!
//! Loads from a `tokenizer.json` (Hugging Face) or from CLIP's original `vocab.json` + `merges.txt`.
//!
//! [`ClipTokenizer::open_clip`] builds open_clip's `SimpleTokenizer` instead (OpenCLIP checkpoints),
//! which differs in its text cleaning ([`open_clip_clean`]), its special tokens
//! (`<start_of_text>` / `<end_of_text>`, matched in the cleaned text by the splitting pattern itself),
//! and its padding (id 0); see [`open_clip`].

pub mod open_clip;
pub mod open_clip_clean;
pub mod wordpiece;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

/// CLIP's context length (positions of the text transformer).
pub const CLIP_CONTEXT_LENGTH: usize = 77;
/// CLIP's start-of-text token.
pub const START_OF_TEXT: &str = "<|startoftext|>";
/// CLIP's end-of-text token (also its padding and unknown token).
pub const END_OF_TEXT: &str = "<|endoftext|>";
pub(crate) const END_OF_WORD: &str = "</w>";
pub(crate) const CLIP_PATTERN: &str =
    r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+";
/// GPT-2's byte-level split (tokenizers `ByteLevel { use_regex: true }`). Its `\s+(?!\S)` alternative is
/// dropped: CLIP pieces never contain whitespace, so the look-ahead can never take part in a match.
const BYTE_LEVEL_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+";

/// Errors while loading a tokenizer or encoding text.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// A file could not be read.
    #[error("cannot read tokenizer file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not the JSON it should be.
    #[error("{path}: invalid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A file parsed but its content is not a CLIP BPE tokenizer.
    #[error("{path}: {message}")]
    Format {
        /// The file (or directory).
        path: PathBuf,
        /// What was found and what was expected.
        message: String,
    },
    /// A BPE symbol is missing from the vocabulary and the tokenizer has no unknown token.
    #[error("symbol {symbol:?} (from {text:?}) is not in the vocabulary and there is no unknown token")]
    UnknownSymbol {
        /// The symbol (byte-level characters, maybe with `</w>`).
        symbol: String,
        /// The text being encoded.
        text: String,
    },
}

/// A special (added) token: matched verbatim in the raw text before normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AddedToken {
    content: String,
    id: u32,
}

/// The CLIP byte-level BPE tokenizer. See the module documentation for the exact pipeline.
#[derive(Debug, Clone)]
pub struct ClipTokenizer {
    vocab: HashMap<String, u32>,
    id_to_token: HashMap<u32, String>,
    merge_ranks: HashMap<(String, String), usize>,
    byte_encoder: [char; 256],
    clip_pattern: Regex,
    byte_level_pattern: Regex,
    whitespace: Regex,
    /// Sorted longest first so a longer special token wins at the same position.
    added: Vec<AddedToken>,
    bos_id: u32,
    eos_id: u32,
    pad_id: u32,
    unk_id: Option<u32>,
    context_length: usize,
    /// open_clip's `SimpleTokenizer` mode: its splitting pattern (special tokens first); `None` for
    /// the Hugging Face pipeline.
    open_clip_pattern: Option<Regex>,
}

/// GPT-2's reversible byte → printable-unicode map (`bytes_to_unicode`).
pub(crate) fn bytes_to_unicode() -> [char; 256] {
    let mut map = ['\0'; 256];
    let printable = |b: u32| {
        (u32::from(b'!')..=u32::from(b'~')).contains(&b)
            || (0xA1..=0xAC).contains(&b)
            || (0xAE..=0xFF).contains(&b)
    };
    let mut next = 256u32;
    for b in 0u32..256 {
        let c = if printable(b) {
            b
        } else {
            let c = next;
            next += 1;
            c
        };
        map[b as usize] = char::from_u32(c).unwrap_or('\u{FFFD}');
    }
    map
}

fn read_text(path: &Path) -> Result<String, TokenizerError> {
    fs::read_to_string(path).map_err(|source| TokenizerError::Io { path: path.to_path_buf(), source })
}

fn read_json(path: &Path) -> Result<serde_json::Value, TokenizerError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|source| TokenizerError::Json { path: path.to_path_buf(), source })
}

fn format_err(path: &Path, message: impl Into<String>) -> TokenizerError {
    TokenizerError::Format { path: path.to_path_buf(), message: message.into() }
}

fn parse_vocab(
    value: &serde_json::Value,
    path: &Path,
    key: &str,
) -> Result<HashMap<String, u32>, TokenizerError> {
    let map = value
        .as_object()
        .ok_or_else(|| format_err(path, format!("`{key}` must be an object token -> id")))?;
    map.iter()
        .map(|(token, id)| {
            let id = id.as_u64().and_then(|v| u32::try_from(v).ok()).ok_or_else(|| {
                format_err(path, format!("`{key}`: id of {token:?} must be a u32, got {id}"))
            })?;
            Ok((token.clone(), id))
        })
        .collect()
}

/// One merge rule from `tokenizer.json` (`["a", "b"]` or `"a b"`) or a `merges.txt` line (`a b`).
fn parse_merge(text: &str, path: &Path, line: usize) -> Result<(String, String), TokenizerError> {
    let mut parts = text.split(' ');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), None) if !a.is_empty() && !b.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err(format_err(
            path,
            format!("merge {line}: expected two symbols separated by one space, got {text:?}"),
        )),
    }
}

/// Options read from a `tokenizer_config.json` next to the vocabulary (all optional).
#[derive(Debug, Clone, Default)]
struct TokenizerConfig {
    model_max_length: Option<usize>,
    pad_token: Option<String>,
    bos_token: Option<String>,
    eos_token: Option<String>,
    unk_token: Option<String>,
}

fn token_field(value: &serde_json::Value, key: &str) -> Option<String> {
    match value.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        // Older configs write `{"content": "<|endoftext|>", ...}`.
        serde_json::Value::Object(o) => o.get("content").and_then(|c| c.as_str()).map(str::to_string),
        _ => None,
    }
}

fn read_tokenizer_config(path: &Path) -> Result<TokenizerConfig, TokenizerError> {
    if !path.exists() {
        return Ok(TokenizerConfig::default());
    }
    let value = read_json(path)?;
    let model_max_length =
        value.get("model_max_length").and_then(|v| v.as_u64()).and_then(|v| usize::try_from(v).ok()).filter(
            // transformers writes int(1e30) when the length is unknown.
            |&v| v <= 1 << 20,
        );
    Ok(TokenizerConfig {
        model_max_length,
        pad_token: token_field(&value, "pad_token"),
        bos_token: token_field(&value, "bos_token"),
        eos_token: token_field(&value, "eos_token"),
        unk_token: token_field(&value, "unk_token"),
    })
}

impl ClipTokenizer {
    /// Loads from a directory: `tokenizer.json` if present, else `vocab.json` + `merges.txt`;
    /// `tokenizer_config.json` (optional) supplies `model_max_length` and the special-token names.
    /// The context length is `model_max_length` when given, else [`CLIP_CONTEXT_LENGTH`].
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let dir = dir.as_ref();
        let config = read_tokenizer_config(&dir.join("tokenizer_config.json"))?;
        let json = dir.join("tokenizer.json");
        let (vocab_path, merges_path) = (dir.join("vocab.json"), dir.join("merges.txt"));
        if json.exists() {
            Self::from_tokenizer_json_with(&json, &config)
        } else if vocab_path.exists() && merges_path.exists() {
            Self::from_vocab_merges_with(&vocab_path, &merges_path, &config)
        } else {
            Err(format_err(dir, "no tokenizer.json and no vocab.json + merges.txt in this directory"))
        }
    }

    /// Loads a Hugging Face `tokenizer.json` (model `BPE` with `end_of_word_suffix = "</w>"`).
    pub fn from_tokenizer_json(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        Self::from_tokenizer_json_with(path.as_ref(), &TokenizerConfig::default())
    }

    /// Loads CLIP's original `vocab.json` (token → id) and `merges.txt` (`#version` header line
    /// optional; one `a b` rule per line, rank = line order).
    pub fn from_vocab_merges(
        vocab: impl AsRef<Path>,
        merges: impl AsRef<Path>,
    ) -> Result<Self, TokenizerError> {
        Self::from_vocab_merges_with(vocab.as_ref(), merges.as_ref(), &TokenizerConfig::default())
    }

    fn from_tokenizer_json_with(path: &Path, config: &TokenizerConfig) -> Result<Self, TokenizerError> {
        let value = read_json(path)?;
        let model = value.get("model").ok_or_else(|| format_err(path, "missing `model`"))?;
        let kind = model.get("type").and_then(|t| t.as_str()).unwrap_or("");
        if kind != "BPE" {
            return Err(format_err(path, format!("`model.type` must be \"BPE\", got {kind:?}")));
        }
        let suffix = model.get("end_of_word_suffix").and_then(|t| t.as_str()).unwrap_or("");
        if suffix != END_OF_WORD {
            return Err(format_err(
                path,
                format!("`model.end_of_word_suffix` must be {END_OF_WORD:?} (CLIP BPE), got {suffix:?}"),
            ));
        }
        let vocab = parse_vocab(model.get("vocab").unwrap_or(&serde_json::Value::Null), path, "model.vocab")?;
        let merges_value = model.get("merges").and_then(|m| m.as_array()).ok_or_else(|| {
            format_err(path, "`model.merges` must be a list of [\"a\", \"b\"] pairs or \"a b\" strings")
        })?;
        let mut merges = Vec::with_capacity(merges_value.len());
        for (i, m) in merges_value.iter().enumerate() {
            let pair = match m {
                serde_json::Value::String(s) => parse_merge(s, path, i)?,
                serde_json::Value::Array(a) if a.len() == 2 => match (a[0].as_str(), a[1].as_str()) {
                    (Some(x), Some(y)) => (x.to_string(), y.to_string()),
                    _ => {
                        return Err(format_err(
                            path,
                            format!("model.merges[{i}]: expected two strings, got {m}"),
                        ));
                    }
                },
                _ => return Err(format_err(path, format!("model.merges[{i}]: expected a pair, got {m}"))),
            };
            merges.push(pair);
        }
        let mut added = Vec::new();
        if let Some(list) = value.get("added_tokens").and_then(|a| a.as_array()) {
            for (i, t) in list.iter().enumerate() {
                let content = t.get("content").and_then(|c| c.as_str());
                let id = t.get("id").and_then(|c| c.as_u64()).and_then(|v| u32::try_from(v).ok());
                match (content, id) {
                    (Some(content), Some(id)) => added.push(AddedToken { content: content.to_string(), id }),
                    _ => {
                        return Err(format_err(
                            path,
                            format!("added_tokens[{i}]: needs `content` and `id`, got {t}"),
                        ));
                    }
                }
            }
        }
        let unk_name = config
            .unk_token
            .clone()
            .or_else(|| model.get("unk_token").and_then(|u| u.as_str()).map(str::to_string));
        Self::build(path, vocab, merges, added, config, unk_name)
    }

    fn from_vocab_merges_with(
        vocab_path: &Path,
        merges_path: &Path,
        config: &TokenizerConfig,
    ) -> Result<Self, TokenizerError> {
        let vocab = parse_vocab(&read_json(vocab_path)?, vocab_path, "vocab.json")?;
        let text = read_text(merges_path)?;
        let mut merges = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if (i == 0 && line.starts_with("#version")) || line.is_empty() {
                continue;
            }
            merges.push(parse_merge(line, merges_path, i + 1)?);
        }
        // CLIPTokenizer registers bos/eos/pad/unk as special tokens.
        let mut added = Vec::new();
        for name in [
            config.bos_token.clone().unwrap_or_else(|| START_OF_TEXT.to_string()),
            config.eos_token.clone().unwrap_or_else(|| END_OF_TEXT.to_string()),
            config.pad_token.clone().unwrap_or_else(|| END_OF_TEXT.to_string()),
            config.unk_token.clone().unwrap_or_else(|| END_OF_TEXT.to_string()),
        ] {
            if let Some(&id) = vocab.get(&name)
                && !added.iter().any(|a: &AddedToken| a.content == name)
            {
                added.push(AddedToken { content: name, id });
            }
        }
        let unk = Some(config.unk_token.clone().unwrap_or_else(|| END_OF_TEXT.to_string()));
        Self::build(vocab_path, vocab, merges, added, config, unk)
    }

    fn build(
        path: &Path,
        vocab: HashMap<String, u32>,
        merges: Vec<(String, String)>,
        mut added: Vec<AddedToken>,
        config: &TokenizerConfig,
        unk_name: Option<String>,
    ) -> Result<Self, TokenizerError> {
        let mut id_to_token: HashMap<u32, String> = vocab.iter().map(|(t, &i)| (i, t.clone())).collect();
        for a in &added {
            id_to_token.entry(a.id).or_insert_with(|| a.content.clone());
        }
        let lookup = |name: &str| -> Option<u32> {
            added.iter().find(|a| a.content == name).map(|a| a.id).or_else(|| vocab.get(name).copied())
        };
        let special = |name: Option<&String>, default: &str, what: &str| -> Result<u32, TokenizerError> {
            let name = name.map_or(default, String::as_str);
            lookup(name)
                .ok_or_else(|| format_err(path, format!("{what} token {name:?} is not in the vocabulary")))
        };
        let bos_id = special(config.bos_token.as_ref(), START_OF_TEXT, "start-of-text")?;
        let eos_id = special(config.eos_token.as_ref(), END_OF_TEXT, "end-of-text")?;
        let pad_id = special(config.pad_token.as_ref(), END_OF_TEXT, "padding")?;
        let unk_id = unk_name.as_deref().and_then(lookup);
        let mut merge_ranks = HashMap::with_capacity(merges.len());
        for (rank, (a, b)) in merges.into_iter().enumerate() {
            let merged = format!("{a}{b}");
            if !vocab.contains_key(&merged) {
                return Err(format_err(
                    path,
                    format!("merge {rank} ({a:?} {b:?}): {merged:?} is not in the vocabulary"),
                ));
            }
            merge_ranks.entry((a, b)).or_insert(rank);
        }
        added.sort_by_key(|a| std::cmp::Reverse(a.content.len()));
        let context_length = config.model_max_length.unwrap_or(CLIP_CONTEXT_LENGTH);
        if context_length < 2 {
            return Err(format_err(path, format!("context length must be >= 2, got {context_length}")));
        }
        Ok(Self {
            vocab,
            id_to_token,
            merge_ranks,
            byte_encoder: bytes_to_unicode(),
            clip_pattern: Regex::new(CLIP_PATTERN).map_err(|e| format_err(path, e.to_string()))?,
            byte_level_pattern: Regex::new(BYTE_LEVEL_PATTERN)
                .map_err(|e| format_err(path, e.to_string()))?,
            whitespace: Regex::new(r"\s+").map_err(|e| format_err(path, e.to_string()))?,
            added,
            bos_id,
            eos_id,
            pad_id,
            unk_id,
            context_length,
            open_clip_pattern: None,
        })
    }

    /// Returns a copy that pads/truncates to `context_length` (≥ 2) instead of the loaded one.
    pub fn with_context_length(mut self, context_length: usize) -> Self {
        self.context_length = context_length.max(2);
        self
    }

    /// The context length used by [`Self::encode_padded`] and [`Self::encode_truncated`].
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// Id of `<|startoftext|>` (SOT).
    pub fn bos_id(&self) -> u32 {
        self.bos_id
    }

    /// Id of `<|endoftext|>` (EOT).
    pub fn eos_id(&self) -> u32 {
        self.eos_id
    }

    /// Id appended by padding (CLIP: the EOT id).
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// Number of distinct ids (vocabulary plus added tokens outside it).
    pub fn vocab_size(&self) -> usize {
        self.id_to_token.len()
    }

    /// The token string of an id (byte-level characters; `</w>` marks a word end).
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.id_to_token.get(&id).map(String::as_str)
    }

    /// The id of a token string, if it is in the vocabulary.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.added
            .iter()
            .find(|a| a.content == token)
            .map(|a| a.id)
            .or_else(|| self.vocab.get(token).copied())
    }

    /// Whether this is open_clip's `SimpleTokenizer` ([`Self::open_clip`]).
    pub fn is_open_clip(&self) -> bool {
        self.open_clip_pattern.is_some()
    }

    /// Content ids of `text`, without SOT/EOT and without truncation (`add_special_tokens=False`;
    /// open_clip: `SimpleTokenizer.encode`).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let mut ids = Vec::new();
        if let Some(pattern) = &self.open_clip_pattern {
            let cleaned = open_clip_clean::clean_lower(text);
            for piece in pattern.find_iter(&cleaned) {
                match self.added.iter().find(|a| a.content == piece.as_str()) {
                    Some(special) => ids.push(special.id),
                    None => self.encode_word(piece.as_str(), text, &mut ids)?,
                }
            }
            return Ok(ids);
        }
        let mut rest = text;
        while !rest.is_empty() {
            match self.next_added(rest) {
                Some((start, token)) => {
                    self.encode_plain(&rest[..start], text, &mut ids)?;
                    ids.push(token.id);
                    rest = &rest[start + token.content.len()..];
                }
                None => {
                    self.encode_plain(rest, text, &mut ids)?;
                    break;
                }
            }
        }
        Ok(ids)
    }

    /// `[SOT] + tokenize(text) + [EOT]`, no truncation and no padding (transformers' `tok(text)`).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let content = self.tokenize(text)?;
        let mut ids = Vec::with_capacity(content.len() + 2);
        ids.push(self.bos_id);
        ids.extend(content);
        ids.push(self.eos_id);
        Ok(ids)
    }

    /// `[SOT] + first (context_length − 2) content ids + [EOT]` (`truncation=True`), not padded.
    pub fn encode_truncated(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let mut content = self.tokenize(text)?;
        content.truncate(self.context_length - 2);
        let mut ids = Vec::with_capacity(self.context_length);
        ids.push(self.bos_id);
        ids.extend(content);
        ids.push(self.eos_id);
        Ok(ids)
    }

    /// [`Self::encode_truncated`] padded with the pad id to exactly `context_length` ids
    /// (`padding="max_length", truncation=True`).
    pub fn encode_padded(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let mut ids = self.encode_truncated(text)?;
        ids.resize(self.context_length, self.pad_id);
        Ok(ids)
    }

    /// Position of the first EOT id in `ids` — the row CLIP's text tower pools (for CLIP vocabularies,
    /// where EOT is the largest id, the same position as `argmax(ids)`). `None` if there is no EOT.
    pub fn eot_position(&self, ids: &[u32]) -> Option<usize> {
        ids.iter().position(|&i| i == self.eos_id)
    }

    /// The leftmost special token in `text` (longest at the same start).
    fn next_added<'a>(&'a self, text: &str) -> Option<(usize, &'a AddedToken)> {
        let mut best: Option<(usize, &AddedToken)> = None;
        for token in &self.added {
            if token.content.is_empty() {
                continue;
            }
            if let Some(pos) = text.find(&token.content)
                && best.is_none_or(|(b, _)| pos < b)
            {
                best = Some((pos, token));
            }
        }
        best
    }

    /// Normalise, pre-tokenise and BPE-encode a segment without special tokens.
    fn encode_plain(&self, segment: &str, text: &str, ids: &mut Vec<u32>) -> Result<(), TokenizerError> {
        if segment.is_empty() {
            return Ok(());
        }
        let nfc: String = segment.nfc().collect();
        let spaced = self.whitespace.replace_all(&nfc, " ");
        let lower: String = spaced.chars().flat_map(char::to_lowercase).collect();
        for piece in self.clip_pattern.find_iter(&lower) {
            for word in self.byte_level_pattern.find_iter(piece.as_str()) {
                self.encode_word(word.as_str(), text, ids)?;
            }
        }
        Ok(())
    }

    /// Byte-level symbols of one word, BPE-merged, looked up (`text` is the input, for messages).
    fn encode_word(&self, word: &str, text: &str, ids: &mut Vec<u32>) -> Result<(), TokenizerError> {
        let symbols: Vec<String> = word.bytes().map(|b| self.byte_encoder[b as usize].to_string()).collect();
        for symbol in self.bpe(symbols) {
            match self.vocab.get(&symbol).copied().or(self.unk_id) {
                Some(id) => ids.push(id),
                None => return Err(TokenizerError::UnknownSymbol { symbol, text: text.to_string() }),
            }
        }
        Ok(())
    }

    /// Byte-pair merging of one word: repeatedly merge every occurrence (left to right, no overlap) of
    /// the adjacent pair with the lowest merge rank, until no adjacent pair has a rank.
    fn bpe(&self, mut symbols: Vec<String>) -> Vec<String> {
        let Some(last) = symbols.last_mut() else {
            return symbols;
        };
        last.push_str(END_OF_WORD);
        loop {
            let mut best: Option<(usize, usize)> = None; // (rank, index)
            for i in 0..symbols.len().saturating_sub(1) {
                if let Some(&rank) = self.merge_ranks.get(&(symbols[i].clone(), symbols[i + 1].clone()))
                    && best.is_none_or(|(r, _)| rank < r)
                {
                    best = Some((rank, i));
                }
            }
            let Some((_, first)) = best else {
                return symbols;
            };
            let (a, b) = (symbols[first].clone(), symbols[first + 1].clone());
            let mut merged = Vec::with_capacity(symbols.len() - 1);
            let mut i = 0;
            while i < symbols.len() {
                if i + 1 < symbols.len() && symbols[i] == a && symbols[i + 1] == b {
                    merged.push(format!("{a}{b}"));
                    i += 2;
                } else {
                    merged.push(std::mem::take(&mut symbols[i]));
                    i += 1;
                }
            }
            symbols = merged;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_map_is_a_bijection_onto_printable_chars() {
        let map = bytes_to_unicode();
        let mut seen: Vec<char> = map.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 256);
        // Printable ASCII maps to itself, space (not printable in GPT-2's sense) maps to U+0120 'Ġ'.
        assert_eq!(map[b'a' as usize], 'a');
        assert_eq!(map[b' ' as usize], '\u{120}');
    }
}
