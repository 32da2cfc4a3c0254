//! A loaded image encoder of any supported family, dispatched on `config.json` `model_type`.
//!
//! To add a family (CLIP/SigLIP vision towers): add a variant to [`EncoderModel`], an arm to
//! `load_dir`'s `match model_type`, and arms to the `match self.model` blocks below (marked
//! "family dispatch"); everything else (`embed`, depth selection, saving) is shared.

use std::path::Path;

use burn::prelude::*;
use burn::store::{ModuleStore, SafetensorsStore};

use crate::clip::ClipVisionTransformer;
use crate::clip::keys::clip_vision_keymap;
use crate::dinov2::{Dinov2, Dinov2Config, dinov2_key_map};
pub use crate::encoder_output::EncoderOutput;
use crate::error::ModelError;
use crate::hf::load::check_fits_file;
use crate::hf::{
    HfConfig, KeyMap, LoadOptions, load_safetensors, read_config, resolve_checkpoint, save_safetensors,
};
use crate::resnet::{ResNet, is_timm_resnet};
use crate::siglip::{SiglipVisionTransformer, siglip_vision_keymap};
use crate::timm::{TimmVit, is_timm_config, timm_vit_key_map};
use crate::vit::{Vit, VitConfig, vit_key_map};

/// The family-specific module.
#[derive(Module, Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one encoder per process; boxing would hide it from burn's derive
pub enum EncoderModel {
    /// `model_type` `vit`, `deit` or `vit_mae` (a ViT-MAE encoder, run without masking: see
    /// [`crate::vit::VitConfig::from_hf`]).
    Vit(Vit),
    /// `model_type` `dinov2` or `dinov2_with_registers`.
    Dinov2(Dinov2),
    /// `model_type` `clip` (the vision tower of a CLIPModel) or `clip_vision_model`.
    ClipVision(ClipVisionTransformer),
    /// `model_type` `siglip` (the vision tower of a SiglipModel) or `siglip_vision_model`.
    SiglipVision(SiglipVisionTransformer),
    /// A timm `VisionTransformer` (`config.json` with `architecture` and no `model_type`; see
    /// [`crate::timm`]).
    TimmVit(TimmVit),
    /// A ResNet: `model_type` `resnet` (transformers `ResNetModel` / `ResNetForImageClassification`)
    /// or a timm `resnet18` / `34` / `50` / `101` / `152` (see [`crate::resnet`]). A CNN: its
    /// "layers" are its stages and its token sequences are feature maps read position by position
    /// (see [`ResNet::forward`]).
    ResNet(ResNet),
}

/// Model types [`Encoder::load`] understands.
pub const SUPPORTED_MODEL_TYPES: &[&str] = &[
    "vit",
    "deit",
    "vit_mae",
    "dinov2",
    "dinov2_with_registers",
    "clip",
    "clip_vision_model",
    "siglip",
    "siglip_vision_model",
    "resnet",
];

/// A loaded encoder with its Hugging Face configuration. A burn module (the configuration is carried
/// along, not a parameter), so it can sit inside a classifier that trains and checkpoints.
#[derive(Module, Debug)]
pub struct Encoder {
    /// The module.
    pub model: EncoderModel,
    /// The `config.json` it was built from (written back by [`Encoder::save_pretrained`]).
    #[module(skip)]
    pub config: HfConfig,
}

impl Encoder {
    /// Resolves `spec` (a directory, `hf:org/name[@rev]`, or `org/name` in the HF cache; see
    /// [`resolve_checkpoint`]) and loads it on `device`.
    pub fn load(spec: &str, device: &Device) -> Result<Self, ModelError> {
        let ck = resolve_checkpoint(spec)?;
        Self::load_dir(&ck.dir, device)
    }

    /// Loads `dir/config.json` + `dir/model.safetensors`, dispatching on `model_type`; a native
    /// OpenCLIP directory (`open_clip_config.json`, no `config.json`) loads its vision tower as
    /// [`EncoderModel::ClipVision`], with the OpenCLIP file as `config` (see
    /// [`crate::clip::open_clip`]); a BiomedCLIP-style one (timm trunk + BERT text tower) loads its
    /// timm trunk as [`EncoderModel::TimmVit`] (see [`crate::clip::open_clip::OpenClipTimmBert::load_trunk`]).
    pub fn load_dir(dir: &Path, device: &Device) -> Result<Self, ModelError> {
        if crate::clip::open_clip::is_timm_bert_dir(dir) {
            let (trunk, config) =
                crate::clip::open_clip::OpenClipTimmBert::load_trunk(dir, &Default::default(), device)?;
            return Ok(Self { model: EncoderModel::TimmVit(trunk), config: config.file });
        }
        if crate::clip::open_clip::is_open_clip_dir(dir) {
            let (tower, _, config) = crate::clip::open_clip::load_open_clip_vision(dir, device)?;
            return Ok(Self { model: EncoderModel::ClipVision(tower), config });
        }
        let config = read_config(&dir.join("config.json"))?;
        let weights = dir.join("model.safetensors");
        if is_timm_resnet(&config) {
            let model = EncoderModel::ResNet(ResNet::load(&config, &weights, device)?.0);
            return Ok(Self { model, config });
        }
        if is_timm_config(&config) {
            let model = EncoderModel::TimmVit(TimmVit::load(&config, &weights, device)?.0);
            return Ok(Self { model, config });
        }
        let model_type = config.model_type()?;
        // family dispatch
        let model = match model_type.as_str() {
            "vit" | "deit" | "vit_mae" => {
                let map = vit_key_map();
                let keys = SafetensorsStore::from_file(&weights)
                    .keys()
                    .map_err(|e| ModelError::Store { path: weights.clone(), message: e.to_string() })?;
                let has_pooler =
                    keys.iter().any(|k| !map.is_ignored(k) && map.to_burn(k).starts_with("pooler."));
                let vit = VitConfig::from_hf(&config, has_pooler)?;
                check_fits_file(&config, &weights, vit.min_weights())?;
                let mut m = vit.init(device);
                load_safetensors(&mut m, &weights, &map, &LoadOptions::default())?;
                EncoderModel::Vit(m)
            }
            "dinov2" | "dinov2_with_registers" => {
                let dinov2 = Dinov2Config::from_hf(&config)?;
                check_fits_file(&config, &weights, dinov2.min_weights())?;
                let mut m = dinov2.init(device);
                load_safetensors(&mut m, &weights, &dinov2_key_map(), &LoadOptions::default())?;
                EncoderModel::Dinov2(m)
            }
            "clip" | "clip_vision_model" => {
                EncoderModel::ClipVision(ClipVisionTransformer::load_with(&config, &weights, device)?.0)
            }
            "siglip" | "siglip_vision_model" => {
                EncoderModel::SiglipVision(SiglipVisionTransformer::load_with(&config, &weights, device)?.0)
            }
            "resnet" => EncoderModel::ResNet(ResNet::load(&config, &weights, device)?.0),
            other => {
                crate::hf::vision_tower::refuse_multimodal(dir)?;
                return Err(ModelError::UnsupportedModelType {
                    path: config.path.clone(),
                    model_type: other.to_string(),
                    supported: SUPPORTED_MODEL_TYPES.join(", "),
                });
            }
        };
        Ok(Self { model, config })
    }

    /// Whether this encoder was loaded from a native OpenCLIP checkpoint (its `config` is an
    /// `open_clip_config.json`): its tensors carry OpenCLIP names in the file, not the Hugging Face
    /// names of [`Self::key_map`].
    pub fn is_open_clip(&self) -> bool {
        crate::clip::open_clip::is_open_clip_config(&self.config)
    }

    /// The family's key table.
    pub fn key_map(&self) -> KeyMap {
        // family dispatch
        match &self.model {
            EncoderModel::Vit(_) => vit_key_map(),
            EncoderModel::Dinov2(_) => dinov2_key_map(),
            EncoderModel::ClipVision(_) => clip_vision_keymap().expect("static CLIP key table compiles"),
            EncoderModel::SiglipVision(_) => {
                siglip_vision_keymap().expect("static SigLIP key table compiles")
            }
            EncoderModel::TimmVit(_) => timm_vit_key_map(),
            EncoderModel::ResNet(m) => m.key_map(),
        }
    }

    /// Writes `dir/config.json` (the loaded config, unchanged) and `dir/model.safetensors` in
    /// the Hugging Face layout (names as `save_pretrained` writes them). Creates `dir`. A ResNet is
    /// written in the layout it was loaded from (transformers or timm names), BatchNorm running
    /// statistics and `num_batches_tracked` included; a timm ViT in timm's (`save_for_hf`) names,
    /// `qkv` fused; a classifier (`classifier.1`, timm `fc` / `head`) is not written.
    pub fn save_pretrained(&self, dir: &Path) -> Result<(), ModelError> {
        std::fs::create_dir_all(dir).map_err(|source| ModelError::Io { path: dir.into(), source })?;
        let cfg_path = dir.join("config.json");
        let text = serde_json::to_string_pretty(&self.config.json).expect("a JSON value serialises");
        std::fs::write(&cfg_path, text + "\n").map_err(|source| ModelError::Io { path: cfg_path, source })?;
        let weights = dir.join("model.safetensors");
        // family dispatch
        match &self.model {
            EncoderModel::Vit(m) => save_safetensors(m, &weights, &self.key_map()),
            EncoderModel::Dinov2(m) => save_safetensors(m, &weights, &self.key_map()),
            // A joint CLIP/SigLIP config.json would describe both towers while only the vision
            // weights are written; refuse rather than write a checkpoint that does not reload.
            EncoderModel::ClipVision(_) if self.is_open_clip() => Err(ModelError::UnsupportedConfig {
                path: self.config.path.clone(),
                message: "saving an OpenCLIP vision tower alone is not implemented (its config describes \
                          both towers); the loaded checkpoint is unchanged and can be reused as is"
                    .into(),
            }),
            EncoderModel::ClipVision(_) | EncoderModel::SiglipVision(_) => {
                Err(ModelError::UnsupportedModelType {
                    path: self.config.path.clone(),
                    model_type: format!("{} (saving a vision tower alone)", self.config.model_type()?),
                    supported: "vit, deit, dinov2, dinov2_with_registers".into(),
                })
            }
            EncoderModel::TimmVit(m) => m.save(&weights),
            EncoderModel::ResNet(m) => m.save(&weights),
        }
    }

    /// Forward pass on `images: [b, c, H, W]` (already normalised as the model's image
    /// processor would).
    pub fn forward(&self, images: Tensor<4>, collect_hidden: bool) -> Result<EncoderOutput, ModelError> {
        // family dispatch
        match &self.model {
            EncoderModel::Vit(m) => m.forward(images, collect_hidden),
            EncoderModel::Dinov2(m) => m.forward(images, collect_hidden),
            EncoderModel::ClipVision(m) => Ok(tower_output(m.forward_full(images, collect_hidden)?)),
            EncoderModel::SiglipVision(m) => Ok(tower_output(m.forward_full(images, collect_hidden)?)),
            EncoderModel::TimmVit(m) => m.forward(images, collect_hidden),
            EncoderModel::ResNet(m) => m.forward(images, collect_hidden),
        }
    }

    /// Number of transformer blocks (for a ResNet: of stages, 4 for ResNet-50).
    pub fn num_layers(&self) -> usize {
        // family dispatch
        match &self.model {
            EncoderModel::Vit(m) => m.blocks.len(),
            EncoderModel::Dinov2(m) => m.blocks.len(),
            EncoderModel::ClipVision(m) => m.n_layers(),
            EncoderModel::SiglipVision(m) => m.n_layers(),
            EncoderModel::TimmVit(m) => m.blocks.len(),
            EncoderModel::ResNet(m) => m.stages.len(),
        }
    }

    /// The feature a linear probe uses, `[b, d]`: the CLS token after the final LayerNorm
    /// (HF DINOv2 `pooler_output`; for ViT/DeiT the CLS state, *not* the tanh pooler, which is
    /// not trained by most pre-training recipes). For a ResNet: the global average of the last
    /// stage (transformers `pooler_output` flattened, `[b, 2048]` for ResNet-50; timm's pre-logits
    /// feature).
    pub fn embed(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.forward(images, false)?.cls)
    }

    /// The feature transformers' `<Family>ForImageClassification` feeds its `classifier`, `[b, d_cls]`
    /// ([`Self::classification_dim`] wide), so that a head trained on it loads there with PEFT:
    ///
    /// - ViT / DeiT: the CLS token of the layer-normed `last_hidden_state` (`sequence_output[:, 0, :]`),
    ///   the same tensor as [`Self::embed`];
    /// - DINOv2: `[CLS ‖ mean of the patch tokens]` of the layer-normed `last_hidden_state` (`2·d`);
    ///   with registers the register tokens are left out of the mean
    ///   (`sequence_output[:, 1 + num_register_tokens:]`);
    /// - CLIP vision: the mean of the patch tokens (CLS left out) of the last block's output, *before*
    ///   `post_layernorm` (CLIPVisionModel's `last_hidden_state`);
    /// - SigLIP vision: the mean of every token of `post_layernorm(last block output)`; the
    ///   attention-pooling head (`vision_use_head`) is not used;
    /// - ResNet: the pooled feature of [`Self::embed`] (ResNetForImageClassification's classifier is
    ///   `Flatten` + `Linear` on `pooler_output`; timm's `fc` reads the same pre-logits feature).
    ///
    /// Frozen probes keep [`Self::embed`]; this is the fine-tuning classifier's input.
    pub fn classification_feature(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        // family dispatch
        match &self.model {
            EncoderModel::Vit(m) => Ok(m.forward(images, false)?.cls),
            EncoderModel::Dinov2(m) => {
                let last = m.forward(images, false)?.last_hidden_state;
                let [b, n, d] = last.dims();
                let skip = 1 + m.embeddings.register_tokens.as_ref().map_or(0, |r| r.dims()[1]);
                let cls = last.clone().narrow(1, 0, 1).reshape([b, d]);
                let patches = mean_tokens(last, skip, n)?;
                Ok(Tensor::cat(vec![cls, patches], 1))
            }
            EncoderModel::ClipVision(m) => {
                let last = m.forward_full(images, false)?.last_hidden_state;
                let n = last.dims()[1];
                mean_tokens(last, 1, n)
            }
            EncoderModel::SiglipVision(m) if m.projector.is_some() => Err(ModelError::UnsupportedConfig {
                path: self.config.path.clone(),
                message: "fine-tuning a SigLIP tower with MedGemma's projector ('calibra_projector') is not \
                          implemented: that directory is for frozen features (CRS-Bench's MedGemma \
                          representation); for LoRA or full fine-tuning convert the tower without --projector"
                    .into(),
            }),
            EncoderModel::SiglipVision(m) => {
                let last = m.last_hidden_state(images)?;
                let n = last.dims()[1];
                mean_tokens(last, 0, n)
            }
            EncoderModel::TimmVit(m) => Ok(m.forward(images, false)?.cls),
            EncoderModel::ResNet(m) => Ok(m.forward_maps(images, false)?.pooled),
        }
    }

    /// Width of [`Self::classification_feature`]: the hidden size, twice it for DINOv2.
    pub fn classification_dim(&self) -> usize {
        // family dispatch
        match &self.model {
            EncoderModel::Vit(m) => m.layernorm.gamma.dims()[0],
            EncoderModel::Dinov2(m) => 2 * m.layernorm.gamma.dims()[0],
            EncoderModel::ClipVision(m) => m.post_layernorm.gamma.dims()[0],
            EncoderModel::SiglipVision(m) => m.post_layernorm.gamma.dims()[0],
            EncoderModel::TimmVit(m) => m.embed_dim(),
            EncoderModel::ResNet(m) => m.feature_dim(),
        }
    }

    /// The module name the family's classification model gives the classifier that reads
    /// [`Self::classification_feature`], under which PEFT saves it (`modules_to_save`): `head` for a
    /// timm ViT (`VisionTransformer.head`), `classifier` for the transformers families
    /// (`<Family>ForImageClassification.classifier`) and, by calibra's convention, a ResNet (which has
    /// no LoRA here).
    pub fn classifier_module(&self) -> &'static str {
        // family dispatch
        match &self.model {
            EncoderModel::TimmVit(_) => "head",
            EncoderModel::Vit(_)
            | EncoderModel::Dinov2(_)
            | EncoderModel::ClipVision(_)
            | EncoderModel::SiglipVision(_)
            | EncoderModel::ResNet(_) => "classifier",
        }
    }

    /// What [`Self::classification_feature`] is, in words, for error messages.
    pub fn classification_feature_name(&self) -> &'static str {
        // family dispatch
        match &self.model {
            EncoderModel::Vit(_) => "the layer-normed CLS token (ViT/DeiTForImageClassification)",
            EncoderModel::Dinov2(_) => {
                "[CLS ‖ mean of the patch tokens], twice the hidden size (Dinov2ForImageClassification)"
            }
            EncoderModel::ClipVision(_) => {
                "the mean of the patch tokens before post_layernorm (CLIPForImageClassification)"
            }
            EncoderModel::SiglipVision(_) => {
                "the mean of the post-layernorm tokens (SiglipForImageClassification)"
            }
            EncoderModel::TimmVit(_) => {
                "timm's pre-logits feature, forward_head(forward_features(x), pre_logits=True)"
            }
            EncoderModel::ResNet(_) => {
                "the global average pool of the last stage (ResNetForImageClassification's pooler_output; \
                 timm's pre-logits feature)"
            }
        }
    }

    /// HF `hidden_states`: embedding output then every block output (before the final
    /// LayerNorm), `num_layers + 1` tensors `[b, tokens, d]`. For a ResNet: the stem output (after
    /// the max-pool) then every stage's output, each feature map `[b, C, h, w]` as the sequence of its
    /// positions `[b, h·w, C]`.
    pub fn hidden_states(&self, images: Tensor<4>) -> Result<Vec<Tensor<3>>, ModelError> {
        Ok(self.forward(images, true)?.hidden_states)
    }

    /// Block index for a depth fraction: `round(f · L)` clamped to `1..=L`, where `L` is the
    /// number of blocks (so 0.25/0.5/0.75/1.0 of 12 blocks → 3/6/9/12). Index `k` refers to
    /// the output of block `k` (`hidden_states[k]`).
    ///
    /// # Panics
    /// If `fraction` is not in `(0, 1]`.
    pub fn layer_for_fraction(&self, fraction: f64) -> usize {
        layer_for_fraction(self.num_layers(), fraction)
    }

    /// Probe features at several depths, `[b, d]` each: the CLS token of the output of block
    /// [`Self::layer_for_fraction`]`(f)` with the final LayerNorm applied (as DINOv2's
    /// `get_intermediate_layers(norm=True)`), so that depth 1.0 equals [`Self::embed`].
    ///
    /// ResNet: feature depth at stage outputs. Depth `f` picks stage `round(f · stages)` (0.25 / 0.5 /
    /// 0.75 / 1.0 of ResNet-50's 4 stages → stages 1 / 2 / 3 / 4), pooled by global average pooling
    /// into `[b, C_s]` (256 / 512 / 1024 / 2048 wide for ResNet-50): the widths differ by depth.
    pub fn embed_at_depths(
        &self,
        images: Tensor<4>,
        fractions: &[f64],
    ) -> Result<Vec<Tensor<2>>, ModelError> {
        let hidden = self.hidden_states(images)?;
        // family dispatch
        // (CLIP: post-LayerNorm of token 0; SigLIP has no CLS token: its attention-pool head.)
        let pool = |h: Tensor<3>| match &self.model {
            EncoderModel::Vit(m) => cls_after(h, |x| m.layernorm.forward(x)),
            EncoderModel::Dinov2(m) => cls_after(h, |x| m.layernorm.forward(x)),
            EncoderModel::ClipVision(m) => m.pool_hidden(h),
            EncoderModel::SiglipVision(m) => m.pool_hidden(h),
            // timm: `norm`, `global_pool`, `fc_norm` on the block output.
            EncoderModel::TimmVit(m) => m.feature_from_hidden(h),
            // ResNet: the global average pool of a stage's feature map (its positions' mean).
            EncoderModel::ResNet(_) => {
                let [b, _, c] = h.dims();
                h.mean_dim(1).reshape([b, c])
            }
        };
        Ok(fractions.iter().map(|&f| pool(hidden[self.layer_for_fraction(f)].clone())).collect())
    }
}

/// Mean of tokens `from..n` of `h: [b, n, d]` → `[b, d]`; an error when that range is empty.
fn mean_tokens(h: Tensor<3>, from: usize, n: usize) -> Result<Tensor<2>, ModelError> {
    if from >= n {
        return Err(ModelError::Input(format!(
            "the classification feature averages tokens {from}.. of {n}: the image yields no patch token"
        )));
    }
    let [b, _, d] = h.dims();
    Ok(h.narrow(1, from, n - from).mean_dim(1).reshape([b, d]))
}

/// LayerNorm of token 0 of `h: [b, n, d]` → `[b, d]`.
fn cls_after(h: Tensor<3>, norm: impl Fn(Tensor<3>) -> Tensor<3>) -> Tensor<2> {
    let [b, _, d] = h.dims();
    norm(h.narrow(1, 0, 1)).reshape([b, d])
}

/// A CLIP/SigLIP tower's output in the common form (`cls` = the tower's pooled feature).
fn tower_output(o: crate::clip::TowerOutput) -> EncoderOutput {
    EncoderOutput {
        last_hidden_state: o.last_hidden_state,
        cls: o.pooled,
        pooler_output: None,
        hidden_states: o.hidden_states,
    }
}

/// See [`Encoder::layer_for_fraction`].
///
/// # Panics
/// If `fraction` is not in `(0, 1]` or `num_layers == 0`.
pub fn layer_for_fraction(num_layers: usize, fraction: f64) -> usize {
    assert!(fraction > 0.0 && fraction <= 1.0, "depth fraction {fraction} is not in (0, 1]");
    assert!(num_layers > 0, "model has no blocks");
    ((fraction * num_layers as f64).round() as usize).clamp(1, num_layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn max_abs_diff(a: Tensor<2>, b: Tensor<2>) -> f32 {
        (a - b).abs().max().into_data().as_slice::<f32>().unwrap()[0]
    }

    /// CLIP and SigLIP through the shared dispatch give the towers' own pooled features (verified
    /// against transformers in the clip/siglip parity tests), and depth 1.0 equals `embed`.
    #[test]
    fn clip_and_siglip_arms_pool_like_their_towers() {
        let device = Device::flex();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for family in ["clip", "siglip"] {
            let dir = fixtures.join(family);
            let encoder = Encoder::load_dir(&dir, &device).unwrap();
            let config = read_config(&dir.join("config.json")).unwrap();
            let size = config.json["vision_config"]["image_size"].as_u64().unwrap_or(30) as usize;
            let n = 2 * 3 * size * size;
            let pixels: Vec<f32> = (0..n).map(|i| ((i * 7919 % 97) as f32 / 48.0) - 1.0).collect();
            let images =
                Tensor::<4>::from_data(burn::tensor::TensorData::new(pixels, [2, 3, size, size]), &device);
            let tower = match &encoder.model {
                EncoderModel::ClipVision(m) => m.forward_full(images.clone(), false).unwrap().pooled,
                EncoderModel::SiglipVision(m) => m.forward_full(images.clone(), false).unwrap().pooled,
                _ => panic!("{family} loaded as another family"),
            };
            let embed = encoder.embed(images.clone()).unwrap();
            assert_eq!(max_abs_diff(embed.clone(), tower), 0.0, "{family}");
            let depths = encoder.embed_at_depths(images, &[0.5, 1.0]).unwrap();
            assert!(max_abs_diff(depths[1].clone(), embed) < 1e-5, "{family}: depth 1.0 must equal embed");
            assert!(encoder.save_pretrained(&std::env::temp_dir().join("calibra-never-written")).is_err());
        }
    }

    #[test]
    fn depth_fractions_of_twelve_blocks() {
        let got: Vec<usize> = [0.25, 0.5, 0.75, 1.0].iter().map(|&f| layer_for_fraction(12, f)).collect();
        assert_eq!(got, vec![3, 6, 9, 12]);
        assert_eq!(layer_for_fraction(3, 0.01), 1);
    }
}
