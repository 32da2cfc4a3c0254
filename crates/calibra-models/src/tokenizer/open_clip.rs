//! open_clip's `SimpleTokenizer` (open_clip_torch 3.3.0, `clean="lower"`), the tokenizer of native
//! OpenCLIP checkpoints, which ship no tokenizer files:
//!
//! - vocabulary: the 256 byte symbols of GPT-2's byte map in code-point order, the same with `</w>`,
//!   the first 48 894 merges of OpenAI's `bpe_simple_vocab_16e6.txt.gz` (shipped in
//!   `crates/calibra-models/assets/`, MIT, see the LICENSE file next to it) joined, then
//!   `<start_of_text>` (49406) and `<end_of_text>` (49407): 49 408 ids;
//! - text: [`super::open_clip_clean::clean_lower`], then split by
//!   `<start_of_text>|<end_of_text>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+`
//!   (case-insensitive); a piece equal to a special token is that token, every other piece is
//!   byte-encoded and BPE-merged with `</w>` on its last symbol (no second byte-level split, unlike
//!   transformers' `CLIPTokenizer`);
//! - ids: `[SOT] + content + [EOT]`, truncated to the context length with the last id set to EOT
//!   (the same as keeping the first `context_length − 2` content ids), padded with **0**.

use std::io::Read;
use std::path::Path;

use regex::Regex;

use super::{ClipTokenizer, TokenizerConfig, TokenizerError, bytes_to_unicode, format_err, parse_merge};
use crate::clip::open_clip::{OPEN_CLIP_CONFIG, OpenClipConfig, is_open_clip_dir};

/// OpenAI's CLIP BPE merges, gzip-compressed (`bpe_simple_vocab_16e6.txt.gz`, MIT).
pub const OPEN_CLIP_BPE_GZ: &[u8] = include_bytes!("../../assets/bpe_simple_vocab_16e6.txt.gz");
/// Where [`OPEN_CLIP_BPE_GZ`] comes from, for messages.
const BPE_NAME: &str = "crates/calibra-models/assets/bpe_simple_vocab_16e6.txt.gz";
/// `SimpleTokenizer`'s start-of-text token.
pub const OPEN_CLIP_SOT: &str = "<start_of_text>";
/// `SimpleTokenizer`'s end-of-text token.
pub const OPEN_CLIP_EOT: &str = "<end_of_text>";
/// The number of merge lines `SimpleTokenizer` reads (`merges[1:49152-256-2+1]`).
const N_MERGES: usize = 49152 - 256 - 2;

impl ClipTokenizer {
    /// open_clip's `SimpleTokenizer` with the shipped OpenAI vocabulary, padding/truncating to
    /// `context_length` (≥ 2).
    pub fn open_clip(context_length: usize) -> Result<Self, TokenizerError> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(OPEN_CLIP_BPE_GZ)
            .read_to_string(&mut text)
            .map_err(|source| TokenizerError::Io { path: BPE_NAME.into(), source })?;
        Self::open_clip_from_merges(&text, Path::new(BPE_NAME), context_length)
    }

    /// `SimpleTokenizer` from the text of a `bpe_simple_vocab_16e6.txt`-style merges file (a header
    /// line, then one `a b` merge per line; the first 48 894 are used).
    pub fn open_clip_from_merges(
        text: &str,
        path: &Path,
        context_length: usize,
    ) -> Result<Self, TokenizerError> {
        let lines: Vec<&str> = text.split('\n').skip(1).take(N_MERGES).collect();
        if lines.len() < N_MERGES {
            return Err(format_err(
                path,
                format!("{} merge lines, SimpleTokenizer needs {N_MERGES}", lines.len()),
            ));
        }
        let merges = lines
            .iter()
            .enumerate()
            .map(|(i, l)| parse_merge(l.trim_end_matches('\r'), path, i + 2))
            .collect::<Result<Vec<_>, _>>()?;
        let mut symbols: Vec<char> = bytes_to_unicode().to_vec();
        symbols.sort_unstable();
        let mut order: Vec<String> = symbols.iter().map(char::to_string).collect();
        order.extend(symbols.iter().map(|c| format!("{c}</w>")));
        order.extend(merges.iter().map(|(a, b)| format!("{a}{b}")));
        order.push(OPEN_CLIP_SOT.into());
        order.push(OPEN_CLIP_EOT.into());
        // dict(zip(vocab, range(len(vocab)))): a repeated string keeps its last id.
        let vocab = order
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i as u32))
            .collect::<std::collections::HashMap<_, _>>();
        let added = [OPEN_CLIP_SOT, OPEN_CLIP_EOT]
            .iter()
            .map(|t| super::AddedToken { content: (*t).to_string(), id: vocab[*t] })
            .collect();
        let config = TokenizerConfig {
            model_max_length: Some(context_length),
            pad_token: None,
            bos_token: Some(OPEN_CLIP_SOT.into()),
            eos_token: Some(OPEN_CLIP_EOT.into()),
            unk_token: None,
        };
        // The pad token is looked up by name in `build`; SimpleTokenizer pads with id 0 instead.
        let config = TokenizerConfig { pad_token: Some(OPEN_CLIP_EOT.into()), ..config };
        let mut tok = Self::build(path, vocab, merges, added, &config, None)?;
        tok.pad_id = 0;
        let pattern = format!(
            r"(?i){OPEN_CLIP_SOT}|{OPEN_CLIP_EOT}|'s|'t|'re|'ve|'m|'ll|'d|[\p{{L}}]+|[\p{{N}}]|[^\s\p{{L}}\p{{N}}]+"
        );
        tok.open_clip_pattern = Some(Regex::new(&pattern).map_err(|e| format_err(path, e.to_string()))?);
        Ok(tok)
    }

    /// The tokenizer of a checkpoint directory: for a native OpenCLIP checkpoint
    /// (`open_clip_config.json`, no `config.json`), open_clip's `SimpleTokenizer` at the config's
    /// `text_cfg.context_length`, as `open_clip.get_tokenizer("local-dir:…")` returns (tokenizer
    /// files in such a directory are not read, as open_clip does not read them); otherwise
    /// [`Self::from_dir`].
    pub fn for_checkpoint(dir: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let dir = dir.as_ref();
        if !is_open_clip_dir(dir) {
            return Self::from_dir(dir);
        }
        let path = dir.join(OPEN_CLIP_CONFIG);
        let config = crate::hf::read_config(&path)
            .and_then(|file| OpenClipConfig::from_json(&file))
            .map_err(|e| format_err(&path, e.to_string()))?;
        Self::open_clip(config.context_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_layout_matches_simple_tokenizer() {
        let tok = ClipTokenizer::open_clip(77).unwrap();
        assert_eq!(tok.vocab_size(), 49408);
        assert_eq!((tok.bos_id(), tok.eos_id(), tok.pad_id()), (49406, 49407, 0));
        // Code-point order of the byte map: '!' first, then the `</w>` copies from 256 on.
        assert_eq!(tok.token_to_id("!"), Some(0));
        assert_eq!(tok.token_to_id("!</w>"), Some(256));
        assert!(tok.is_open_clip());
        let ids = tok.encode_padded("a photo").unwrap();
        assert_eq!(ids.len(), 77);
        assert_eq!(ids[0], 49406);
        assert_eq!(ids[3], 49407);
        assert_eq!(ids[4], 0);
    }
}
