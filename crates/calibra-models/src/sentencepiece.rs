//! A SentencePiece Unigram model read from a `spiece.model` file (the `ModelProto` protobuf), with
//! SentencePiece's normaliser and Viterbi segmentation — what SigLIP's tokenizer runs underneath.
//!
//! Supported: `model_type` UNIGRAM, no byte fallback; pieces NORMAL and USER_DEFINED are matched,
//! UNKNOWN / CONTROL / UNUSED never are. Normalisation follows SentencePiece's `Normalizer`:
//! the character map, then `add_dummy_prefix` (a leading space), `remove_extra_whitespaces`
//! (strip, collapse runs of spaces) and `escape_whitespaces` (space → `▁`; a `▁` in the input reads
//! as a space, as in transformers' results). The character map is
//! *not* decoded from `precompiled_charsmap`: for the `nmt_nfkc` / `nfkc` rules it is approximated by
//! Unicode NFKC plus `nmt`'s whitespace and control-character rules (every whitespace and the
//! zero-width space / non-joiner, direction marks, BOM and U+FFFD → space, other control
//! characters dropped); `identity` is exact. Any other rule name is refused.
//! Viterbi scores: a piece's log probability; a character no piece covers is one unknown piece
//! scored `min_score − 10`, and consecutive unknown pieces merge into one (SentencePiece's
//! `kUnkPenalty` and unknown-merging).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use crate::tokenizer::TokenizerError;

/// SentencePiece piece types (`ModelProto.SentencePiece.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceType {
    /// Ordinary piece (1).
    Normal,
    /// The unknown piece (2).
    Unknown,
    /// Control symbol such as `</s>` (3).
    Control,
    /// User-defined symbol, always one piece (4).
    UserDefined,
    /// Unused (5).
    Unused,
    /// Byte piece (6); models with byte pieces are refused.
    Byte,
}

/// Characters SentencePiece's `nmt_nfkc` rule maps to a space besides Unicode whitespace
/// (zero-width and direction marks, the byte-order mark, the replacement character).
/// (U+200D, the zero-width joiner, is kept: checked against transformers on the golden strings.)
const NMT_SPACES: [char; 7] =
    ['\u{200B}', '\u{200C}', '\u{200E}', '\u{200F}', '\u{FEFF}', '\u{FFFD}', '\u{2581}'];

/// The normaliser's character map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharMap {
    Identity,
    Nfkc,
}

/// A loaded Unigram model.
#[derive(Debug, Clone)]
pub struct SentencePieceModel {
    pieces: Vec<(String, f32, PieceType)>,
    index: HashMap<String, u32>,
    max_piece_chars: usize,
    unk_id: u32,
    min_score: f32,
    char_map: CharMap,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

/// One output piece: its surface in the normalised text and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The piece string (for an unknown piece, the normalised text it covers).
    pub text: String,
    /// Its id.
    pub id: u32,
}

/// A minimal protobuf reader: `(field number, value)` pairs of one message.
struct Fields<'a> {
    buf: &'a [u8],
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
    Fixed64,
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first().ok_or("truncated varint")?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err(format!("field of {n} bytes runs past the end"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn next_field(&mut self) -> Result<Option<(u64, Value<'a>)>, String> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "length overflow")?;
                Value::Bytes(self.take(n)?)
            }
            5 => {
                let b = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            w => return Err(format!("unsupported protobuf wire type {w}")),
        };
        Ok(Some((key >> 3, value)))
    }
}

fn utf8(bytes: &[u8], what: &str) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
}

impl SentencePieceModel {
    /// Reads `spiece.model`. Errors name the file and what was expected.
    pub fn from_file(path: &Path) -> Result<Self, TokenizerError> {
        let bytes = std::fs::read(path).map_err(|source| TokenizerError::Io { path: path.into(), source })?;
        Self::from_bytes(&bytes).map_err(|message| TokenizerError::Format {
            path: PathBuf::from(path),
            message: format!("SentencePiece model: {message}"),
        })
    }

    /// Parses a serialised `ModelProto`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let (mut model_type, mut byte_fallback) = (1u64, false);
        let (mut rule, mut dummy, mut extra_ws, mut escape) = (String::new(), true, true, true);
        let mut fields = Fields { buf: bytes };
        while let Some((field, value)) = fields.next_field()? {
            match (field, value) {
                (1, Value::Bytes(b)) => pieces.push(parse_piece(b)?),
                (2, Value::Bytes(b)) => {
                    let mut f = Fields { buf: b };
                    while let Some((n, v)) = f.next_field()? {
                        match (n, v) {
                            (3, Value::Varint(t)) => model_type = t,
                            (35, Value::Varint(t)) => byte_fallback = t != 0,
                            _ => {}
                        }
                    }
                }
                (3, Value::Bytes(b)) => {
                    let mut f = Fields { buf: b };
                    while let Some((n, v)) = f.next_field()? {
                        match (n, v) {
                            (1, Value::Bytes(s)) => rule = utf8(s, "normalizer_spec.name")?,
                            (3, Value::Varint(t)) => dummy = t != 0,
                            (4, Value::Varint(t)) => extra_ws = t != 0,
                            (5, Value::Varint(t)) => escape = t != 0,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if model_type != 1 {
            let name = match model_type {
                2 => "BPE",
                3 => "WORD",
                4 => "CHAR",
                _ => "unknown",
            };
            return Err(format!(
                "trainer_spec.model_type is {name} ({model_type}); only UNIGRAM (1) is supported"
            ));
        }
        if byte_fallback || pieces.iter().any(|p| p.2 == PieceType::Byte) {
            return Err("trainer_spec.byte_fallback (byte pieces) is not supported".into());
        }
        let char_map = match rule.as_str() {
            "identity" => CharMap::Identity,
            "nmt_nfkc" | "nfkc" | "" => CharMap::Nfkc,
            other => {
                return Err(format!(
                    "normalizer_spec.name `{other}` is not supported (expected nmt_nfkc, nfkc or identity)"
                ));
            }
        };
        let unk = pieces.iter().position(|p| p.2 == PieceType::Unknown).ok_or("no UNKNOWN piece")?;
        let unk_id = u32::try_from(unk).map_err(|_| "too many pieces")?;
        let matched = |t: PieceType| matches!(t, PieceType::Normal | PieceType::UserDefined);
        let min_score =
            pieces.iter().filter(|p| p.2 == PieceType::Normal).map(|p| p.1).fold(f32::INFINITY, f32::min);
        let min_score = if min_score.is_finite() { min_score } else { 0.0 };
        let mut index = HashMap::new();
        let mut max_piece_chars = 1;
        for (i, (s, _, t)) in pieces.iter().enumerate() {
            if matched(*t) && !s.is_empty() {
                index.entry(s.clone()).or_insert(i as u32);
                max_piece_chars = max_piece_chars.max(s.chars().count());
            }
        }
        Ok(Self {
            pieces,
            index,
            max_piece_chars,
            unk_id,
            min_score,
            char_map,
            add_dummy_prefix: dummy,
            remove_extra_whitespaces: extra_ws,
            escape_whitespaces: escape,
        })
    }

    /// Number of pieces (the vocabulary size).
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether the model has no pieces.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The id of the unknown piece.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// The id of piece `s` (any type), if it exists.
    pub fn piece_id(&self, s: &str) -> Option<u32> {
        self.pieces.iter().position(|p| p.0 == s).map(|i| i as u32)
    }

    /// SentencePiece's normaliser (see the module documentation).
    pub fn normalize(&self, text: &str) -> String {
        // `▁` in the input reads as a space (SentencePiece escapes spaces to it).
        let text = text.replace('\u{2581}', " ");
        let mapped: String = match self.char_map {
            CharMap::Identity => text,
            CharMap::Nfkc => text
                .nfkc()
                .filter_map(|c| {
                    if c.is_whitespace() || NMT_SPACES.contains(&c) {
                        Some(' ')
                    } else if c.is_control() {
                        None
                    } else {
                        Some(c)
                    }
                })
                .collect(),
        };
        let mut out = String::new();
        let space = if self.escape_whitespaces { '\u{2581}' } else { ' ' };
        if mapped.is_empty() {
            return out;
        }
        if self.add_dummy_prefix {
            out.push(space);
        }
        let mut prev_space = self.remove_extra_whitespaces;
        for c in mapped.chars() {
            if c == ' ' {
                if prev_space {
                    continue;
                }
                out.push(space);
                prev_space = true;
            } else {
                out.push(c);
                prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.pop();
            }
        }
        out
    }

    /// Normalises `text` and segments it with the Viterbi algorithm.
    pub fn encode(&self, text: &str) -> Vec<Piece> {
        let norm = self.normalize(text);
        let chars: Vec<(usize, char)> = norm.char_indices().collect();
        let n = chars.len();
        let byte_at = |i: usize| if i == n { norm.len() } else { chars[i].0 };
        // best[i] = (score, start, id) of the best segmentation ending at char i.
        let mut best: Vec<Option<(f32, usize, u32)>> = vec![None; n + 1];
        best[0] = Some((0.0, 0, 0));
        let unk_score = self.min_score - 10.0;
        for start in 0..n {
            let Some((base, _, _)) = best[start] else { continue };
            let mut single = false;
            for len in 1..=self.max_piece_chars.min(n - start) {
                let end = start + len;
                let Some(&id) = self.index.get(&norm[byte_at(start)..byte_at(end)]) else { continue };
                let (_, score, kind) = &self.pieces[id as usize];
                let score = if *kind == PieceType::UserDefined {
                    len as f32 * self.max_normal_score() - 0.1
                } else {
                    *score
                };
                if len == 1 {
                    single = true;
                }
                let cand = base + score;
                if best[end].is_none_or(|(s, _, _)| cand > s) {
                    best[end] = Some((cand, start, id));
                }
            }
            if !single {
                let cand = base + unk_score;
                if best[start + 1].is_none_or(|(s, _, _)| cand > s) {
                    best[start + 1] = Some((cand, start, self.unk_id));
                }
            }
        }
        let mut out = Vec::new();
        let mut end = n;
        while end > 0 {
            let Some((_, start, id)) = best[end] else { break };
            out.push(Piece { text: norm[byte_at(start)..byte_at(end)].to_string(), id });
            end = start;
        }
        out.reverse();
        // Consecutive unknown pieces become one.
        let mut merged: Vec<Piece> = Vec::with_capacity(out.len());
        for p in out {
            match merged.last_mut() {
                Some(last) if last.id == self.unk_id && p.id == self.unk_id => last.text.push_str(&p.text),
                _ => merged.push(p),
            }
        }
        merged
    }

    fn max_normal_score(&self) -> f32 {
        self.pieces.iter().filter(|p| p.2 == PieceType::Normal).map(|p| p.1).fold(0.0, f32::max)
    }
}

fn parse_piece(bytes: &[u8]) -> Result<(String, f32, PieceType), String> {
    let (mut piece, mut score, mut kind) = (String::new(), 0.0f32, PieceType::Normal);
    let mut f = Fields { buf: bytes };
    while let Some((n, v)) = f.next_field()? {
        match (n, v) {
            (1, Value::Bytes(s)) => piece = utf8(s, "a piece")?,
            (2, Value::Fixed32(b)) => score = f32::from_bits(b),
            (3, Value::Varint(t)) => {
                kind = match t {
                    1 => PieceType::Normal,
                    2 => PieceType::Unknown,
                    3 => PieceType::Control,
                    4 => PieceType::UserDefined,
                    5 => PieceType::Unused,
                    6 => PieceType::Byte,
                    other => return Err(format!("piece {piece:?} has unknown type {other}")),
                }
            }
            _ => {}
        }
    }
    Ok((piece, score, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_a_format_error_not_a_panic() {
        for bytes in [&b"\xff\xff\xff"[..], b"\x0a\x05ab", b"", b"\x0b"] {
            assert!(SentencePieceModel::from_bytes(bytes).is_err(), "{bytes:?}");
        }
    }
}
