//! The text-tower interface the shallow prompt learners (CoOp, KgCoOp, ProGrad) train through, so
//! that one [`PromptLearner`](super::PromptLearner) and one trainer serve every image–text family
//! whose text tower reads token embeddings:
//!
//! - a [`PromptTokenizer`] lays a class prompt out as the tower reads it, with `n` *slots* for the
//!   learned context (their ids are placeholders: their embeddings are replaced by the context);
//! - a [`PromptTextEncoder`] embeds ids, runs its frozen tower on assembled prompt embeddings and
//!   scores image–text pairs with its own logit (`exp(logit_scale)·cos + logit_bias`).
//!
//! | family | slotted prompt (ids, context length `L`) | pooled row | logit bias |
//! |---|---|---|---|
//! | CLIP (HF `CLIPModel`, OpenCLIP) | `[SOT, slot×n, tokens(text), EOT, pad…]` | the EOT | 0 |
//! | SigLIP (HF `SiglipModel`) | `[slot×n, tokens(text), </s>, pad…]` (no SOT) | the last, `L − 1` | `logit_bias` |
//! | BERT (BiomedCLIP-style OpenCLIP) | `[CLS, slot×n, tokens(text), SEP, PAD…]`, padding masked | `[CLS]`, 0 | 0 |
//!
//! For CLIP this is CoOp's own layout (`"X X … X " + text` tokenised: CLIP's BPE splits on words, so
//! the tokens after the slots are `tokens(text)`). For SigLIP it is the same idea on SigLIP's
//! tokenizer: the context takes the first `n` positions (there is no start token to keep), the class
//! text follows as SigLIP tokenises it (canonicalised: lower case, no ASCII punctuation) and the
//! prompt is padded as SigLIP was trained, so the pooled last position sees the usual padding. For
//! the BERT text tower of BiomedCLIP-style checkpoints it is BiomedCoOp's layout (Koleilat et al.,
//! CVPR 2025: CoOp's prompt on open_clip's `HFTokenizer`, context vectors in place of the word
//! embeddings of `"X X … X"`, open_clip's attention mask over everything but `[PAD]`, so the slots
//! are attended; the `[CLS]` row pooled, then `text.proj`).

use burn::prelude::*;

use super::model::ClipModel;
use super::open_clip::OpenClipTimmBert;
use crate::error::ModelError;
use crate::siglip_model::SiglipModel;
use crate::siglip_tokenizer::SiglipTokenizer;
use crate::tokenizer::ClipTokenizer;
use crate::tokenizer::wordpiece::WordPieceTokenizer;

/// A class prompt with room for a learned context (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlottedPrompt {
    /// Ids padded to the context length; `ids[slots_start..slots_start + n]` are placeholders.
    pub ids: Vec<u32>,
    /// Position of the first context slot (the number of special tokens before it).
    pub slots_start: usize,
    /// The row the text tower pools into the text feature.
    pub pooled: usize,
    /// How many leading positions the text tower attends to (the rest is masked padding; towers
    /// without a padding mask attend to all of them).
    pub attended: usize,
}

/// The tokenizer side of a prompt-learning text tower.
pub trait PromptTokenizer {
    /// The family's name for error messages (`"CLIP"`, `"SigLIP"`).
    fn family(&self) -> &'static str;

    /// The ids `text` contributes inside a prompt: no special tokens, no truncation.
    fn content_ids(&self, text: &str) -> Result<Vec<u32>, ModelError>;

    /// `n_slots` context positions followed by `text`, with the family's special tokens, padded to
    /// the context length. Errors when the prompt does not fit (nothing is truncated away).
    fn slotted_prompt(&self, n_slots: usize, text: &str) -> Result<SlottedPrompt, ModelError>;

    /// A plain prompt's ids as zero-shot classification feeds them (truncated and padded as the
    /// family's tokenizer does for `padding="max_length", truncation=True`).
    fn zero_shot_ids(&self, text: &str) -> Result<Vec<u32>, ModelError>;
}

/// The model side of a prompt-learning text tower: frozen weights the context's gradient runs
/// through, and the family's image–text logit.
pub trait PromptTextEncoder {
    /// Width `d` of the token embeddings.
    fn token_width(&self) -> usize;

    /// Token embeddings `[b, L, d]` of equal-length id rows, without positions.
    fn embed_prompt_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError>;

    /// Text features `[b, p]`, not normalised, of prompt embeddings `[b, L, d]` (positions are
    /// added by the tower); `pooled[b]` is the row pooled for prompt `b`, `attended[b]` its
    /// [`SlottedPrompt::attended`].
    fn prompt_features(
        &self,
        embeds: Tensor<3>,
        pooled: &[usize],
        attended: &[usize],
    ) -> Result<Tensor<2>, ModelError>;

    /// Text features `[b, p]`, not normalised, of padded id rows (zero-shot prompts).
    fn text_features_of_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError>;

    /// `exp(logit_scale)`.
    fn logit_scale_exp(&self) -> f32;

    /// The logit's additive bias (SigLIP's `logit_bias`; 0 for softmax-trained CLIP).
    fn logit_bias(&self) -> f32;
}

fn input(e: impl std::fmt::Display) -> ModelError {
    ModelError::Input(e.to_string())
}

/// `prefix ++ [placeholder; n] ++ content ++ [end]`, padded with `pad` to `length`; the error names
/// the prompt when it does not fit.
fn lay_out(
    family: &str,
    prefix: &[u32],
    n_slots: usize,
    content: &[u32],
    end: u32,
    (pad, length): (u32, usize),
    text: &str,
) -> Result<Vec<u32>, ModelError> {
    let used = prefix.len() + n_slots + content.len() + 1;
    if used > length {
        let slots = if n_slots == 0 { String::new() } else { format!(" with {n_slots} context tokens") };
        return Err(ModelError::Input(format!(
            "{family} prompt {text:?}{slots} needs {used} tokens, more than the context length {length}"
        )));
    }
    let mut ids = Vec::with_capacity(length);
    ids.extend_from_slice(prefix);
    ids.extend(std::iter::repeat_n(pad, n_slots));
    ids.extend_from_slice(content);
    ids.push(end);
    ids.resize(length, pad);
    Ok(ids)
}

impl PromptTokenizer for ClipTokenizer {
    fn family(&self) -> &'static str {
        "CLIP"
    }

    fn content_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.tokenize(text).map_err(input)
    }

    fn slotted_prompt(&self, n_slots: usize, text: &str) -> Result<SlottedPrompt, ModelError> {
        let content = self.content_ids(text)?;
        let pad = (self.pad_id(), self.context_length());
        let ids = lay_out("CLIP", &[self.bos_id()], n_slots, &content, self.eos_id(), pad, text)?;
        let pooled = 1 + n_slots + content.len();
        Ok(SlottedPrompt { ids, slots_start: 1, pooled, attended: pad.1 })
    }

    fn zero_shot_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.encode_padded(text).map_err(input)
    }
}

impl PromptTextEncoder for ClipModel {
    fn token_width(&self) -> usize {
        self.text_model.d_model()
    }

    fn embed_prompt_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        self.text_model.embed_tokens(ids, device)
    }

    fn prompt_features(
        &self,
        embeds: Tensor<3>,
        pooled: &[usize],
        _: &[usize],
    ) -> Result<Tensor<2>, ModelError> {
        self.text_features_from_embeddings(embeds, pooled)
    }

    fn text_features_of_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError> {
        self.text_features(ids, device)
    }

    fn logit_scale_exp(&self) -> f32 {
        ClipModel::logit_scale_exp(self)
    }

    fn logit_bias(&self) -> f32 {
        0.0
    }
}

impl PromptTokenizer for SiglipTokenizer {
    fn family(&self) -> &'static str {
        "SigLIP"
    }

    fn content_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let mut ids = self.encode(text);
        ids.pop(); // the `</s>` encode appends
        Ok(ids)
    }

    fn slotted_prompt(&self, n_slots: usize, text: &str) -> Result<SlottedPrompt, ModelError> {
        let content = self.content_ids(text)?;
        let length = self.context_length();
        let ids = lay_out("SigLIP", &[], n_slots, &content, self.eos_id(), (self.pad_id(), length), text)?;
        Ok(SlottedPrompt { ids, slots_start: 0, pooled: length - 1, attended: length })
    }

    fn zero_shot_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.encode_padded(text).map_err(input)
    }
}

impl PromptTextEncoder for SiglipModel {
    fn token_width(&self) -> usize {
        self.text_model.token_embedding.weight.dims()[1]
    }

    fn embed_prompt_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        self.text_model.embed_tokens(ids, device)
    }

    fn prompt_features(
        &self,
        embeds: Tensor<3>,
        pooled: &[usize],
        _: &[usize],
    ) -> Result<Tensor<2>, ModelError> {
        let n = embeds.dims()[1];
        if let Some(p) = pooled.iter().find(|&&p| p + 1 != n) {
            return Err(ModelError::Input(format!(
                "SigLIP text pools the last of its {n} positions, not position {p}"
            )));
        }
        Ok(self.text_model.forward_embeddings(embeds, false)?.pooled)
    }

    fn text_features_of_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError> {
        self.text_features(ids, device)
    }

    fn logit_scale_exp(&self) -> f32 {
        self.logit_scale.exp()
    }

    fn logit_bias(&self) -> f32 {
        self.logit_bias
    }
}

/// open_clip's `HFTokenizer` for a BiomedCLIP-style checkpoint: its WordPiece tokenizer at the
/// checkpoint's `context_length` (`text_cfg.context_length`, 256 for BiomedCLIP).
#[derive(Debug, Clone)]
pub struct OpenClipBertTokenizer {
    /// The BERT WordPiece tokenizer.
    pub wordpiece: WordPieceTokenizer,
    /// Ids per prompt, padded or truncated to it.
    pub context_length: usize,
}

impl PromptTokenizer for OpenClipBertTokenizer {
    fn family(&self) -> &'static str {
        "BERT"
    }

    fn content_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        Ok(self.wordpiece.tokenize(&crate::tokenizer::open_clip_clean::clean_whitespace(text)))
    }

    fn slotted_prompt(&self, n_slots: usize, text: &str) -> Result<SlottedPrompt, ModelError> {
        let content = self.content_ids(text)?;
        let w = &self.wordpiece;
        let pad = (w.pad_id(), self.context_length);
        let ids = lay_out("BERT", &[w.cls_id()], n_slots, &content, w.sep_id(), pad, text)?;
        Ok(SlottedPrompt { ids, slots_start: 1, pooled: 0, attended: 1 + n_slots + content.len() + 1 })
    }

    fn zero_shot_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.wordpiece.encode_open_clip(text, self.context_length).map_err(input)
    }
}

impl PromptTextEncoder for OpenClipTimmBert {
    fn token_width(&self) -> usize {
        self.text.word_embeddings.weight.dims()[1]
    }

    fn embed_prompt_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<3>, ModelError> {
        self.text.embed_words(ids, device)
    }

    fn prompt_features(
        &self,
        embeds: Tensor<3>,
        pooled: &[usize],
        attended: &[usize],
    ) -> Result<Tensor<2>, ModelError> {
        if let Some(p) = pooled.iter().find(|&&p| p != 0) {
            return Err(ModelError::Input(format!("BERT text pools its [CLS] row 0, not position {p}")));
        }
        let last = self.text.forward_embeddings(embeds, attended)?;
        let [b, _, d] = last.dims();
        Ok(self.text_proj.forward(last.narrow(1, 0, 1).reshape([b, d])))
    }

    fn text_features_of_ids(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError> {
        self.text_features(ids, device)
    }

    fn logit_scale_exp(&self) -> f32 {
        OpenClipTimmBert::logit_scale_exp(self)
    }

    fn logit_bias(&self) -> f32 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_laid_out_with_their_slots_and_refused_when_too_long() {
        let ids = lay_out("X", &[7], 2, &[4, 5], 9, (0, 8), "t").unwrap();
        assert_eq!(ids, vec![7, 0, 0, 4, 5, 9, 0, 0]);
        let full = lay_out("X", &[], 3, &[4, 5], 9, (1, 6), "t").unwrap();
        assert_eq!(full, vec![1, 1, 1, 4, 5, 9]);
        let err = lay_out("SigLIP", &[], 4, &[4, 5], 9, (1, 6), "melanoma").unwrap_err().to_string();
        assert!(err.contains("\"melanoma\"") && err.contains("needs 7 tokens") && err.contains("6"), "{err}");
    }
}
