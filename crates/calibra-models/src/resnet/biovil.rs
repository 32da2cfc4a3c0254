//! BioViL's image encoder (Boecking et al. 2022; `biovil_image_resnet50_proj_size_128.pt` in
//! `microsoft/BiomedVLP-CXR-BERT-specialized`) converted into a timm ResNet checkpoint directory.
//!
//! The checkpoint is `ImageModel.state_dict()` of hi-ml-multimodal 0.2.2
//! (`health_multimodal.image.model`): a torchvision ResNet-50 under `encoder.encoder.` (hi-ml's
//! `ResNetHIML`, torchvision's modules with a forward that stops after `layer4`), a projection
//! `projector.*` into the joint image–text space, and torchvision's unused ImageNet classifier
//! `encoder.encoder.fc.*`. The image embedding hi-ml returns (`ImageModelOutput.img_embedding`) is
//! the adaptive average pool of `layer4`: exactly timm's ResNet feature, and torchvision's names are
//! timm's. So the encoder's weights are written unchanged under timm's names, next to a timm
//! `config.json` (`resnet50`, or `resnet18` for basic blocks, with the stage depths and widths read
//! off the shapes); the projector (text alignment, not the image embedding), `fc` and a downstream
//! `classifier` are dropped and listed. Any other name is refused.
//!
//! **BioViL-T** (`biovil_t_image_model_proj_size_128.pt`) is refused: its image embedding is the
//! ResNet's map through a 1x1 convolution (`backbone_to_vit`), concatenated with a vision-transformer
//! comparison to a prior image or, without one, a learned constant (`missing_previous_emb`); that is
//! not a timm ResNet, and loading its ResNet alone would be an approximation.
//!
//! The preprocessing recorded is hi-ml's `create_chest_xray_transform_for_inference(512, 480)`, the
//! transform `get_image_inference(BIOVIL)` uses: resize of the shorter side to 512 (bilinear), centre
//! crop 480, pixels in 0–1 with no normalisation (mean 0, std 1). hi-ml's own image loader also turns
//! each image to grayscale and stretches its intensities to the full 0–255 range before that
//! (`load_image`'s `remap_to_uint8`); calibra feeds images as decoded, which is the same for 8-bit
//! grayscale images that span 0–255.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::clip::open_clip::convert::Owned;
use crate::error::ModelError;
use crate::hf::staged_dir::refuse_existing;
use crate::hf::torch_state_dict::{SourceCheckpoint, TorchStateDict, invalid, name_sample, owned_tensor};
use crate::timm::write_dir::publish_timm_dir;

/// hi-ml's torchvision ResNet, inside `ImageModel`.
const ENCODER_PREFIX: &str = "encoder.encoder.";
/// The names that mark BioViL-T's multi-image encoder.
const BIOVIL_T_MARKERS: [&str; 3] =
    ["encoder.backbone_to_vit.", "encoder.vit_pooler.", "encoder.missing_previous_emb"];
const WHAT: &str = "a BioViL image model state dict (hi-ml-multimodal ImageModel)";

/// hi-ml's `TRANSFORM_RESIZE` and BioViL's centre crop (`get_image_inference`).
pub const BIOVIL_RESIZE: usize = 512;
/// See [`BIOVIL_RESIZE`].
pub const BIOVIL_CROP: usize = 480;

/// What a conversion read and wrote.
#[derive(Debug, Clone)]
pub struct ConvertedBiovil {
    pub out: PathBuf,
    /// Where the weights came from.
    pub source: SourceCheckpoint,
    /// `resnet50` (bottleneck blocks) or `resnet18` (basic blocks).
    pub architecture: &'static str,
    pub depths: Vec<usize>,
    pub channels: Vec<usize>,
    /// The width of the image embedding.
    pub features: usize,
    /// Names dropped, by group.
    pub dropped: BTreeMap<&'static str, usize>,
    pub parameters: u64,
}

fn dropped_group(name: &str) -> Option<&'static str> {
    if name.starts_with("projector.") {
        Some("joint-space projector")
    } else if matches!(name, "encoder.encoder.fc.weight" | "encoder.encoder.fc.bias") {
        Some("torchvision's ImageNet classifier (unused by hi-ml)")
    } else if name.starts_with("classifier.") {
        Some("downstream classifier")
    } else {
        None
    }
}

/// Converts the BioViL image-model checkpoint `source` into a timm ResNet checkpoint directory
/// `out` (which must not exist). `key`: the entry holding the weights, for a checkpoint that nests
/// them (default: the top level, else `state_dict`, else `model`).
pub fn convert_biovil(source: &Path, out: &Path, key: Option<&str>) -> Result<ConvertedBiovil, ModelError> {
    refuse_existing(out)?;
    let top = |names: &[String]| names.iter().any(|n| n.starts_with(ENCODER_PREFIX));
    let state = TorchStateDict::open(source, key, &["state_dict", "model"], top, WHAT)?;
    if state.iter().any(|(n, _)| BIOVIL_T_MARKERS.iter().any(|m| n.starts_with(m))) {
        return Err(ModelError::UnsupportedConfig {
            path: source.into(),
            message: "a BioViL-T checkpoint (multi-image encoder: encoder.backbone_to_vit, vit_pooler, \
                      missing_previous_emb): its image embedding adds a projection and a learned \
                      prior-image part to the ResNet's, which is not a timm ResNet; calibra converts \
                      BioViL's image model (biovil_image_resnet50_proj_size_128.pt), not BioViL-T's"
                .into(),
        });
    }
    let stem = state.required("encoder.encoder.conv1.weight", 4, WHAT)?;
    if stem[0] != 64 || stem[1] != 3 || stem[2] != 7 || stem[3] != 7 {
        return Err(invalid(
            source,
            format!(
                "'encoder.encoder.conv1.weight' has shape {stem:?}: expected torchvision's stem [64, 3, 7, 7]"
            ),
        ));
    }
    let bottleneck = state.get("encoder.encoder.layer1.0.conv3.weight").is_some();
    let mut depths = Vec::new();
    let mut channels = Vec::new();
    for stage in 1..=4 {
        let mut blocks = 0;
        while state.get(&format!("encoder.encoder.layer{stage}.{blocks}.conv1.weight")).is_some() {
            blocks += 1;
        }
        if blocks == 0 {
            return Err(invalid(
                source,
                format!("no 'encoder.encoder.layer{stage}.0.*' weights: not {WHAT}"),
            ));
        }
        let first = format!("encoder.encoder.layer{stage}.0");
        let planes = state.required(&format!("{first}.conv1.weight"), 4, WHAT)?[0];
        // Plain torchvision blocks (bottleneck or basic): conv2 is a 3x3 convolution planes → planes
        // (no groups, no widening).
        let shape = state.required(&format!("{first}.conv2.weight"), 4, WHAT)?;
        if shape != [planes, planes, 3, 3] {
            return Err(ModelError::UnsupportedConfig {
                path: source.into(),
                message: format!(
                    "'{first}.conv2.weight' has shape {shape:?}: grouped or widened bottlenecks (ResNeXt, \
                     wide ResNet) and other block shapes are not timm's plain ResNet"
                ),
            });
        }
        depths.push(blocks);
        channels.push(planes);
    }
    let expansion = if bottleneck { 4 } else { 1 };
    let features = channels[3] * expansion;

    let mut tensors: Vec<(String, Owned)> = Vec::new();
    let mut dropped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut parameters = 0u64;
    for (name, tensor) in state.iter() {
        if let Some(group) = dropped_group(name) {
            *dropped.entry(group).or_insert(0) += 1;
        } else if let Some(timm_name) = name.strip_prefix(ENCODER_PREFIX) {
            let owned = owned_tensor(tensor, name, source)?;
            if !timm_name.ends_with("num_batches_tracked") {
                parameters += owned.shape.iter().product::<usize>() as u64;
            }
            tensors.push((timm_name.to_string(), owned));
        } else {
            unknown.push(name.to_string());
        }
    }
    if !unknown.is_empty() {
        return Err(ModelError::UnsupportedConfig {
            path: source.into(),
            message: format!(
                "{} name(s) outside BioViL's image model (encoder.encoder.*, projector.*): {}",
                unknown.len(),
                name_sample(&mut unknown)
            ),
        });
    }
    tensors.sort_by(|a, b| a.0.cmp(&b.0));

    let architecture = if bottleneck { "resnet50" } else { "resnet18" };
    let config = json!({
        "architecture": architecture,
        "num_classes": 0,
        "num_features": features,
        "global_pool": "avg",
        "model_args": {"layers": depths, "channels": channels, "global_pool": "avg", "num_classes": 0},
        "pretrained_cfg": {
            "input_size": [3, BIOVIL_CROP, BIOVIL_CROP],
            "interpolation": "bilinear",
            "crop_pct": BIOVIL_CROP as f64 / BIOVIL_RESIZE as f64,
            "crop_mode": "center",
            "mean": [0.0, 0.0, 0.0],
            "std": [1.0, 1.0, 1.0],
            "num_classes": 0,
            "first_conv": "conv1",
            "classifier": "fc",
        },
    });
    let from = state.source()?;
    publish_timm_dir(out, &config, &tensors, source, "a timm ResNet")?;
    Ok(ConvertedBiovil {
        out: out.into(),
        source: from,
        architecture,
        depths,
        channels,
        features,
        dropped,
        parameters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projector_and_classifiers_are_dropped_by_group() {
        assert_eq!(dropped_group("projector.model.0.weight"), Some("joint-space projector"));
        assert!(dropped_group("encoder.encoder.fc.bias").is_some_and(|g| g.contains("ImageNet")));
        assert!(dropped_group("encoder.encoder.layer1.0.conv1.weight").is_none());
    }

    #[test]
    fn biovil_crop_is_a_whole_fraction_of_its_resize() {
        // timm resizes the shorter side to floor(crop / crop_pct): hi-ml's 512 exactly.
        let pct = BIOVIL_CROP as f64 / BIOVIL_RESIZE as f64;
        assert_eq!((BIOVIL_CROP as f64 / pct).floor() as usize, BIOVIL_RESIZE);
    }
}
