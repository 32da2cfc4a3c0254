//! MaPLe training (Khattak et al., CVPR 2023): the multi-modal prompts of a
//! [`calibra_models::clip::MaplePromptLearner`] on the image-prompt loop ([`super::image_prompts`]).
//!
//! One step on a batch of preprocessed images `x_i` with labels `y_i`:
//!
//! ```text
//! w_k = l2n(text_projection(text_tower(prompts_k(ctx), deep_text)))           k = 1..K
//! v_i = l2n(visual_projection(vision_tower(x_i, proj(ctx), deep_proj(deep_text))))
//! z_ik = exp(logit_scale) · v_i · w_k                    (reference CustomCLIP.forward)
//! L    = loss(z, y [, z^zs])                              (reference: cross-entropy)
//! θ    ← SGD-momentum step on ∇_θ L, θ = every prompt and coupling parameter
//! ```
//!
//! `z^zs` (only for losses that need zero-shot logits) are the frozen zero-shot classifier's logits
//! (template [`CoopConfig::zero_shot_template`]) of the same images through the unprompted towers.

use std::path::Path;

use burn::nn::Linear;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use calibra_models::clip::{DeepPromptModel, MaplePromptLearner, PromptTokenizer, ZeroShotClassifier};

use super::config::CoopConfig;
use super::error::CoopError;
use super::image_prompts::{
    ImageBatches, ImagePromptObjective, ImagePromptOutcome, ImagePromptRun, PromptedLearner, autodiff_param,
    run_image_prompts, squared_norm,
};
use crate::losses::{Loss, LossBatch};
use crate::training_loop::StepReport;

/// The result of [`train_maple`].
pub type MapleOutcome = ImagePromptOutcome<MaplePromptLearner>;

impl PromptedLearner for MaplePromptLearner {
    fn n_classes(&self) -> usize {
        MaplePromptLearner::n_classes(self)
    }

    fn trainable(self) -> Self {
        fn linear(mut l: Linear) -> Linear {
            l.weight = autodiff_param(l.weight);
            l.bias = l.bias.map(autodiff_param);
            l
        }
        MaplePromptLearner {
            ctx: autodiff_param(self.ctx),
            proj: linear(self.proj),
            deep_text: self.deep_text.into_iter().map(autodiff_param).collect(),
            deep_proj: self.deep_proj.into_iter().map(linear).collect(),
            ..self
        }
    }

    fn grad_norm(&self, grads: &GradientsParams) -> f64 {
        let linear = |l: &Linear| {
            squared_norm(grads.get::<2>(l.weight.id))
                + l.bias.as_ref().map_or(0.0, |b| squared_norm(grads.get::<1>(b.id)))
        };
        let total = squared_norm(grads.get::<2>(self.ctx.id))
            + linear(&self.proj)
            + self.deep_text.iter().map(|p| squared_norm(grads.get::<2>(p.id))).sum::<f64>()
            + self.deep_proj.iter().map(linear).sum::<f64>();
        total.sqrt()
    }
}

/// MaPLe's objective: the configured loss on the prompted logits.
struct MapleObjective<'a> {
    loss: &'a dyn Loss,
    zero_shot: Option<ZeroShotClassifier>,
}

impl ImagePromptObjective<MaplePromptLearner> for MapleObjective<'_> {
    fn objective(
        &mut self,
        learner: &MaplePromptLearner,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
        labels: &[usize],
    ) -> Result<Tensor<1>, CoopError> {
        let zs = match &self.zero_shot {
            Some(zs) => Some(zs.logits_from_features(model.frozen_image_features(images.clone())?)),
            None => None,
        };
        let mut batch = LossBatch::classes(learner.logits(model, images)?, labels)?;
        if let Some(zs) = zs {
            batch = batch.with_zero_shot(zs)?;
        }
        Ok(self.loss.forward(&batch)?)
    }
}

/// Trains MaPLe prompts for `classnames` on the training images (`images`) with `labels`.
///
/// - `model`: the CLIP model on the plain `device`; the prompts train on `device.autodiff()`.
/// - `config`: a [`CoopConfig`] whose method is [`super::CoopMethod::Maple`]
///   ([`CoopConfig::maple_reference`] has the reference values).
/// - `loss`, `checkpoint_dir`, `progress`: as [`super::train_coop`].
#[allow(clippy::too_many_arguments)]
pub fn train_maple(
    model: &dyn DeepPromptModel,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    images: &mut ImageBatches<'_>,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<MapleOutcome, CoopError> {
    config.validate()?;
    let learner_config = config.maple_learner().ok_or_else(|| wrong_method(config))?;
    let learner = learner_config.init(model, tokenizer, classnames, device)?;
    train_maple_learner(
        model,
        tokenizer,
        classnames,
        learner,
        images,
        labels,
        loss,
        config,
        device,
        checkpoint_dir,
        progress,
    )
}

fn wrong_method(config: &CoopConfig) -> CoopError {
    CoopError::Config(format!("train_maple needs the maple method, not {}", config.method.name()))
}

/// [`train_maple`] from an already built learner (given initial values; `config`'s prompt fields are
/// then not used). `learner` must have been built for `classnames` on the plain `device`.
#[allow(clippy::too_many_arguments)]
pub fn train_maple_learner(
    model: &dyn DeepPromptModel,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    learner: MaplePromptLearner,
    images: &mut ImageBatches<'_>,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<MapleOutcome, CoopError> {
    config.validate()?;
    if config.maple_learner().is_none() {
        return Err(wrong_method(config));
    }
    let zero_shot = if loss.needs_zero_shot() {
        let template = vec![config.zero_shot_template.clone()];
        Some(ZeroShotClassifier::for_prompt_tower(
            model,
            tokenizer,
            classnames,
            &template,
            &device.clone().inner(),
        )?)
    } else {
        None
    };
    let run = ImagePromptRun { model, classnames, labels, config, checkpoint_dir };
    run_image_prompts(&run, learner, &mut MapleObjective { loss, zero_shot }, images, progress)
}
