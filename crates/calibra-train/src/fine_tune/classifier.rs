//! An encoder with a linear head on its pooled feature, and the three ways of making it trainable.

use std::collections::BTreeMap;

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::lora::peft::AdapterTensor;
use calibra_models::lora::{LoraConfig, apply_lora};
use calibra_models::{Encoder, ModelError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::FineTuneError;
use crate::trainer::Classifier;

/// Which parameters train.
#[derive(Debug, Clone, PartialEq)]
pub enum Adaptation {
    /// PEFT-style LoRA: the encoder is frozen, the branches `config` selects and the head train.
    Lora(Box<LoraConfig>),
    /// Every parameter of the encoder and the head trains.
    Full,
    /// Only the head trains (a linear probe fitted by gradient descent on un-cached images).
    Head,
}

impl Adaptation {
    /// `lora`, `full` or `head`.
    pub fn name(&self) -> &'static str {
        match self {
            Adaptation::Lora(_) => "lora",
            Adaptation::Full => "full",
            Adaptation::Head => "head",
        }
    }
}

/// logits = W · f(x) + b, with `f` the feature transformers' `<Family>ForImageClassification` feeds
/// its `classifier` ([`Encoder::classification_feature`]: ViT/DeiT the layer-normed CLS, DINOv2
/// `[CLS ‖ mean of patches]` (2·d), CLIP the mean of the patch tokens before `post_layernorm`, SigLIP
/// the mean of the post-layernorm tokens), so that a saved adapter + head gives the same logits under
/// `PeftModel.from_pretrained(<Family>ForImageClassification.from_pretrained(base, num_labels=K), dir)`.
/// On a timm ViT `f` is timm's `forward_head(forward_features(x), pre_logits=True)` (pooled per
/// `global_pool`, `norm` / `fc_norm` as timm places them) and the head is timm's `head`, so the adapter
/// loads with `PeftModel.from_pretrained(timm.create_model(..., num_classes=K), dir)`.
/// The head is PyTorch's `nn.Linear` layout in spirit (`classifier.weight` `[K, d]` when saved, timm:
/// `head.weight`; [`Encoder::classifier_module`]) and burn's in memory.
#[derive(Module, Debug)]
pub struct EncoderClassifier {
    pub encoder: Encoder,
    pub head: Linear,
}

impl EncoderClassifier {
    /// A head of `n_outputs` on `encoder`, initialised as `torch.nn.Linear` does (weight and bias
    /// uniform in ±1/√d) from a ChaCha20 stream seeded by `seed`, then made trainable as
    /// `adaptation` says. Returns the classifier and the LoRA-wrapped module names (empty for
    /// full / head).
    pub fn new(
        encoder: Encoder,
        dim: usize,
        n_outputs: usize,
        adaptation: &Adaptation,
        seed: u64,
        device: &Device,
    ) -> Result<(Self, Vec<String>), FineTuneError> {
        if dim == 0 || n_outputs == 0 {
            return Err(FineTuneError::Invalid(format!(
                "a head needs a feature size and an output count >= 1 (got d = {dim}, K = {n_outputs})"
            )));
        }
        check_head_input(&encoder, dim)?;
        let bound = 1.0 / (dim as f64).sqrt();
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x6865_6164); // "head"
        let mut draw =
            |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-bound..bound) as f32).collect() };
        // burn's Linear stores weight as [in, out]; draw in PyTorch's [out, in] order and transpose,
        // so the same seed gives the same head as a [K, d] draw in the peer.
        let w_out_in = draw(n_outputs * dim);
        let bias = draw(n_outputs);
        let head = pytorch_linear(&w_out_in, Some(bias), n_outputs, dim, device);
        let mut encoder = encoder;
        let wrapped = match adaptation {
            Adaptation::Full => Vec::new(),
            Adaptation::Head => {
                // `freeze`, not only `no_grad`: it also clears the training flags, so that a frozen
                // ResNet's BatchNorm runs on its running statistics (and leaves them unchanged) on
                // the autodiff device; for the transformer families (no flags) it is `no_grad`.
                encoder = encoder.freeze();
                Vec::new()
            }
            Adaptation::Lora(config) => {
                encoder = encoder.no_grad();
                apply_lora(&mut encoder, config, seed)?
            }
        };
        Ok((EncoderClassifier { encoder, head }, wrapped))
    }

    /// The same model with its head replaced by PyTorch-layout `weight` `[K, d]` (row-major) and
    /// `bias` `[K]` (trainable, as the drawn head is): LP-FT's probe head.
    pub fn with_head(self, weight: &[f32], bias: Vec<f32>, device: &Device) -> Result<Self, FineTuneError> {
        let [dim, k] = self.head.weight.dims();
        if weight.len() != dim * k || bias.len() != k {
            return Err(FineTuneError::Invalid(format!(
                "a head of {} weights and {} biases does not fit [{k}, {dim}]",
                weight.len(),
                bias.len()
            )));
        }
        Ok(EncoderClassifier {
            encoder: self.encoder,
            head: pytorch_linear(weight, Some(bias), k, dim, device),
        })
    }

    /// Logits `[b, K]`, or the encoder's error (an image size it cannot take).
    pub fn try_logits(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        Ok(self.head.forward(self.encoder.classification_feature(images)?))
    }

    /// The head as PEFT saves a `modules_to_save` classifier: `classifier.weight` `[K, d]` and
    /// `classifier.bias` `[K]` (PyTorch layout; `head.weight` / `head.bias` on a timm ViT, see
    /// [`Encoder::classifier_module`]).
    pub fn head_tensors(&self) -> Result<BTreeMap<String, AdapterTensor>, FineTuneError> {
        let module = self.encoder.classifier_module();
        let weight = self.head.weight.val().transpose();
        let mut out = BTreeMap::new();
        out.insert(format!("{module}.weight"), host(weight)?);
        if let Some(bias) = &self.head.bias {
            out.insert(format!("{module}.bias"), host(bias.val())?);
        }
        Ok(out)
    }
}

/// An error unless a head of input width `dim` fits `encoder`'s classification feature.
pub(super) fn check_head_input(encoder: &Encoder, dim: usize) -> Result<(), FineTuneError> {
    let want = encoder.classification_dim();
    if dim != want {
        return Err(FineTuneError::Invalid(format!(
            "a head over {dim} features does not fit this encoder: its classifier input is {}, {want} wide",
            encoder.classification_feature_name()
        )));
    }
    Ok(())
}

/// A burn `Linear` (weight `[in, out]`) from a PyTorch `nn.Linear` weight `[out, in]` (row-major)
/// and optional bias `[out]`.
pub(super) fn pytorch_linear(
    w_out_in: &[f32],
    bias: Option<Vec<f32>>,
    n_outputs: usize,
    dim: usize,
    device: &Device,
) -> Linear {
    let mut w_in_out = vec![0f32; dim * n_outputs];
    for o in 0..n_outputs {
        for i in 0..dim {
            w_in_out[i * n_outputs + o] = w_out_in[o * dim + i];
        }
    }
    Linear {
        weight: Param::from_data(TensorData::new(w_in_out, [dim, n_outputs]), device),
        bias: bias.map(|b| Param::from_data(TensorData::new(b, [n_outputs]), device)),
    }
}

fn host<const D: usize>(t: Tensor<D>) -> Result<AdapterTensor, FineTuneError> {
    let shape = t.dims().to_vec();
    let data = t
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map_err(|e| FineTuneError::Invalid(format!("reading a tensor back: {e:?}")))?;
    Ok(AdapterTensor { shape, data })
}

impl Classifier for EncoderClassifier {
    /// # Panics
    /// If the encoder refuses the images; [`super::fine_tune`] checks the image size with
    /// [`EncoderClassifier::try_logits`] before training, so this cannot happen there.
    fn logits(&self, images: Tensor<4>) -> Tensor<2> {
        self.try_logits(images).expect("image size checked before training")
    }
}
