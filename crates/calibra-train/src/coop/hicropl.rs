//! HiCroPL training (hierarchical cross-modal prompt learning, 2025; reference `zzeoZheng/HiCroPL
//! trainers/hicropl.py`, `CustomCLIP.forward` and `HiCroPL.forward_backward`): the cross-mapped
//! prompts of a [`calibra_models::clip::HicroplPromptLearner`] on the image-prompt loop
//! ([`super::image_prompts`]), trained with Adam.
//!
//! One step on a batch of preprocessed images `x_i` with labels `y_i`, `t̄_k` the teacher text
//! features and `v̄_i = l2n(frozen image features)`:
//!
//! ```text
//! prompts ← mapped(prompts)                          (written into the parameters, no gradient)
//! w_k = l2n(l2n(prompted text_k) + t̄_k),   v_i = l2n(l2n(prompted image_i) + v̄_i)
//! z   = exp(logit_scale) · v wᵀ
//! L   = loss(z, y [, z^zs]) + λ · ((1 − mean_k cos(w_k, t̄_k)) + (1 − mean_i cos(v_i, v̄_i)))
//! θ   ← Adam step on ∇_θ L, θ = the prompts (the mapper gets no gradient)
//! ```
//!
//! The reference's task loss is cross-entropy; calibra uses the configured loss. `z^zs`, for the
//! losses that need zero-shot logits, is `exp(logit_scale) · v̄ t̄ᵀ`. The trained learner is returned
//! mapped once more, as the reference's next forward pass (its first evaluation batch) sees it; the
//! reference keeps re-mapping on every evaluation batch, which calibra does not (predictions would
//! otherwise depend on the batch order).

use std::path::Path;

use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use calibra_models::clip::{
    DeepPromptModel, HicroplPromptLearner, PromptTokenizer, l2_normalize, teacher_from_descriptions,
};

use super::config::{CoopConfig, CoopMethod};
use super::error::CoopError;
use super::image_prompts::{
    ImageBatches, ImagePromptObjective, ImagePromptOutcome, ImagePromptRun, PromptedLearner, autodiff_param,
    run_image_prompts, squared_norm,
};
use crate::losses::{Loss, LossBatch};
use crate::training_loop::StepReport;

/// The result of [`train_hicropl`].
pub type HicroplOutcome = ImagePromptOutcome<HicroplPromptLearner>;

impl PromptedLearner for HicroplPromptLearner {
    fn n_classes(&self) -> usize {
        HicroplPromptLearner::n_classes(self)
    }

    /// Only the prompts train; the mapper stays a constant on the plain device.
    fn trainable(self) -> Self {
        HicroplPromptLearner {
            text: self.text.into_iter().map(autodiff_param).collect(),
            vision: self.vision.into_iter().map(autodiff_param).collect(),
            ..self
        }
    }

    fn grad_norm(&self, grads: &GradientsParams) -> f64 {
        let all = self.text.iter().chain(&self.vision);
        all.map(|p| squared_norm(grads.get::<2>(p.id))).sum::<f64>().sqrt()
    }

    fn before_forward(self) -> Self {
        self.mapped()
    }
}

/// `1 − mean_r cos(a_r, b_r)` of two row-normalised matrices.
fn one_minus_mean_cosine(a: Tensor<2>, b: Tensor<2>) -> Tensor<1> {
    let rows = a.dims()[0] as f64;
    (a * b).sum().neg() / rows + 1.0
}

/// HiCroPL's objective (module docs).
struct HicroplObjective<'a> {
    loss: &'a dyn Loss,
    lambda: f64,
}

/// The parts of one forward pass.
struct HicroplForward {
    logits: Tensor<2>,
    zero_shot_logits: Tensor<2>,
    distill_text: Tensor<1>,
    distill_image: Tensor<1>,
}

/// The forward pass of a (mapped) learner on `images`.
fn forward(
    learner: &HicroplPromptLearner,
    model: &dyn DeepPromptModel,
    images: Tensor<4>,
) -> Result<HicroplForward, CoopError> {
    let frozen = l2_normalize(model.frozen_image_features(images.clone())?);
    let text = learner.text_features(model)?;
    let image = learner.fused_image_features(model, images, frozen.clone())?;
    let teacher = learner.teacher_text.clone();
    Ok(HicroplForward {
        logits: model.prompt_logits(image.clone(), text.clone()),
        zero_shot_logits: model.prompt_logits(frozen.clone(), teacher.clone()),
        distill_text: one_minus_mean_cosine(text, teacher),
        distill_image: one_minus_mean_cosine(image, frozen),
    })
}

impl ImagePromptObjective<HicroplPromptLearner> for HicroplObjective<'_> {
    fn objective(
        &mut self,
        learner: &HicroplPromptLearner,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
        labels: &[usize],
    ) -> Result<Tensor<1>, CoopError> {
        let f = forward(learner, model, images)?;
        let mut batch = LossBatch::classes(f.logits, labels)?;
        if self.loss.needs_zero_shot() {
            batch = batch.with_zero_shot(f.zero_shot_logits)?;
        }
        Ok(self.loss.forward(&batch)? + (f.distill_text + f.distill_image) * self.lambda)
    }

    fn finish(&self, learner: HicroplPromptLearner) -> Result<HicroplPromptLearner, CoopError> {
        Ok(learner.mapped())
    }
}

/// The distillation terms `(1 − mean cos(text, t̄), 1 − mean cos(image, v̄))` and the logits of a
/// forward pass of `learner` as it is (call it on a mapped learner to follow the reference).
pub fn hicropl_terms(
    learner: &HicroplPromptLearner,
    model: &dyn DeepPromptModel,
    images: Tensor<4>,
) -> Result<(Tensor<2>, f64, f64), CoopError> {
    let f = forward(learner, model, images)?;
    let scalar = |t: Tensor<1>| t.into_data().iter::<f64>().next().unwrap_or(f64::NAN);
    Ok((f.logits, scalar(f.distill_text), scalar(f.distill_image)))
}

/// Trains HiCroPL prompts for `classnames` on the training images (`images`) with `labels`.
///
/// - `model`: the CLIP model on the plain `device`; the prompts train on `device.autodiff()`.
/// - `config`: a [`CoopConfig`] whose method is [`CoopMethod::HiCroPL`]
///   ([`CoopConfig::hicropl_reference`] has the reference values); its `teacher_descriptions`, when
///   given, replace the template teacher.
/// - `loss`, `checkpoint_dir`, `progress`: as [`super::train_coop`].
#[allow(clippy::too_many_arguments)]
pub fn train_hicropl(
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
) -> Result<HicroplOutcome, CoopError> {
    config.validate()?;
    let learner_config = config.hicropl_learner().ok_or_else(|| wrong_method(config))?;
    let teacher = match &config.teacher_descriptions {
        Some(descriptions) => {
            Some(teacher_from_descriptions(model, tokenizer, classnames, descriptions, device)?)
        }
        None => None,
    };
    let learner = learner_config.init_with_teacher(model, tokenizer, classnames, teacher, device)?;
    train_hicropl_learner(model, classnames, learner, images, labels, loss, config, checkpoint_dir, progress)
}

fn wrong_method(config: &CoopConfig) -> CoopError {
    CoopError::Config(format!("train_hicropl needs the hicropl method, not {}", config.method.name()))
}

/// [`train_hicropl`] from an already built learner (given initial values; `config`'s prompt fields
/// are then not used). `learner` must have been built for `classnames` on the plain device.
#[allow(clippy::too_many_arguments)]
pub fn train_hicropl_learner(
    model: &dyn DeepPromptModel,
    classnames: &[String],
    learner: HicroplPromptLearner,
    images: &mut ImageBatches<'_>,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<HicroplOutcome, CoopError> {
    config.validate()?;
    let CoopMethod::HiCroPL { lambda, .. } = config.method else {
        return Err(wrong_method(config));
    };
    let run = ImagePromptRun { model, classnames, labels, config, checkpoint_dir };
    run_image_prompts(&run, learner, &mut HicroplObjective { loss, lambda }, images, progress)
}
