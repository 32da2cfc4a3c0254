//! PromptSRC training (Khattak et al., ICCV 2023; reference `muzairkhattak/PromptSRC
//! trainers/promptsrc.py`, `PromptSRC.forward_backward`): independent vision-language prompts
//! ([`calibra_models::clip::IvlpPromptLearner`]) on the image-prompt loop
//! ([`super::image_prompts`]), regularised towards the frozen model.
//!
//! One step on a batch of preprocessed images `x_i` with labels `y_i`, with `t̄_k` the frozen text
//! features of class `k` averaged over the 60 templates of
//! [`calibra_models::clip::PROMPTSRC_TEMPLATES`] (textual diversity) and `v̄_i` the frozen image
//! features:
//!
//! ```text
//! w_k = l2n(prompted text features_k),  v_i = l2n(prompted image features_i)
//! z = s · v wᵀ,   z^zs = s · l2n(v̄) l2n(t̄)ᵀ          s = exp(logit_scale)
//! L = loss(z, y [, z^zs])
//!   + λ_t · mean|w − l2n(t̄)| + λ_v · mean|v − l2n(v̄)|                 (L1, mean over all entries)
//!   + Σ_ik softmax(z^zs)_ik (log softmax(z^zs)_ik − log softmax(z)_ik) / (B·K)
//! ```
//!
//! (reference: `F.kl_div(log_softmax(z), log_softmax(z^zs), reduction="sum", log_target=True) /
//! z.numel()`). Losses that need zero-shot logits get `z^zs`. After epoch `e` (1-based) of `N` the
//! parameters are added into the aggregate with weight `g(e) / Σ_{a=1..N} g(a)`, `g` the density of
//! `N(gpa_mean, gpa_std²)` (Gaussian prompt aggregation); the trained prompts are that aggregate. The
//! aggregate is checkpointed with the parameters, so a resumed run ends with the same prompts.

use std::path::Path;

use burn::optim::GradientsParams;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor};
use calibra_models::clip::{
    DeepPromptModel, IvlpPromptLearner, PROMPTSRC_TEMPLATES, PromptTokenizer, fill_template, l2_normalize,
};

use super::config::{CoopConfig, CoopMethod};
use super::error::CoopError;
use super::image_prompts::{
    ImageBatches, ImagePromptObjective, ImagePromptOutcome, ImagePromptRun, PromptedLearner, autodiff_param,
    run_image_prompts, squared_norm,
};
use crate::losses::{Loss, LossBatch};
use crate::training_loop::StepReport;

/// The result of [`train_promptsrc`].
pub type PromptSrcOutcome = ImagePromptOutcome<IvlpPromptLearner>;

impl PromptedLearner for IvlpPromptLearner {
    fn n_classes(&self) -> usize {
        IvlpPromptLearner::n_classes(self)
    }

    fn trainable(self) -> Self {
        IvlpPromptLearner {
            ctx: autodiff_param(self.ctx),
            deep_text: self.deep_text.into_iter().map(autodiff_param).collect(),
            vision_ctx: autodiff_param(self.vision_ctx),
            deep_vision: self.deep_vision.into_iter().map(autodiff_param).collect(),
            ..self
        }
    }

    fn grad_norm(&self, grads: &GradientsParams) -> f64 {
        let all = std::iter::once(&self.ctx)
            .chain(&self.deep_text)
            .chain(std::iter::once(&self.vision_ctx))
            .chain(&self.deep_vision);
        all.map(|p| squared_norm(grads.get::<2>(p.id))).sum::<f64>().sqrt()
    }
}

/// The Gaussian prompt-aggregation weights of epochs `1..=epochs`, normalised to sum to 1.
pub fn gpa_weights(epochs: usize, mean: f64, std: f64) -> Vec<f64> {
    let density =
        |x: f64| (-0.5 * ((x - mean) / std).powi(2)).exp() / (std * (2.0 * std::f64::consts::PI).sqrt());
    let raw: Vec<f64> = (1..=epochs).map(|a| density(a as f64)).collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|g| g / total).collect()
}

/// The frozen text features of the classes, averaged over PromptSRC's templates (unnormalised per
/// template, as the reference) and L2-normalised: `[K, p]` on the plain device.
pub fn template_mean_text_features(
    model: &dyn DeepPromptModel,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    device: &Device,
) -> Result<Tensor<2>, CoopError> {
    let mut sum: Option<Tensor<2>> = None;
    for template in PROMPTSRC_TEMPLATES {
        let ids = classnames
            .iter()
            .map(|c| {
                let text = fill_template(template, &c.replace('_', " "))?;
                tokenizer.zero_shot_ids(&text).map_err(|e| {
                    calibra_models::ModelError::Input(format!("PromptSRC template prompt {text:?}: {e}"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let features = model.text_features_of_ids(&ids, device)?;
        sum = Some(match sum {
            Some(s) => s + features,
            None => features,
        });
    }
    let sum = sum.expect("PROMPTSRC_TEMPLATES is not empty");
    Ok(l2_normalize(sum / PROMPTSRC_TEMPLATES.len() as f64))
}

/// PromptSRC's objective (module docs) and its aggregate.
struct PromptSrcObjective<'a> {
    loss: &'a dyn Loss,
    /// `l2n(t̄)`, `[K, p]`.
    fixed_text: Tensor<2>,
    text_weight: f64,
    image_weight: f64,
    weights: Vec<f64>,
    aggregate: Option<Vec<f64>>,
    device: Device,
}

impl ImagePromptObjective<IvlpPromptLearner> for PromptSrcObjective<'_> {
    fn objective(
        &mut self,
        learner: &IvlpPromptLearner,
        model: &dyn DeepPromptModel,
        images: Tensor<4>,
        labels: &[usize],
    ) -> Result<Tensor<1>, CoopError> {
        let frozen_image = l2_normalize(model.frozen_image_features(images.clone())?);
        let zs_logits = model.prompt_logits(frozen_image.clone(), self.fixed_text.clone());
        let text = l2_normalize(learner.text_features(model)?);
        let image = l2_normalize(learner.image_features(model, images)?);
        let logits = model.prompt_logits(image.clone(), text.clone());
        let [b, k] = logits.dims();

        let mut batch = LossBatch::classes(logits.clone(), labels)?;
        if self.loss.needs_zero_shot() {
            batch = batch.with_zero_shot(zs_logits.clone())?;
        }
        let task = self.loss.forward(&batch)?;
        let l_text = (text - self.fixed_text.clone()).abs().mean() * self.text_weight;
        let l_image = (image - frozen_image).abs().mean() * self.image_weight;
        let log_zs = log_softmax(zs_logits, 1);
        let kl = (log_zs.clone().exp() * (log_zs - log_softmax(logits, 1))).sum() / (b * k) as f64;
        Ok(task + l_text + l_image + kl)
    }

    fn epoch_end(&mut self, learner: &IvlpPromptLearner, epoch: usize) -> Result<(), CoopError> {
        let w = self.weights.get(epoch).copied().ok_or_else(|| {
            CoopError::Config(format!("epoch {epoch} is past the {} aggregation weights", self.weights.len()))
        })?;
        let values = learner.values().flat();
        let aggregate = self.aggregate.get_or_insert_with(|| vec![0.0; values.len()]);
        if aggregate.len() != values.len() {
            return Err(CoopError::Config("the prompt aggregate does not match the learner".into()));
        }
        aggregate.iter_mut().zip(&values).for_each(|(a, &v)| *a += w * f64::from(v));
        Ok(())
    }

    fn state(&self) -> Option<Vec<f64>> {
        self.aggregate.clone()
    }

    fn restore(&mut self, state: Option<Vec<f64>>) -> Result<(), CoopError> {
        self.aggregate = state;
        Ok(())
    }

    fn finish(&self, learner: IvlpPromptLearner) -> Result<IvlpPromptLearner, CoopError> {
        let Some(aggregate) = &self.aggregate else {
            return Ok(learner);
        };
        let flat: Vec<f32> = aggregate.iter().map(|&v| v as f32).collect();
        let values = learner.values().with_flat(&flat)?;
        Ok(learner.with_values(&values, &self.device)?)
    }
}

/// Trains PromptSRC prompts for `classnames` on the training images (`images`) with `labels`.
///
/// - `model`: the CLIP model on the plain `device`; the prompts train on `device.autodiff()`.
/// - `config`: a [`CoopConfig`] whose method is [`CoopMethod::PromptSrc`]
///   ([`CoopConfig::promptsrc_reference`] has the reference values).
/// - `loss`, `checkpoint_dir`, `progress`: as [`super::train_coop`].
#[allow(clippy::too_many_arguments)]
pub fn train_promptsrc(
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
) -> Result<PromptSrcOutcome, CoopError> {
    config.validate()?;
    let learner_config = config.promptsrc_learner().ok_or_else(|| wrong_method(config))?;
    let learner = learner_config.init(model, tokenizer, classnames, device)?;
    train_promptsrc_learner(
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
    CoopError::Config(format!("train_promptsrc needs the promptsrc method, not {}", config.method.name()))
}

/// [`train_promptsrc`] from an already built learner (given initial values; `config`'s prompt
/// fields are then not used). `learner` must have been built for `classnames` on the plain `device`.
#[allow(clippy::too_many_arguments)]
pub fn train_promptsrc_learner(
    model: &dyn DeepPromptModel,
    tokenizer: &dyn PromptTokenizer,
    classnames: &[String],
    learner: IvlpPromptLearner,
    images: &mut ImageBatches<'_>,
    labels: &[usize],
    loss: &dyn Loss,
    config: &CoopConfig,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<PromptSrcOutcome, CoopError> {
    config.validate()?;
    let CoopMethod::PromptSrc { text_weight, image_weight, gpa_mean, gpa_std, .. } = config.method else {
        return Err(wrong_method(config));
    };
    let plain = device.clone().inner();
    let mut objective = PromptSrcObjective {
        loss,
        fixed_text: template_mean_text_features(model, tokenizer, classnames, &plain)?,
        text_weight,
        image_weight,
        weights: gpa_weights(config.epochs, gpa_mean, gpa_std),
        aggregate: None,
        device: plain,
    };
    let run = ImagePromptRun { model, classnames, labels, config, checkpoint_dir };
    run_image_prompts(&run, learner, &mut objective, images, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregation_weights_sum_to_one_and_peak_at_the_mean() {
        let w = gpa_weights(20, 15.0, 1.0);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let peak = w.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
        assert_eq!(peak + 1, 15);
        // Fewer epochs than the mean: the weight falls on the last epochs.
        let w = gpa_weights(5, 15.0, 1.0);
        assert!(w[4] > 0.99, "{w:?}");
    }
}
