//! What the two CLIP regimes (zero-shot and CoOp) share: loading a fit's image–text model (CLIP, or
//! for CoOp-style methods also SigLIP), tokenizer and single-label dataset, and the fitted model both
//! return — the image tower's cached features scored by a head (a template's class embeddings, or
//! CoOp's learned prompts).

use std::rc::Rc;

use burn::tensor::Device;
use calibra_data::{Dataset, TaskKind};
use calibra_models::clip::open_clip::is_timm_bert_dir;
use calibra_models::clip::{ClipModel, DeepPromptModel, PromptTokenizer, ZeroShotClassifier};
use calibra_models::hf::resolve_checkpoint;
use calibra_run::{ExecError, FitSpec, Fitted, PredictRequest, RunContext};
use calibra_train::coop::CoopOutcome;

use crate::RunExecutor;
use crate::clip_features::{store_image_features, zero_shot_logits};
use crate::zero_shot_model::{ImageTower, ZeroShotModel};

/// A fit's deep-prompt model (CLIP or SigLIP) and tokenizer, and its dataset.
pub struct DeepPromptParts {
    pub model: Box<dyn DeepPromptModel>,
    pub tokenizer: Box<dyn PromptTokenizer>,
    pub dataset: Rc<Dataset>,
}

/// A fit's dataset, which must be single-label (`regime_needs`, e.g. "CoOp needs", starts the error
/// otherwise).
fn single_label_dataset(
    executor: &RunExecutor,
    fit: &FitSpec,
    regime_needs: &str,
) -> Result<Rc<Dataset>, ExecError> {
    let c = &fit.config;
    let dataset = executor.datasets.get(&c.dataset.spec)?;
    if dataset.labels.kind == TaskKind::Multilabel {
        return Err(
            format!("{regime_needs} a single-label dataset; `{}` is multilabel", c.dataset.name).into()
        );
    }
    Ok(dataset)
}

/// Why prompt learning refuses the checkpoint in `dir`, if it does: a method that prompts the image
/// tower (MaPLe, PromptSRC, HiCroPL: implemented for CLIP's ViT and SigLIP's towers) on a
/// BiomedCLIP-style checkpoint (timm trunk + BERT text tower).
pub fn prompt_learning_refusal(
    encoder_name: &str,
    dir: &std::path::Path,
    method: &str,
    prompts_images: bool,
) -> Option<String> {
    if !prompts_images || !is_timm_bert_dir(dir) {
        return None;
    }
    let method = match method {
        "maple" => "MaPLe",
        "promptsrc" => "PromptSRC",
        "hicropl" => "HiCroPL",
        other => other,
    };
    Some(format!(
        "{method} prompts the image tower, which calibra implements for CLIP and SigLIP checkpoints; \
         encoder `{encoder_name}` ({}) is a BiomedCLIP-style OpenCLIP checkpoint (timm ViT trunk + BERT \
         text tower) — CoOp, KgCoOp and ProGrad run on it; leave it out of this method with \
         [regimes.coop] encoders = [...]",
        dir.display()
    ))
}

/// A fit's image–text model for CoOp-style prompt learning (CLIP, BiomedCLIP-style or SigLIP) and its
/// dataset.
pub struct PromptParts {
    pub model: ZeroShotModel,
    pub dataset: Rc<Dataset>,
}

/// Loads the image–text checkpoint of `fit`'s encoder (CLIP, BiomedCLIP-style or SigLIP, with its
/// own tokenizer) for a CoOp-style method and its single-label dataset.
pub fn load_prompt_model(
    executor: &RunExecutor,
    fit: &FitSpec,
    method: &str,
) -> Result<PromptParts, ExecError> {
    let dataset = single_label_dataset(executor, fit, &format!("{method} needs"))?;
    let checkpoint = resolve_checkpoint(&fit.config.encoder.spec)?;
    let model = ZeroShotModel::load(&checkpoint.dir, None, &executor.device)?;
    Ok(PromptParts { model, dataset })
}

/// Loads the CLIP or SigLIP checkpoint of `fit`'s encoder with its tokenizer, and its dataset, which
/// must be single-label, for `method` (MaPLe, PromptSRC, HiCroPL: methods that prompt the image tower
/// too).
pub fn load_deep_prompt_model(
    executor: &RunExecutor,
    fit: &FitSpec,
    method: &str,
) -> Result<DeepPromptParts, ExecError> {
    let checkpoint = resolve_checkpoint(&fit.config.encoder.spec)?;
    if let Some(why) = prompt_learning_refusal(&fit.config.encoder.name, &checkpoint.dir, method, true) {
        return Err(why.into());
    }
    let PromptParts { model, dataset } = load_prompt_model(executor, fit, method)?;
    let (model, tokenizer): (Box<dyn DeepPromptModel>, Box<dyn PromptTokenizer>) = match model {
        ZeroShotModel::Clip(model, tokenizer) => (model, tokenizer),
        ZeroShotModel::Siglip(model, tokenizer) => (model, tokenizer),
        ZeroShotModel::TimmBert(..) => {
            return Err(format!("{method}: {} has no deep-prompt towers", checkpoint.dir.display()).into());
        }
    };
    Ok(DeepPromptParts { model, tokenizer, dataset })
}

/// What turns projected CLIP image features (row-major `[n, dim]`) into logits `[n, K]`.
pub trait FeatureHead {
    fn head_logits(&self, features: &[f32], dim: usize, device: &Device) -> Result<Vec<f64>, ExecError>;
}

impl FeatureHead for ZeroShotClassifier {
    fn head_logits(&self, features: &[f32], dim: usize, device: &Device) -> Result<Vec<f64>, ExecError> {
        zero_shot_logits(self, features, dim, device)
    }
}

impl FeatureHead for CoopOutcome {
    fn head_logits(&self, features: &[f32], _: usize, _: &Device) -> Result<Vec<f64>, ExecError> {
        Ok(self.logits(features)?)
    }
}

/// A CLIP model with a head: predicts on the image features of the request's split and condition,
/// read from the store's feature cache (one image-tower pass per encoder, dataset, split and
/// condition, shared by every template, CoOp fit, loss and seed).
pub struct ClipPredictor<'a, H, M = ClipModel> {
    pub kind: &'static str,
    pub fit: &'a FitSpec,
    pub model: M,
    pub head: H,
    pub device: &'a Device,
}

impl<H: FeatureHead, M: ImageTower> Fitted for ClipPredictor<'_, H, M> {
    fn kind(&self) -> &str {
        self.kind
    }

    fn predict(&self, request: &PredictRequest<'_>, ctx: &mut RunContext<'_>) -> Result<Vec<f64>, ExecError> {
        let pass = (request.split, request.condition, request.data);
        let f = store_image_features(&self.model, self.fit, pass, Some(request.rows), self.device, ctx)?;
        self.head.head_logits(&f.features, f.dim, self.device)
    }
}
