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

use std::path::Path;

use burn::tensor::Device;
use calibra_data::{Dataset, PreprocessConfig, TaskKind};
use calibra_models::clip::ClipModel;
use calibra_models::hf::resolve_checkpoint;
use calibra_models::tokenizer::ClipTokenizer;
use calibra_run::{ExecError, FitMethod, FitOutcome, FitSpec, Fitted, PredictRequest, RunContext, split_of};
use calibra_train::coop::{CoopConfig, CoopOutcome, train_coop};
use calibra_train::features::{FeatureCondition, image_batch, preprocess_for};

use crate::RunExecutor;
use crate::adapted::recipe_loss;
use crate::condition::feature_condition;
use crate::epoch_log::EpochLog;
use crate::prompts::prompt_classnames;

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

pub(crate) fn supports(fit: &FitSpec) -> Result<(), String> {
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
    calibra_core::write_bytes_atomically(path, &serde_json::to_vec(&json)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// The CLIP model with the learned prompts' text features.
struct Prompted<'a> {
    model: ClipModel,
    preprocess: PreprocessConfig,
    outcome: CoopOutcome,
    device: &'a Device,
}

impl Fitted for Prompted<'_> {
    fn kind(&self) -> &str {
        "coop"
    }

    fn predict(&self, request: &PredictRequest<'_>, _: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        let condition = feature_condition(request.condition)?;
        let (features, _) = image_features(
            &self.model,
            request.dataset,
            request.rows,
            &self.preprocess,
            condition,
            self.device,
        )?;
        Ok(self.outcome.logits(&features)?)
    }
}

/// Trains the context vectors on the projected image features of the train split's label fraction
/// (resuming from `fits/<key>/train/`) and saves the learned prompts.
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let (config, loss) = config_of(fit)?;
    let loss = recipe_loss(loss, false)?;
    let checkpoint = resolve_checkpoint(&c.encoder.spec)?;
    let device = &executor.device;
    let (model, _) = ClipModel::load_checkpoint(&checkpoint, device)?;
    let tokenizer = ClipTokenizer::from_dir(&checkpoint.dir)
        .map_err(|e| format!("{}: the CLIP tokenizer: {e}", checkpoint.dir.display()))?;
    let preprocess = preprocess_for(&checkpoint.dir)?;
    let dataset = executor.datasets.get(&c.dataset.spec)?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(format!("CoOp needs a single-label dataset; `{}` is multilabel", c.dataset.name).into());
    }
    let classnames = prompt_classnames(&dataset.labels.names);
    let split = split_of(&dataset, &c.split)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let labels = dataset.row_classes(&train_rows)?;
    ctx.report(&format!("coop: image features of {} training images", train_rows.len()));
    let (train_features, dim) =
        image_features(&model, &dataset, &train_rows, &preprocess, FeatureCondition::Clean, device)?;
    let fit_dir = ctx.fit_dir();
    let mut log = EpochLog::new("coop");
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
        &mut |s| log.step(s, ctx),
    )?;
    log.resumed(ctx, outcome.resumed_from);
    std::fs::create_dir_all(&fit_dir).map_err(|e| format!("{}: {e}", fit_dir.display()))?;
    write_prompt(&fit_dir.join("prompt.json"), &outcome)?;

    Ok(FitOutcome::Model(Box::new(Prompted { model, preprocess, outcome, device })))
}
