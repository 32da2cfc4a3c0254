//! Zero-shot fits on a CLIP-style checkpoint (image and text towers): one fit per prompt template
//! (probe `zero-shot:<ID>`), nothing trained. The template's class embeddings (class names = the
//! dataset's label names, `_` read as a space) classify the projected image features of the
//! calibration split (which fits the post-hoc calibrators) and of the test split under every
//! condition of the fit (clean, perturbations, shift targets), predicted by calibra-run's runner as
//! every fitted model is. The logits are `calibra zero-shot`'s ([`zero_shot_logits`] on
//! [`clip_image_features`], both shared with it), so a `calibra run` record with calibrator `none`
//! equals `calibra zero-shot`'s record of the same template, split and condition.
//!
//! [`zero_shot_logits`]: crate::clip_features::zero_shot_logits
//! [`clip_image_features`]: crate::clip_features::clip_image_features
//!
//! The image features of a (split, condition) are cached in the store's feature cache
//! (`features/<pass>/<split>@clip-image.safetensors`, fingerprinted by the checkpoint's contents, the
//! preprocessing, the data spec, the split and its sample ids, and the condition), so the templates
//! and seeds of an (encoder, dataset) share one image-tower pass per split and condition: a fit after
//! the first runs only the text tower (K prompts).
//!
//! Single-label datasets only (as `calibra zero-shot`): zero-shot classification is a softmax over
//! class prompts. `supports` refuses a multilabel dataset and a checkpoint that is neither a CLIP
//! nor a SigLIP model before any work starts. A SigLIP checkpoint's logits are its sigmoid logits
//! `exp(logit_scale)·cos + logit_bias`, read as logits by the evaluator (see
//! [`crate::zero_shot_model`]).

use calibra_data::TaskKind;
use calibra_models::hf::resolve_checkpoint;
use calibra_run::{ExecError, FitMethod, FitOutcome, FitSpec, RunContext};

use crate::RunExecutor;
use crate::clip_fit::ClipPredictor;
use crate::prompts::{mvc_bench_template, prompt_classnames};
use crate::zero_shot_model::{ZERO_SHOT_MODEL_TYPES, ZeroShotModel, model_type_of};

/// The template id and text of a zero-shot fit.
fn template_of(fit: &FitSpec) -> Result<(&str, String), String> {
    let FitMethod::ZeroShot { id, text } = &fit.config.method else {
        return Err("not a zero-shot fit".into());
    };
    let text = match text {
        Some(t) => t.clone(),
        None => mvc_bench_template(id)
            .ok_or_else(|| format!("`{id}` is not an MVC-Bench template id (P1…P7)"))?
            .to_string(),
    };
    Ok((id, text))
}

/// Accepts a zero-shot fit whose template resolves, whose encoder is a CLIP or SigLIP checkpoint
/// (`config.json` `model_type` `clip` or `siglip`, or a native OpenCLIP `open_clip_config.json`) and
/// whose dataset is single-label.
pub(crate) fn supports(executor: &RunExecutor, fit: &FitSpec) -> Result<(), String> {
    template_of(fit)?;
    let c = &fit.config;
    let checkpoint =
        resolve_checkpoint(&c.encoder.spec).map_err(|e| format!("encoder `{}`: {e}", c.encoder.name))?;
    let model_type =
        model_type_of(&checkpoint.dir).map_err(|e| format!("encoder `{}`: {e}", c.encoder.name))?;
    if !ZERO_SHOT_MODEL_TYPES.contains(&model_type.as_str()) {
        return Err(format!(
            "zero-shot needs a CLIP or SigLIP checkpoint (image and text towers, config.json model_type \
             `clip` or `siglip`); encoder `{}` ({}) has model_type `{model_type}` — restrict [regimes.zero-shot] with \
             encoders = [...]",
            c.encoder.name,
            checkpoint.dir.display()
        ));
    }
    let dataset =
        executor.datasets.get(&c.dataset.spec).map_err(|e| format!("dataset `{}`: {e}", c.dataset.name))?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(format!(
            "zero-shot classification needs a single-label dataset; `{}` is multilabel — leave it out \
             with [regimes.zero-shot] datasets = [...]",
            c.dataset.name
        ));
    }
    Ok(())
}

/// Loads the CLIP or SigLIP model and embeds the fit's template for every class (nothing is trained).
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &'a FitSpec,
    _: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let (id, template) = template_of(fit)?;
    let device = &executor.device;
    let c = &fit.config;
    let dataset = executor.datasets.get(&c.dataset.spec)?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(format!(
            "zero-shot classification needs a single-label dataset; `{}` is multilabel",
            c.dataset.name
        )
        .into());
    }
    let checkpoint = resolve_checkpoint(&c.encoder.spec)?;
    let model = ZeroShotModel::load(&checkpoint.dir, None, device)?;
    let classnames = prompt_classnames(&dataset.labels.names);
    let head = model
        .head(&classnames, std::slice::from_ref(&template), device)
        .map_err(|e| format!("template {id} {template:?}: {e}"))?;
    Ok(FitOutcome::Model(Box::new(ClipPredictor { kind: "zero-shot", fit, model, head, device })))
}

#[cfg(test)]
mod tests {
    use calibra_models::clip::MVC_BENCH_TEMPLATES;

    use super::*;

    #[test]
    fn a_fit_resolves_its_template_from_every_recipe_form() {
        let text = r#"seeds = [0]
label_fractions = [1.0]
calibrators = ["none"]
[[encoders]]
source = "hf:org/clip"
[[datasets]]
spec = "synth:derm?n=40"
[regimes.zero-shot]
templates = ["P3", "an image of {}", "P7"]
"#;
        let recipe =
            calibra_run::Recipe::parse(text, "r.toml", calibra_run::ValidationOptions { check_paths: false })
                .expect("valid recipe");
        let fits = calibra_run::expand(&recipe);
        let resolved: Vec<(String, String)> =
            fits.iter().map(|f| template_of(f).map(|(id, t)| (id.to_string(), t)).unwrap()).collect();
        assert_eq!(
            resolved,
            [
                ("P3".to_string(), MVC_BENCH_TEMPLATES[2].to_string()),
                ("C1".to_string(), "an image of {}".to_string()),
                ("P7".to_string(), MVC_BENCH_TEMPLATES[6].to_string()),
            ]
        );
    }
}
