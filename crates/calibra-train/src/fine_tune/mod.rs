//! Adapting an encoder to a task end to end: images of a dataset's train rows are decoded and
//! preprocessed (as the checkpoint's `preprocessor_config.json` says; see [`train_set`] for when
//! they are held in memory and when they are streamed batch by batch), an [`EncoderClassifier`]
//! (encoder + linear head) is made trainable by LoRA, in full, or head-only, the [`train`] loop fits
//! it (resumable from its checkpoint directory), and the fitted model predicts logits for any split
//! under any test condition. [`save_adapted`] writes what a user takes away: a PEFT adapter directory
//! for LoRA (the head as `modules_to_save = ["classifier"]`, on the feature the family's
//! `<Family>ForImageClassification` classifies, so `PeftModel.from_pretrained` on that model loads it
//! and gives the same logits; on a timm ViT `["head"]` on timm's own pre-logits feature, for
//! `timm.create_model`), or the whole encoder in Hugging Face layout plus the head.
//!
mod classifier;
mod probe_head;
mod streamed_rows;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::module::Module;
use burn::tensor::Device;
use calibra_data::{Dataset, PreprocessConfig, RowTargets};
use calibra_models::Encoder;
use calibra_models::lora::extract_adapter;
use calibra_models::lora::peft::{AdapterTensor, PeftAdapter};

pub use classifier::{Adaptation, EncoderClassifier};

use crate::features::{FeatureCondition, FeatureError, ImageBatch, image_batch};
use crate::losses::Loss;
use crate::train_images::{ReadAhead, TrainImages, UnreadableImage};
use crate::trainer::{StepReport, TrainConfig, TrainSet, TrainTargets, TrainerError, train_monitored};
use crate::training_curve::{EpochRecord, HeldOutScore, Monitor};

/// Errors of fine-tuning, each naming what is at fault.
#[derive(Debug, thiserror::Error)]
pub enum FineTuneError {
    #[error(transparent)]
    Features(#[from] FeatureError),
    #[error(transparent)]
    Trainer(#[from] TrainerError),
    #[error(transparent)]
    Model(#[from] calibra_models::ModelError),
    #[error(transparent)]
    Lora(#[from] calibra_models::lora::LoraError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

/// What to fine-tune on what.
pub struct FineTuneRequest<'a> {
    /// A resolved checkpoint directory (`config.json` + `model.safetensors`).
    pub checkpoint: &'a Path,
    /// The encoder's preprocessing (see [`crate::features::preprocess_for`]).
    pub preprocess: &'a PreprocessConfig,
    pub dataset: &'a Dataset,
    /// Dataset indices to train on (a label fraction of the train split).
    pub train_rows: &'a [usize],
    pub adaptation: Adaptation,
    /// Optimisation; its `seed` also seeds the head and the LoRA A factors.
    pub train: TrainConfig,
    /// Where the head starts.
    pub head_init: HeadInit,
    /// The held-out rows evaluated after every epoch (the calibration split), with the score of their
    /// logits; needed for early stopping.
    pub held_out: Option<HeldOut<'a>>,
}

/// How the linear head is initialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeadInit {
    /// `torch.nn.Linear`'s uniform ±1/√d draw (seeded).
    #[default]
    Random,
    /// LP-FT: the frozen `logistic` probe fitted on the training images' features (see
    /// `probe_head`), so fine-tuning starts where the frozen regime ends.
    Probe,
}

impl HeadInit {
    /// `random` or `probe` (the recipe's `head_init`).
    pub fn name(self) -> &'static str {
        match self {
            HeadInit::Random => "random",
            HeadInit::Probe => "probe",
        }
    }

    /// Parses a recipe's `head_init`.
    pub fn parse(name: &str) -> Result<Self, FineTuneError> {
        match name {
            "random" => Ok(HeadInit::Random),
            "probe" => Ok(HeadInit::Probe),
            other => Err(FineTuneError::Invalid(format!(
                "unknown head_init `{other}`; expected `probe` or `random`"
            ))),
        }
    }
}

/// Held-out rows of the dataset monitored during training.
pub struct HeldOut<'a> {
    /// Dataset indices (clean images).
    pub rows: &'a [usize],
    /// Score of their logits, row-major `[rows.len(), K]` (macro AUROC in `calibra run`).
    pub score: &'a HeldOutScore<'a>,
}

/// A fitted model and how it was fitted.
#[derive(Debug)]
pub struct FineTuned {
    /// The checkpoint directory the encoder came from (recorded in a LoRA adapter's config as
    /// `base_model_name_or_path`).
    pub checkpoint: PathBuf,
    /// The model on the plain (inference) device, dropout off.
    pub model: EncoderClassifier,
    pub adaptation: Adaptation,
    /// LoRA-wrapped module names (PEFT names), empty for full / head.
    pub wrapped: Vec<String>,
    /// Loss of every optimisation step.
    pub losses: Vec<f64>,
    pub total_steps: usize,
    /// The step the run resumed from, if a checkpoint was found.
    pub resumed_from: Option<usize>,
    /// The held-out curve (epoch 0 = the initial weights), empty without `held_out`.
    pub curve: Vec<EpochRecord>,
    /// With early stopping: the epoch whose weights `model` holds.
    pub best_epoch: Option<usize>,
    pub stopped_early: bool,
    /// Training images left out because they could not be read (`on_bad_image=skip`), each once.
    pub unreadable: Vec<UnreadableImage>,
}

/// The environment variable that sets how many MiB of preprocessed training images
/// [`train_set`] holds in memory (default [`IN_MEMORY_LIMIT_MIB`]; `0` streams every training set).
pub const IN_MEMORY_LIMIT_VAR: &str = "CALIBRA_TRAIN_IN_MEMORY_MIB";

/// Training sets whose preprocessed images (f32, `c·h·w·4` bytes each) fit in this many MiB are held
/// in memory; larger ones are streamed. 64 MiB: about 100 images at 224 px, 5,000 at 32 px (the
/// quickstart's). Streaming costs little (the next step's images decode while this one computes: at most
/// 5 % more wall time on a 2-layer ViT at 224 px, where decoding weighs most), and memory then stays flat:
/// 263 MiB peak at both 600 and 2,400 training images at 224 px, against 1,950 MiB held (ISIC 2019's
/// 25,331 images at 224 px would take 14.2 GiB held).
pub const IN_MEMORY_LIMIT_MIB: usize = 64;

/// The in-memory limit in bytes: [`IN_MEMORY_LIMIT_VAR`] when set, else [`IN_MEMORY_LIMIT_MIB`].
fn in_memory_limit() -> Result<usize, FineTuneError> {
    match std::env::var(IN_MEMORY_LIMIT_VAR) {
        Ok(v) => v.trim().parse::<usize>().map(|mib| mib.saturating_mul(1 << 20)).map_err(|_| {
            FineTuneError::Invalid(format!(
                "{IN_MEMORY_LIMIT_VAR}={v:?}: expected a whole number of MiB (0 streams every training set)"
            ))
        }),
        Err(_) => Ok(IN_MEMORY_LIMIT_MIB << 20),
    }
}

/// The training set of `rows`: clean images, preprocessed, with the dataset's targets.
///
/// When the preprocessed images fit in the in-memory limit ([`IN_MEMORY_LIMIT_MIB`], or
/// [`IN_MEMORY_LIMIT_VAR`]) they are decoded once and held; otherwise they are streamed: each batch's
/// images are decoded and preprocessed (in parallel) when the trainer asks for them and dropped after
/// the step, so memory holds one batch of pixels plus the dataset's per-sample metadata, whatever the
/// dataset's size. Both give the same pixels, so a run trains to the same bits either way; streaming
/// re-decodes every epoch. An image that cannot be decoded is an error naming it (held: when the set
/// is built; streamed: at the step that needs it, and the run resumes from its last checkpoint), or
/// is left out of the batches under the dataset's `on_bad_image=skip` ([`TrainSet::read`]).
pub fn train_set(
    dataset: &Dataset,
    rows: &[usize],
    preprocess: &PreprocessConfig,
) -> Result<TrainSet, FineTuneError> {
    train_set_within(dataset, rows, preprocess, in_memory_limit()?)
}

/// [`train_set`] with the in-memory limit given in bytes (`0` streams, `usize::MAX` holds).
pub fn train_set_within(
    dataset: &Dataset,
    rows: &[usize],
    preprocess: &PreprocessConfig,
    in_memory_limit_bytes: usize,
) -> Result<TrainSet, FineTuneError> {
    if rows.is_empty() {
        return Err(FineTuneError::Invalid(format!("dataset `{}`: no training rows", dataset.name)));
    }
    let (_, image_shape) =
        streamed_rows::first_readable(dataset, rows, preprocess).map_err(FineTuneError::Invalid)?;
    let bytes = rows.len().saturating_mul(image_shape.iter().product::<usize>()).saturating_mul(4);
    let images = if bytes <= in_memory_limit_bytes {
        let all: Vec<usize> = (0..rows.len()).collect();
        let read = streamed_rows::read_rows(dataset, rows, &all, preprocess, image_shape)
            .map_err(FineTuneError::Invalid)?;
        TrainImages::InMemory { pixels: read.pixels, unreadable: read.unreadable }
    } else {
        let source = streamed_rows::DatasetRows::new(dataset, rows, preprocess, image_shape);
        TrainImages::Streamed(Arc::new(source), ReadAhead::default())
    };
    let k = dataset.labels.len();
    let targets = match dataset.row_targets(rows).map_err(|e| FineTuneError::Invalid(e.to_string()))? {
        RowTargets::Classes(classes) => TrainTargets::Classes(classes),
        RowTargets::Labels(table) => TrainTargets::Multilabel {
            codes: table.iter().map(|l| l.map(|b| if b { 1.0 } else { 0.0 })).collect(),
            n_labels: k,
        },
    };
    Ok(TrainSet { image_shape, images, targets })
}

/// Fit `request` with `loss` on `device` (the plain device; training runs on its autodiff form).
/// With `checkpoint_dir`, a killed run continues from its last checkpoint to the same weights.
pub fn fine_tune(
    request: FineTuneRequest<'_>,
    loss: &dyn Loss,
    device: &Device,
    checkpoint_dir: Option<&Path>,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<FineTuned, FineTuneError> {
    let data = train_set(request.dataset, request.train_rows, request.preprocess)?;
    let autodiff = device.clone().autodiff();
    let encoder = Encoder::load_dir(request.checkpoint, &autodiff)?;
    // One image through the encoder: the classifier's input size, and an up-front error if the
    // preprocessed size does not suit it (rather than a panic inside the training loop). In inference
    // mode, so that a BatchNorm (ResNet) neither normalises one image by its own statistics nor moves
    // its running statistics before training starts.
    let first = ImageBatch { shape: data.image_shape, pixels: data.first_readable_image()? };
    let plain = device.clone().without_autodiff();
    let dim = encoder.valid().classification_feature(first.to_tensor(&plain)).map_err(|e| {
        FineTuneError::Invalid(format!(
            "{}: the encoder cannot take the preprocessed images ({:?}): {e}",
            request.checkpoint.display(),
            data.image_shape
        ))
    })?;
    let dim = dim.dims()[1];
    let n_outputs = request.dataset.labels.len();
    let probe = match request.head_init {
        HeadInit::Probe => Some(probe_head::probe_head(&encoder, &data, n_outputs, &autodiff)?),
        HeadInit::Random => None,
    };
    let (mut model, wrapped) =
        EncoderClassifier::new(encoder, dim, n_outputs, &request.adaptation, request.train.seed, &autodiff)?;
    if let Some((weight, bias)) = probe {
        model = model.with_head(&weight, bias, &autodiff)?;
    }
    let held_out = match &request.held_out {
        Some(h) => Some(train_set(request.dataset, h.rows, request.preprocess)?),
        None => None,
    };
    let monitor = match (&held_out, &request.held_out) {
        (Some(data), Some(h)) => Some(Monitor { data, score: h.score, batch_size: 64 }),
        _ => None,
    };
    let outcome = train_monitored(
        model,
        &data,
        loss,
        &request.train,
        &autodiff,
        checkpoint_dir,
        monitor.as_ref(),
        progress,
    )?;
    Ok(FineTuned {
        checkpoint: request.checkpoint.to_path_buf(),
        model: outcome.model.valid(),
        adaptation: request.adaptation,
        wrapped,
        losses: outcome.losses,
        total_steps: outcome.total_steps,
        resumed_from: outcome.resumed_from,
        curve: outcome.curve,
        best_epoch: outcome.best_epoch,
        stopped_early: outcome.stopped_early,
        unreadable: outcome.unreadable,
    })
}

/// Logits (row-major `[indices.len(), K]`) of `model` for the samples `indices` under `condition`,
/// in batches of `batch_size`.
pub fn predict_logits(
    model: &EncoderClassifier,
    dataset: &Dataset,
    indices: &[usize],
    preprocess: &PreprocessConfig,
    condition: FeatureCondition,
    batch_size: usize,
    device: &Device,
) -> Result<Vec<f64>, FineTuneError> {
    if batch_size == 0 {
        return Err(FineTuneError::Invalid("batch size must be at least 1".into()));
    }
    let mut out = Vec::new();
    for chunk in indices.chunks(batch_size) {
        let images = image_batch(dataset, chunk, preprocess, condition)?.to_tensor(device);
        let logits = model.try_logits(images)?;
        let values = logits
            .into_data()
            .convert::<f64>()
            .try_into_vec::<f64>()
            .map_err(|e| FineTuneError::Invalid(format!("reading logits: {e:?}")))?;
        out.extend(values);
    }
    Ok(out)
}

/// Write a fitted model to `dir` atomically (`calibra_core::write_dir_atomically`: a temporary sibling
/// directory, synced, renamed into place):
///
/// - LoRA: a PEFT adapter directory, `adapter_config.json` (with `modules_to_save = ["classifier"]`,
///   timm ViT: `["head"]`) + `adapter_model.safetensors` (the factors and `classifier.weight` /
///   `classifier.bias`, timm: `head.weight` / `head.bias`);
/// - full: `config.json` + `model.safetensors` of the encoder (Hugging Face layout) and
///   `classifier.safetensors`;
/// - head: `classifier.safetensors` only (the encoder is the unchanged checkpoint).
pub fn save_adapted(fitted: &FineTuned, dir: &Path) -> Result<(), FineTuneError> {
    let head = fitted.model.head_tensors()?;
    calibra_core::write_dir_atomically(dir, |tmp| -> Result<(), FineTuneError> {
        match &fitted.adaptation {
            Adaptation::Lora(config) => {
                let mut config = config.clone();
                config.modules_to_save = Some(vec![fitted.model.encoder.classifier_module().into()]);
                config.base_model_name_or_path = Some(fitted.checkpoint.display().to_string());
                extract_adapter(&fitted.model.encoder, &config, head)?.write(tmp)?;
            }
            Adaptation::Full => {
                fitted.model.encoder.save_pretrained(tmp)?;
                write_head(&tmp.join("classifier.safetensors"), &head)?;
            }
            Adaptation::Head => write_head(&tmp.join("classifier.safetensors"), &head)?,
        }
        Ok(())
    })
    .map_err(|e| e.into_error(|path, source| FineTuneError::Io { path, source }))
}

fn write_head(
    path: &Path,
    head: &std::collections::BTreeMap<String, AdapterTensor>,
) -> Result<(), FineTuneError> {
    use calibra_models::hf::floats::F32View;
    let views: Vec<(String, F32View)> =
        head.iter().map(|(k, t)| (k.clone(), F32View::new(t.shape.clone(), &t.data))).collect();
    let bytes = safetensors::serialize(views, None)
        .map_err(|e| FineTuneError::Invalid(format!("{}: {e}", path.display())))?;
    fs::write(path, bytes).map_err(|source| FineTuneError::Io { path: path.to_path_buf(), source })
}

/// Read a LoRA adapter written by [`save_adapted`] back onto its base checkpoint (for inference).
pub fn load_adapted_lora(
    checkpoint: &Path,
    adapter_dir: &Path,
    device: &Device,
) -> Result<EncoderClassifier, FineTuneError> {
    let adapter = PeftAdapter::read(adapter_dir)?;
    let mut encoder = Encoder::load_dir(checkpoint, device)?;
    calibra_models::lora::load_adapter(&mut encoder, &adapter, device)?;
    // `classifier` (transformers families) or `head` (timm ViT).
    let module = encoder.classifier_module();
    let weight = adapter.saved.get(&format!("{module}.weight")).ok_or_else(|| {
        FineTuneError::Invalid(format!("{}: the adapter saves no `{module}.weight`", adapter_dir.display()))
    })?;
    let [k, d] = match weight.shape[..] {
        [k, d] if k > 0 && weight.data.len() == k * d => [k, d],
        _ => {
            return Err(FineTuneError::Invalid(format!(
                "{}: `{module}.weight` has shape {:?}; a classifier needs [K, d] with K >= 1",
                adapter_dir.display(),
                weight.shape
            )));
        }
    };
    classifier::check_head_input(&encoder, d).map_err(|e| {
        FineTuneError::Invalid(format!("{}: `{module}.weight` [{k}, {d}]: {e}", adapter_dir.display()))
    })?;
    let bias = adapter.saved.get(&format!("{module}.bias")).map(|b| b.data.clone());
    if let Some(b) = &bias
        && b.len() != k
    {
        return Err(FineTuneError::Invalid(format!(
            "{}: `{module}.bias` has {} values, `{module}.weight` has {k} rows",
            adapter_dir.display(),
            b.len()
        )));
    }
    let head = classifier::pytorch_linear(&weight.data, bias, k, d, device);
    let model = EncoderClassifier { encoder: encoder.no_grad(), head: head.no_grad() };
    Ok(model)
}
