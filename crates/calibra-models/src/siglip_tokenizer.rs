//! SigLIP's tokenizer (transformers 5.24 `SiglipTokenizer`, which `AutoTokenizer` returns for a
//! `siglip` checkpoint): a SentencePiece Unigram model (`spiece.model`, see
//! [`crate::sentencepiece`]) behind the same text canonicalisation as big_vision:
//!
//! 1. `canonicalize_text`: lowercase (`do_lower_case`, default true), remove ASCII punctuation
//!    (Python's `string.punctuation`), collapse whitespace runs to one space, strip;
//! 2. SentencePiece-encode `"<unk>" + "▁" + text` and drop the pieces of `"<unk>"` alone (how
//!    transformers avoids SentencePiece's dummy prefix), and a lone leading `▁` before a special
//!    token;
//! 3. append `</s>`; for the model, truncate to `model_max_length − 1` pieces first and pad on the
//!    right with the pad token (`</s>` by default) to `model_max_length` (64 in google/siglip-*),
//!    as `padding="max_length", truncation=True`. SigLIP pools the *last* position, so this padding
//!    is what the model was trained on; shorter or masked inputs give other features.
//!
//! Special-token strings inside the text (`</s>`, `<unk>`) are not split out as transformers does;
//! canonicalisation removes their `<`, `/`, `>` anyway, so they cannot survive as such. A checkpoint
//! with only `tokenizer.json` (no `spiece.model`) is refused with the missing file named.

use std::path::{Path, PathBuf};

use crate::sentencepiece::SentencePieceModel;
use crate::tokenizer::TokenizerError;

/// SigLIP's context length when `tokenizer_config.json` does not give `model_max_length`.
pub const SIGLIP_CONTEXT_LENGTH: usize = 64;

/// The SigLIP tokenizer (see the module documentation).
#[derive(Debug, Clone)]
pub struct SiglipTokenizer {
    model: SentencePieceModel,
    do_lower_case: bool,
    eos_id: u32,
    pad_id: u32,
    special: Vec<String>,
    unk_prefix_len: usize,
    context_length: usize,
}

fn format_error(path: &Path, message: impl Into<String>) -> TokenizerError {
    TokenizerError::Format { path: PathBuf::from(path), message: message.into() }
}

/// The string content of a special-token entry (`"</s>"` or `{"content": "</s>", ...}`).
fn token_string(v: &serde_json::Value) -> Option<String> {
    v.as_str().map(str::to_string).or_else(|| v.get("content")?.as_str().map(str::to_string))
}

impl SiglipTokenizer {
    /// Loads `spiece.model` and the optional `tokenizer_config.json` (`model_max_length`,
    /// `do_lower_case`, `eos_token`, `pad_token`, `unk_token`) from a checkpoint directory.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let dir = dir.as_ref();
        let spiece = dir.join("spiece.model");
        if !spiece.is_file() {
            let also = if dir.join("tokenizer.json").is_file() {
                " (it has tokenizer.json; calibra reads SigLIP's SentencePiece model, spiece.model, which \
                 transformers' SiglipTokenizer needs too)"
            } else {
                ""
            };
            return Err(format_error(dir, format!("no spiece.model for the SigLIP tokenizer{also}")));
        }
        let model = SentencePieceModel::from_file(&spiece)?;
        let config_path = dir.join("tokenizer_config.json");
        let config = if config_path.is_file() {
            let text = std::fs::read_to_string(&config_path)
                .map_err(|source| TokenizerError::Io { path: config_path.clone(), source })?;
            serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|source| TokenizerError::Json { path: config_path.clone(), source })?
        } else {
            serde_json::Value::Null
        };
        let get_token = |key: &str, default: &str| -> Result<String, TokenizerError> {
            match config.get(key) {
                None | Some(serde_json::Value::Null) => Ok(default.to_string()),
                Some(v) => token_string(v)
                    .ok_or_else(|| format_error(&config_path, format!("`{key}` is not a token string"))),
            }
        };
        let id_of = |key: &str, default: &str| -> Result<u32, TokenizerError> {
            let token = get_token(key, default)?;
            model.piece_id(&token).ok_or_else(|| {
                format_error(&spiece, format!("{key} {token:?} is not a piece of the SentencePiece model"))
            })
        };
        let eos_id = id_of("eos_token", "</s>")?;
        let pad_id = id_of("pad_token", "</s>")?;
        let unk = get_token("unk_token", "<unk>")?;
        if model.piece_id(&unk) != Some(model.unk_id()) {
            return Err(format_error(
                &spiece,
                format!("unk_token {unk:?} is not the SentencePiece model's unknown piece"),
            ));
        }
        let do_lower_case = match config.get("do_lower_case") {
            None | Some(serde_json::Value::Null) => true,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| format_error(&config_path, "`do_lower_case` must be true or false"))?,
        };
        let context_length = match config.get("model_max_length").and_then(serde_json::Value::as_u64) {
            // transformers writes a huge sentinel when no length is known.
            Some(n) if (2..=1 << 20).contains(&n) => n as usize,
            _ => SIGLIP_CONTEXT_LENGTH,
        };
        let unk_prefix_len = model.encode(&unk).len();
        let special = vec![get_token("eos_token", "</s>")?, get_token("pad_token", "</s>")?, unk];
        Ok(Self { model, do_lower_case, eos_id, pad_id, special, unk_prefix_len, context_length })
    }

    /// Context length of [`Self::encode_padded`] (`model_max_length`).
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// The pad id.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// The end-of-sequence id.
    pub fn eos_id(&self) -> u32 {
        self.eos_id
    }

    /// big_vision's `canonicalize_text` as transformers' `SiglipTokenizer` runs it.
    pub fn canonicalize(&self, text: &str) -> String {
        let text = if self.do_lower_case { text.to_lowercase() } else { text.to_string() };
        let text: String = text.chars().filter(|c| !c.is_ascii_punctuation()).collect();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Ids of `text` with `</s>` appended, unpadded (`tokenizer(text)["input_ids"]`).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = self.content_ids(text);
        ids.push(self.eos_id);
        ids
    }

    /// Ids as the model expects them: at most `context_length − 1` content ids, `</s>`, then the
    /// pad id up to `context_length` (`padding="max_length", truncation=True`).
    pub fn encode_padded(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let mut ids = self.content_ids(text);
        ids.truncate(self.context_length - 1);
        ids.push(self.eos_id);
        ids.resize(self.context_length, self.pad_id);
        Ok(ids)
    }

    fn content_ids(&self, text: &str) -> Vec<u32> {
        let canon = self.canonicalize(&format!("\u{2581}{}", text.replace('\u{2581}', " ")));
        let mut pieces = self.model.encode(&format!("{}{canon}", self.special[2]));
        let pieces =
            if pieces.len() >= self.unk_prefix_len { pieces.split_off(self.unk_prefix_len) } else { pieces };
        let skip = usize::from(
            pieces.len() > 1 && pieces[0].text == "\u{2581}" && self.special.contains(&pieces[1].text),
        );
        pieces[skip..].iter().map(|p| p.id).collect()
    }
}
