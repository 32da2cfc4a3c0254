//! Resolving a timm ResNet `config.json` (`save_for_hf`, timm 1.0.31) to a [`ResNetConfig`], as
//! `timm.create_model("local-dir:<dir>")` builds it: the entrypoint's `block` / `layers`
//! (`resnet18`/`34`: `BasicBlock`, `resnet50`/`101`/`152`: `Bottleneck`), overridden by `model_args`,
//! `in_chans` from `pretrained_cfg.input_size[0]` when not set, then `ResNet.__init__`'s defaults.
//!
//! Only timm's plain ResNet is implemented: the default 7x7 stem (64 channels; timm ignores
//! `stem_width` for it), stride in the 3x3 convolution, 1x1 projection shortcuts, no anti-aliasing,
//! attention or grouped convolutions, output stride 32 and average pooling. Every other option value,
//! and every other `resnet*` architecture (`resnet50d`'s deep stem and average-pool shortcut,
//! `resnet26`, `resnetv2_*`, …), is refused by name. Dropout / drop-path / drop-block rates and
//! `zero_init_last` are accepted: they do nothing in inference (fine-tuning runs without them).

use serde_json::{Map, Value};

use super::config::{BOTTLENECK_REDUCTION, ResNetConfig, ResNetLayerType, ResNetLayout};
use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::hf::config::MAX_SIZE;

/// The timm entrypoints calibra loads: name, block, `layers`.
const ARCHITECTURES: &[(&str, ResNetLayerType, [usize; 4])] = &[
    ("resnet18", ResNetLayerType::Basic, [2, 2, 2, 2]),
    ("resnet34", ResNetLayerType::Basic, [3, 4, 6, 3]),
    ("resnet50", ResNetLayerType::Bottleneck, [3, 4, 6, 3]),
    ("resnet101", ResNetLayerType::Bottleneck, [3, 4, 23, 3]),
    ("resnet152", ResNetLayerType::Bottleneck, [3, 8, 36, 3]),
];

/// Whether a timm `config.json` names a ResNet-family architecture (`resnet*`), which this module
/// loads or refuses by name (rather than the timm ViT loader).
pub fn is_timm_resnet(cfg: &HfConfig) -> bool {
    crate::timm::is_timm_config(cfg)
        && cfg.json.get("architecture").and_then(Value::as_str).is_some_and(|a| a.starts_with("resnet"))
}

/// Options with no effect in inference.
const NO_EFFECT: &[&str] =
    &["drop_rate", "drop_path_rate", "drop_block_rate", "zero_init_last", "num_classes"];

impl ResNetConfig {
    /// Resolves a timm ResNet `config.json` (see the module docs).
    pub fn from_timm(cfg: &HfConfig) -> Result<Self, ModelError> {
        let arch = cfg.req_str("architecture")?;
        let Some((_, block, layers)) = ARCHITECTURES.iter().find(|(a, _, _)| *a == arch) else {
            return Err(ModelError::UnsupportedModelType {
                path: cfg.path.clone(),
                model_type: format!("timm architecture '{arch}'"),
                supported: format!(
                    "the plain timm ResNets (7x7 stem, 1x1 projection shortcuts): {}; variants with deep \
                     stems, average-pool shortcuts (the c/d/s/t suffixes), anti-aliasing, attention or \
                     grouped convolutions are not implemented",
                    ARCHITECTURES.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
                ),
            });
        };
        let pretrained = match cfg.json.get("pretrained_cfg") {
            Some(Value::Object(o)) => o.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(v) => {
                return Err(cfg.invalid(format!("field 'pretrained_cfg' must be an object, found {v}")));
            }
        };
        let mut args = match cfg.json.get("model_args") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(o)) => o.clone(),
            Some(v) => return Err(cfg.invalid(format!("field 'model_args' must be an object, found {v}"))),
        };
        if let Some(Value::Array(size)) = pretrained.get("input_size")
            && let Some(c) = size.first()
        {
            args.entry("in_chans").or_insert(c.clone());
        }
        let r = Args { cfg, arch: &arch, args: &args };
        for key in args.keys() {
            if !NO_EFFECT.contains(&key.as_str()) && !r.known(key)? {
                return Err(r.refuse(key, "calibra does not implement this option"));
            }
        }
        let depths = r.list("layers", layers)?;
        let channels = r.list("channels", &[64, 128, 256, 512])?;
        let expansion = if *block == ResNetLayerType::Bottleneck { BOTTLENECK_REDUCTION } else { 1 };
        let c = Self {
            num_channels: r.size("in_chans", 3)?,
            embedding_size: 64,
            hidden_sizes: channels.iter().map(|&c| c * expansion).collect(),
            depths,
            layer_type: *block,
            downsample_in_first_stage: false,
            downsample_in_bottleneck: false,
            layout: ResNetLayout::Timm,
        };
        c.check(cfg, "model_args.channels", "model_args.layers")?;
        Ok(c)
    }
}

struct Args<'a> {
    cfg: &'a HfConfig,
    arch: &'a str,
    args: &'a Map<String, Value>,
}

impl Args<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.args.get(key).filter(|v| !v.is_null())
    }

    fn refuse(&self, key: &str, why: &str) -> ModelError {
        let value = self.args.get(key).cloned().unwrap_or(Value::Null);
        self.cfg.unsupported(format!("timm {}: option '{key}' = {value}: {why}", self.arch))
    }

    fn invalid(&self, key: &str, expected: &str) -> ModelError {
        let value = self.args.get(key).cloned().unwrap_or(Value::Null);
        self.cfg.invalid(format!("timm {}: option '{key}' = {value}: expected {expected}", self.arch))
    }

    /// Whether `key` is an option calibra reads, checking that its value is the one implemented.
    fn known(&self, key: &str) -> Result<bool, ModelError> {
        let v = self.get(key);
        let is = |want: Value| v.is_none() || v == Some(&want);
        let ok = match key {
            "layers" | "channels" | "in_chans" | "stem_width" => return Ok(true),
            "global_pool" => is(Value::from("avg")),
            "output_stride" => is(Value::from(32)),
            "cardinality" | "block_reduce_first" | "down_kernel_size" => is(Value::from(1)),
            "base_width" => is(Value::from(64)),
            "stem_type" => is(Value::from("")),
            "replace_stem_pool" | "avg_down" => is(Value::from(false)),
            "aa_layer" | "attn_layer" => v.is_none(),
            "block_args" => v.is_none() || v.and_then(Value::as_object).is_some_and(Map::is_empty),
            "act_layer" => v.is_none() || v.and_then(Value::as_str).is_some_and(|s| s == "relu"),
            "norm_layer" => {
                v.is_none()
                    || v.and_then(Value::as_str).is_some_and(|s| matches!(s, "batchnorm" | "batchnorm2d"))
            }
            _ => return Ok(false),
        };
        if ok {
            Ok(true)
        } else {
            let why = match key {
                "global_pool" => "only average pooling ('avg') is implemented",
                "output_stride" => "dilated stages (output_stride 8 or 16) are not implemented",
                "cardinality" | "base_width" => "grouped / widened bottlenecks (ResNeXt) are not implemented",
                "stem_type" | "replace_stem_pool" => {
                    "only the 7x7 convolution + max-pool stem is implemented"
                }
                "avg_down" | "down_kernel_size" => "only 1x1 projection shortcuts are implemented",
                "act_layer" => "only ReLU is implemented",
                "norm_layer" => "only BatchNorm2d is implemented",
                _ => "only timm's plain ResNet block is implemented",
            };
            Err(self.refuse(key, why))
        }
    }

    fn size(&self, key: &str, default: usize) -> Result<usize, ModelError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_SIZE as u64).contains(n))
                .map(|n| n as usize)
                .ok_or_else(|| self.invalid(key, &format!("an integer from 1 to {MAX_SIZE}"))),
        }
    }

    fn list(&self, key: &str, default: &[usize]) -> Result<Vec<usize>, ModelError> {
        let Some(v) = self.get(key) else { return Ok(default.to_vec()) };
        let bad = || self.invalid(key, &format!("a list of 1 to 64 integers from 1 to {MAX_SIZE}"));
        let items = v.as_array().filter(|a| !a.is_empty() && a.len() <= 64).ok_or_else(bad)?;
        items
            .iter()
            .map(|x| {
                x.as_u64().filter(|n| (1..=MAX_SIZE as u64).contains(n)).map(|n| n as usize).ok_or_else(bad)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(json: Value) -> HfConfig {
        HfConfig::from_value("config.json", json)
    }

    #[test]
    fn resnet50_defaults() {
        let c = ResNetConfig::from_timm(&cfg(serde_json::json!({"architecture": "resnet50"}))).unwrap();
        assert_eq!(c.hidden_sizes, vec![256, 512, 1024, 2048]);
        assert_eq!(c.depths, vec![3, 4, 6, 3]);
        assert_eq!(c.layer_type, ResNetLayerType::Bottleneck);
        let c = ResNetConfig::from_timm(&cfg(serde_json::json!({"architecture": "resnet18"}))).unwrap();
        assert_eq!(c.hidden_sizes, vec![64, 128, 256, 512]);
        assert_eq!(c.layer_type, ResNetLayerType::Basic);
    }

    #[test]
    fn variants_and_options_are_refused_by_name() {
        let err = ResNetConfig::from_timm(&cfg(serde_json::json!({"architecture": "resnet50d"})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("resnet50d"), "{err}");
        for (key, value) in [
            ("stem_type", serde_json::json!("deep")),
            ("avg_down", serde_json::json!(true)),
            ("aa_layer", serde_json::json!("blurpool")),
            ("global_pool", serde_json::json!("max")),
            ("output_stride", serde_json::json!(16)),
            ("cardinality", serde_json::json!(32)),
            ("attn_layer", serde_json::json!("se")),
            ("frobnicate", serde_json::json!(1)),
        ] {
            let json = serde_json::json!({"architecture": "resnet50", "model_args": {key: value}});
            let err = ResNetConfig::from_timm(&cfg(json)).unwrap_err().to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
    }
}
