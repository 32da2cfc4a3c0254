//! The shape of a ResNet ([`ResNetConfig`]) and how transformers' `ResNetConfig` (`model_type:
//! "resnet"`, transformers 5.24) describes it.
//!
//! Every field a forward pass depends on is read and checked; options calibra does not implement
//! (another `hidden_act`, a `layer_type` other than `basic` / `bottleneck`) are refused by name,
//! never approximated. Fields that do not change the backbone (`out_features` / `out_indices` /
//! `stage_names` of the backbone API, labels) are ignored.

use crate::error::ModelError;
use crate::hf::HfConfig;
use crate::hf::config::MAX_SIZE;

/// The residual block of every stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResNetLayerType {
    /// Two 3x3 convolutions (ResNet-18/34; transformers `ResNetBasicLayer`, timm `BasicBlock`).
    Basic,
    /// 1x1 → 3x3 → 1x1 with a 4x channel reduction in the middle (ResNet-50/101/152;
    /// transformers `ResNetBottleNeckLayer`, timm `Bottleneck`).
    Bottleneck,
}

/// Where a checkpoint's weights come from, which decides the key names ([`super::keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResNetLayout {
    /// transformers `ResNetModel` / `ResNetForImageClassification`.
    Transformers,
    /// timm `ResNet` (`save_for_hf`).
    Timm,
}

/// The options of a ResNet that calibra implements (transformers' names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResNetConfig {
    /// `num_channels` (timm `in_chans`).
    pub num_channels: usize,
    /// `embedding_size`: channels of the 7x7 stem convolution (timm: always 64 for its default stem).
    pub embedding_size: usize,
    /// `hidden_sizes`: output channels of each stage (timm: `channels[s] · expansion`).
    pub hidden_sizes: Vec<usize>,
    /// `depths`: residual blocks per stage (timm `layers`).
    pub depths: Vec<usize>,
    /// `layer_type`.
    pub layer_type: ResNetLayerType,
    /// `downsample_in_first_stage`: the first stage's first block has stride 2.
    pub downsample_in_first_stage: bool,
    /// `downsample_in_bottleneck`: a bottleneck's stride sits on its first 1x1 convolution rather
    /// than on the 3x3 one (timm and torchvision: the 3x3 one, `false`).
    pub downsample_in_bottleneck: bool,
    /// The key layout of the weights.
    pub layout: ResNetLayout,
}

/// The factor by which a bottleneck narrows its middle convolutions (transformers `reduction`,
/// timm `Bottleneck.expansion`).
pub const BOTTLENECK_REDUCTION: usize = 4;

impl ResNetConfig {
    /// Reads transformers' `ResNetConfig` fields (defaults as transformers 5.24: ResNet-50).
    pub fn from_hf(cfg: &HfConfig) -> Result<Self, ModelError> {
        let layer_type = match cfg.str_or("layer_type", "bottleneck")?.as_str() {
            "bottleneck" => ResNetLayerType::Bottleneck,
            "basic" => ResNetLayerType::Basic,
            other => {
                return Err(cfg.unsupported(format!(
                    "layer_type '{other}': only 'basic' and 'bottleneck' are implemented (as in transformers)"
                )));
            }
        };
        let act = cfg.str_or("hidden_act", "relu")?;
        if act != "relu" {
            return Err(cfg.unsupported(format!(
                "hidden_act '{act}': only 'relu' is implemented (transformers applies hidden_act after the \
                 stem and each residual sum but keeps ReLU inside the blocks)"
            )));
        }
        let c = Self {
            num_channels: cfg.size_or("num_channels", 3)?,
            embedding_size: cfg.size_or("embedding_size", 64)?,
            hidden_sizes: size_list(cfg, "hidden_sizes", &[256, 512, 1024, 2048])?,
            depths: size_list(cfg, "depths", &[3, 4, 6, 3])?,
            layer_type,
            downsample_in_first_stage: cfg.bool_or("downsample_in_first_stage", false)?,
            downsample_in_bottleneck: cfg.bool_or("downsample_in_bottleneck", false)?,
            layout: ResNetLayout::Transformers,
        };
        c.check(cfg, "hidden_sizes", "depths")?;
        Ok(c)
    }

    /// Checks the stage lists against each other and the bottleneck's reduction (`hidden`/`depths`
    /// are the field names used in messages).
    pub(crate) fn check(&self, cfg: &HfConfig, hidden: &str, depths: &str) -> Result<(), ModelError> {
        if self.hidden_sizes.is_empty() || self.hidden_sizes.len() != self.depths.len() {
            return Err(cfg.invalid(format!(
                "fields '{hidden}' ({} entries) and '{depths}' ({} entries) must list the same, non-zero \
                 number of stages",
                self.hidden_sizes.len(),
                self.depths.len()
            )));
        }
        if self.layer_type == ResNetLayerType::Bottleneck
            && let Some(h) = self.hidden_sizes.iter().find(|&&h| h < BOTTLENECK_REDUCTION)
        {
            return Err(cfg.invalid(format!(
                "field '{hidden}' holds {h}: a bottleneck stage needs at least {BOTTLENECK_REDUCTION} \
                 channels (its middle convolutions have hidden_size / {BOTTLENECK_REDUCTION})"
            )));
        }
        Ok(())
    }

    /// Channels of the middle convolutions of a block with `out` output channels.
    pub fn mid_channels(&self, out: usize) -> usize {
        match self.layer_type {
            ResNetLayerType::Basic => out,
            ResNetLayerType::Bottleneck => out / BOTTLENECK_REDUCTION,
        }
    }

    /// A lower bound on the number of weights (every convolution kernel; norms not counted), for
    /// [`crate::hf::load::check_fits_file`].
    pub fn min_weights(&self) -> u128 {
        let mut n = (self.num_channels * self.embedding_size * 49) as u128;
        let mut inp = self.embedding_size as u128;
        for (&out, &depth) in self.hidden_sizes.iter().zip(&self.depths) {
            let (out_, mid) = (out as u128, self.mid_channels(out) as u128);
            for j in 0..depth as u128 {
                let i = if j == 0 { inp } else { out_ };
                n += match self.layer_type {
                    ResNetLayerType::Basic => i * mid * 9 + mid * out_ * 9,
                    ResNetLayerType::Bottleneck => i * mid + mid * mid * 9 + mid * out_,
                };
            }
            inp = out_;
        }
        n
    }
}

/// A list of sizes (each `1..=MAX_SIZE`, at most 64 entries), with a default when absent or null.
fn size_list(cfg: &HfConfig, key: &str, default: &[usize]) -> Result<Vec<usize>, ModelError> {
    let v = match cfg.json.get(key) {
        None | Some(serde_json::Value::Null) => return Ok(default.to_vec()),
        Some(v) => v,
    };
    let bad = || {
        cfg.invalid(format!(
            "field '{key}' must be a list of 1 to 64 integers from 1 to {MAX_SIZE}, found {v}"
        ))
    };
    let items = v.as_array().filter(|a| !a.is_empty() && a.len() <= 64).ok_or_else(bad)?;
    items
        .iter()
        .map(|x| x.as_u64().filter(|n| (1..=MAX_SIZE as u64).contains(n)).map(|n| n as usize).ok_or_else(bad))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(json: serde_json::Value) -> HfConfig {
        HfConfig::from_value("config.json", json)
    }

    #[test]
    fn defaults_are_resnet50() {
        let c = ResNetConfig::from_hf(&cfg(serde_json::json!({"model_type": "resnet"}))).unwrap();
        assert_eq!(c.hidden_sizes, vec![256, 512, 1024, 2048]);
        assert_eq!(c.depths, vec![3, 4, 6, 3]);
        assert_eq!(c.embedding_size, 64);
        assert_eq!(c.layer_type, ResNetLayerType::Bottleneck);
    }

    #[test]
    fn unsupported_options_are_named() {
        for (json, name) in [
            (serde_json::json!({"layer_type": "preact"}), "layer_type"),
            (serde_json::json!({"hidden_act": "gelu"}), "hidden_act"),
            (serde_json::json!({"hidden_sizes": [8, 16], "depths": [1]}), "hidden_sizes"),
            (serde_json::json!({"hidden_sizes": [2, 16], "depths": [1, 1]}), "hidden_sizes"),
            (serde_json::json!({"depths": [0, 1, 1, 1]}), "depths"),
        ] {
            let err = ResNetConfig::from_hf(&cfg(json.clone())).unwrap_err().to_string();
            assert!(err.contains(name), "{json}: {err}");
        }
    }
}
