//! LoRA and full fine-tuning fits: an encoder with a linear head trained on the label fraction of
//! the train split (calibra-train's `fine_tune`), then predicting the calibration split and the test
//! split under every condition of the fit.
//!
//! The fit's directory in the store (`fits/<fit key>/`) holds `train/` (the training checkpoint:
//! a fit killed mid-training continues from it to the same weights) and the fitted model the user
//! keeps: `adapter/` (LoRA: a PEFT adapter directory, head included as `modules_to_save`) or
//! `model/` (full: the encoder in Hugging Face layout + `classifier.safetensors`).
//!
//! Recipe LoRA targets map onto PEFT module-name suffixes of the transformers 5.x encoders through
//! `calibra_run::names::LORA_TARGETS`.

use calibra_crs::run_record::{TrainingCurve, TrainingEpoch};
use calibra_data::PreprocessConfig;
use calibra_models::hf::resolve_checkpoint;
use calibra_models::lora::{LoraConfig, TargetModules};
use calibra_predictions::{Predictions, Targets};
use calibra_run::grid::LossConfig;
use calibra_run::slot_outputs::predictions_from_scores;
use calibra_run::{ExecError, FitMethod, FitOutcome, FitSpec, Fitted, PredictRequest, RunContext, split_of};
use calibra_train::augment::Augment;
use calibra_train::features::preprocess_for;
use calibra_train::fine_tune::{
    Adaptation, FineTuneRequest, FineTuned, HeadInit, HeldOut, fine_tune, predict_logits, save_adapted,
};
use calibra_train::trainer::TrainConfig;
use calibra_train::{Loss, build_loss};

use crate::RunExecutor;
use crate::condition::feature_condition;
use crate::epoch_log::EpochLog;

/// Images per forward pass when predicting.
const PREDICT_BATCH: usize = 64;

/// The adaptation, optimisation, head initialisation and loss of a LoRA / full fit.
fn plan(fit: &FitSpec) -> Result<(Adaptation, TrainConfig, HeadInit, &LossConfig), String> {
    let seed = fit.config.seed;
    let train_config = |epochs: u32,
                        lr: f64,
                        early_stopping: Option<u32>,
                        batch: (u32, u32),
                        augment: &str|
     -> Result<_, String> {
        Ok(TrainConfig {
            epochs: epochs as usize,
            lr,
            seed,
            early_stopping: early_stopping.map(|p| p as usize),
            batch_size: batch.0 as usize,
            accumulate: batch.1 as usize,
            augment: Augment::parse(augment)?,
            ..TrainConfig::default()
        })
    };
    let head = |name: &str| HeadInit::parse(name).map_err(|e| e.to_string());
    match &fit.config.method {
        FitMethod::Lora {
            r,
            alpha,
            dropout,
            lr,
            epochs,
            targets,
            loss,
            head_init,
            early_stopping,
            batch_size,
            accumulate,
            augment,
        } => {
            let config = LoraConfig {
                r: *r as usize,
                lora_alpha: *alpha,
                lora_dropout: *dropout,
                target_modules: Some(TargetModules::Names(calibra_run::names::peft_targets(targets)?)),
                ..LoraConfig::default()
            };
            config.validate().map_err(|e| e.to_string())?;
            let train = train_config(*epochs, *lr, *early_stopping, (*batch_size, *accumulate), augment)?;
            Ok((Adaptation::Lora(Box::new(config)), train, head(head_init)?, loss))
        }
        FitMethod::Full { lr, epochs, loss, head_init, early_stopping, batch_size, accumulate, augment } => {
            let train = train_config(*epochs, *lr, *early_stopping, (*batch_size, *accumulate), augment)?;
            Ok((Adaptation::Full, train, head(head_init)?, loss))
        }
        _ => Err("not a LoRA / full fit".into()),
    }
}

/// Build a recipe loss.
pub(crate) fn recipe_loss(loss: &LossConfig, multilabel: bool) -> Result<Box<dyn Loss>, String> {
    // The recipe's names are the papers', the registry's the implementations' (`calibra_run::names`).
    let (spec, args) = calibra_run::names::registry_loss(&loss.name, &loss.args, multilabel)?;
    build_loss(&spec, &args).map_err(|e| format!("loss `{}` (registry `{spec}`): {e}", loss.name))
}

/// Checks that need no data: the targets, the LoRA settings and the loss exist.
pub(crate) fn supports(fit: &FitSpec) -> Result<(), String> {
    let (_, _, _, loss) = plan(fit)?;
    recipe_loss(loss, false)?;
    Ok(())
}

/// An encoder with its head, fine-tuned (LoRA or full).
struct FineTunedModel<'a> {
    executor: &'a RunExecutor,
    kind: &'static str,
    fitted: FineTuned,
    preprocess: PreprocessConfig,
    training: TrainingCurve,
}

impl Fitted for FineTunedModel<'_> {
    fn kind(&self) -> &str {
        self.kind
    }

    fn predict(&self, request: &PredictRequest<'_>, _: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        Ok(predict_logits(
            &self.fitted.model,
            request.dataset,
            request.rows,
            &self.preprocess,
            feature_condition(request.condition)?,
            PREDICT_BATCH,
            &self.executor.device,
        )?)
    }

    fn training(&self) -> Option<TrainingCurve> {
        Some(self.training.clone())
    }
}

/// Fine-tunes the fit's encoder with a linear head (resuming from `fits/<key>/train/`) and saves the
/// fitted adapter or model.
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let (adaptation, train, head_init, loss) = plan(fit)?;
    let checkpoint = resolve_checkpoint(&c.encoder.spec)?.dir;
    let preprocess = preprocess_for(&checkpoint)?;
    let dataset = executor.datasets.get(&c.dataset.spec)?;
    let loss = recipe_loss(loss, dataset.labels.kind == calibra_data::TaskKind::Multilabel)?;
    let split = split_of(&dataset, &c.split)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let fit_dir = ctx.fit_dir();
    let kind = adaptation.name();
    ctx.report(&format!("{kind}: training on {} images", train_rows.len()));
    ctx.report(&format!(
        "{kind}: first the initial weights' loss (one forward pass over the {} training and {} calibration \
         images: the training curve's epoch 0)",
        train_rows.len(),
        split.calibration.len()
    ));
    let mut log = EpochLog::new(kind);
    // The calibration split's macro AUROC over the classes (labels) it can score: a small
    // calibration split often lacks a rare class, which makes the records' strict macro AUROC
    // undefined, and the curve's AUROC must still say whether the model learned.
    let score = |logits: &[f64]| -> Option<f64> {
        let p = predictions_from_scores(&dataset, &split.calibration, logits.to_vec()).ok()?;
        held_out_auroc(&p)
    };
    let fitted = fine_tune(
        FineTuneRequest {
            checkpoint: &checkpoint,
            preprocess: &preprocess,
            dataset: &dataset,
            train_rows: &train_rows,
            adaptation,
            train,
            head_init,
            held_out: Some(HeldOut { rows: &split.calibration, score: &score }),
        },
        loss.as_ref(),
        &executor.device,
        Some(&fit_dir.join("train")),
        &mut |s| log.step(s, ctx),
    )?;
    log.resumed(ctx, fitted.resumed_from);
    log.unreadable(ctx, &fitted.unreadable);
    let model_dir =
        fit_dir.join(if matches!(fitted.adaptation, Adaptation::Lora(_)) { "adapter" } else { "model" });
    save_adapted(&fitted, &model_dir)?;

    let training = training_curve(&fitted, head_init);
    if let Some(last) = training.epochs.iter().find(|e| e.epoch == training.selected_epoch) {
        ctx.report(&format!(
            "{kind}: epoch {} selected (calibration loss {:.4}, AUROC {})",
            last.epoch,
            last.calibration_loss,
            last.calibration_auroc.map_or("-".into(), |a| format!("{a:.3}"))
        ));
    }
    Ok(FitOutcome::Model(Box::new(FineTunedModel { executor, kind, fitted, preprocess, training })))
}

/// The run record's `training` field of a fit: its held-out curve, the epoch whose weights predict.
fn training_curve(fitted: &FineTuned, head_init: HeadInit) -> TrainingCurve {
    let epochs: Vec<TrainingEpoch> = fitted
        .curve
        .iter()
        .map(|e| TrainingEpoch {
            epoch: e.epoch,
            train_loss: e.train_loss,
            calibration_loss: e.calibration_loss,
            calibration_auroc: e.calibration_auroc,
        })
        .collect();
    let last = epochs.last().map_or(0, |e| e.epoch);
    TrainingCurve {
        epochs,
        selected_epoch: fitted.best_epoch.unwrap_or(last),
        stopped_early: fitted.stopped_early,
        head_init: Some(head_init.name().to_string()),
    }
}

/// Macro AUROC of held-out predictions over the classes (labels) with both positives and negatives
/// (calibra-metrics' `SkipUndefined` policy); `None` when no class is defined.
fn held_out_auroc(p: &Predictions) -> Option<f64> {
    use calibra_metrics::{UndefinedPolicy, macro_auroc_ovr, multilabel_macro_auroc};
    let probs = p.probabilities();
    let k = p.num_classes();
    let average = match p.targets() {
        Targets::Classes(labels) => {
            macro_auroc_ovr(&probs, k, labels, UndefinedPolicy::SkipUndefined).ok()?
        }
        Targets::Labels(values) => multilabel_macro_auroc(&probs, k, values, UndefinedPolicy::SkipUndefined),
    };
    (average.defined > 0 && average.mean.is_finite()).then_some(average.mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recipe_loss_builds_in_calibra_train() {
        for l in calibra_run::names::LOSSES {
            let args = l.args.iter().map(|(a, _)| (a.to_string(), 0.1)).collect();
            for multilabel in [false, true] {
                let (spec, a) = calibra_run::names::registry_loss(l.name, &args, multilabel).unwrap();
                if let Err(e) = build_loss(&spec, &a) {
                    panic!("loss `{}` (registry `{spec}` {a:?}): {e}", l.name);
                }
            }
        }
    }
}

#[cfg(test)]
mod defaults {
    /// The recipe's default batch (left out of fit keys) is the trainer's default.
    #[test]
    fn the_recipe_default_batch_is_the_trainers() {
        let trainer = calibra_train::trainer::TrainConfig::default();
        assert_eq!(calibra_run::recipe::DEFAULT_TRAIN_BATCH as usize, trainer.batch_size);
        assert_eq!(trainer.accumulate, 1);
        let names: Vec<&str> =
            [calibra_train::augment::Augment::None, calibra_train::augment::Augment::CropFlip]
                .iter()
                .map(|a| a.name())
                .collect();
        assert_eq!(calibra_run::recipe::AUGMENTS, names.as_slice());
    }
}
