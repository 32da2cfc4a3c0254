//! Resolving a timm checkpoint's `config.json` to the options of its `VisionTransformer`, as
//! `timm.create_model("local-dir:<dir>")` / `"hf-hub:<id>"` does (timm 1.0.31):
//!
//! 1. the keyword arguments of the architecture's entrypoint (`vit_base_patch16_224` →
//!    `patch_size=16, embed_dim=768, depth=12, num_heads=12`), from `architectures.json`, which
//!    `scripts/golden/encoders_timm.py` records from timm itself;
//! 2. overridden by the file's `model_args` (timm: `kwargs.setdefault` of each stored argument, the
//!    entrypoint then merging them over its own with `dict(model_args, **kwargs)`);
//! 3. `in_chans` from `pretrained_cfg.input_size[0]` and, when `pretrained_cfg.fixed_input_size`,
//!    `img_size` from `input_size[1:]`, where neither is set yet (timm's
//!    `_update_default_model_kwargs`);
//! 4. `VisionTransformer.__init__`'s defaults for the rest.
//!
//! Every option is checked: an option calibra does not implement is refused by name, never
//! dropped. Dropout rates (`drop_rate`, `pos_drop_rate`, `patch_drop_rate`, `proj_drop_rate`,
//! `attn_drop_rate`, `drop_path_rate`) and initialisation options (`weight_init`, `fix_init`) are
//! accepted: they do nothing in inference, which is all a frozen encoder runs.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::hf::config::MAX_SIZE;
use crate::layers::Activation;

/// timm's pooling of the final tokens (`global_pool`) that calibra implements.
#[derive(burn::config::Config, Debug, Copy, PartialEq, Eq)]
pub enum TimmPool {
    /// `'token'`: the class token.
    Token,
    /// `'avg'`: the mean of the patch tokens (and the prefix tokens with `pool_include_prefix`).
    Avg,
    /// `'max'`: the element-wise maximum over those tokens.
    Max,
    /// `'avgmax'`: `0.5 · (max + mean)`.
    AvgMax,
}

/// The resolved options of a timm `VisionTransformer`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimmVitConfig {
    /// `architecture` as the file names it.
    pub architecture: String,
    /// `img_size` (square).
    pub img_size: usize,
    /// `patch_size`.
    pub patch_size: usize,
    /// `in_chans`.
    pub in_chans: usize,
    /// `embed_dim`.
    pub embed_dim: usize,
    /// `depth`.
    pub depth: usize,
    /// `num_heads`.
    pub num_heads: usize,
    /// `int(embed_dim * mlp_ratio)`.
    pub mlp_hidden: usize,
    /// `qkv_bias`.
    pub qkv_bias: bool,
    /// `init_values`: `Some` (non-zero) → LayerScale `ls1`/`ls2` in every block.
    pub init_values: Option<f64>,
    /// `class_token`.
    pub class_token: bool,
    /// `reg_tokens`.
    pub reg_tokens: usize,
    /// `no_embed_class`: the position embeddings cover the patches only.
    pub no_embed_class: bool,
    /// `pre_norm`: `norm_pre` after the embeddings, and no patch-embedding bias.
    pub pre_norm: bool,
    /// `final_norm && !use_fc_norm`: `norm` on every token after the blocks.
    pub norm: bool,
    /// `final_norm && use_fc_norm`: `fc_norm` on the pooled feature.
    pub fc_norm: bool,
    /// `global_pool`.
    pub pool: TimmPool,
    /// `pool_include_prefix`.
    pub pool_include_prefix: bool,
    /// `dynamic_img_size` (accepted; inputs must still have the native patch grid).
    pub dynamic_img_size: bool,
    /// Epsilon of every LayerNorm (`norm_layer`).
    pub layer_norm_eps: f64,
    /// `act_layer`.
    pub activation: Activation,
    /// `num_classes` (the head, ignored for features).
    pub num_classes: usize,
}

fn table() -> &'static Map<String, Value> {
    static TABLE: OnceLock<Map<String, Value>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let v: Value =
            serde_json::from_str(include_str!("architectures.json")).expect("architectures.json is JSON");
        v["architectures"].as_object().cloned().expect("architectures.json holds an `architectures` object")
    })
}

/// The timm architectures calibra loads (the `vit_*` / `deit_*` / `deit3_*` entrypoints built by
/// timm's `VisionTransformer`; some of them are still refused for an option, e.g. `global_pool='map'`).
pub fn supported_architectures() -> Vec<&'static str> {
    table().keys().map(String::as_str).collect()
}

/// Whether `config.json` is a timm one: it names an `architecture` and has no `model_type`.
pub fn is_timm_config(cfg: &HfConfig) -> bool {
    cfg.json.get("architecture").is_some() && cfg.json.get("model_type").is_none()
}

/// Options calibra reads (anything else in the resolved arguments is refused by name).
const KNOWN: &[&str] = &[
    "img_size",
    "patch_size",
    "in_chans",
    "num_classes",
    "global_pool",
    "embed_dim",
    "depth",
    "num_heads",
    "mlp_ratio",
    "qkv_bias",
    "qk_norm",
    "scale_attn_norm",
    "scale_mlp_norm",
    "proj_bias",
    "init_values",
    "class_token",
    "pos_embed",
    "no_embed_class",
    "reg_tokens",
    "pre_norm",
    "final_norm",
    "fc_norm",
    "pool_include_prefix",
    "dynamic_img_size",
    "dynamic_img_pad",
    "norm_layer",
    "act_layer",
    "embed_norm_layer",
    "block_fn",
    "mlp_layer",
    "attn_layer",
    "embed_layer",
    "distilled",
    // no effect in inference
    "drop_rate",
    "pos_drop_rate",
    "patch_drop_rate",
    "proj_drop_rate",
    "attn_drop_rate",
    "drop_path_rate",
    "weight_init",
    "fix_init",
];

impl TimmVitConfig {
    /// Resolves the options of a timm `config.json` (see the module docs).
    pub fn from_timm(cfg: &HfConfig) -> Result<Self, ModelError> {
        let architecture = cfg.req_str("architecture")?;
        let Some(defaults) = table().get(&architecture) else {
            return Err(ModelError::UnsupportedModelType {
                path: cfg.path.clone(),
                model_type: format!("timm architecture '{architecture}'"),
                supported: format!(
                    "the timm ViT/DeiT architectures built by timm's VisionTransformer: {}",
                    supported_architectures().join(", ")
                ),
            });
        };
        // A legacy single-dict config is its own pretrained_cfg (timm's _parse_model_cfg).
        let pretrained = match cfg.json.get("pretrained_cfg") {
            Some(Value::Object(o)) => o.clone(),
            Some(v) => {
                return Err(cfg.invalid(format!("field 'pretrained_cfg' must be an object, found {v}")));
            }
            None => cfg.json.as_object().cloned().unwrap_or_default(),
        };
        let mut args = defaults.as_object().cloned().unwrap_or_default();
        match cfg.json.get("model_args") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => args.extend(o.clone()),
            Some(v) => return Err(cfg.invalid(format!("field 'model_args' must be an object, found {v}"))),
        }
        let input_size = match pretrained.get("input_size") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) if a.len() == 3 && a.iter().all(|x| x.as_u64().is_some()) => {
                Some(a.iter().map(|x| x.as_u64().unwrap_or(0) as usize).collect::<Vec<_>>())
            }
            Some(v) => {
                return Err(cfg.invalid(format!(
                    "field 'pretrained_cfg.input_size' must be [channels, height, width], found {v}"
                )));
            }
        };
        if let Some(size) = &input_size {
            args.entry("in_chans").or_insert(Value::from(size[0]));
            if pretrained.get("fixed_input_size").and_then(Value::as_bool).unwrap_or(false) {
                args.entry("img_size").or_insert(Value::from(vec![size[1], size[2]]));
            }
        }
        if let Some(Value::Number(n)) = cfg.json.get("num_classes") {
            args.entry("num_classes").or_insert(Value::Number(n.clone()));
        }
        for key in args.keys() {
            if !KNOWN.contains(&key.as_str()) {
                return Err(refuse(
                    cfg,
                    &architecture,
                    key,
                    &args[key],
                    "calibra does not implement this option",
                ));
            }
        }
        Resolver { cfg, architecture: &architecture, args: &args }.resolve()
    }

    /// Number of tokens before the patch tokens (class token + registers).
    pub fn num_prefix_tokens(&self) -> usize {
        usize::from(self.class_token) + self.reg_tokens
    }

    /// Patches per side at `img_size`.
    pub fn grid(&self) -> usize {
        self.img_size / self.patch_size
    }

    /// A lower bound on the weights (see [`crate::hf::load::check_fits_file`]): blocks, position
    /// embeddings, class/register tokens and the patch convolution, so that a config asking for more
    /// than the file holds is refused before anything is allocated.
    pub fn min_weights(&self) -> u128 {
        let (d, p, g) = (self.embed_dim as u128, self.patch_size as u128, self.grid() as u128);
        let prefix = self.num_prefix_tokens() as u128;
        let pos = g * g + if self.no_embed_class { 0 } else { prefix };
        crate::hf::load::blocks_min_weights(self.depth, self.embed_dim, self.mlp_hidden)
            + (pos + prefix) * d
            + self.in_chans as u128 * p * p * d
    }
}

fn refuse(cfg: &HfConfig, arch: &str, key: &str, value: &Value, why: &str) -> ModelError {
    cfg.unsupported(format!("timm {arch}: option '{key}' = {value}: {why}"))
}

struct Resolver<'a> {
    cfg: &'a HfConfig,
    architecture: &'a str,
    args: &'a Map<String, Value>,
}

impl Resolver<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.args.get(key).filter(|v| !v.is_null())
    }

    fn refuse(&self, key: &str, why: &str) -> ModelError {
        let value = self.args.get(key).cloned().unwrap_or(Value::Null);
        refuse(self.cfg, self.architecture, key, &value, why)
    }

    fn invalid(&self, key: &str, expected: &str) -> ModelError {
        let value = self.args.get(key).cloned().unwrap_or(Value::Null);
        self.cfg.invalid(format!("timm {}: option '{key}' = {value}: expected {expected}", self.architecture))
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.invalid(key, "a boolean")),
        }
    }

    fn size(&self, key: &str, default: usize) -> Result<usize, ModelError> {
        let v = match self.get(key) {
            None => return Ok(default),
            Some(v) => v.as_u64().ok_or_else(|| self.invalid(key, "a positive integer"))?,
        };
        if !(1..=MAX_SIZE as u64).contains(&v) {
            return Err(self.invalid(key, &format!("an integer from 1 to {MAX_SIZE}")));
        }
        Ok(v as usize)
    }

    fn count(&self, key: &str) -> Result<usize, ModelError> {
        match self.get(key) {
            None => Ok(0),
            Some(v) => v
                .as_u64()
                .filter(|n| *n <= MAX_SIZE as u64)
                .map(|n| n as usize)
                .ok_or_else(|| self.invalid(key, &format!("an integer from 0 to {MAX_SIZE}"))),
        }
    }

    /// An int or a square `[h, w]` pair.
    fn square(&self, key: &str, default: usize) -> Result<usize, ModelError> {
        let v = match self.get(key) {
            None => return Ok(default),
            Some(Value::Array(a)) if a.len() == 2 => {
                if a[0] != a[1] {
                    return Err(self.refuse(key, "only square sizes are supported"));
                }
                a[0].as_u64().ok_or_else(|| self.invalid(key, "a positive integer or [h, w]"))?
            }
            Some(v) => v.as_u64().ok_or_else(|| self.invalid(key, "a positive integer or [h, w]"))?,
        };
        if !(1..=MAX_SIZE as u64).contains(&v) {
            return Err(self.invalid(key, &format!("sizes from 1 to {MAX_SIZE}")));
        }
        Ok(v as usize)
    }

    fn must_be_off(&self, key: &str, why: &str) -> Result<(), ModelError> {
        if self.bool(key, false)? {
            return Err(self.refuse(key, why));
        }
        Ok(())
    }

    fn resolve(&self) -> Result<TimmVitConfig, ModelError> {
        self.must_be_off("qk_norm", "LayerNorm of queries and keys is not implemented")?;
        self.must_be_off(
            "scale_attn_norm",
            "a LayerNorm before the attention projection is not implemented",
        )?;
        self.must_be_off("scale_mlp_norm", "a LayerNorm inside the MLP is not implemented")?;
        self.must_be_off("dynamic_img_pad", "padding inputs to a patch multiple is not implemented")?;
        self.must_be_off(
            "distilled",
            "distilled DeiT (VisionTransformerDistilled, dist_token) is not implemented",
        )?;
        if !self.bool("proj_bias", true)? {
            return Err(self.refuse("proj_bias", "projections without bias are not implemented"));
        }
        for key in ["block_fn", "mlp_layer", "embed_layer", "embed_norm_layer"] {
            if self.get(key).is_some() {
                return Err(self.refuse(key, "only timm's default Block / Mlp / PatchEmbed are implemented"));
            }
        }
        match self.get("attn_layer") {
            None => {}
            Some(Value::String(s)) if s.is_empty() || s == "attn" => {}
            Some(_) => return Err(self.refuse("attn_layer", "only timm's default Attention is implemented")),
        }
        match self.get("pos_embed") {
            None => {}
            Some(Value::String(s)) if s == "learn" => {}
            Some(_) => {
                return Err(
                    self.refuse("pos_embed", "only learned position embeddings ('learn') are implemented")
                );
            }
        }
        let layer_norm_eps = match self.get("norm_layer") {
            None => 1e-6,
            Some(Value::String(s)) => parse_norm(s).ok_or_else(|| {
                self.refuse("norm_layer", "only LayerNorm is implemented ('layernorm', 'torch.nn.LayerNorm')")
            })?,
            Some(_) => return Err(self.invalid("norm_layer", "a string")),
        };
        let activation = match self.get("act_layer") {
            None => Activation::GeluExact,
            Some(Value::String(s)) => match s.as_str() {
                "gelu" => Activation::GeluExact,
                "gelu_tanh" => Activation::GeluTanh,
                "quick_gelu" => Activation::QuickGelu,
                _ => {
                    return Err(
                        self.refuse("act_layer", "only 'gelu', 'gelu_tanh' and 'quick_gelu' are implemented")
                    );
                }
            },
            Some(_) => return Err(self.invalid("act_layer", "a string")),
        };
        let class_token = self.bool("class_token", true)?;
        let pool = match self.get("global_pool") {
            None => TimmPool::Token,
            Some(Value::String(s)) => match s.as_str() {
                "token" => TimmPool::Token,
                "avg" => TimmPool::Avg,
                "max" => TimmPool::Max,
                "avgmax" => TimmPool::AvgMax,
                "" => {
                    return Err(self.refuse(
                        "global_pool",
                        "no pooling leaves a token sequence, not a feature vector for a probe; use 'token' or 'avg'",
                    ));
                }
                "map" | "prr" => {
                    return Err(
                        self.refuse("global_pool", "attention pooling (attn_pool) is not implemented")
                    );
                }
                _ => {
                    return Err(
                        self.invalid("global_pool", "'token', 'avg', 'max', 'avgmax', '', 'map' or 'prr'")
                    );
                }
            },
            Some(_) => return Err(self.invalid("global_pool", "a string")),
        };
        if pool == TimmPool::Token && !class_token {
            return Err(
                self.refuse("class_token", "'token' pooling needs the class token (timm asserts this too)")
            );
        }
        let use_fc_norm = match self.get("fc_norm") {
            None => pool != TimmPool::Token,
            Some(v) => v.as_bool().ok_or_else(|| self.invalid("fc_norm", "a boolean or null"))?,
        };
        let final_norm = self.bool("final_norm", true)?;
        let init_values = match self.get("init_values") {
            None => None,
            Some(v) => {
                let x = v
                    .as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| self.invalid("init_values", "a number"))?;
                (x != 0.0).then_some(x)
            }
        };
        let embed_dim = self.size("embed_dim", 768)?;
        let num_heads = self.size("num_heads", 12)?;
        if !embed_dim.is_multiple_of(num_heads) {
            return Err(self.invalid("num_heads", &format!("a divisor of embed_dim = {embed_dim}")));
        }
        let mlp_ratio = match self.get("mlp_ratio") {
            None => 4.0,
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| self.invalid("mlp_ratio", "a number > 0"))?,
        };
        // Python int(dim * mlp_ratio) truncates toward zero.
        let mlp_hidden = (embed_dim as f64 * mlp_ratio) as usize;
        if !(1..=MAX_SIZE).contains(&mlp_hidden) {
            return Err(self.invalid(
                "mlp_ratio",
                &format!("an MLP width int(embed_dim * mlp_ratio) from 1 to {MAX_SIZE}"),
            ));
        }
        let img_size = self.square("img_size", 224)?;
        let patch_size = self.square("patch_size", 16)?;
        if img_size < patch_size {
            return Err(self.invalid("img_size", &format!("at least patch_size = {patch_size}")));
        }
        Ok(TimmVitConfig {
            architecture: self.architecture.to_string(),
            img_size,
            patch_size,
            in_chans: self.size("in_chans", 3)?,
            embed_dim,
            depth: self.size("depth", 12)?,
            num_heads,
            mlp_hidden,
            qkv_bias: self.bool("qkv_bias", true)?,
            init_values,
            class_token,
            reg_tokens: self.count("reg_tokens")?,
            no_embed_class: self.bool("no_embed_class", false)?,
            pre_norm: self.bool("pre_norm", false)?,
            norm: final_norm && !use_fc_norm,
            fc_norm: final_norm && use_fc_norm,
            pool,
            pool_include_prefix: self.bool("pool_include_prefix", false)?,
            dynamic_img_size: self.bool("dynamic_img_size", false)?,
            layer_norm_eps,
            activation,
            num_classes: self.count("num_classes")?,
        })
    }
}

/// The epsilon of a `norm_layer` name: timm's `get_norm_layer` lower-cases and drops `_`
/// (`layernorm`, `layer_norm` → timm's LayerNorm, eps 1e-6); `torch.nn.LayerNorm` (eps 1e-5) and
/// `layernorm(eps=X)` are how `architectures.json` writes torch's class and a LayerNorm partial.
fn parse_norm(s: &str) -> Option<f64> {
    if s == "torch.nn.LayerNorm" {
        return Some(1e-5);
    }
    if let Some(rest) = s.strip_prefix("layernorm(eps=").and_then(|r| r.strip_suffix(')')) {
        return rest.parse::<f64>().ok().filter(|e| e.is_finite() && *e > 0.0);
    }
    (s.replace('_', "").to_lowercase() == "layernorm").then_some(1e-6)
}
