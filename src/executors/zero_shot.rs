//! Zero-shot fits on a CLIP-style checkpoint (image and text towers): one fit per prompt template
//! (probe `zero-shot:<ID>`), nothing trained. The template's class embeddings (class names = the
//! dataset's label names, `_` read as a space) classify the projected image features of the
//! calibration split (which fits the post-hoc calibrators) and of the test split under every
//! condition of the fit (clean, perturbations, shift targets), through the same `slot_output` path as
//! every executor. The logits are `calibra zero-shot`'s ([`zero_shot_logits`] on
//! [`clip_image_features`], both shared with it), so a `calibra run` record with calibrator `none`
//! equals `calibra zero-shot`'s record of the same template, split and condition.
//!
//! The image features of a (split, condition) are cached in the store's feature cache
//! (`features/<pass>/<split>@clip-image.safetensors`, fingerprinted by the checkpoint's contents, the
//! preprocessing, the data spec, the split and its sample ids, and the condition), so the templates
//! and seeds of an (encoder, dataset) share one image-tower pass per split and condition: a fit after
//! the first runs only the text tower (K prompts).
//!
//! Single-label datasets only (as `calibra zero-shot`): zero-shot classification is a softmax over
//! class prompts. `supports` refuses a multilabel dataset and a checkpoint that is not a CLIP model
//! before any work starts.

use std::path::Path;

use burn::tensor::Device;
use calibra_crs::Condition;
use calibra_data::{Split, TaskKind};
use calibra_models::clip::{ClipModel, ZeroShotClassifier};
use calibra_models::hf::{read_config, resolve_checkpoint};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_predictions::Predictions;
use calibra_run::run_key::sha256_hex;
use calibra_run::{ExecError, FeaturePass, FitMethod, FitSpec, RunContext, RunOutput};
use calibra_train::features::{FeatureRequest, FeatureSet, PreparedPass};

use super::{
    RunExecutor, condition_name, feature_condition, fill_slots, predictions_from_scores, shift_spec,
};
use crate::cli::zero_shot::{
    IMAGE_BATCH, clip_image_features, mvc_bench_template, prompt_classnames, zero_shot_logits,
};

/// Version of the cached image-feature files' meaning; part of their fingerprint.
const CACHE_VERSION: &str = "calibra-clip-image-features-v1";

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

/// Accepts a zero-shot fit whose template resolves, whose encoder is a CLIP checkpoint
/// (`config.json` `model_type` `clip`) and whose dataset is single-label.
pub(super) fn supports(executor: &RunExecutor, fit: &FitSpec) -> Result<(), String> {
    template_of(fit)?;
    let c = &fit.config;
    let checkpoint =
        resolve_checkpoint(&c.encoder.spec).map_err(|e| format!("encoder `{}`: {e}", c.encoder.name))?;
    let model_type = read_config(&checkpoint.config_path())
        .and_then(|cfg| cfg.model_type())
        .map_err(|e| format!("encoder `{}`: {e}", c.encoder.name))?;
    if model_type != "clip" {
        return Err(format!(
            "zero-shot needs a CLIP checkpoint (image and text towers, config.json model_type `clip`); \
             encoder `{}` ({}) has model_type `{model_type}` — restrict [regimes.zero-shot] with \
             encoders = [...]",
            c.encoder.name,
            checkpoint.dir.display()
        ));
    }
    let dataset =
        executor.dataset(&c.dataset.spec).map_err(|e| format!("dataset `{}`: {e}", c.dataset.name))?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(format!(
            "zero-shot classification needs a single-label dataset; `{}` is multilabel — leave it out \
             with [regimes.zero-shot] datasets = [...]",
            c.dataset.name
        ));
    }
    Ok(())
}

/// Projected CLIP image features of one split of a dataset under a condition, with their rows'
/// dataset and sample indices (the prepared pass's).
struct ImageFeatures {
    pass: PreparedPass,
    features: Vec<f32>,
    dim: usize,
}

/// The projected image features of `split` of `data` under `condition`: read from `out` when it
/// holds this pass's fingerprint, else computed with [`clip_image_features`] and written atomically.
fn cached_image_features(
    model: &ClipModel,
    request: FeatureRequest,
    out: &Path,
    device: &Device,
    ctx: &mut RunContext<'_>,
    what: &str,
) -> Result<ImageFeatures, ExecError> {
    let pass = PreparedPass::new(request)?;
    let fingerprint = sha256_hex(format!("{CACHE_VERSION}\n{}", pass.fingerprint).as_bytes());
    if out.exists()
        && let Ok(set) = FeatureSet::read(out)
        && set.fingerprint == fingerprint
        && let Some((_, rows)) = set.layers.into_iter().next()
    {
        ctx.report(&format!("zero-shot: image features {what} (cached)"));
        return Ok(ImageFeatures { pass, features: rows, dim: set.dim });
    }
    ctx.report(&format!("zero-shot: image features {what} ({} images)", pass.indices.len()));
    let (features, dim) = clip_image_features(&pass, model, IMAGE_BATCH, device, &mut |_| {})?;
    let set = FeatureSet {
        ids: pass.indices.iter().map(|&i| pass.dataset.samples[i].id.clone()).collect(),
        classes: pass.dataset.labels.names.clone(),
        targets: pass.indices.iter().map(|&i| pass.dataset.samples[i].target.clone()).collect(),
        layers: vec![(1.0, features)],
        dim,
        fingerprint,
        splits: None,
    };
    set.write(
        out,
        &[
            ("encoder", pass.request.encoder.clone()),
            ("data", pass.request.data.clone()),
            ("split", pass.request.split.name().to_string()),
            ("condition", pass.request.condition.name()),
            ("features", "CLIP projected image features (image_features, not normalised)".to_string()),
        ],
    )?;
    let FeatureSet { layers, .. } = set;
    let features = layers.into_iter().next().map(|(_, rows)| rows).unwrap_or_default();
    Ok(ImageFeatures { pass, features, dim })
}

pub(super) fn execute(
    executor: &RunExecutor,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<Vec<RunOutput>, ExecError> {
    let c = &fit.config;
    let (id, template) = template_of(fit)?;
    let dataset = executor.dataset(&c.dataset.spec)?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(format!(
            "zero-shot classification needs a single-label dataset; `{}` is multilabel",
            c.dataset.name
        )
        .into());
    }
    let device = &executor.device;
    let checkpoint = resolve_checkpoint(&c.encoder.spec)?;
    let (model, _) = ClipModel::load_checkpoint(&checkpoint, device)?;
    let tokenizer = ClipTokenizer::from_dir(&checkpoint.dir)
        .map_err(|e| format!("{}: the CLIP tokenizer: {e}", checkpoint.dir.display()))?;
    let classnames = prompt_classnames(&dataset.labels.names);
    let classifier =
        ZeroShotClassifier::new(&model, &tokenizer, &classnames, std::slice::from_ref(&template), device)
            .map_err(|e| format!("template {id} {template:?}: {e}"))?;
    let split_config = c.split.config();

    // The predictions of `split` under `condition` (a shift target: that dataset's test split).
    let predict =
        |split: Split, condition: &Condition, ctx: &mut RunContext<'_>| -> Result<Predictions, ExecError> {
            let data = match condition {
                Condition::Shift { target } => {
                    executor.shift_dataset(fit, target, &dataset)?;
                    shift_spec(fit, target)?.to_string()
                }
                _ => c.dataset.spec.clone(),
            };
            let dir = ctx.feature_dir(&FeaturePass {
                encoder: c.encoder.name.clone(),
                dataset: c.dataset.name.clone(),
                condition: condition.clone(),
            });
            let request = FeatureRequest {
                encoder: c.encoder.spec.clone(),
                data,
                split: split.into(),
                split_config,
                condition: feature_condition(condition)?,
                layers: vec![1.0],
                batch_size: IMAGE_BATCH,
            };
            let what = format!("{} ({})", split.name(), condition_name(condition));
            let out = dir.join(format!("{}@clip-image.safetensors", split.name()));
            let f = cached_image_features(&model, request, &out, device, ctx, &what)?;
            let logits = zero_shot_logits(&classifier, &f.features, f.dim, device)?;
            predictions_from_scores(&f.pass.dataset, &f.pass.indices, logits)
        };

    let calibration = predict(Split::Calibration, &Condition::Clean, ctx)?;
    fill_slots(fit, ctx, &calibration, &mut |condition, ctx| predict(Split::Test, condition, ctx))
}

#[cfg(test)]
mod tests {
    use calibra_models::clip::MVC_BENCH_TEMPLATES;
    use calibra_run::recipe::MVC_BENCH_TEMPLATE_COUNT;

    use super::*;

    #[test]
    fn the_recipe_knows_as_many_mvc_bench_templates_as_calibra_models_ships() {
        assert_eq!(MVC_BENCH_TEMPLATE_COUNT, MVC_BENCH_TEMPLATES.len());
        for (i, text) in MVC_BENCH_TEMPLATES.iter().enumerate() {
            assert_eq!(mvc_bench_template(&format!("P{}", i + 1)), Some(*text));
        }
        for id in ["P0", "P8", "P", "p1", "C1", "P1x"] {
            assert_eq!(mvc_bench_template(id), None, "{id}");
        }
    }

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
