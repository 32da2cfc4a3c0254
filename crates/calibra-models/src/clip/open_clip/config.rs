//! Reading an OpenCLIP `open_clip_config.json` (`{"model_cfg": …, "preprocess_cfg": …}`, the layout
//! `open_clip.push_to_hf_hub.save_for_hf` writes and `create_model("local-dir:…")` /
//! `"hf-hub:…"` reads, open_clip_torch 3.3.0) into the equivalent Hugging Face [`ClipConfig`].
//!
//! A native OpenCLIP ViT-CLIP (`open_clip.model.CLIP` / `CustomTextCLIP` with the native
//! `VisionTransformer` and `TextTransformer`) computes what transformers' `CLIPModel` computes:
//! `ln_pre` = `pre_layrnorm`, `ln_post` on the pooled class token = `post_layernorm`, pre-norm blocks
//! with `nn.MultiheadAttention` (scaled dot product, `1/√head_dim`), a causal text mask, `ln_final`,
//! the EOT row pooled (`pool_type` `argmax`: the first position of the largest id, or `eos`: the
//! first `eos_id`), projections without bias. The activation is `nn.GELU` (exact, erf) unless
//! `quick_gelu`; LayerNorm epsilon 1e-5 unless `norm_kwargs.eps`.
//!
//! Every option is checked against what calibra implements; anything else is refused by name,
//! never approximated. Accepted because they do not change the numbers calibra computes:
//! `patch_dropout` (identity in eval mode; calibra never trains the OpenCLIP vision tower),
//! `output_tokens`, `output_dict`, `init_logit_scale` (the file's `logit_scale` is read),
//! `nonscalar_logit_scale`, `vision_cfg.final_ln_after_pool` (with `pool_type` `tok`, LayerNorm of
//! the class token after pooling equals pooling the LayerNorm of every token), `text_cfg.pad_id`
//! (used only for the padding mask of bidirectional or `embed_cls` text towers, both refused),
//! `attn_pooler_*` (only read with `attentional_pool`), the `timm_*` options other than
//! `timm_model_name` (only read with it) and `tokenizer_mode` (only read with `hf_tokenizer_name`).
//!
//! Refused (named in the error): a timm trunk (`timm_model_name`) or an HF text tower
//! (`hf_model_name`) alone (together they are the BiomedCLIP layout of [`super::timm_bert_config`],
//! also refused here, naming the loader to use), a ResNet trunk (`layers` a list), an HF tokenizer
//! (`hf_tokenizer_name`), CoCa
//! (`multimodal_cfg`), SigLIP-style sigmoid logits (`init_logit_bias`), layer scale
//! (`ls_init_value`), `attentional_pool`, `no_ln_pre`, vision `pool_type` other than `tok`,
//! `pos_embed_type` other than `learnable`, text `pool_type` `first`/`last`/`none`,
//! `no_causal_mask`, `embed_cls`, `proj_bias`, `proj_type` other than `linear`, text
//! `final_ln_after_pool`, custom blocks (`block_type` `custom`, `qk_norm`, `scaled_cosine_attn`,
//! `scale_heads`, `scale_attn_inner`, `scale_attn`, `scale_fc`), `act_kwargs`, `norm_kwargs` other
//! than `eps`, tokenizer options other than `clean: "lower"`, and any key open_clip does not know.

use serde_json::Value;

use crate::clip::{ClipConfig, ClipTextConfig, ClipVisionConfig, EotPooling};
use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::layers::Activation;

/// The name of OpenCLIP's hub config file.
pub const OPEN_CLIP_CONFIG: &str = "open_clip_config.json";
/// The name of OpenCLIP's hub weights file (`HF_SAFE_WEIGHTS_NAME`).
pub const OPEN_CLIP_WEIGHTS: &str = "open_clip_model.safetensors";

/// A resolved native OpenCLIP ViT-CLIP configuration.
#[derive(Debug, Clone)]
pub struct OpenClipConfig {
    /// The equivalent Hugging Face `CLIPConfig`.
    pub clip: ClipConfig,
    /// `custom_text`: the text tower's weights are under `text.` (`CustomTextCLIP`).
    pub custom_text: bool,
    /// `text_cfg.context_length` (the tokenizer pads/truncates to it).
    pub context_length: usize,
}

/// Keys of `model_cfg` open_clip's `CLIP` / `CustomTextCLIP` accept, with what calibra does.
pub(super) const MODEL_KEYS: &[&str] = &[
    "embed_dim",
    "vision_cfg",
    "text_cfg",
    "quick_gelu",
    "custom_text",
    "init_logit_scale",
    "init_logit_bias",
    "nonscalar_logit_scale",
    "output_dict",
    "multimodal_cfg",
];

/// Fields of open_clip's `CLIPVisionCfg`.
pub(super) const VISION_KEYS: &[&str] = &[
    "layers",
    "width",
    "head_width",
    "mlp_ratio",
    "patch_size",
    "image_size",
    "ls_init_value",
    "patch_dropout",
    "attentional_pool",
    "attn_pooler_queries",
    "attn_pooler_heads",
    "no_ln_pre",
    "pos_embed_type",
    "final_ln_after_pool",
    "pool_type",
    "output_tokens",
    "act_kwargs",
    "norm_kwargs",
    "block_type",
    "qk_norm",
    "scaled_cosine_attn",
    "scale_heads",
    "scale_attn_inner",
    "scale_attn",
    "scale_fc",
    "timm_model_name",
    "timm_model_pretrained",
    "timm_pool",
    "timm_proj",
    "timm_proj_bias",
    "timm_drop",
    "timm_drop_path",
];

/// Fields of open_clip's `CLIPTextCfg`.
pub(super) const TEXT_KEYS: &[&str] = &[
    "context_length",
    "vocab_size",
    "hf_tokenizer_name",
    "tokenizer_mode",
    "tokenizer_kwargs",
    "width",
    "heads",
    "layers",
    "mlp_ratio",
    "ls_init_value",
    "embed_cls",
    "pad_id",
    "eos_id",
    "no_causal_mask",
    "final_ln_after_pool",
    "pool_type",
    "proj_bias",
    "proj_type",
    "output_tokens",
    "act_kwargs",
    "norm_kwargs",
    "block_type",
    "qk_norm",
    "scaled_cosine_attn",
    "scale_heads",
    "scale_attn_inner",
    "scale_attn",
    "scale_fc",
    "hf_model_name",
    "hf_model_pretrained",
    "hf_proj_type",
    "hf_pooler_type",
];

/// Custom-block options (open_clip's `CustomResidualAttentionBlock`), refused when true.
const CUSTOM_BLOCK_FLAGS: &[&str] =
    &["qk_norm", "scaled_cosine_attn", "scale_heads", "scale_attn_inner", "scale_attn", "scale_fc"];

/// Whether the JSON value is "set" in Python's sense for an optional option (not null, false, 0,
/// empty string, empty list or empty object).
pub(super) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

pub(super) fn not_implemented(cfg: &HfConfig, option: &str, what: &str) -> ModelError {
    cfg.unsupported(format!("OpenCLIP option '{option}' ({what}) is not implemented yet"))
}

/// Refuses keys of `cfg` that are not in `known` (open_clip would reject them too: its config
/// dataclasses take no other keyword).
pub(super) fn check_known(cfg: &HfConfig, scope: &str, known: &[&str]) -> Result<(), ModelError> {
    let Some(obj) = cfg.json.as_object() else { return Ok(()) };
    let unknown: Vec<&String> = obj.keys().filter(|k| !known.contains(&k.as_str())).collect();
    if let Some(k) = unknown.first() {
        return Err(cfg.unsupported(format!(
            "unknown OpenCLIP option '{scope}{k}' (not an open_clip 3.3.0 {} field)",
            if scope.is_empty() { "model_cfg" } else { scope.trim_end_matches('.') }
        )));
    }
    Ok(())
}

/// `norm_kwargs`: only `{"eps": x}` is implemented; returns the epsilon (1e-5 by default).
fn layer_norm_eps(cfg: &HfConfig, scope: &str) -> Result<f64, ModelError> {
    let kwargs = cfg.nested("norm_kwargs")?;
    let Some(obj) = kwargs.json.as_object() else { return Ok(1e-5) };
    if let Some(k) = obj.keys().find(|k| k.as_str() != "eps") {
        return Err(not_implemented(
            cfg,
            &format!("{scope}norm_kwargs.{k}"),
            "a LayerNorm argument other than eps",
        ));
    }
    kwargs.positive_f64_or("eps", 1e-5)
}

/// Refuses the options shared by both towers that calibra does not implement.
fn check_common(cfg: &HfConfig, scope: &str) -> Result<(), ModelError> {
    if truthy(cfg.json.get("ls_init_value")) {
        return Err(not_implemented(cfg, &format!("{scope}ls_init_value"), "layer scale"));
    }
    if truthy(cfg.json.get("act_kwargs")) {
        return Err(not_implemented(cfg, &format!("{scope}act_kwargs"), "activation arguments"));
    }
    let block_type = cfg.str_or("block_type", "default")?;
    if block_type != "default" {
        return Err(not_implemented(
            cfg,
            &format!("{scope}block_type"),
            &format!("'{block_type}' residual blocks; only 'default' is"),
        ));
    }
    for flag in CUSTOM_BLOCK_FLAGS {
        if cfg.bool_or(flag, false)? {
            return Err(not_implemented(cfg, &format!("{scope}{flag}"), "a custom attention block"));
        }
    }
    Ok(())
}

/// `width`, `heads` from `width / head_width` (vision) and the MLP width `int(width · mlp_ratio)`.
fn mlp_width(cfg: &HfConfig, width: usize) -> Result<usize, ModelError> {
    let ratio = cfg.positive_f64_or("mlp_ratio", 4.0)?;
    let hidden = (width as f64 * ratio).floor();
    if !(1.0..=crate::hf::config::MAX_SIZE as f64).contains(&hidden) {
        return Err(cfg.invalid(format!("mlp_ratio {ratio} gives an MLP width of {hidden}")));
    }
    Ok(hidden as usize)
}

fn vision_config(cfg: &HfConfig, activation: Activation) -> Result<ClipVisionConfig, ModelError> {
    let scope = "vision_cfg.";
    if truthy(cfg.json.get("timm_model_name")) {
        return Err(not_implemented(
            cfg,
            "vision_cfg.timm_model_name",
            &format!(
                "a timm trunk, {}, with open_clip's native text transformer; a timm ViT trunk is \
                 implemented only with a Hugging Face BERT text tower (text_cfg.hf_model_name)",
                cfg.json["timm_model_name"]
            ),
        ));
    }
    if matches!(cfg.json.get("layers"), Some(Value::Array(_))) {
        return Err(not_implemented(
            cfg,
            "vision_cfg.layers",
            "a list of stage depths: the ModifiedResNet trunk",
        ));
    }
    check_known(cfg, scope, VISION_KEYS)?;
    check_common(cfg, scope)?;
    if truthy(cfg.json.get("attentional_pool")) {
        return Err(not_implemented(cfg, "vision_cfg.attentional_pool", "attention pooling"));
    }
    if cfg.bool_or("no_ln_pre", false)? {
        return Err(not_implemented(cfg, "vision_cfg.no_ln_pre", "a vision tower without ln_pre"));
    }
    let pool = cfg.str_or("pool_type", "tok")?;
    if pool != "tok" {
        return Err(not_implemented(cfg, "vision_cfg.pool_type", &format!("'{pool}'; only 'tok' is")));
    }
    let pos = cfg.str_or("pos_embed_type", "learnable")?;
    if pos != "learnable" {
        return Err(not_implemented(
            cfg,
            "vision_cfg.pos_embed_type",
            &format!("'{pos}'; only 'learnable' is"),
        ));
    }
    let patch_dropout = cfg.f64_or("patch_dropout", 0.0)?;
    if !(0.0..1.0).contains(&patch_dropout) {
        return Err(cfg.invalid(format!("vision_cfg.patch_dropout must be in [0, 1), found {patch_dropout}")));
    }
    let width = cfg.size_or("width", 768)?;
    let head_width = cfg.size_or("head_width", 64)?;
    let heads = width / head_width;
    cfg.check_heads("width", width, "width / head_width", heads)?;
    let image_size = cfg.square_size_or("image_size", 224)?;
    let patch_size = cfg.square_size_or("patch_size", 16)?;
    cfg.check_patch_grid(image_size, patch_size)?;
    Ok(ClipVisionConfig {
        d_model: width,
        n_layers: cfg.size_or("layers", 12)?,
        n_heads: heads,
        d_hidden: mlp_width(cfg, width)?,
        image_size,
        patch_size,
        num_channels: 3,
        layer_norm_eps: layer_norm_eps(cfg, scope)?,
        activation,
    })
}

fn text_config(cfg: &HfConfig, activation: Activation) -> Result<(ClipTextConfig, usize), ModelError> {
    let scope = "text_cfg.";
    if truthy(cfg.json.get("hf_model_name")) {
        return Err(not_implemented(
            cfg,
            "text_cfg.hf_model_name",
            &format!(
                "a Hugging Face text tower, {}, with open_clip's native vision transformer; a BERT \
                 text tower is implemented only with a timm ViT trunk (vision_cfg.timm_model_name)",
                cfg.json["hf_model_name"]
            ),
        ));
    }
    check_known(cfg, scope, TEXT_KEYS)?;
    check_common(cfg, scope)?;
    if truthy(cfg.json.get("hf_tokenizer_name")) {
        return Err(not_implemented(
            cfg,
            "text_cfg.hf_tokenizer_name",
            &format!(
                "a Hugging Face tokenizer, {}; only open_clip's SimpleTokenizer is",
                cfg.json["hf_tokenizer_name"]
            ),
        ));
    }
    let kwargs = cfg.nested("tokenizer_kwargs")?;
    if let Some(obj) = kwargs.json.as_object() {
        for (k, v) in obj {
            let ok = match k.as_str() {
                "clean" => v.as_str() == Some("lower"),
                "reduction_mask" => !truthy(Some(v)),
                "additional_special_tokens" => !truthy(Some(v)),
                _ => false,
            };
            if !ok {
                return Err(not_implemented(
                    cfg,
                    &format!("text_cfg.tokenizer_kwargs.{k}"),
                    &format!("SimpleTokenizer argument {v}; only clean = \"lower\" is"),
                ));
            }
        }
    }
    for (flag, what) in [
        ("no_causal_mask", "a bidirectional text tower"),
        ("embed_cls", "a CoCa-style class token"),
        ("proj_bias", "a text projection with bias"),
        ("final_ln_after_pool", "ln_final after pooling"),
    ] {
        if cfg.bool_or(flag, false)? {
            return Err(not_implemented(cfg, &format!("text_cfg.{flag}"), what));
        }
    }
    let proj = cfg.str_or("proj_type", "linear")?;
    if proj != "linear" {
        return Err(not_implemented(cfg, "text_cfg.proj_type", &format!("'{proj}'; only 'linear' is")));
    }
    let pooling = match cfg.str_or("pool_type", "argmax")?.as_str() {
        "argmax" => EotPooling::ArgMax,
        "eos" => {
            let eos = cfg.usize_or("eos_id", 2)?;
            EotPooling::FirstId(
                u32::try_from(eos)
                    .map_err(|_| cfg.invalid(format!("text_cfg.eos_id {eos} does not fit u32")))?,
            )
        }
        other => {
            return Err(not_implemented(
                cfg,
                "text_cfg.pool_type",
                &format!("'{other}'; only 'argmax' and 'eos' are"),
            ));
        }
    };
    let width = cfg.size_or("width", 512)?;
    let heads = cfg.size_or("heads", 8)?;
    cfg.check_heads("width", width, "heads", heads)?;
    let context_length = cfg.size_or("context_length", 77)?;
    if context_length < 2 {
        return Err(
            cfg.invalid(format!("text_cfg.context_length must be at least 2, found {context_length}"))
        );
    }
    Ok((
        ClipTextConfig {
            vocab_size: cfg.size_or("vocab_size", 49408)?,
            d_model: width,
            n_layers: cfg.size_or("layers", 12)?,
            n_heads: heads,
            d_hidden: mlp_width(cfg, width)?,
            max_positions: context_length,
            layer_norm_eps: layer_norm_eps(cfg, scope)?,
            activation,
            pooling,
        },
        context_length,
    ))
}

/// Whether a parsed JSON file is an OpenCLIP hub config (it holds a `model_cfg` object).
pub fn is_open_clip_json(json: &Value) -> bool {
    json.get("model_cfg").is_some_and(Value::is_object)
}

impl OpenClipConfig {
    /// Resolves an `open_clip_config.json` (read with [`crate::hf::read_config`]); errors name the
    /// file and the option.
    pub fn from_json(file: &HfConfig) -> Result<Self, ModelError> {
        if !is_open_clip_json(&file.json) {
            return Err(file.invalid("missing object 'model_cfg' (not an OpenCLIP open_clip_config.json)"));
        }
        let cfg = file.nested("model_cfg")?;
        if super::timm_bert_config::is_timm_bert_json(&file.json) {
            return Err(cfg.unsupported(
                "a timm trunk with a Hugging Face text tower (vision_cfg.timm_model_name and \
                 text_cfg.hf_model_name, BiomedCLIP-style) is not a native OpenCLIP ViT-CLIP: it loads \
                 as calibra_models::clip::open_clip::OpenClipTimmBert",
            ));
        }
        check_known(&cfg, "", MODEL_KEYS)?;
        if cfg.json.get("multimodal_cfg").is_some() {
            return Err(not_implemented(&cfg, "model_cfg.multimodal_cfg", "CoCa's multimodal decoder"));
        }
        // open_clip adds a bias whenever the value is not None (0.0 included).
        if cfg.json.get("init_logit_bias").is_some_and(|v| !v.is_null()) {
            return Err(not_implemented(
                &cfg,
                "model_cfg.init_logit_bias",
                "a SigLIP-style sigmoid model with a logit bias",
            ));
        }
        let activation =
            if cfg.bool_or("quick_gelu", false)? { Activation::QuickGelu } else { Activation::GeluExact };
        let vision = vision_config(&cfg.nested("vision_cfg")?, activation)?;
        let (text, context_length) = text_config(&cfg.nested("text_cfg")?, activation)?;
        let embed_dim = cfg.req_size("embed_dim")?;
        Ok(Self {
            clip: ClipConfig {
                vision,
                text,
                projection_dim: embed_dim,
                logit_scale_init: cfg.finite_f64_or("init_logit_scale", (1.0f64 / 0.07).ln())?,
            },
            custom_text: cfg.bool_or("custom_text", false)?,
            context_length,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(model_cfg: Value) -> HfConfig {
        HfConfig::from_value("open_clip_config.json", serde_json::json!({ "model_cfg": model_cfg }))
    }

    fn base() -> Value {
        serde_json::json!({
            "embed_dim": 16,
            "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 16, "layers": 2, "head_width": 8},
            "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 8, "heads": 2, "layers": 2}
        })
    }

    #[test]
    fn defaults_follow_open_clip() {
        let c = OpenClipConfig::from_json(&cfg(base())).unwrap();
        assert_eq!(c.clip.vision.n_heads, 2);
        assert_eq!(c.clip.vision.d_hidden, 64);
        assert_eq!(c.clip.vision.activation, Activation::GeluExact);
        assert_eq!(c.clip.text.pooling, EotPooling::ArgMax);
        assert_eq!(c.clip.text.layer_norm_eps, 1e-5);
        assert!(!c.custom_text);
        let mut q = base();
        q["quick_gelu"] = true.into();
        q["text_cfg"]["norm_kwargs"] = serde_json::json!({"eps": 1e-6});
        let c = OpenClipConfig::from_json(&cfg(q)).unwrap();
        assert_eq!(c.clip.text.activation, Activation::QuickGelu);
        assert_eq!(c.clip.text.layer_norm_eps, 1e-6);
    }

    #[test]
    fn unsupported_options_are_refused_by_name() {
        for (path, value, needle) in [
            ("vision_cfg.timm_model_name", serde_json::json!("vit_base_patch16_224"), "timm_model_name"),
            ("text_cfg.hf_model_name", serde_json::json!("microsoft/BiomedNLP"), "hf_model_name"),
            ("vision_cfg.ls_init_value", serde_json::json!(1e-5), "ls_init_value"),
            ("vision_cfg.attentional_pool", serde_json::json!(true), "attentional_pool"),
            ("vision_cfg.no_ln_pre", serde_json::json!(true), "no_ln_pre"),
            ("vision_cfg.pool_type", serde_json::json!("avg"), "pool_type"),
            ("vision_cfg.layers", serde_json::json!([3, 4, 6, 3]), "layers"),
            ("text_cfg.pool_type", serde_json::json!("last"), "pool_type"),
            ("text_cfg.no_causal_mask", serde_json::json!(true), "no_causal_mask"),
            ("text_cfg.embed_cls", serde_json::json!(true), "embed_cls"),
            ("text_cfg.proj_bias", serde_json::json!(true), "proj_bias"),
            ("text_cfg.hf_tokenizer_name", serde_json::json!("timm/ViT-B-16-SigLIP"), "hf_tokenizer_name"),
            ("text_cfg.qk_norm", serde_json::json!(true), "qk_norm"),
            ("text_cfg.act_kwargs", serde_json::json!({"approximate": "tanh"}), "act_kwargs"),
            ("text_cfg.norm_kwargs", serde_json::json!({"elementwise_affine": false}), "norm_kwargs"),
            ("text_cfg.tokenizer_kwargs", serde_json::json!({"clean": "canonicalize"}), "tokenizer_kwargs"),
            ("init_logit_bias", serde_json::json!(-10.0), "init_logit_bias"),
            ("multimodal_cfg", serde_json::json!({}), "multimodal_cfg"),
            ("vision_cfg.surprise", serde_json::json!(1), "surprise"),
        ] {
            let mut c = base();
            match path.split_once('.') {
                Some((tower, key)) => c[tower][key] = value,
                None => c[path] = value,
            }
            let err = OpenClipConfig::from_json(&cfg(c)).unwrap_err().to_string();
            assert!(err.contains(needle), "{path}: {err}");
        }
    }

    #[test]
    fn inert_options_are_accepted() {
        let mut c = base();
        c["vision_cfg"]["patch_dropout"] = 0.5.into();
        c["vision_cfg"]["final_ln_after_pool"] = true.into();
        c["vision_cfg"]["output_tokens"] = true.into();
        c["vision_cfg"]["timm_pool"] = "avg".into();
        c["text_cfg"]["pad_id"] = 0.into();
        c["text_cfg"]["pool_type"] = "eos".into();
        c["text_cfg"]["eos_id"] = 49407.into();
        c["init_logit_scale"] = 2.0.into();
        let c = OpenClipConfig::from_json(&cfg(c)).unwrap();
        assert_eq!(c.clip.text.pooling, EotPooling::FirstId(49407));
    }
}
