//! ResNets (ResNet-18/34/50/101/152 and any widths / depths of the same blocks) from two checkpoint
//! layouts, with one module and the numerics of both libraries:
//!
//! - transformers `ResNetModel` / `ResNetForImageClassification` (`model_type: "resnet"`, transformers
//!   5.24; [`config::ResNetConfig::from_hf`]);
//! - timm `ResNet` as `save_for_hf` writes it (`architecture: "resnet50"`, …; timm 1.0.31;
//!   [`timm_config`]).
//!
//! The network: a 7x7/2 convolution + BatchNorm + ReLU stem, a 3x3/2 max-pool (padding 1), then
//! stages of residual blocks (basic: 3x3 → 3x3; bottleneck: 1x1 → 3x3 → 1x1 at a quarter of the
//! width), each block `relu(layers(x) + shortcut(x))` where the shortcut is a 1x1 convolution +
//! BatchNorm when the block changes width or stride, and finally a global average pool
//! (transformers `pooler_output`, timm's pre-logits feature). Every BatchNorm has epsilon 1e-5 and
//! momentum 0.1, as torch's `BatchNorm2d`.
//!
//! BatchNorm runs on its running statistics unless the module is on an autodiff device with its
//! training flag set (burn's `BatchNorm`): a frozen encoder (the inference backend) is eval-mode
//! torch; full fine-tuning on the autodiff backend normalises with batch statistics and updates the
//! running statistics (momentum 0.1, burn's update). `num_batches_tracked` is kept as loaded (it is not
//! incremented by training: torch reads it only when `momentum=None`) and written back on save.

pub mod biovil;
pub mod config;
pub mod keys;
pub mod timm_config;

use std::collections::BTreeMap;
use std::path::Path;

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Initializer, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::relu;

pub use config::{ResNetConfig, ResNetLayerType, ResNetLayout};
pub use keys::{hf_resnet_key_map, timm_resnet_key_map};
pub use timm_config::is_timm_resnet;

use crate::encoder_output::EncoderOutput;
use crate::error::ModelError;
use crate::hf::load::{check_fits_file, load_safetensors};
use crate::hf::{HfConfig, KeyMap, LoadOptions};

/// A convolution (no bias), its BatchNorm, and optionally a ReLU (transformers `ResNetConvLayer`).
#[derive(Module, Debug)]
pub struct ConvNorm {
    /// `convolution` (timm `conv{k}`, `downsample.0`).
    pub convolution: Conv2d,
    /// `normalization` (timm `bn{k}`, `downsample.1`).
    pub normalization: BatchNorm,
    /// Whether a ReLU follows.
    #[module(skip)]
    pub relu: bool,
}

impl ConvNorm {
    fn new(device: &Device, channels: [usize; 2], kernel: usize, stride: usize, relu: bool) -> Self {
        let p = kernel / 2;
        Self {
            convolution: Conv2dConfig::new(channels, [kernel, kernel])
                .with_stride([stride, stride])
                .with_padding(PaddingConfig2d::Explicit(p, p, p, p))
                .with_bias(false)
                .with_initializer(Initializer::Zeros)
                .init(device),
            normalization: BatchNormConfig::new(channels[1])
                .with_epsilon(1e-5)
                .with_momentum(0.1)
                .init(device),
            relu,
        }
    }

    /// `act(bn(conv(x)))`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let y = self.normalization.forward(self.convolution.forward(x));
        if self.relu { relu(y) } else { y }
    }
}

/// One residual block (transformers `ResNetBasicLayer` / `ResNetBottleNeckLayer`).
#[derive(Module, Debug)]
pub struct ResNetLayer {
    /// The projection of the residual when the block changes width or stride.
    pub shortcut: Option<ConvNorm>,
    /// The block's convolutions (two for basic, three for bottleneck); the last has no ReLU.
    pub layer: Vec<ConvNorm>,
}

impl ResNetLayer {
    /// `relu(layer(x) + shortcut(x))`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let residual = match &self.shortcut {
            Some(s) => s.forward(x.clone()),
            None => x.clone(),
        };
        let h = self.layer.iter().fold(x, |h, l| l.forward(h));
        relu(h + residual)
    }
}

/// One stage: its blocks in order.
#[derive(Module, Debug)]
pub struct ResNetStage {
    /// `layers.{j}` (timm `layer{s+1}.{j}`).
    pub layers: Vec<ResNetLayer>,
}

/// A ResNet backbone (no classifier).
#[derive(Module, Debug)]
pub struct ResNet {
    /// The 7x7/2 stem convolution + BatchNorm + ReLU.
    pub embedder: ConvNorm,
    /// The 3x3/2 max-pool after the stem.
    pub pooler: MaxPool2d,
    /// `encoder.stages.{s}`.
    pub stages: Vec<ResNetStage>,
    /// `num_batches_tracked` of each BatchNorm as loaded, by the BatchNorm's module path
    /// (`stages.0.layers.0.layer.1.normalization`); written back by [`ResNet::save`].
    #[module(skip)]
    pub num_batches_tracked: BTreeMap<String, i64>,
    /// The checkpoint layout (decides the names [`ResNet::key_map`] reads and writes).
    #[module(skip)]
    pub layout: ResNetLayout,
}

/// What a forward pass computes, as feature maps.
#[derive(Debug, Clone)]
pub struct ResNetFeatures {
    /// The last stage's output `[b, C, h, w]` (transformers `last_hidden_state`, timm
    /// `forward_features`).
    pub last: Tensor<4>,
    /// Its global average `[b, C]` (transformers `pooler_output` flattened).
    pub pooled: Tensor<2>,
    /// With `collect_hidden`: the stem output (after the max-pool) then every stage's output
    /// (transformers `hidden_states`); empty otherwise.
    pub hidden: Vec<Tensor<4>>,
}

impl ResNetConfig {
    /// Builds the module with placeholder weights (load a checkpoint afterwards).
    pub fn init(&self, device: &Device) -> ResNet {
        let mut inp = self.embedding_size;
        let mut stages = Vec::with_capacity(self.depths.len());
        for (s, (&out, &depth)) in self.hidden_sizes.iter().zip(&self.depths).enumerate() {
            let first_stride = if s > 0 || self.downsample_in_first_stage { 2 } else { 1 };
            let mid = self.mid_channels(out);
            let layers = (0..depth)
                .map(|j| {
                    let (i, stride) = if j == 0 { (inp, first_stride) } else { (out, 1) };
                    let shortcut =
                        (i != out || stride != 1).then(|| ConvNorm::new(device, [i, out], 1, stride, false));
                    let layer = match self.layer_type {
                        ResNetLayerType::Basic => vec![
                            ConvNorm::new(device, [i, out], 3, stride, true),
                            ConvNorm::new(device, [out, out], 3, 1, false),
                        ],
                        ResNetLayerType::Bottleneck => {
                            let (s1, s3) =
                                if self.downsample_in_bottleneck { (stride, 1) } else { (1, stride) };
                            vec![
                                ConvNorm::new(device, [i, mid], 1, s1, true),
                                ConvNorm::new(device, [mid, mid], 3, s3, true),
                                ConvNorm::new(device, [mid, out], 1, 1, false),
                            ]
                        }
                    };
                    ResNetLayer { shortcut, layer }
                })
                .collect();
            stages.push(ResNetStage { layers });
            inp = out;
        }
        ResNet {
            embedder: ConvNorm::new(device, [self.num_channels, self.embedding_size], 7, 2, true),
            pooler: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            stages,
            num_batches_tracked: BTreeMap::new(),
            layout: self.layout,
        }
    }
}

impl ResNet {
    /// Reads the configuration (transformers `ResNetConfig`, or a timm `config.json` when it names an
    /// `architecture` and no `model_type`) and loads `weights` with that layout's names.
    pub fn load(
        config: &HfConfig,
        weights: &Path,
        device: &Device,
    ) -> Result<(Self, ResNetConfig), ModelError> {
        let cfg = if crate::timm::is_timm_config(config) {
            ResNetConfig::from_timm(config)?
        } else {
            ResNetConfig::from_hf(config)?
        };
        check_fits_file(config, weights, cfg.min_weights())?;
        let mut m = cfg.init(device);
        let map = m.key_map();
        load_safetensors(&mut m, weights, &map, &LoadOptions::default())?;
        m.num_batches_tracked = keys::read_num_batches_tracked(weights, &map)?;
        Ok((m, cfg))
    }

    /// The key table of the checkpoint layout this model was loaded from.
    pub fn key_map(&self) -> KeyMap {
        match self.layout {
            ResNetLayout::Transformers => hf_resnet_key_map(),
            ResNetLayout::Timm => timm_resnet_key_map(self.stages.len()),
        }
    }

    /// Writes `path` in the layout the model was loaded from: the same tensor names, BatchNorm
    /// running statistics and `num_batches_tracked` included (the classifier is not written).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        keys::save_resnet(self, path, &self.key_map())
    }

    /// Channels of the pooled feature (the last stage's width).
    pub fn feature_dim(&self) -> usize {
        self.stages
            .last()
            .and_then(|s| s.layers.last())
            .and_then(|l| l.layer.last())
            .map_or_else(|| self.embedder.normalization.gamma.dims()[0], |c| c.normalization.gamma.dims()[0])
    }

    /// The stem, the stages and the global average pool on `images: [b, c, H, W]` (normalised as the
    /// checkpoint's image processor does). Any size of at least 1x1 works (every convolution pads
    /// `kernel / 2`).
    pub fn forward_maps(
        &self,
        images: Tensor<4>,
        collect_hidden: bool,
    ) -> Result<ResNetFeatures, ModelError> {
        let [_, c, h, w] = images.dims();
        let expected = self.embedder.convolution.weight.dims()[1];
        if c != expected {
            return Err(ModelError::Input(format!("images have {c} channels, the model expects {expected}")));
        }
        if h == 0 || w == 0 {
            return Err(ModelError::Input(format!("image {h}x{w} is empty")));
        }
        let mut x = self.pooler.forward(self.embedder.forward(images));
        let mut hidden = Vec::new();
        for stage in &self.stages {
            if collect_hidden {
                hidden.push(x.clone());
            }
            x = stage.layers.iter().fold(x, |x, l| l.forward(x));
        }
        if collect_hidden {
            hidden.push(x.clone());
        }
        Ok(ResNetFeatures { pooled: global_avg_pool(x.clone()), last: x, hidden })
    }

    /// [`Self::forward_maps`] in the shared [`EncoderOutput`] form: a feature map `[b, C, h, w]`
    /// becomes the token sequence of its `h·w` positions, `[b, h·w, C]` (row-major), so that
    /// `last_hidden_state` is the last stage's map and `hidden_states` are the stem output then each
    /// stage's output; `cls` is the pooled feature and averaging a sequence's tokens gives a map's
    /// global average pool.
    pub fn forward(&self, images: Tensor<4>, collect_hidden: bool) -> Result<EncoderOutput, ModelError> {
        let f = self.forward_maps(images, collect_hidden)?;
        Ok(EncoderOutput {
            last_hidden_state: map_to_tokens(f.last),
            cls: f.pooled,
            pooler_output: None,
            hidden_states: f.hidden.into_iter().map(map_to_tokens).collect(),
        })
    }
}

/// `[b, C, h, w]` → `[b, C]`: the mean over the spatial axes (`AdaptiveAvgPool2d((1, 1))` flattened).
pub fn global_avg_pool(x: Tensor<4>) -> Tensor<2> {
    let [b, c, h, w] = x.dims();
    x.reshape([b, c, h * w]).mean_dim(2).reshape([b, c])
}

/// `[b, C, h, w]` → `[b, h·w, C]`.
pub fn map_to_tokens(x: Tensor<4>) -> Tensor<3> {
    let [b, c, h, w] = x.dims();
    x.reshape([b, c, h * w]).swap_dims(1, 2)
}
