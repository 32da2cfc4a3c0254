//! Reading the `open_clip_config.json` of a BiomedCLIP-style OpenCLIP checkpoint (open_clip_torch
//! 3.3.0 `CustomTextCLIP` with a `TimmModel` vision tower and an `HFTextEncoder` text tower, e.g.
//! `microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224`), and finding the files open_clip reads
//! besides it.
//!
//! What open_clip builds from it:
//! - vision: `timm.create_model(timm_model_name)` with timm's own defaults for that name (open_clip
//!   passes no size arguments; `vision_cfg.image_size` only sets the preprocessing size), its
//!   classifier removed (`reset_classifier(0)`), then `head.proj = nn.Linear(num_features, embed_dim,
//!   bias=timm_proj_bias)` on timm's pooled, normed feature. Implemented: a ViT trunk calibra's timm
//!   loader knows ([`crate::timm`]), `timm_pool` `""` (the trunk's own `global_pool`), `token`, `avg`
//!   (open_clip's default), `max` or `avgmax` (timm's `reset_classifier(0, global_pool=…)`: the pooling
//!   changes, the trunk's `norm` / `fc_norm` stay as built), and `timm_proj` `linear`.
//! - text: `AutoModel.from_config(AutoConfig.from_pretrained(hf_model_name), add_pooling_layer=False)`
//!   (the BERT configuration is read from the hub, not from this file), then the pooler and the
//!   projection: `hf_pooler_type` `cls_last_hidden_state_pooler` (row 0 of `last_hidden_state`) and
//!   `hf_proj_type` `mlp` (`Linear(d, (d + embed_dim) // 2, bias=False)`, `nn.GELU()`,
//!   `Linear(…, embed_dim, bias=False)`) or `linear` (`Linear(d, embed_dim, bias=False)`) are implemented.
//! - tokenizer: `HFTokenizer` on the tokenizer files of the checkpoint directory (`local-dir:`),
//!   `clean="whitespace"`, padded/truncated to `text_cfg.context_length`.
//!
//! Refused by name: other `timm_pool` (`abs_attn`, `rot_attn`, `map`) and `timm_proj` values,
//! a timm architecture that is not one of calibra's ViTs, other `hf_pooler_type` (the default
//! `mean_pooler` included) and `hf_proj_type` values, `tokenizer_mode` `clips`, `tokenizer_kwargs`
//! other than `clean: "whitespace"` / `strip_sep_token: false`, `init_logit_bias`, `multimodal_cfg`.
//! Inert (eval mode, or not read by open_clip for these towers): dropout and drop-path rates,
//! `patch_dropout`, `timm_model_pretrained`, `hf_model_pretrained`, `quick_gelu`, `custom_text`, the
//! native towers' size options, `output_tokens`, `init_logit_scale` (the file's `logit_scale` is read).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::{MODEL_KEYS, TEXT_KEYS, VISION_KEYS, check_known, not_implemented, truthy};
use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::hf::resolve::resolve_checkpoint_in;
use crate::timm::TimmPool;

/// Whether an `open_clip_config.json` describes a timm trunk with a Hugging Face text tower.
pub fn is_timm_bert_json(json: &Value) -> bool {
    let model = &json["model_cfg"];
    truthy(model["vision_cfg"].get("timm_model_name")) && truthy(model["text_cfg"].get("hf_model_name"))
}

/// The text projection (`hf_proj_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HfProjType {
    /// `Linear(d, embed_dim, bias=False)`.
    Linear,
    /// `Linear(d, (d + embed_dim) // 2, bias=False)`, exact GELU, `Linear(…, embed_dim, bias=False)`.
    Mlp,
}

/// The resolved options of a BiomedCLIP-style checkpoint.
#[derive(Debug, Clone)]
pub struct TimmBertConfig {
    /// `embed_dim`.
    pub embed_dim: usize,
    /// `vision_cfg.timm_model_name`.
    pub timm_model_name: String,
    /// `vision_cfg.timm_pool`: `None` for `""` (the trunk keeps its own `global_pool`), else the
    /// pooling `reset_classifier(0, global_pool=…)` sets after the trunk was built (its `norm` /
    /// `fc_norm` stay as built).
    pub timm_pool: Option<TimmPool>,
    /// `vision_cfg.timm_proj_bias`.
    pub timm_proj_bias: bool,
    /// `text_cfg.hf_model_name` (where the BERT `config.json` comes from).
    pub hf_model_name: String,
    /// `text_cfg.hf_tokenizer_name`.
    pub hf_tokenizer_name: Option<String>,
    /// `text_cfg.hf_proj_type`.
    pub proj_type: HfProjType,
    /// `text_cfg.context_length` (the tokenizer pads/truncates to it).
    pub context_length: usize,
    /// The `open_clip_config.json` it came from.
    pub file: HfConfig,
}

fn str_of(cfg: &HfConfig, key: &str, default: &str) -> Result<String, ModelError> {
    match cfg.json.get(key) {
        None | Some(Value::Null) => Ok(default.to_string()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(cfg.invalid(format!("'{key}' must be a string, found {v}"))),
    }
}

impl TimmBertConfig {
    /// Resolves the `open_clip_config.json` `file` (see the module docs).
    pub fn from_json(file: &HfConfig) -> Result<Self, ModelError> {
        if !is_timm_bert_json(&file.json) {
            return Err(file.invalid(
                "not a timm-trunk + Hugging Face text tower OpenCLIP config (needs \
                 model_cfg.vision_cfg.timm_model_name and model_cfg.text_cfg.hf_model_name)",
            ));
        }
        let cfg = file.nested("model_cfg")?;
        check_known(&cfg, "", MODEL_KEYS)?;
        if cfg.json.get("multimodal_cfg").is_some() {
            return Err(not_implemented(&cfg, "model_cfg.multimodal_cfg", "CoCa's multimodal decoder"));
        }
        if cfg.json.get("init_logit_bias").is_some_and(|v| !v.is_null()) {
            return Err(not_implemented(&cfg, "model_cfg.init_logit_bias", "sigmoid logits with a bias"));
        }
        let vision = cfg.nested("vision_cfg")?;
        check_known(&vision, "vision_cfg.", VISION_KEYS)?;
        let timm_pool = match str_of(&vision, "timm_pool", "avg")?.as_str() {
            "" => None,
            "token" => Some(TimmPool::Token),
            "avg" => Some(TimmPool::Avg),
            "max" => Some(TimmPool::Max),
            "avgmax" => Some(TimmPool::AvgMax),
            other => {
                return Err(not_implemented(
                    &vision,
                    "vision_cfg.timm_pool",
                    &format!(
                        "'{other}'; only '' (the trunk's own pooling), 'token', 'avg', 'max' and 'avgmax' are"
                    ),
                ));
            }
        };
        let proj = str_of(&vision, "timm_proj", "linear")?;
        if proj != "linear" {
            return Err(not_implemented(
                &vision,
                "vision_cfg.timm_proj",
                &format!("'{proj}'; only 'linear' is"),
            ));
        }
        let text = cfg.nested("text_cfg")?;
        check_known(&text, "text_cfg.", TEXT_KEYS)?;
        let pooler = str_of(&text, "hf_pooler_type", "mean_pooler")?;
        if pooler != "cls_last_hidden_state_pooler" {
            return Err(not_implemented(
                &text,
                "text_cfg.hf_pooler_type",
                &format!(
                    "'{pooler}' (open_clip's default is 'mean_pooler'); only 'cls_last_hidden_state_pooler' is"
                ),
            ));
        }
        let proj_type = match str_of(&text, "hf_proj_type", "mlp")?.as_str() {
            "mlp" => HfProjType::Mlp,
            "linear" => HfProjType::Linear,
            other => {
                return Err(not_implemented(
                    &text,
                    "text_cfg.hf_proj_type",
                    &format!("'{other}'; only 'mlp' and 'linear' are"),
                ));
            }
        };
        let mode = str_of(&text, "tokenizer_mode", "")?;
        if !mode.is_empty() {
            return Err(not_implemented(&text, "text_cfg.tokenizer_mode", &format!("'{mode}'")));
        }
        let kwargs = text.nested("tokenizer_kwargs")?;
        if let Some(obj) = kwargs.json.as_object() {
            for (k, v) in obj {
                let ok = match k.as_str() {
                    "clean" => v.as_str() == Some("whitespace"),
                    "strip_sep_token" => !truthy(Some(v)),
                    _ => false,
                };
                if !ok {
                    return Err(not_implemented(
                        &text,
                        &format!("text_cfg.tokenizer_kwargs.{k}"),
                        &format!("HFTokenizer argument {v}; only clean = \"whitespace\" is"),
                    ));
                }
            }
        }
        let context_length = text.size_or("context_length", 77)?;
        if context_length < 2 {
            return Err(
                text.invalid(format!("text_cfg.context_length must be at least 2, found {context_length}"))
            );
        }
        let hf_tokenizer_name = str_of(&text, "hf_tokenizer_name", "")?;
        Ok(Self {
            embed_dim: cfg.req_size("embed_dim")?,
            timm_model_name: vision.req_str("timm_model_name")?,
            timm_pool,
            timm_proj_bias: vision.bool_or("timm_proj_bias", false)?,
            hf_model_name: text.req_str("hf_model_name")?,
            hf_tokenizer_name: (!hf_tokenizer_name.is_empty()).then_some(hf_tokenizer_name),
            proj_type,
            context_length,
            file: file.clone(),
        })
    }

    /// The trunk as a timm `config.json` would describe it: `{"architecture": timm_model_name,
    /// "model_args": model_args}` (open_clip passes no arguments: `model_args` is empty for a shipped
    /// checkpoint), resolved by [`crate::timm::TimmVitConfig::from_timm`].
    pub fn trunk_config(
        &self,
        model_args: &serde_json::Map<String, Value>,
    ) -> Result<crate::timm::TimmVitConfig, ModelError> {
        let json = serde_json::json!({"architecture": self.timm_model_name, "model_args": model_args});
        crate::timm::TimmVitConfig::from_timm(&HfConfig::from_value(self.file.path.clone(), json))
    }

    /// The BERT `config.json` of the text tower, found as open_clip's `AutoConfig.from_pretrained(
    /// hf_model_name)` finds it offline: `hf_model_name` as a local directory, else its snapshot in the
    /// Hugging Face hub cache `hub_cache`. The error says what to download.
    pub fn bert_config_path(&self, hub_cache: Option<&Path>) -> Result<PathBuf, ModelError> {
        let found = resolve_checkpoint_in(&self.hf_model_name, hub_cache)
            .ok()
            .map(|c| c.config_path())
            .filter(|p| p.is_file());
        found.ok_or_else(|| {
            self.file.unsupported(format!(
                "text_cfg.hf_model_name '{0}': the BERT config.json of the text tower is needed (open_clip \
                 reads it with AutoConfig.from_pretrained) and was found neither as a local directory \
                 nor in the Hugging Face cache ({1}); download it with `huggingface-cli download {0} \
                 config.json`",
                self.hf_model_name,
                hub_cache.map_or("no cache directory".into(), |c| c.display().to_string()),
            ))
        })
    }

    /// The directory holding the WordPiece tokenizer files (`tokenizer.json` or `vocab.txt`): the
    /// checkpoint directory `dir` (as open_clip's `get_tokenizer("local-dir:…")`; BiomedCLIP ships
    /// them), else `hf_tokenizer_name` as a local directory or hub-cache snapshot.
    pub fn tokenizer_dir(&self, dir: &Path, hub_cache: Option<&Path>) -> Result<PathBuf, ModelError> {
        let has = |d: &Path| d.join("tokenizer.json").is_file() || d.join("vocab.txt").is_file();
        if has(dir) {
            return Ok(dir.to_path_buf());
        }
        if let Some(name) = &self.hf_tokenizer_name
            && let Ok(c) = resolve_checkpoint_in(name, hub_cache)
            && has(&c.dir)
        {
            return Ok(c.dir);
        }
        Err(self.file.unsupported(format!(
            "no tokenizer.json or vocab.txt (the BERT WordPiece tokenizer) in {} nor for \
             text_cfg.hf_tokenizer_name {:?}; put the tokenizer files of the checkpoint next to \
             open_clip_config.json",
            dir.display(),
            self.hf_tokenizer_name.as_deref().unwrap_or("(unset)"),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Value {
        serde_json::json!({
            "embed_dim": 512,
            "vision_cfg": {"timm_model_name": "vit_base_patch16_224", "timm_model_pretrained": false,
                           "timm_pool": "", "timm_proj": "linear", "image_size": 224},
            "text_cfg": {"hf_model_name": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
                         "hf_tokenizer_name": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
                         "hf_proj_type": "mlp", "hf_pooler_type": "cls_last_hidden_state_pooler",
                         "context_length": 256}
        })
    }

    fn cfg(model_cfg: Value) -> HfConfig {
        HfConfig::from_value("open_clip_config.json", serde_json::json!({ "model_cfg": model_cfg }))
    }

    #[test]
    fn biomedclip_config_resolves() {
        let c = TimmBertConfig::from_json(&cfg(base())).unwrap();
        assert_eq!((c.embed_dim, c.context_length, c.proj_type), (512, 256, HfProjType::Mlp));
        assert_eq!(c.timm_pool, None);
        let trunk = c.trunk_config(&Default::default()).unwrap();
        assert_eq!((trunk.embed_dim, trunk.depth, trunk.num_heads, trunk.img_size), (768, 12, 12, 224));
    }

    #[test]
    fn timm_pool_defaults_to_open_clips_avg() {
        let mut c = base();
        c["vision_cfg"].as_object_mut().unwrap().remove("timm_pool");
        assert_eq!(TimmBertConfig::from_json(&cfg(c)).unwrap().timm_pool, Some(TimmPool::Avg));
    }

    #[test]
    fn unimplemented_options_are_refused_by_name() {
        for (tower, key, value, needle) in [
            ("vision_cfg", "timm_pool", serde_json::json!("abs_attn"), "timm_pool"),
            ("vision_cfg", "timm_proj", serde_json::json!("mlp"), "timm_proj"),
            ("text_cfg", "hf_pooler_type", serde_json::json!("mean_pooler"), "hf_pooler_type"),
            ("text_cfg", "hf_proj_type", serde_json::json!("none"), "hf_proj_type"),
            ("text_cfg", "tokenizer_mode", serde_json::json!("clips"), "tokenizer_mode"),
            ("text_cfg", "tokenizer_kwargs", serde_json::json!({"clean": "lower"}), "tokenizer_kwargs"),
            ("text_cfg", "surprise", serde_json::json!(1), "surprise"),
        ] {
            let mut c = base();
            c[tower][key] = value;
            let err = TimmBertConfig::from_json(&cfg(c)).unwrap_err().to_string();
            assert!(err.contains(needle), "{key}: {err}");
        }
        let mut c = base();
        c["vision_cfg"]["timm_model_name"] = "resnet50".into();
        let err = TimmBertConfig::from_json(&cfg(c)).unwrap().trunk_config(&Default::default()).unwrap_err();
        assert!(err.to_string().contains("resnet50"), "{err}");
    }
}
