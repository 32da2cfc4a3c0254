//! Pretraining the tiny CLIP shipped in `checkpoints/tiny-clip/`: a Hugging Face `CLIPModel`
//! (vision + text towers, projections, `logit_scale`) initialised as transformers does, trained
//! contrastively from scratch on synthetic captions of the synthetic medical suite (all tasks mixed
//! in every batch), with a byte-level BPE vocabulary learnt from the caption corpus, and written in
//! Hugging Face layout (`config.json`, `model.safetensors`, `preprocessor_config.json`, `vocab.json`,
//! `merges.txt`, `tokenizer.json`, `tokenizer_config.json`) so it loads through
//! [`calibra_models::clip::ClipModel::load`], the encoder's CLIP vision path, [`ClipTokenizer`] and
//! transformers' `CLIPModel` / `CLIPTokenizer`.
//!
//! Training (`training`): both towers in full, the symmetric multi-positive contrastive loss
//! ([`contrastive`]) with a learnable `logit_scale` clamped at ln 100 as in CLIP, AdamW with linear
//! warmup and cosine decay, global-norm clipping, on the one training loop. Determinism: the initial
//! weights come from ChaCha20 streams seeded by SHA-256(seed, tensor name), the batch order of epoch
//! `e` is [`epoch_order`](crate::trainer::epoch_order)`(n, seed, e)`, and every caption choice is a
//! SplitMix hash of (seed, step or epoch, image); the same plan gives the same bytes.
//!
//! [`pretrain_clip`] runs the steps in order: `check_plan`, the tasks, `learn_vocabulary`,
//! `write_initial`, the training pool, `training::train_contrastive`, `save_trained`, then
//! `score_zero_shot` per task on the checkpoint as written.

pub mod captions;
pub mod contrastive;
pub mod evaluate;
pub mod init;
mod training;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::Device;
use calibra_data::PreprocessConfig;
use calibra_models::clip::ClipModel;
use calibra_models::tokenizer::ClipTokenizer;
use calibra_models::tokenizer_train::{LearnedBpe, learn_clip_bpe, write_clip_tokenizer};

use self::captions::{P1, all_captions, classnames, default_templates};
use self::evaluate::{is_multilabel, label_aurocs, top1_accuracy, zero_shot_logits};
pub use self::init::{ClipArchitecture, LOGIT_SCALE_INIT};
use self::training::{Captions, ContrastiveClip, TrainingPool, train_contrastive};
use crate::pretrain::{
    LoadedTask, PretrainError, WeightsSummary, io, kind_name, load_task, majority_accuracy,
};
use crate::trainer::{StepReport, TrainConfig};

/// CLIP's clamp on the learnable log temperature: `exp(logit_scale) ≤ 100`.
pub const MAX_LOGIT_SCALE: f64 = 4.605_170_185_988_091; // ln 100

/// The name of the shipped checkpoint.
pub const TINY_CLIP: &str = "tiny-clip";

/// One task of CLIP pretraining: a dataset and its caption templates.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptionTask {
    /// A calibra-data spec.
    pub spec: String,
    /// Templates with one `{}`, the first used for the P1 zero-shot score.
    pub templates: Vec<String>,
}

impl CaptionTask {
    /// The task with its default template family ([`default_templates`]).
    pub fn with_default_templates(spec: &str) -> Result<Self, PretrainError> {
        let templates = default_templates(spec).ok_or_else(|| {
            PretrainError::Invalid(format!(
                "task `{spec}`: no default caption templates (synth:derm, synth:fundus, synth:chest have them)"
            ))
        })?;
        Ok(CaptionTask { spec: spec.to_string(), templates })
    }
}

/// One CLIP pretraining recipe.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipPretrainPlan {
    /// The checkpoint's name (its directory under the output directory).
    pub name: String,
    pub arch: ClipArchitecture,
    /// Seed of the initial weights, the batch order and the caption draws.
    pub seed: u64,
    pub tasks: Vec<CaptionTask>,
    /// Optimisation (epochs over the union of the tasks' training rows).
    pub train: TrainConfig,
    /// Every `holdout_every`-th sample (index ≡ holdout_every − 1) of each task is held out and scored.
    pub holdout_every: usize,
}

/// The shipped `tiny-clip`: the default shape, seed 0, derm + fundus + chest (`n` samples each, the
/// images of the ViT panel), `epochs` epochs, AdamW lr `lr`, batch `batch_size`.
pub fn tiny_clip_plan(n: usize, epochs: usize, lr: f64, batch_size: usize) -> ClipPretrainPlan {
    let arch = ClipArchitecture::default();
    let tasks = ["derm", "fundus", "chest"]
        .iter()
        .map(|suite| {
            let spec = format!("synth:{suite}?n={n}&size={}&seed=0", arch.image_size);
            CaptionTask::with_default_templates(&spec).expect("the medical suites have templates")
        })
        .collect();
    ClipPretrainPlan {
        name: TINY_CLIP.into(),
        arch,
        seed: 0,
        tasks,
        train: TrainConfig {
            epochs,
            batch_size,
            lr,
            weight_decay: 0.05,
            warmup_ratio: 0.1,
            checkpoint_every: 0,
            ..TrainConfig::default()
        },
        holdout_every: 5,
    }
}

/// Zero-shot results on one task's held-out images.
#[derive(Debug, Clone, PartialEq)]
pub struct ZeroShotOutcome {
    pub spec: String,
    pub kind: String,
    pub n_train: usize,
    pub n_holdout: usize,
    /// Single-label tasks: top-1 accuracy with the P1 template (`a photo of a {}.`).
    pub accuracy_p1: Option<f64>,
    /// Single-label tasks: top-1 accuracy with all of the task's templates averaged per class.
    pub accuracy_ensemble: Option<f64>,
    /// Accuracy of always predicting the training rows' majority class (multilabel: per label).
    pub majority_accuracy: f64,
    /// Multilabel tasks: AUROC of each label's P1 logit (`None`: a class absent in the held-out rows).
    pub label_auroc_p1: Vec<(String, Option<f64>)>,
}

impl ZeroShotOutcome {
    /// Mean of the defined per-label AUROCs.
    pub fn mean_auroc_p1(&self) -> Option<f64> {
        let v: Vec<f64> = self.label_auroc_p1.iter().filter_map(|(_, a)| *a).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
}

/// What [`pretrain_clip`] made.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipPretrainReport {
    pub dir: PathBuf,
    pub tasks: Vec<ZeroShotOutcome>,
    pub parameters: usize,
    pub weights_bytes: u64,
    /// SHA-256 of `model.safetensors`, hex.
    pub weights_sha256: String,
    pub vocab_size: usize,
    pub merges: usize,
    pub total_steps: usize,
    /// Mean loss of the first and of the last epoch.
    pub first_epoch_loss: f64,
    pub final_epoch_loss: f64,
    /// The trained `logit_scale` (its exp is the softmax temperature's inverse).
    pub logit_scale: f32,
}

/// Makes `plan` in `out_dir/<name>/` (replaced if present): learns the vocabulary from every caption
/// the templates can produce, writes the initial checkpoint, trains, writes the trained model and
/// scores zero-shot on the held-out images. `device` is the plain device; training runs on its
/// autodiff form.
pub fn pretrain_clip(
    plan: &ClipPretrainPlan,
    out_dir: &Path,
    device: &Device,
    progress: &mut dyn FnMut(&StepReport),
) -> Result<ClipPretrainReport, PretrainError> {
    check_plan(plan)?;
    let tasks: Vec<LoadedTask> =
        plan.tasks.iter().map(|t| load_task(&t.spec, plan.holdout_every)).collect::<Result<_, _>>()?;
    let names: Vec<Vec<String>> = tasks.iter().map(|t| classnames(&t.dataset)).collect();
    let bpe = learn_vocabulary(plan, &tasks, &names)?;
    let made = write_initial(plan, &bpe, out_dir)?;
    let pool = TrainingPool::build(&tasks, &made.preprocess)?;

    let autodiff = device.clone().autodiff();
    let dir_spec = made
        .dir
        .to_str()
        .ok_or_else(|| PretrainError::Invalid(format!("{}: not UTF-8", made.dir.display())))?;
    let model = ContrastiveClip::load(dir_spec, &autodiff)?;
    let captions = Captions {
        seed: plan.seed,
        tasks: &tasks,
        names: &names,
        templates: plan.tasks.iter().map(|t| t.templates.as_slice()).collect(),
        tokenizer: &made.tokenizer,
        cache: HashMap::new(),
    };
    let trained = train_contrastive(model, &plan.train, &pool, captions, &autodiff, progress)?;
    let logit_scale = save_trained(&trained.model, &made)?;
    let (first_epoch_loss, final_epoch_loss) =
        (trained.epoch_mean(0), trained.epoch_mean(plan.train.epochs - 1));

    // Score what was written, as a user loads it.
    let (saved, _) = ClipModel::load(dir_spec, device)?;
    let outcomes = tasks
        .iter()
        .zip(&plan.tasks)
        .map(|(task, plan_task)| score_zero_shot(&saved, &made, task, plan_task, device))
        .collect::<Result<Vec<_>, _>>()?;

    let weights = WeightsSummary::read(&made.dir.join("model.safetensors"))?;
    Ok(ClipPretrainReport {
        dir: made.dir,
        tasks: outcomes,
        parameters: weights.parameters,
        weights_bytes: weights.bytes,
        weights_sha256: weights.sha256,
        vocab_size: bpe.vocab_size(),
        merges: bpe.merges.len(),
        total_steps: trained.total_steps,
        first_epoch_loss,
        final_epoch_loss,
        logit_scale,
    })
}

/// A plan's own errors: a plain directory name, a task, a contrastive batch (two images or more).
fn check_plan(plan: &ClipPretrainPlan) -> Result<(), PretrainError> {
    if plan.name.is_empty() || plan.name.contains(['/', '\\']) || plan.name.starts_with('.') {
        return Err(PretrainError::Invalid(format!(
            "checkpoint name `{}` must be a plain directory name",
            plan.name
        )));
    }
    if plan.tasks.is_empty() {
        return Err(PretrainError::Invalid("CLIP pretraining needs at least one task".into()));
    }
    if plan.train.epochs == 0 || plan.train.batch_size < 2 {
        return Err(PretrainError::Invalid(format!(
            "epochs ({}) must be >= 1 and batch_size ({}) >= 2 (a contrastive batch needs negatives)",
            plan.train.epochs, plan.train.batch_size
        )));
    }
    Ok(())
}

/// The vocabulary: every caption of every task, merges learnt until each word is one token.
fn learn_vocabulary(
    plan: &ClipPretrainPlan,
    tasks: &[LoadedTask],
    names: &[Vec<String>],
) -> Result<LearnedBpe, PretrainError> {
    let mut corpus = Vec::new();
    for ((task, plan_task), names) in tasks.iter().zip(&plan.tasks).zip(names) {
        corpus.extend(all_captions(&plan_task.templates, names, is_multilabel(task))?);
    }
    Ok(learn_clip_bpe(&corpus, usize::MAX))
}

/// The checkpoint directory being made, with what its initial files say.
struct InitialClip {
    dir: PathBuf,
    /// The `config.json` written (saved again with the trained weights).
    config_json: serde_json::Value,
    tokenizer: ClipTokenizer,
    preprocess: PreprocessConfig,
}

/// Replaces `out_dir/<name>/` by the initial checkpoint and the tokenizer files, and reads them back.
fn write_initial(
    plan: &ClipPretrainPlan,
    bpe: &LearnedBpe,
    out_dir: &Path,
) -> Result<InitialClip, PretrainError> {
    let dir = out_dir.join(&plan.name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    let config_json = init::write_initial_clip(&plan.arch, bpe, plan.seed, &dir)?;
    write_clip_tokenizer(bpe, plan.arch.max_positions, &dir)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", dir.display())))?;
    let tokenizer = ClipTokenizer::from_dir(&dir)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", dir.display())))?;
    let preprocess = PreprocessConfig::from_hf_file(&dir.join("preprocessor_config.json"))
        .map_err(|source| PretrainError::Data { spec: plan.name.clone(), source })?;
    Ok(InitialClip { dir, config_json, tokenizer, preprocess })
}

/// Writes the trained CLIP over the initial weights, its `logit_scale` clamped; returns that scale.
fn save_trained(model: &ContrastiveClip, made: &InitialClip) -> Result<f32, PretrainError> {
    let mut clip = model.clip.valid();
    let scale: Vec<f32> = model
        .clamped_scale()
        .into_data()
        .try_to_vec::<f32>()
        .map_err(|e| PretrainError::Invalid(format!("logit_scale: {e:?}")))?;
    clip.logit_scale = scale[0];
    clip.save_pretrained(&made.dir, &made.config_json)?;
    Ok(clip.logit_scale)
}

/// Zero-shot scores of the saved CLIP on `task`'s held-out images: P1 top-1 and the template
/// ensemble's top-1 for single-label tasks, per-label P1 AUROC for multilabel tasks.
fn score_zero_shot(
    saved: &ClipModel,
    made: &InitialClip,
    task: &LoadedTask,
    plan_task: &CaptionTask,
    device: &Device,
) -> Result<ZeroShotOutcome, PretrainError> {
    let p1 = [P1.to_string()];
    let (logits, features) =
        zero_shot_logits(saved, &made.tokenizer, task, &p1, &made.preprocess, None, device)?;
    let mut outcome = ZeroShotOutcome {
        spec: task.spec.clone(),
        kind: kind_name(task.dataset.labels.kind).into(),
        n_train: task.train_rows.len(),
        n_holdout: task.holdout_rows.len(),
        accuracy_p1: None,
        accuracy_ensemble: None,
        majority_accuracy: majority_accuracy(task),
        label_auroc_p1: Vec::new(),
    };
    if is_multilabel(task) {
        outcome.label_auroc_p1 = label_aurocs(task, &logits);
    } else {
        outcome.accuracy_p1 = Some(top1_accuracy(task, &logits));
        let (ensemble, _) = zero_shot_logits(
            saved,
            &made.tokenizer,
            task,
            &plan_task.templates,
            &made.preprocess,
            Some(&features),
            device,
        )?;
        outcome.accuracy_ensemble = Some(top1_accuracy(task, &ensemble));
    }
    Ok(outcome)
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.4}"))
}

/// The Markdown model card of a made tiny CLIP: what it is, the exact command, initialisation,
/// optimisation, caption rules and the measured zero-shot numbers.
pub fn clip_model_card(plan: &ClipPretrainPlan, report: &ClipPretrainReport, command: &str) -> String {
    let a = &plan.arch;
    let t = &plan.train;
    let mut s = format!("# {}\n\n", plan.name);
    s += &format!(
        "A tiny Hugging Face `CLIPModel` made by `calibra pretrain` for the quickstart's CoOp and zero-shot \
         runs: vision tower hidden {}, {} layers, {} heads, MLP {}, patch {}, {}×{} images; text tower hidden \
         {}, {} layers, {} heads, MLP {}, {} positions, vocabulary {} ({} BPE merges learnt from the caption \
         corpus); joint projection {}; QuickGELU. {} parameters, `model.safetensors` {} bytes, SHA-256 `{}`. \
         It is a test article, not a medical model: the images are procedural (see \
         crates/calibra-data/README.md) and the captions are templates.\n\n",
        a.vision_hidden,
        a.vision_layers,
        a.vision_heads,
        a.vision_mlp,
        a.patch_size,
        a.image_size,
        a.image_size,
        a.text_hidden,
        a.text_layers,
        a.text_heads,
        a.text_mlp,
        a.max_positions,
        report.vocab_size,
        report.merges,
        a.projection_dim,
        report.parameters,
        report.weights_bytes,
        report.weights_sha256
    );
    s += &format!("Made by:\n\n```\n{command}\n```\n\n");
    s += &format!(
        "Files: `config.json` (`model_type` clip), `model.safetensors` (transformers' names, with the 0-d \
         `logit_scale`), `preprocessor_config.json` (`CLIPImageProcessor`, {}px, CLIP mean/std), \
         `vocab.json` + `merges.txt` and `tokenizer.json` + `tokenizer_config.json` (CLIP's byte-level BPE \
         layout; `<|startoftext|>` {} and `<|endoftext|>` {} = pad = unknown, context {}). Loads with \
         `transformers.CLIPModel.from_pretrained` / `CLIPTokenizer.from_pretrained` and with calibra's \
         `ClipModel::load` / `ClipTokenizer::from_dir`.\n\n",
        a.image_size,
        report.vocab_size - 2,
        report.vocab_size - 1,
        a.max_positions
    );
    s += &format!(
        "Initialisation: transformers' `CLIPPreTrainedModel._init_weights` (LayerNorm 1/0, biases 0, \
         token/position embeddings and patch projection N(0, 0.02²), class embedding N(0, d^-1), q/k/v and \
         fc2 N(0, d^-1 (2L)^-1), out_proj N(0, d^-1), fc1 N(0, (2d)^-1), projections N(0, d^-1); \
         `logit_scale` {LOGIT_SCALE_INIT}), normal draws from ChaCha20 streams seeded by SHA-256 of the \
         seed ({}) and the tensor name.\n\n",
        plan.seed
    );
    s += &format!(
        "Training: both towers and the projections in full, plus `logit_scale` (clamped at ln 100 as in \
         CLIP), on the symmetric contrastive loss over each batch's image × caption similarity matrix \
         (cross-entropy image → text and text → image, averaged); pairs whose captions are identical are \
         positives of each other (targets uniform over them). All tasks mixed in one shuffled pool: {} \
         epochs, {} steps, batch {}, AdamW lr {}, weight decay {} (on every tensor, `logit_scale` \
         included), β {}/{}, warmup {} of the steps then cosine, gradient clipping {}. Every {}th sample of \
         each task is held out. Mean loss: first epoch {:.4}, last epoch {:.4}; final `logit_scale` {:.4} \
         (exp {:.2}).\n\n",
        t.epochs,
        report.total_steps,
        t.batch_size,
        t.lr,
        t.weight_decay,
        t.beta_1,
        t.beta_2,
        t.warmup_ratio,
        t.max_grad_norm.map_or("off".to_string(), |m| format!("at global norm {m}")),
        plan.holdout_every,
        report.first_epoch_loss,
        report.final_epoch_loss,
        report.logit_scale,
        f64::from(report.logit_scale).exp()
    );
    s += "Captions: each image's caption is one of its task's templates with the class name in the slot, \
          the name exactly as calibra's zero-shot classifier and CoOp read the dataset's label names (`_` \
          as a space; fundus grades are the names `0`…`4`). A multilabel image names one of its present \
          findings, drawn uniformly per (seed, epoch, image). The template is drawn once per (step, task), \
          so images of one class in a batch share the identical caption. Templates:\n\n";
    for task in &plan.tasks {
        s += &format!(
            "- `{}`: {}\n",
            task.spec,
            task.templates.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
        );
    }
    s += "\nZero-shot on the held-out images (calibra's zero-shot classifier on the files above: \
          `exp(logit_scale) · cos(image, class text)`; P1 is `a photo of a {}.`, the ensemble averages \
          the task's templates per class):\n\n";
    s += "| task | kind | train / held out | P1 top-1 | ensemble top-1 | majority baseline | P1 mean label AUROC |\n";
    s += "|---|---|---|---|---|---|---|\n";
    for o in &report.tasks {
        s += &format!(
            "| `{}` | {} | {} / {} | {} | {} | {} | {} |\n",
            o.spec,
            o.kind,
            o.n_train,
            o.n_holdout,
            fmt_opt(o.accuracy_p1),
            fmt_opt(o.accuracy_ensemble),
            if o.label_auroc_p1.is_empty() { format!("{:.4}", o.majority_accuracy) } else { "—".into() },
            if o.label_auroc_p1.is_empty() { "—".into() } else { fmt_opt(o.mean_auroc_p1()) }
        );
    }
    for o in report.tasks.iter().filter(|o| !o.label_auroc_p1.is_empty()) {
        s += &format!("\nPer-label P1 AUROC on `{}` (chance 0.5):\n\n| label | AUROC |\n|---|---|\n", o.spec);
        for (name, auroc) in &o.label_auroc_p1 {
            s += &format!("| {name} | {} |\n", fmt_opt(*auroc));
        }
    }
    s += "\nThe majority baseline is the accuracy of always predicting the training rows' most frequent \
          class. The held-out images are samples of the same generator and seed as the training images: \
          evaluate a study on another dataset seed.\n";
    s
}
