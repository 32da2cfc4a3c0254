//! Pretraining the tiny CLIP shipped in `checkpoints/tiny-clip/`: a Hugging Face `CLIPModel`
//! (vision + text towers, projections, `logit_scale`) initialised as transformers does, trained
//! contrastively from scratch on synthetic captions of the synthetic medical suite (all tasks mixed
//! in every batch), with a byte-level BPE vocabulary learnt from the caption corpus, and written in
//! Hugging Face layout (`config.json`, `model.safetensors`, `preprocessor_config.json`, `vocab.json`,
//! `merges.txt`, `tokenizer.json`, `tokenizer_config.json`) so it loads through
//! [`calibra_models::clip::ClipModel::load`], the encoder's CLIP vision path, [`ClipTokenizer`] and
//! transformers' `CLIPModel` / `CLIPTokenizer`.
//!
//! Training: both towers in full, the symmetric multi-positive contrastive loss ([`contrastive`]) with
//! a learnable `logit_scale` clamped at ln 100 as in CLIP, AdamW + linear warmup + cosine, global-norm
//! clipping. Determinism: the initial weights come from ChaCha20 streams seeded by SHA-256(seed, tensor
//! name), the batch order of epoch `e` is [`epoch_order`]`(n, seed, e)`, and every caption choice is a
//! SplitMix hash of (seed, step or epoch, image); the same plan gives the same bytes.

pub mod captions;
pub mod contrastive;
pub mod evaluate;
pub mod init;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use calibra_data::PreprocessConfig;
use calibra_models::clip::{ClipModel, fill_template, l2_normalize};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_models::tokenizer_train::{learn_clip_bpe, write_clip_tokenizer};
use sha2::{Digest, Sha256};

use self::captions::{P1, all_captions, caption_subject, classnames, default_templates};
use self::contrastive::{contrastive_loss, identical_caption_mask};
use self::evaluate::{is_multilabel, label_aurocs, top1_accuracy, zero_shot_logits};
pub use self::init::{ClipArchitecture, LOGIT_SCALE_INIT};
use crate::features::{FeatureCondition, image_batch};
use crate::losses::finite_value;
use crate::pretrain::{LoadedTask, PretrainError, io, kind_name, load_task, majority_accuracy};
use crate::trainer::{StepReport, TrainConfig, adamw_with_schedule, epoch_order, update};

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

/// The module trained: the CLIP plus its learnable log temperature (a burn parameter here; a plain
/// scalar in [`ClipModel`], which neither zero-shot nor CoOp trains).
#[derive(Module, Debug)]
struct ContrastiveClip {
    clip: ClipModel,
    logit_scale: Param<Tensor<1>>,
}

impl ContrastiveClip {
    /// `min(logit_scale, ln 100)`, `[1]`.
    fn clamped_scale(&self) -> Tensor<1> {
        self.logit_scale.val().clamp_max(MAX_LOGIT_SCALE)
    }

    /// `exp(clamped logit_scale) · l2n(image_features) · l2n(text_features)ᵀ`, `[B, B]`.
    fn logits(
        &self,
        images: Tensor<4>,
        ids: &[Vec<u32>],
        device: &Device,
    ) -> Result<Tensor<2>, PretrainError> {
        let img = l2_normalize(self.clip.image_features(images)?);
        let txt = l2_normalize(self.clip.text_features(ids, device)?);
        let scale = self.clamped_scale().exp().reshape([1, 1]);
        Ok(img.matmul(txt.transpose()) * scale)
    }
}

/// SplitMix64 finaliser of `seed` mixed with `a` and `b`.
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z =
        seed ^ a.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One training image: its task and dataset row, and its pixels' offset in the pool.
struct PoolItem {
    task: usize,
    row: usize,
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
    let tasks: Vec<LoadedTask> =
        plan.tasks.iter().map(|t| load_task(&t.spec, plan.holdout_every)).collect::<Result<_, _>>()?;
    let names: Vec<Vec<String>> = tasks.iter().map(|t| classnames(&t.dataset)).collect();

    // Vocabulary: every caption of every task, merges learnt until each word is one token.
    let mut corpus = Vec::new();
    for ((task, plan_task), names) in tasks.iter().zip(&plan.tasks).zip(&names) {
        corpus.extend(all_captions(&plan_task.templates, names, is_multilabel(task))?);
    }
    let bpe = learn_clip_bpe(&corpus, usize::MAX);

    let dir = out_dir.join(&plan.name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    let config_json = init::write_initial_clip(&plan.arch, &bpe, plan.seed, &dir)?;
    write_clip_tokenizer(&bpe, plan.arch.max_positions, &dir)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", dir.display())))?;
    let tokenizer = ClipTokenizer::from_dir(&dir)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", dir.display())))?;
    let preprocess = PreprocessConfig::from_hf_file(&dir.join("preprocessor_config.json"))
        .map_err(|source| PretrainError::Data { spec: plan.name.clone(), source })?;

    // The training pool: every task's training rows, preprocessed once.
    let mut pool = Vec::new();
    let mut pixels = Vec::new();
    let mut shape = [0usize; 3];
    for (t, task) in tasks.iter().enumerate() {
        let batch = image_batch(&task.dataset, &task.train_rows, &preprocess, FeatureCondition::Clean)
            .map_err(|e| PretrainError::Invalid(format!("task `{}`: {e}", task.spec)))?;
        shape = batch.shape;
        pixels.extend(batch.pixels);
        pool.extend(task.train_rows.iter().map(|&row| PoolItem { task: t, row }));
    }
    let image_len: usize = shape.iter().product();

    let autodiff = device.clone().autodiff();
    let dir_spec =
        dir.to_str().ok_or_else(|| PretrainError::Invalid(format!("{}: not UTF-8", dir.display())))?;
    let (clip, _) = ClipModel::load(dir_spec, &autodiff)?;
    let logit_scale =
        Param::from_tensor(Tensor::<1>::from_data(TensorData::new(vec![clip.logit_scale], [1]), &autodiff));
    let mut model = ContrastiveClip { clip, logit_scale };

    let config = &plan.train;
    let batch_size = config.batch_size;
    let steps_per_epoch = pool.len().div_ceil(batch_size);
    let total_steps = steps_per_epoch * config.epochs;
    let (mut optimizer, schedule) =
        adamw_with_schedule(config, total_steps).map_err(|e| PretrainError::Invalid(e.to_string()))?;
    let mut token_cache: HashMap<String, Vec<u32>> = HashMap::new();
    let mut losses = Vec::with_capacity(total_steps);
    let mut order = Vec::new();
    for step in 0..total_steps {
        let epoch = step / steps_per_epoch;
        if step % steps_per_epoch == 0 {
            order = epoch_order(pool.len(), plan.seed, epoch);
        }
        let within = step % steps_per_epoch;
        let indices = &order[within * batch_size..((within + 1) * batch_size).min(pool.len())];
        if indices.len() < 2 {
            // A last batch of one image has no negative; it is skipped (counted, no update).
            losses.push(f64::NAN);
            continue;
        }
        let mut batch_pixels = Vec::with_capacity(indices.len() * image_len);
        let mut ids = Vec::with_capacity(indices.len());
        for &p in indices {
            let item = &pool[p];
            batch_pixels.extend_from_slice(&pixels[p * image_len..(p + 1) * image_len]);
            let templates = &plan.tasks[item.task].templates;
            let template =
                &templates[(mix(plan.seed, step as u64, item.task as u64) % templates.len() as u64) as usize];
            let pick = mix(plan.seed ^ 0x5EED, epoch as u64, p as u64);
            let subject = caption_subject(&tasks[item.task].dataset, &names[item.task], item.row, pick);
            let caption = fill_template(template, &subject)?;
            let encoded = match token_cache.get(&caption) {
                Some(v) => v.clone(),
                None => {
                    let v = tokenizer
                        .encode_truncated(&caption)
                        .map_err(|e| PretrainError::Invalid(format!("caption {caption:?}: {e}")))?;
                    token_cache.insert(caption.clone(), v.clone());
                    v
                }
            };
            ids.push(encoded);
        }
        let positives = identical_caption_mask(&ids);
        let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
        for row in &mut ids {
            row.resize(longest, tokenizer.pad_id());
        }
        let [c, h, w] = shape;
        let images =
            Tensor::<4>::from_data(TensorData::new(batch_pixels, [indices.len(), c, h, w]), &autodiff);
        let logits = model.logits(images, &ids, &autodiff)?;
        let loss = contrastive_loss(logits, &positives)?;
        let loss_value =
            finite_value(&loss).map_err(|e| PretrainError::Invalid(format!("step {}: {e}", step + 1)))?;
        let lr = schedule.lr(step);
        let grad_norm;
        (model, grad_norm) = update(model, loss, &mut optimizer, lr, config.max_grad_norm)
            .map_err(|e| PretrainError::Invalid(e.to_string()))?;
        losses.push(loss_value);
        progress(&StepReport {
            step: step + 1,
            total_steps,
            epoch,
            loss: loss_value,
            lr,
            grad_norm,
            images: indices.len(),
        });
    }

    let mut clip = model.clip.valid();
    let scale: Vec<f32> = model
        .clamped_scale()
        .into_data()
        .try_to_vec::<f32>()
        .map_err(|e| PretrainError::Invalid(format!("logit_scale: {e:?}")))?;
    clip.logit_scale = scale[0];
    clip.save_pretrained(&dir, &config_json)?;
    let epoch_mean = |e: usize| {
        let v: Vec<f64> = losses[e * steps_per_epoch..(e + 1) * steps_per_epoch]
            .iter()
            .copied()
            .filter(|l| l.is_finite())
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (first_epoch_loss, final_epoch_loss) = (epoch_mean(0), epoch_mean(config.epochs - 1));

    // Score what was written, as a user loads it.
    let (saved, _) = ClipModel::load(dir_spec, device)?;
    let mut outcomes = Vec::new();
    for (task, plan_task) in tasks.iter().zip(&plan.tasks) {
        let p1 = [P1.to_string()];
        let (logits, features) = zero_shot_logits(&saved, &tokenizer, task, &p1, &preprocess, None, device)?;
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
                &saved,
                &tokenizer,
                task,
                &plan_task.templates,
                &preprocess,
                Some(&features),
                device,
            )?;
            outcome.accuracy_ensemble = Some(top1_accuracy(task, &ensemble));
        }
        outcomes.push(outcome);
    }

    let weights = dir.join("model.safetensors");
    let bytes = fs::read(&weights).map_err(io(&weights))?;
    let parsed = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", weights.display())))?;
    let parameters = parsed.tensors().iter().map(|(_, v)| v.shape().iter().product::<usize>()).sum();
    Ok(ClipPretrainReport {
        dir,
        tasks: outcomes,
        parameters,
        weights_bytes: bytes.len() as u64,
        weights_sha256: Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect(),
        vocab_size: bpe.vocab_size(),
        merges: bpe.merges.len(),
        total_steps,
        first_epoch_loss,
        final_epoch_loss,
        logit_scale: clip.logit_scale,
    })
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
