//! MaPLe fits on a CLIP-style checkpoint: unlike CoOp, MaPLe prompts the image tower too, so its
//! fits train on images and predict through their own prompted image tower; nothing is shared
//! through the store's image-feature cache (those features are the unprompted tower's).
//!
//! Training images are the train split's label fraction, decoded and preprocessed with the
//! encoder's preprocessing batch by batch on every step (memory does not grow with the training
//! set; no train-time augmentation). `fits/<fit key>/train/` holds the training checkpoint (a
//! killed fit resumes from it); the predictions of the calibration and test splits under every
//! condition run the prompted towers on the split's images.

use burn::tensor::{Device, Tensor};
use calibra_crs::Condition;
use calibra_data::Split;
use calibra_models::ModelError;
use calibra_models::clip::{ClipModel, MaplePromptLearner, ZeroShotClassifier, l2_normalize};
use calibra_run::{ExecError, FitOutcome, FitSpec, Fitted, PredictRequest, RunContext, split_of};
use calibra_train::coop::{CoopConfig, CoopError, train_maple};
use calibra_train::features::{PreparedPass, image_batch};
use calibra_train::losses::Loss;

use crate::RunExecutor;
use crate::clip_features::{IMAGE_BATCH, check_rows, clip_image_features, image_request, zero_shot_logits};
use crate::clip_fit::{ClipParts, load_clip};
use crate::epoch_log::EpochLog;
use crate::prompts::prompt_classnames;
use crate::zero_shot_model::ImageTower;

/// A CLIP model's image tower with MaPLe's prompts.
struct PromptedImageTower {
    model: ClipModel,
    learner: MaplePromptLearner,
}

impl ImageTower for PromptedImageTower {
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        self.learner.image_features(&self.model, images)
    }
}

/// Trains MaPLe's prompts on the train split's label fraction (resuming from `fits/<key>/train/`).
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &'a FitSpec,
    config: &CoopConfig,
    loss: &dyn Loss,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let device = &executor.device;
    let ClipParts { model, tokenizer, dataset } = load_clip(executor, fit, "MaPLe needs")?;
    let classnames = prompt_classnames(&dataset.labels.names);
    let split = split_of(&dataset, &c.split)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let labels = dataset.row_classes(&train_rows)?;
    let pass =
        PreparedPass::new(image_request(fit, (Split::Train, &Condition::Clean, c.dataset.spec.as_str()))?)?;
    check_rows(&pass, &split.train, "train (clean)", &c.dataset.spec)?;
    ctx.report(&format!("maple: {} training images, decoded per batch", train_rows.len()));
    let mut images = |rows: &[usize]| -> Result<Tensor<4>, CoopError> {
        let rows: Vec<usize> = rows.iter().map(|&r| train_rows[r]).collect();
        let batch = image_batch(&pass.dataset, &rows, &pass.preprocess, pass.request.condition)
            .map_err(|e| CoopError::Data(e.to_string()))?;
        Ok(batch.to_tensor(device))
    };
    let fit_dir = ctx.fit_dir();
    let mut log = EpochLog::new(config.method.name());
    let outcome = train_maple(
        &model,
        &tokenizer,
        &classnames,
        &mut images,
        &labels,
        loss,
        config,
        device,
        Some(&fit_dir.join("train")),
        &mut |s| log.step(s, ctx),
    )?;
    log.resumed(ctx, outcome.resumed_from);
    let text = l2_normalize(outcome.learner.text_features(&model)?);
    let head = ZeroShotClassifier {
        classnames,
        templates: Vec::new(),
        class_embeddings: text,
        scale: model.logit_scale_exp(),
    };
    let tower = PromptedImageTower { model, learner: outcome.learner };
    Ok(FitOutcome::Model(Box::new(MaplePredictor { fit, tower, head, device })))
}

/// A trained MaPLe model: the prompted image tower's features of the request's images, scored by
/// the prompted text tower's class features.
struct MaplePredictor<'a> {
    fit: &'a FitSpec,
    tower: PromptedImageTower,
    head: ZeroShotClassifier,
    device: &'a Device,
}

impl Fitted for MaplePredictor<'_> {
    fn kind(&self) -> &str {
        "maple"
    }

    fn predict(&self, request: &PredictRequest<'_>, ctx: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        let what = format!("{} ({})", request.split.name(), request.condition);
        let pass =
            PreparedPass::new(image_request(self.fit, (request.split, request.condition, request.data))?)?;
        check_rows(&pass, request.rows, &what, request.data)?;
        ctx.report(&format!("maple: prompted image features {what} ({} images)", pass.indices.len()));
        let (features, dim) = clip_image_features(&pass, &self.tower, IMAGE_BATCH, self.device, &mut |_| {})?;
        zero_shot_logits(&self.head, &features, dim, self.device)
    }
}
