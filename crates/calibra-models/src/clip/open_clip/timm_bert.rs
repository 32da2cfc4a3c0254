//! BiomedCLIP-style OpenCLIP models (open_clip_torch 3.3.0 `CustomTextCLIP` with a `TimmModel`
//! vision tower and an `HFTextEncoder` BERT text tower; options in [`super::timm_bert_config`]):
//!
//! ```text
//! image_features = head.proj(trunk(x))            trunk = timm ViT, pooled + normed (crate::timm)
//! text_features  = proj(BERT(ids, mask)[:, 0])    mask = ids != pad_token_id; proj = mlp or linear
//! logits         = exp(logit_scale) · l2n(image_features) · l2n(text_features)ᵀ
//! ```
//!
//! Weights are read from `open_clip_model.safetensors` under open_clip's names: `visual.trunk.*`
//! (timm's names, loaded by calibra's timm ViT loader, fused `qkv` split), `visual.head.proj.*`,
//! `text.transformer.*` (transformers' `BertModel` names, [`crate::bert`]), `text.proj.{0,2}.weight`
//! (mlp) or `text.proj.weight` (linear), `logit_scale`. Every tensor must be used and every
//! parameter found.

use std::path::Path;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::gelu;
use safetensors::{Dtype, SafeTensors};

use super::timm_bert_config::{HfProjType, TimmBertConfig};
use super::{OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHTS};
use crate::bert::{BertConfig, BertModel, bert_rules};
use crate::clip::l2_normalize;
use crate::clip::model::read_scalar_bytes;
use crate::error::ModelError;
use crate::hf::load::{check_fits_file, load_safetensors_bytes};
use crate::hf::resolve::hf_hub_cache;
use crate::hf::{KeyMap, LoadOptions, read_config};
use crate::timm::{TimmVit, split_fused_qkv, timm_vit_key_map};
use crate::tokenizer::wordpiece::WordPieceTokenizer;

/// open_clip's `HFTextEncoder.proj`: `second(gelu(first(x)))` (mlp) or `first(x)` (linear), no biases.
#[derive(Module, Debug)]
pub struct HfTextProjection {
    /// `proj.0` (mlp) or `proj` (linear).
    pub first: Linear,
    /// `proj.2` (mlp only).
    pub second: Option<Linear>,
}

impl HfTextProjection {
    /// Applies the projection to pooled rows `[b, d]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h = self.first.forward(x);
        match &self.second {
            Some(second) => second.forward(gelu(h)),
            None => h,
        }
    }
}

/// A BiomedCLIP-style model (see the module docs).
#[derive(Module, Debug)]
pub struct OpenClipTimmBert {
    /// `visual.trunk`.
    pub trunk: TimmVit,
    /// `visual.head.proj`.
    pub visual_proj: Linear,
    /// `text.transformer`.
    pub text: BertModel,
    /// `text.proj`.
    pub text_proj: HfTextProjection,
    /// Log temperature (`logit_scale`), a frozen constant.
    #[module(skip)]
    pub logit_scale: f32,
}

/// What a load reads besides the checkpoint directory.
#[derive(Debug, Clone, Default)]
pub struct TimmBertSources<'a> {
    /// The Hugging Face hub cache to find the BERT `config.json` / tokenizer in (default:
    /// [`hf_hub_cache`]).
    pub hub_cache: Option<&'a Path>,
    /// Keyword arguments for the timm trunk, as timm's `create_model(name, **model_args)` takes them.
    /// open_clip passes none, so a shipped checkpoint needs none; a test fixture with a reduced trunk
    /// names its sizes here.
    pub trunk_model_args: serde_json::Map<String, serde_json::Value>,
}

/// A tensor re-serialised as stored.
struct Raw<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    data: &'a [u8],
}

impl safetensors::View for &Raw<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// The tensors of `st` whose names start with `prefix`, the prefix removed, as a safetensors file.
fn with_prefix(st: &SafeTensors<'_>, prefix: &str, path: &Path) -> Result<Vec<u8>, ModelError> {
    let raws: Vec<(String, Raw<'_>)> = st
        .tensors()
        .into_iter()
        .filter_map(|(name, t)| {
            let rest = name.strip_prefix(prefix)?.to_string();
            Some((rest, Raw { dtype: t.dtype(), shape: t.shape().to_vec(), data: t.data() }))
        })
        .collect();
    let views: Vec<(String, &Raw<'_>)> = raws.iter().map(|(n, r)| (n.clone(), r)).collect();
    safetensors::serialize(views, None)
        .map_err(|e| ModelError::Store { path: path.into(), message: e.to_string() })
}

/// The timm trunk (`visual.trunk.*` of `st`, read from `weights`) with `config`'s `timm_pool`.
fn trunk_from(
    config: &TimmBertConfig,
    st: &SafeTensors<'_>,
    weights: &Path,
    trunk_model_args: &serde_json::Map<String, serde_json::Value>,
    device: &Device,
) -> Result<TimmVit, ModelError> {
    let trunk_cfg = config.trunk_config(trunk_model_args)?;
    check_fits_file(&config.file, weights, trunk_cfg.min_weights())?;
    let mut trunk = trunk_cfg.init(device);
    let trunk_bytes = split_fused_qkv(&with_prefix(st, "visual.trunk.", weights)?, weights)?;
    load_safetensors_bytes(&mut trunk, trunk_bytes, weights, &timm_vit_key_map(), &LoadOptions::default())?;
    if let Some(pool) = config.timm_pool {
        trunk.pool = pool;
    }
    Ok(trunk)
}

impl OpenClipTimmBert {
    /// Loads the BiomedCLIP-style checkpoint in `dir` (`open_clip_config.json` +
    /// `open_clip_model.safetensors`), the BERT configuration from the Hugging Face cache (see
    /// [`TimmBertConfig::bert_config_path`]), and its tokenizer.
    pub fn load(
        dir: &Path,
        device: &Device,
    ) -> Result<(Self, TimmBertConfig, WordPieceTokenizer), ModelError> {
        let cache = hf_hub_cache();
        Self::load_with(dir, &TimmBertSources { hub_cache: cache.as_deref(), ..Default::default() }, device)
    }

    /// [`Self::load`] with explicit [`TimmBertSources`].
    pub fn load_with(
        dir: &Path,
        sources: &TimmBertSources<'_>,
        device: &Device,
    ) -> Result<(Self, TimmBertConfig, WordPieceTokenizer), ModelError> {
        let config = TimmBertConfig::from_json(&read_config(&dir.join(OPEN_CLIP_CONFIG))?)?;
        let file = &config.file;
        let bert_path = config.bert_config_path(sources.hub_cache)?;
        let bert_file = read_config(&bert_path)?;
        let bert_cfg = BertConfig::from_hf(&bert_file)?;
        check_fits_file(&bert_file, &dir.join(OPEN_CLIP_WEIGHTS), bert_cfg.min_weights())?;
        let tok_dir = config.tokenizer_dir(dir, sources.hub_cache)?;
        let tokenizer = WordPieceTokenizer::from_dir(&tok_dir)
            .map_err(|e| file.invalid(format!("tokenizer in {}: {e}", tok_dir.display())))?;
        let weights = dir.join(OPEN_CLIP_WEIGHTS);
        let bytes =
            std::fs::read(&weights).map_err(|source| ModelError::Io { path: weights.clone(), source })?;
        let st = SafeTensors::deserialize(&bytes)
            .map_err(|e| ModelError::Store { path: weights.clone(), message: e.to_string() })?;
        let known = ["visual.trunk.", "visual.head.", "text.transformer.", "text.proj."];
        let mut leftover: Vec<&str> = st
            .names()
            .into_iter()
            .filter(|n| *n != "logit_scale" && !known.iter().any(|p| n.starts_with(p)))
            .collect();
        leftover.sort_unstable();
        if !leftover.is_empty() {
            return Err(ModelError::Store {
                path: weights.clone(),
                message: format!(
                    "tensors not part of a timm-trunk + BERT OpenCLIP model (an option calibra does not \
                     implement?): {}",
                    leftover.join(", ")
                ),
            });
        }
        let trunk = trunk_from(&config, &st, &weights, &sources.trunk_model_args, device)?;
        let opts = LoadOptions::default();
        let e = config.embed_dim;
        let d_vision = trunk.embed_dim();
        let mut visual_proj = LinearConfig::new(d_vision, e).with_bias(config.timm_proj_bias).init(device);
        let head = KeyMap::new("open_clip-timm-head").strip_prefix("proj.");
        load_safetensors_bytes(
            &mut visual_proj,
            with_prefix(&st, "visual.head.", &weights)?,
            &weights,
            &head,
            &opts,
        )?;

        let mut text = bert_cfg.init(device);
        // transformers before 4.31 saved `position_ids` (0..max_positions) as a persistent buffer.
        let bert_map = bert_rules(KeyMap::new("bert"), "", "")?.ignore(r"^embeddings\.position_ids$")?;
        load_safetensors_bytes(
            &mut text,
            with_prefix(&st, "text.transformer.", &weights)?,
            &weights,
            &bert_map,
            &opts,
        )?;

        let d = bert_cfg.hidden_size;
        let linear = |i, o| LinearConfig::new(i, o).with_bias(false).init(device);
        let (mut text_proj, proj_map) = match config.proj_type {
            HfProjType::Mlp => {
                let hidden = (d + e) / 2;
                let p = HfTextProjection { first: linear(d, hidden), second: Some(linear(hidden, e)) };
                (p, KeyMap::new("open_clip-hf-proj").rule("0.", "first.")?.rule("2.", "second.")?)
            }
            HfProjType::Linear => {
                let p = HfTextProjection { first: linear(d, e), second: None };
                (p, KeyMap::new("open_clip-hf-proj").rule("weight", "first.weight")?)
            }
        };
        load_safetensors_bytes(
            &mut text_proj,
            with_prefix(&st, "text.proj.", &weights)?,
            &weights,
            &proj_map,
            &opts,
        )?;
        let logit_scale = read_scalar_bytes(&bytes, &weights, "logit_scale")?;
        let model = Self { trunk, visual_proj, text, text_proj, logit_scale };
        Ok((model, config, tokenizer))
    }

    /// The vision trunk alone (`visual.trunk.*`, the frozen image encoder of `calibra features`:
    /// timm's pooled, normed feature, before `visual.head.proj`), with the checkpoint's options.
    /// `trunk_model_args` as in [`TimmBertSources`] (empty for a shipped checkpoint).
    pub fn load_trunk(
        dir: &Path,
        trunk_model_args: &serde_json::Map<String, serde_json::Value>,
        device: &Device,
    ) -> Result<(TimmVit, TimmBertConfig), ModelError> {
        let config = TimmBertConfig::from_json(&read_config(&dir.join(OPEN_CLIP_CONFIG))?)?;
        let weights = dir.join(OPEN_CLIP_WEIGHTS);
        let bytes =
            std::fs::read(&weights).map_err(|source| ModelError::Io { path: weights.clone(), source })?;
        let st = SafeTensors::deserialize(&bytes)
            .map_err(|e| ModelError::Store { path: weights.clone(), message: e.to_string() })?;
        let trunk = trunk_from(&config, &st, &weights, trunk_model_args, device)?;
        Ok((trunk, config))
    }

    /// `exp(logit_scale)`.
    pub fn logit_scale_exp(&self) -> f32 {
        self.logit_scale.exp()
    }

    /// open_clip's `encode_image` (not normalised), `[b, embed_dim]`.
    pub fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.visual_proj.forward(self.trunk.forward(images, false)?.cls))
    }

    /// open_clip's `encode_text` (not normalised) of padded id rows, `[b, embed_dim]`.
    pub fn text_features(&self, ids: &[Vec<u32>], device: &Device) -> Result<Tensor<2>, ModelError> {
        let last = self.text.forward_ids(ids, device)?;
        let [b, _, d] = last.dims();
        Ok(self.text_proj.forward(last.narrow(1, 0, 1).reshape([b, d])))
    }

    /// `exp(logit_scale) · l2n(image_features) · l2n(text_features)ᵀ`.
    pub fn logits(&self, image_features: Tensor<2>, text_features: Tensor<2>) -> Tensor<2> {
        l2_normalize(image_features).matmul(l2_normalize(text_features).transpose()) * self.logit_scale_exp()
    }
}
