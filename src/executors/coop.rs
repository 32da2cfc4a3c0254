//! CoOp fits on a CLIP-style checkpoint (image and text towers): the image tower runs once per split
//! and condition (CoOp never updates it), the context vectors train on those projected features
//! with calibra-train's `train_coop` (SGD + momentum, Dassl's warmup-cosine; CoOp's reference
//! values except the recipe's epochs and lr), and the learned prompts classify the calibration
//! split and the test split under every condition of the fit. Class names are the dataset's label
//! names (underscores read as spaces). Single-label datasets only: CoOp's objective is a softmax
//! over classes.
//!
//! `fits/<fit key>/train/` holds the training checkpoint (a killed fit resumes from it) and
//! `fits/<fit key>/prompt.json` the learned text features (what the fit's predictions use).

use std::collections::HashMap;
use std::path::Path;

use burn::tensor::Device;
use calibra_crs::Condition;
use calibra_data::{Dataset, PreprocessConfig, Target, TaskKind};
use calibra_models::clip::ClipModel;
use calibra_models::hf::resolve_checkpoint;
use calibra_models::tokenizer::ClipTokenizer;
use calibra_run::baseline::{predictions_from_scores, slot_output, split_of};
use calibra_run::{ExecError, FitMethod, FitSpec, RunContext, RunOutput};
use calibra_train::coop::{CoopConfig, CoopOutcome, train_coop};
use calibra_train::features::{FeatureCondition, image_batch, preprocess_for};

use super::adapted::recipe_loss;
use super::{RunExecutor, condition_name};

/// Images per image-tower pass.
const IMAGE_BATCH: usize = 64;

/// The CoOp configuration of a fit.
fn config_of(fit: &FitSpec) -> Result<(CoopConfig, &calibra_run::grid::LossConfig), String> {
    let FitMethod::Coop { n_ctx, ctx_init, csc, class_position, epochs, lr, loss } = &fit.config.method
    else {
        return Err("not a CoOp fit".into());
    };
    let config = CoopConfig {
        n_ctx: *n_ctx as usize,
        ctx_init: ctx_init.clone(),
        csc: *csc,
        class_position: class_position.parse().map_err(|e| format!("class_position: {e}"))?,
        epochs: *epochs as usize,
        lr: *lr,
        seed: fit.config.seed,
        checkpoint_every: 50,
        ..CoopConfig::default()
    };
    config.validate().map_err(|e| e.to_string())?;
    Ok((config, loss))
}

pub(super) fn supports(fit: &FitSpec) -> Result<(), String> {
    let (_, loss) = config_of(fit)?;
    recipe_loss(loss, false)?;
    Ok(())
}

/// Projected image features `[rows.len(), dim]` of `rows` under `condition`.
fn image_features(
    model: &ClipModel,
    dataset: &Dataset,
    rows: &[usize],
    preprocess: &PreprocessConfig,
    condition: FeatureCondition,
    device: &Device,
) -> Result<(Vec<f32>, usize), ExecError> {
    let mut out = Vec::new();
    let mut dim = 0;
    for chunk in rows.chunks(IMAGE_BATCH) {
        let images = image_batch(dataset, chunk, preprocess, condition)?.to_tensor(device);
        let f = model.image_features(images)?;
        dim = f.dims()[1];
        out.extend(f.into_data().convert::<f32>().try_into_vec::<f32>().map_err(|e| format!("{e:?}"))?);
    }
    Ok((out, dim))
}

fn write_prompt(path: &Path, outcome: &CoopOutcome) -> Result<(), ExecError> {
    let json = serde_json::json!({
        "dim": outcome.dim, "scale": outcome.scale, "text_features": outcome.text_features,
        "losses": outcome.losses,
    });
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec(&json)?).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

pub(super) fn execute(
    executor: &RunExecutor,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<Vec<RunOutput>, ExecError> {
    let c = &fit.config;
    let (config, loss) = config_of(fit)?;
    let loss = recipe_loss(loss, false)?;
    let checkpoint = resolve_checkpoint(&c.encoder.spec)?;
    let device = &executor.device;
    let (model, _) = ClipModel::load_checkpoint(&checkpoint, device)?;
    let tokenizer = ClipTokenizer::from_dir(&checkpoint.dir)
        .map_err(|e| format!("{}: the CLIP tokenizer: {e}", checkpoint.dir.display()))?;
    let preprocess = preprocess_for(&checkpoint.dir)?;
    let dataset = executor.dataset(&c.dataset.spec)?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(format!("CoOp needs a single-label dataset; `{}` is multilabel", c.dataset.name).into());
    }
    let classnames: Vec<String> = dataset.labels.names.iter().map(|n| n.replace('_', " ")).collect();
    let split = split_of(&dataset, &c.split)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let labels: Vec<usize> = train_rows
        .iter()
        .map(|&i| match dataset.samples[i].target {
            Target::Class(k) => k,
            Target::Labels(_) => 0,
        })
        .collect();
    ctx.report(&format!("coop: image features of {} training images", train_rows.len()));
    let (train_features, dim) =
        image_features(&model, &dataset, &train_rows, &preprocess, FeatureCondition::Clean, device)?;
    let fit_dir = ctx.fit_dir();
    let mut lines = Vec::new();
    let mut last_epoch = usize::MAX;
    let outcome = train_coop(
        &model,
        &tokenizer,
        &classnames,
        &train_features,
        dim,
        &labels,
        loss.as_ref(),
        &config,
        device,
        Some(&fit_dir.join("train")),
        &mut |s| {
            if s.epoch != last_epoch || s.step == s.total_steps {
                last_epoch = s.epoch;
                lines.push(format!(
                    "coop: epoch {} step {}/{} loss {:.4} lr {:.2e}",
                    s.epoch + 1,
                    s.step,
                    s.total_steps,
                    s.loss,
                    s.lr
                ));
            }
        },
    )?;
    for line in &lines {
        ctx.report(line);
    }
    if let Some(step) = outcome.resumed_from {
        ctx.report(&format!("coop: resumed from the checkpoint at step {step}"));
    }
    std::fs::create_dir_all(&fit_dir).map_err(|e| format!("{}: {e}", fit_dir.display()))?;
    write_prompt(&fit_dir.join("prompt.json"), &outcome)?;

    let scores = |dataset: &Dataset, rows: &[usize], condition| -> Result<Vec<f64>, ExecError> {
        let (features, _) = image_features(&model, dataset, rows, &preprocess, condition, device)?;
        Ok(outcome.logits(&features)?)
    };
    let calibration = predictions_from_scores(
        &dataset,
        &split.calibration,
        scores(&dataset, &split.calibration, FeatureCondition::Clean)?,
    )?;
    let mut calibrators = HashMap::new();
    let mut by_condition: HashMap<String, calibra_predictions::Predictions> = HashMap::new();
    let mut outputs = Vec::new();
    for slot in &ctx.missing.clone() {
        let key = condition_name(&slot.condition);
        if !by_condition.contains_key(&key) {
            ctx.report(&format!("coop: predicting test ({key})"));
            let p = match &slot.condition {
                Condition::Clean => predictions_from_scores(
                    &dataset,
                    &split.test,
                    scores(&dataset, &split.test, FeatureCondition::Clean)?,
                )?,
                Condition::Perturbation { perturbation, severity } => {
                    let condition = FeatureCondition::parse(&format!("{perturbation}:{severity}"))?;
                    predictions_from_scores(&dataset, &split.test, scores(&dataset, &split.test, condition)?)?
                }
                Condition::Shift { target } => {
                    let shifted = executor.shift_dataset(fit, target, &dataset)?;
                    let shifted_split = split_of(&shifted, &c.split)?;
                    let s = scores(&shifted, &shifted_split.test, FeatureCondition::Clean)?;
                    predictions_from_scores(&shifted, &shifted_split.test, s)?
                }
            };
            by_condition.insert(key.clone(), p);
        }
        outputs.push(slot_output(fit, slot, &calibration, by_condition[&key].clone(), &mut calibrators)?);
    }
    Ok(outputs)
}
