//! MaPLe, PromptSRC and HiCroPL fits on a CLIP or SigLIP checkpoint: unlike CoOp, these methods prompt the image
//! tower too, so their fits train on images and predict through their own prompted image tower;
//! nothing is shared through the store's image-feature cache (those features are the unprompted
//! tower's).
//!
//! Training images are the train split's label fraction, decoded and preprocessed with the
//! encoder's preprocessing batch by batch on every step (memory does not grow with the training
//! set), then augmented as the fit's `augment` says (calibra-train's image-prompt loop does it). `fits/<fit key>/train/` holds the training checkpoint (a
//! killed fit resumes from it); the predictions of the calibration and test splits under every
//! condition run the prompted towers on the split's images.

use std::cell::RefCell;
use std::collections::BTreeMap;

use burn::tensor::{Device, Tensor};
use calibra_crs::Condition;
use calibra_data::Split;
use calibra_models::ModelError;
use calibra_models::clip::{
    DeepPromptModel, HicroplPromptLearner, IvlpPromptLearner, MaplePromptLearner, ZeroShotClassifier,
    l2_normalize,
};
use calibra_run::{ExecError, FitOutcome, FitSpec, Fitted, PredictRequest, RunContext, split_of};
use calibra_train::coop::{
    CoopConfig, CoopError, CoopMethod, PromptImages, train_hicropl, train_maple, train_promptsrc,
};
use calibra_train::features::{PreparedPass, readable_image_batch};
use calibra_train::losses::Loss;
use calibra_train::train_images::UnreadableImage;

use crate::RunExecutor;
use crate::clip_features::{IMAGE_BATCH, check_rows, clip_image_features, image_request, zero_shot_logits};
use crate::clip_fit::{DeepPromptParts, load_deep_prompt_model};
use crate::epoch_log::EpochLog;
use crate::prompts::prompt_classnames;
use crate::zero_shot_model::ImageTower;

/// Trained prompts of one of the methods.
enum TrainedPrompts {
    Maple(MaplePromptLearner),
    PromptSrc(IvlpPromptLearner),
    /// HiCroPL's features are fused with the frozen towers' (the text with its teacher features,
    /// the image with the frozen image features).
    HiCroPL(Box<HicroplPromptLearner>),
}

impl TrainedPrompts {
    fn text_features(&self, model: &dyn DeepPromptModel) -> Result<Tensor<2>, ModelError> {
        match self {
            TrainedPrompts::Maple(l) => l.text_features(model),
            TrainedPrompts::PromptSrc(l) => l.text_features(model),
            TrainedPrompts::HiCroPL(l) => l.text_features(model),
        }
    }
}

/// A CLIP or SigLIP model's image tower with a method's prompts.
struct PromptedImageTower {
    model: Box<dyn DeepPromptModel>,
    prompts: TrainedPrompts,
}

impl ImageTower for PromptedImageTower {
    fn image_features(&self, images: Tensor<4>) -> Result<Tensor<2>, ModelError> {
        match &self.prompts {
            TrainedPrompts::Maple(l) => l.image_features(self.model.as_ref(), images),
            TrainedPrompts::PromptSrc(l) => l.image_features(self.model.as_ref(), images),
            TrainedPrompts::HiCroPL(l) => l.image_features(self.model.as_ref(), images),
        }
    }
}

/// Trains the method's prompts on the train split's label fraction (resuming from
/// `fits/<key>/train/`).
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &'a FitSpec,
    config: &CoopConfig,
    loss: &dyn Loss,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let device = &executor.device;
    let method = config.method.name();
    let DeepPromptParts { model: boxed_model, tokenizer, dataset } =
        load_deep_prompt_model(executor, fit, method)?;
    let (model, tokenizer) = (boxed_model.as_ref(), tokenizer.as_ref());
    let classnames = prompt_classnames(&dataset.labels.names);
    let split = split_of(&dataset, &c.split)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let labels = dataset.row_classes(&train_rows)?;
    let pass =
        PreparedPass::new(image_request(fit, (Split::Train, &Condition::Clean, c.dataset.spec.as_str()))?)?;
    check_rows(&pass, &split.train, "train (clean)", &c.dataset.spec)?;
    ctx.report(&format!("{method}: {} training images, decoded per batch", train_rows.len()));
    // Training images that cannot be read, by training row: left out of their batches under the
    // dataset's `on_bad_image=skip` (under `fail` the batch is the error naming the file).
    let unreadable = RefCell::new(BTreeMap::<usize, UnreadableImage>::new());
    let mut images = |rows: &[usize]| -> Result<PromptImages, CoopError> {
        let samples: Vec<usize> = rows.iter().map(|&r| train_rows[r]).collect();
        let read = readable_image_batch(&pass.dataset, &samples, &pass.preprocess, pass.request.condition)
            .map_err(|e| CoopError::Data(e.to_string()))?;
        let kept: Vec<usize> = read.kept.iter().map(|&p| rows[p]).collect();
        for (p, s) in read.skipped {
            let image = UnreadableImage { row: rows[p], sample: s.location, reason: s.reason };
            unreadable.borrow_mut().entry(rows[p]).or_insert(image);
        }
        let images = (!kept.is_empty()).then(|| read.batch.to_tensor(device));
        Ok(PromptImages { rows: kept, images })
    };
    check_descriptions_cover(config, &classnames, fit)?;
    let checkpoint_dir = ctx.fit_dir().join("train");
    let mut log = EpochLog::new(method);
    let (prompts, resumed_from) = match config.method {
        CoopMethod::Maple { .. } => {
            let out = train_maple(
                model,
                tokenizer,
                &classnames,
                &mut images,
                &labels,
                loss,
                config,
                device,
                Some(&checkpoint_dir),
                &mut |s| log.step(s, ctx),
            )?;
            (TrainedPrompts::Maple(out.learner), out.resumed_from)
        }
        CoopMethod::PromptSrc { .. } => {
            let out = train_promptsrc(
                model,
                tokenizer,
                &classnames,
                &mut images,
                &labels,
                loss,
                config,
                device,
                Some(&checkpoint_dir),
                &mut |s| log.step(s, ctx),
            )?;
            (TrainedPrompts::PromptSrc(out.learner), out.resumed_from)
        }
        CoopMethod::HiCroPL { .. } => {
            let out = train_hicropl(
                model,
                tokenizer,
                &classnames,
                &mut images,
                &labels,
                loss,
                config,
                device,
                Some(&checkpoint_dir),
                &mut |s| log.step(s, ctx),
            )?;
            (TrainedPrompts::HiCroPL(Box::new(out.learner)), out.resumed_from)
        }
        _ => return Err(format!("{method} does not prompt the image tower; it is a CoOp-style fit").into()),
    };
    log.resumed(ctx, resumed_from);
    log.unreadable(ctx, &unreadable.into_inner().into_values().collect::<Vec<_>>());
    let head = ZeroShotClassifier {
        classnames,
        templates: Vec::new(),
        class_embeddings: l2_normalize(prompts.text_features(model)?),
        scale: model.logit_scale_exp(),
        bias: model.logit_bias(),
    };
    let tower = PromptedImageTower { model: boxed_model, prompts };
    Ok(FitOutcome::Model(Box::new(PromptedPredictor { kind: method, fit, tower, head, device })))
}

/// Checks, before any training, that HiCroPL's descriptions file (if the fit has one) describes every
/// class of the dataset (looked up with `_` read as a space, as the reference and
/// `teacher_from_descriptions` do); the error names the file and the first class it lacks.
fn check_descriptions_cover(
    config: &CoopConfig,
    classnames: &[String],
    fit: &FitSpec,
) -> Result<(), ExecError> {
    let (Some(descriptions), Some(file)) =
        (&config.teacher_descriptions, crate::coop::descriptions_file(fit))
    else {
        return Ok(());
    };
    match classnames.iter().map(|c| c.replace('_', " ")).find(|c| !descriptions.contains_key(c)) {
        None => Ok(()),
        Some(missing) => Err(format!(
            "HiCroPL descriptions file `{file}`: no sentences for class {missing:?} of dataset `{}` (the \
             file describes {} classes: {}{})",
            fit.config.dataset.name,
            descriptions.len(),
            descriptions.keys().take(8).map(String::as_str).collect::<Vec<_>>().join(", "),
            if descriptions.len() > 8 { ", …" } else { "" }
        )
        .into()),
    }
}

/// A trained image-prompt model: the prompted image tower's features of the request's images,
/// scored by the prompted text tower's class features.
struct PromptedPredictor<'a> {
    kind: &'static str,
    fit: &'a FitSpec,
    tower: PromptedImageTower,
    head: ZeroShotClassifier,
    device: &'a Device,
}

impl Fitted for PromptedPredictor<'_> {
    fn kind(&self) -> &str {
        self.kind
    }

    fn predict(&self, request: &PredictRequest<'_>, ctx: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        let what = format!("{} ({})", request.split.name(), request.condition);
        let pass =
            PreparedPass::new(image_request(self.fit, (request.split, request.condition, request.data))?)?;
        check_rows(&pass, request.rows, &what, request.data)?;
        ctx.report(&format!("{}: prompted image features {what} ({} images)", self.kind, pass.indices.len()));
        let (features, dim) = clip_image_features(&pass, &self.tower, IMAGE_BATCH, self.device, &mut |_| {})?;
        zero_shot_logits(&self.head, &features, dim, self.device)
    }
}
