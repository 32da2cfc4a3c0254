//! Pretraining the tiny ViT encoders shipped in `checkpoints/` (the panel a quickstart study ranks):
//! a Hugging Face `ViTModel` initialised as `transformers` does, then trained in full on one or more
//! synthetic tasks with one linear head per task (the heads are discarded), and written in Hugging
//! Face layout (`config.json`, `model.safetensors`, `preprocessor_config.json`) so it loads through
//! the same code as a downloaded checkpoint.
//!
//! Determinism: the initial weights come from ChaCha20 streams seeded by SHA-256(seed, tensor name),
//! and training is the deterministic [`crate::trainer::train`] loop; the same plan on the burn CPU
//! backend gives the same `model.safetensors` bytes.
//!
//! Several tasks (the `broad-medical` encoder) are trained round-robin: round r visits every task in
//! order, each visit a stage of `epochs_per_stage` epochs of full training of the shared encoder plus
//! that task's own head (kept from one round to the next); every stage has a fresh AdamW state and its
//! own warmup + cosine schedule.

use std::fs;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::Device;
use calibra_data::{Dataset, DatasetSpec, LoadOptions, PreprocessConfig, Target, TaskKind, load_dataset};
use calibra_models::hf::floats::F32View;
use calibra_models::hf::read_config;
use calibra_models::vit::VitConfig;
use calibra_models::{Encoder, EncoderModel};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::features::FeatureCondition;
use crate::fine_tune::{Adaptation, EncoderClassifier, FineTuneError, predict_logits, train_set};
use crate::losses::build_loss;
use crate::trainer::{StepReport, TrainConfig, train};

/// Errors of pretraining, each naming the file, task or setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum PretrainError {
    #[error(transparent)]
    FineTune(#[from] FineTuneError),
    #[error(transparent)]
    Model(#[from] calibra_models::ModelError),
    #[error("task `{spec}`: {source}")]
    Data {
        spec: String,
        #[source]
        source: calibra_data::DataError,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PretrainError + '_ {
    move |source| PretrainError::Io { path: path.to_path_buf(), source }
}

/// The shape of a tiny ViT (HF `ViTConfig` fields). The default is the shipped panel's:
/// hidden 64, 4 layers, 4 heads, MLP 128, patch 8 on 32×32 images (16 patches + CLS; ≈ 0.2 M
/// parameters, ≈ 0.9 MB as f32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VitArchitecture {
    pub hidden_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub intermediate_size: usize,
    pub patch_size: usize,
    pub image_size: usize,
}

impl Default for VitArchitecture {
    fn default() -> Self {
        VitArchitecture {
            hidden_size: 64,
            num_layers: 4,
            num_heads: 4,
            intermediate_size: 128,
            patch_size: 8,
            image_size: 32,
        }
    }
}

impl VitArchitecture {
    /// The `config.json` of a `ViTModel` with this shape (dropout off, exact GELU, no pooler).
    pub fn hf_config(&self) -> Value {
        json!({
            "architectures": ["ViTModel"],
            "attention_probs_dropout_prob": 0.0,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.0,
            "hidden_size": self.hidden_size,
            "image_size": self.image_size,
            "initializer_range": INITIALIZER_RANGE,
            "intermediate_size": self.intermediate_size,
            "layer_norm_eps": 1e-12,
            "model_type": "vit",
            "num_attention_heads": self.num_heads,
            "num_channels": 3,
            "num_hidden_layers": self.num_layers,
            "patch_size": self.patch_size,
            "qkv_bias": true,
        })
    }

    /// The `preprocessor_config.json` (HF `ViTImageProcessor`): bilinear resize to
    /// `image_size × image_size`, rescale by 1/255, normalise with mean = std = 0.5 per channel
    /// (pixels land in [−1, 1]).
    pub fn preprocessor_config(&self) -> Value {
        json!({
            "do_normalize": true,
            "do_rescale": true,
            "do_resize": true,
            "image_mean": [0.5, 0.5, 0.5],
            "image_processor_type": "ViTImageProcessor",
            "image_std": [0.5, 0.5, 0.5],
            "resample": 2,
            "rescale_factor": 1.0 / 255.0,
            "size": {"height": self.image_size, "width": self.image_size},
        })
    }

    fn validate(&self) -> Result<(), PretrainError> {
        let ok = self.hidden_size > 0
            && self.num_layers > 0
            && self.num_heads > 0
            && self.hidden_size.is_multiple_of(self.num_heads)
            && self.intermediate_size > 0
            && self.patch_size > 0
            && self.image_size >= self.patch_size
            && self.image_size.is_multiple_of(self.patch_size);
        if ok {
            Ok(())
        } else {
            Err(PretrainError::Invalid(format!(
                "invalid ViT shape {self:?}: hidden_size must be a multiple of num_heads and image_size a \
                 multiple of patch_size, all >= 1"
            )))
        }
    }
}

/// `initializer_range` of the HF config: the standard deviation of the initial weights.
pub const INITIALIZER_RANGE: f64 = 0.02;

/// The initial value of one HF ViT tensor, as `ViTPreTrainedModel._init_weights` sets it:
/// LayerNorm weights 1, biases 0, every other tensor (linear and patch-projection weights, the CLS
/// token, position embeddings) N(0, 0.02²) truncated at ±2σ. The draws of tensor `name` come from
/// ChaCha20 seeded by SHA-256(`calibra-vit-init-v1`, seed, name), so they do not depend on the other
/// tensors or their order.
pub fn initial_values(name: &str, len: usize, seed: u64) -> Vec<f32> {
    let is_layer_norm = name.contains("layernorm");
    if name.ends_with(".bias") {
        return vec![0.0; len];
    }
    if is_layer_norm && name.ends_with(".weight") {
        return vec![1.0; len];
    }
    seeded_normal(b"calibra-vit-init-v1", seed, name, len, INITIALIZER_RANGE, true)
}

/// `len` draws of N(0, `std`²) (truncated at ±2σ when `truncate`) from ChaCha20 seeded by
/// SHA-256(`domain`, 0, seed, name): the stream of one named tensor, independent of every other.
/// Box–Muller, cosine half, one draw per two uniforms.
pub(crate) fn seeded_normal(
    domain: &[u8],
    seed: u64,
    name: &str,
    len: usize,
    std: f64,
    truncate: bool,
) -> Vec<f32> {
    let mut h = Sha256::new();
    h.update(domain);
    h.update(b"\0");
    h.update(seed.to_le_bytes());
    h.update(name.as_bytes());
    let mut rng = ChaCha20Rng::from_seed(h.finalize().into());
    (0..len)
        .map(|_| {
            loop {
                // Box–Muller (cosine half), rejected outside ±2 when truncated.
                let z = calibra_core::standard_normal(&mut rng);
                if !truncate || z.abs() <= 2.0 {
                    break (std * z) as f32;
                }
            }
        })
        .collect()
}

/// Writes a freshly initialised checkpoint to `dir`: `config.json`, `model.safetensors` (values of
/// [`initial_values`]) and `preprocessor_config.json`.
pub fn write_initial_checkpoint(arch: &VitArchitecture, seed: u64, dir: &Path) -> Result<(), PretrainError> {
    arch.validate()?;
    fs::create_dir_all(dir).map_err(io(dir))?;
    let config_path = dir.join("config.json");
    let text = serde_json::to_string_pretty(&arch.hf_config()).expect("a JSON value serialises") + "\n";
    fs::write(&config_path, text).map_err(io(&config_path))?;
    let pre_path = dir.join("preprocessor_config.json");
    let text = serde_json::to_string_pretty(&arch.preprocessor_config()).expect("JSON serialises") + "\n";
    fs::write(&pre_path, text).map_err(io(&pre_path))?;
    // The module's own saver gives the exact HF names and shapes; its placeholder values are then
    // replaced by the seeded initial values.
    let config = read_config(&config_path)?;
    let device = Device::flex();
    let vit = VitConfig::from_hf(&config, false)?.init(&device);
    let encoder = Encoder { model: EncoderModel::Vit(vit), config };
    encoder.save_pretrained(dir)?;
    let weights = dir.join("model.safetensors");
    let bytes = fs::read(&weights).map_err(io(&weights))?;
    let parsed = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", weights.display())))?;
    let mut tensors: Vec<(String, Vec<usize>)> =
        parsed.tensors().into_iter().map(|(name, view)| (name, view.shape().to_vec())).collect();
    tensors.sort();
    let views: Vec<(String, F32View)> = tensors
        .into_iter()
        .map(|(name, shape)| {
            let values = initial_values(&name, shape.iter().product(), seed);
            (name, F32View::new(shape, &values))
        })
        .collect();
    let out = safetensors::serialize(views, None)
        .map_err(|e| PretrainError::Invalid(format!("{}: {e}", weights.display())))?;
    fs::write(&weights, out).map_err(io(&weights))?;
    Ok(())
}

/// One pretraining recipe: what the encoder is, which tasks it learns and how long.
#[derive(Debug, Clone, PartialEq)]
pub struct PretrainPlan {
    /// The checkpoint's name (its directory under the output directory).
    pub name: String,
    pub arch: VitArchitecture,
    /// Seed of the initial weights and of every training stage.
    pub seed: u64,
    /// Dataset specs (calibra-data), trained in this order each round; empty: random init only.
    pub tasks: Vec<String>,
    /// Round-robin rounds over `tasks`.
    pub rounds: usize,
    /// Optimisation of one stage (one task in one round); its `epochs` are the stage's epochs and its
    /// `seed` is replaced per stage.
    pub train: TrainConfig,
    /// Every `holdout_every`-th sample (index ≡ holdout_every − 1) of each task is held out of
    /// training and scored at the end.
    pub holdout_every: usize,
}

impl PretrainPlan {
    /// The optimisation the shipped panel uses: AdamW lr 1e-3, weight decay 0.05, batch 32, 10 %
    /// warmup, clipping at 1.0.
    pub fn default_train(epochs: usize) -> TrainConfig {
        TrainConfig {
            epochs,
            batch_size: 32,
            lr: 1e-3,
            weight_decay: 0.05,
            warmup_ratio: 0.1,
            checkpoint_every: 0,
            ..TrainConfig::default()
        }
    }
}

/// How one task went.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    pub spec: String,
    /// `multiclass`, `ordinal` or `multilabel`.
    pub kind: String,
    /// The loss trained with (`ce`; `bce_masked` for multilabel tasks).
    pub loss: String,
    pub n_train: usize,
    pub n_holdout: usize,
    /// Mean training loss over the last epoch of the task's last stage.
    pub final_train_loss: f64,
    /// Held-out accuracy of the encoder + its task head at the end of pretraining: top-1 for
    /// multiclass / ordinal, the mean per-label accuracy at logit 0 for multilabel.
    pub holdout_accuracy: f64,
    /// The same accuracy of the constant majority prediction learnt from the training rows (the most
    /// frequent class; per label, the more frequent value): what an encoder that sees nothing scores.
    pub holdout_majority_accuracy: f64,
}

/// What [`pretrain`] made.
#[derive(Debug, Clone, PartialEq)]
pub struct PretrainReport {
    pub dir: PathBuf,
    pub tasks: Vec<TaskOutcome>,
    pub parameters: usize,
    pub weights_bytes: u64,
    /// SHA-256 of `model.safetensors`, hex.
    pub weights_sha256: String,
}

/// Progress of one optimisation step: the stage's label (`round r/R task spec`) and the step.
pub type PretrainProgress<'a> = dyn FnMut(&str, &StepReport) + 'a;

pub(crate) struct LoadedTask {
    pub(crate) spec: String,
    pub(crate) dataset: Dataset,
    pub(crate) train_rows: Vec<usize>,
    pub(crate) holdout_rows: Vec<usize>,
    loss: String,
}

pub(crate) fn load_task(spec: &str, holdout_every: usize) -> Result<LoadedTask, PretrainError> {
    let data = |source| PretrainError::Data { spec: spec.to_string(), source };
    let parsed = DatasetSpec::parse(spec).map_err(data)?;
    let dataset = load_dataset(&parsed, &LoadOptions::default()).map_err(data)?;
    let (train_rows, holdout_rows): (Vec<usize>, Vec<usize>) = (0..dataset.samples.len())
        .partition(|i| holdout_every == 0 || i % holdout_every != holdout_every - 1);
    if train_rows.is_empty() || holdout_rows.is_empty() {
        return Err(PretrainError::Invalid(format!(
            "task `{spec}`: {} samples leave no training or no held-out rows (holdout every {holdout_every})",
            dataset.samples.len()
        )));
    }
    let loss = match dataset.labels.kind {
        TaskKind::Multilabel => "bce_masked",
        _ => "ce",
    };
    Ok(LoadedTask { spec: spec.to_string(), dataset, train_rows, holdout_rows, loss: loss.into() })
}

pub(crate) fn kind_name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Multiclass => "multiclass",
        TaskKind::Ordinal => "ordinal",
        TaskKind::Multilabel => "multilabel",
    }
}

/// SplitMix64-style mix of a seed with a stage number.
fn stage_seed(seed: u64, stage: usize) -> u64 {
    let mut z = seed ^ (stage as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Makes `plan` in `out_dir/<name>/` (replaced if present): the initial checkpoint, then the
/// training stages, then the trained encoder (heads dropped) with its preprocessor config.
/// `device` is the plain device; training runs on its autodiff form.
pub fn pretrain(
    plan: &PretrainPlan,
    out_dir: &Path,
    device: &Device,
    progress: &mut PretrainProgress<'_>,
) -> Result<PretrainReport, PretrainError> {
    if plan.name.is_empty() || plan.name.contains(['/', '\\']) || plan.name.starts_with('.') {
        return Err(PretrainError::Invalid(format!(
            "checkpoint name `{}` must be a plain directory name",
            plan.name
        )));
    }
    if !plan.tasks.is_empty() && plan.rounds == 0 {
        return Err(PretrainError::Invalid("rounds must be >= 1 when there are tasks".into()));
    }
    let tasks: Vec<LoadedTask> =
        plan.tasks.iter().map(|spec| load_task(spec, plan.holdout_every)).collect::<Result<_, _>>()?;
    let dir = out_dir.join(&plan.name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    write_initial_checkpoint(&plan.arch, plan.seed, &dir)?;
    let preprocess = PreprocessConfig::from_hf_file(&dir.join("preprocessor_config.json"))
        .map_err(|source| PretrainError::Data { spec: plan.name.clone(), source })?;

    let mut outcomes = Vec::new();
    if !tasks.is_empty() {
        let autodiff = device.clone().autodiff();
        let mut encoder = Encoder::load_dir(&dir, &autodiff)?;
        let dim = plan.arch.hidden_size;
        let mut heads: Vec<Option<Linear>> = Vec::new();
        let mut sets = Vec::new();
        for (t, task) in tasks.iter().enumerate() {
            sets.push(train_set(&task.dataset, &task.train_rows, &preprocess)?);
            let k = task.dataset.labels.len();
            // A placeholder encoder is never used: only the seeded head is kept.
            let probe = Encoder::load_dir(&dir, &autodiff)?;
            let (model, _) = EncoderClassifier::new(
                probe,
                dim,
                k,
                &Adaptation::Full,
                stage_seed(plan.seed, 1000 + t),
                &autodiff,
            )?;
            heads.push(Some(model.head));
        }
        let mut last_losses = vec![Vec::new(); tasks.len()];
        let total = plan.rounds * tasks.len();
        for round in 0..plan.rounds {
            for (t, task) in tasks.iter().enumerate() {
                let stage = round * tasks.len() + t;
                let label = format!("stage {}/{total} (round {}, {})", stage + 1, round + 1, task.spec);
                let loss = build_loss::<&str>(&task.loss, &[]).map_err(|e| {
                    PretrainError::Invalid(format!("task `{}`: loss `{}`: {e}", task.spec, task.loss))
                })?;
                let head = heads[t].take().expect("each task's head is returned after its stage");
                let model = EncoderClassifier { encoder, head };
                let config = TrainConfig { seed: stage_seed(plan.seed, stage), ..plan.train.clone() };
                let outcome = train(model, &sets[t], loss.as_ref(), &config, &autodiff, None, &mut |s| {
                    progress(&label, s)
                })
                .map_err(FineTuneError::from)?;
                let per_epoch = outcome.total_steps / config.epochs.max(1);
                last_losses[t] = outcome.losses[outcome.losses.len() - per_epoch.max(1)..].to_vec();
                encoder = outcome.model.encoder;
                heads[t] = Some(outcome.model.head);
            }
        }
        for (t, task) in tasks.iter().enumerate() {
            let head = heads[t].take().expect("heads are back after training");
            let model = EncoderClassifier { encoder: encoder.clone(), head }.valid();
            let accuracy = holdout_accuracy(&model, task, &preprocess, device)?;
            let losses = &last_losses[t];
            outcomes.push(TaskOutcome {
                spec: task.spec.clone(),
                kind: kind_name(task.dataset.labels.kind).into(),
                loss: task.loss.clone(),
                n_train: task.train_rows.len(),
                n_holdout: task.holdout_rows.len(),
                final_train_loss: losses.iter().sum::<f64>() / losses.len().max(1) as f64,
                holdout_accuracy: accuracy,
                holdout_majority_accuracy: majority_accuracy(task),
            });
        }
        // Overwrites config.json (unchanged) and model.safetensors with the trained encoder.
        encoder.valid().save_pretrained(&dir)?;
    }
    let weights = WeightsSummary::read(&dir.join("model.safetensors"))?;
    Ok(PretrainReport {
        dir,
        tasks: outcomes,
        parameters: weights.parameters,
        weights_bytes: weights.bytes,
        weights_sha256: weights.sha256,
    })
}

/// What a made checkpoint's `model.safetensors` holds, for its report and model card.
pub(crate) struct WeightsSummary {
    /// Number of weights (every tensor's element count).
    pub(crate) parameters: usize,
    /// File size in bytes.
    pub(crate) bytes: u64,
    /// SHA-256 of the file, hex.
    pub(crate) sha256: String,
}

impl WeightsSummary {
    pub(crate) fn read(weights: &Path) -> Result<Self, PretrainError> {
        let bytes = fs::read(weights).map_err(io(weights))?;
        let parsed = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| PretrainError::Invalid(format!("{}: {e}", weights.display())))?;
        let parameters = parsed.tensors().iter().map(|(_, v)| v.shape().iter().product::<usize>()).sum();
        let sha256 = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        Ok(WeightsSummary { parameters, bytes: bytes.len() as u64, sha256 })
    }
}

/// Held-out accuracy of the constant prediction that is the majority on the training rows (ties: the
/// lowest class; negative).
pub(crate) fn majority_accuracy(task: &LoadedTask) -> f64 {
    let k = task.dataset.labels.len();
    let mut class_counts = vec![0usize; k];
    let mut positives = vec![0usize; k];
    let mut observed = vec![0usize; k];
    for &i in &task.train_rows {
        match &task.dataset.samples[i].target {
            Target::Class(c) => class_counts[*c] += 1,
            Target::Labels(labels) => {
                for (j, l) in labels.iter().enumerate() {
                    if let Some(l) = l {
                        observed[j] += 1;
                        positives[j] += usize::from(*l);
                    }
                }
            }
        }
    }
    let majority_class = (0..k).fold(0, |b, j| if class_counts[j] > class_counts[b] { j } else { b });
    let mut correct = 0usize;
    let mut counted = 0usize;
    for &i in &task.holdout_rows {
        match &task.dataset.samples[i].target {
            Target::Class(c) => {
                correct += usize::from(*c == majority_class);
                counted += 1;
            }
            Target::Labels(labels) => {
                for (j, l) in labels.iter().enumerate() {
                    if let Some(l) = l {
                        correct += usize::from(*l == (2 * positives[j] > observed[j]));
                        counted += 1;
                    }
                }
            }
        }
    }
    correct as f64 / counted.max(1) as f64
}

fn holdout_accuracy(
    model: &EncoderClassifier,
    task: &LoadedTask,
    preprocess: &PreprocessConfig,
    device: &Device,
) -> Result<f64, PretrainError> {
    let rows = &task.holdout_rows;
    let k = task.dataset.labels.len();
    let logits = predict_logits(model, &task.dataset, rows, preprocess, FeatureCondition::Clean, 64, device)?;
    let mut correct = 0usize;
    let mut counted = 0usize;
    for (r, &i) in rows.iter().enumerate() {
        let row = &logits[r * k..(r + 1) * k];
        match &task.dataset.samples[i].target {
            Target::Class(c) => {
                // argmax, ties to the lowest index
                let best = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
                correct += usize::from(best == *c);
                counted += 1;
            }
            Target::Labels(labels) => {
                for (j, l) in labels.iter().enumerate() {
                    if let Some(l) = l {
                        correct += usize::from((row[j] > 0.0) == *l);
                        counted += 1;
                    }
                }
            }
        }
    }
    Ok(correct as f64 / counted.max(1) as f64)
}

/// The shipped panel (see `checkpoints/*/MODEL_CARD.md`): every member has the same architecture
/// and seed 0, so they differ only in what they were trained on. `n` samples per task at 32×32
/// (`2n` for the generalist's shapes task, the harder one), `epochs` epochs per single-task run;
/// `broad-medical` does `epochs` rounds of one epoch per task.
pub fn panel(n: usize, epochs: usize) -> Vec<PretrainPlan> {
    let arch = VitArchitecture::default();
    let spec = |suite: &str| format!("synth:{suite}?n={n}&size={}&seed=0", arch.image_size);
    let generic = format!("synth:shapes?n={}&size={}&seed=0", 2 * n, arch.image_size);
    let plan = |name: &str, tasks: Vec<String>, rounds: usize, stage_epochs: usize| PretrainPlan {
        name: name.into(),
        arch,
        seed: 0,
        tasks,
        rounds,
        train: PretrainPlan::default_train(stage_epochs),
        holdout_every: 5,
    };
    vec![
        plan("scratch", Vec::new(), 0, epochs),
        plan("generalist", vec![generic], 1, epochs),
        plan("derm-specialist", vec![spec("derm")], 1, epochs),
        plan("chest-specialist", vec![spec("chest")], 1, epochs),
        plan("broad-medical", vec![spec("derm"), spec("fundus"), spec("chest")], epochs, 1),
    ]
}

/// The Markdown model card of a made checkpoint: what it is, what it was trained on, the exact
/// command that made it, and the measured numbers.
pub fn model_card(plan: &PretrainPlan, report: &PretrainReport, command: &str) -> String {
    let a = &plan.arch;
    let mut s = format!("# {}\n\n", plan.name);
    s += &format!(
        "A tiny Hugging Face `ViTModel` (hidden {}, {} layers, {} heads, MLP {}, patch {}, {}×{} \
         images; {} parameters, `model.safetensors` {} bytes, SHA-256 `{}`) made by `calibra \
         pretrain` for the quickstart panel. It is a test article, not a medical model: the synthetic \
         tasks are procedural (see crates/calibra-data/README.md).\n\n",
        a.hidden_size,
        a.num_layers,
        a.num_heads,
        a.intermediate_size,
        a.patch_size,
        a.image_size,
        a.image_size,
        report.parameters,
        report.weights_bytes,
        report.weights_sha256
    );
    s += &format!("Made by:\n\n```\n{command}\n```\n\n");
    s += &format!(
        "Initialisation: `transformers`' ViT init (LayerNorm 1/0, biases 0, every other tensor \
         N(0, {INITIALIZER_RANGE}²) truncated at ±2σ), ChaCha20 streams seeded by SHA-256 of the seed \
         ({}) and the tensor name.\n\n",
        plan.seed
    );
    if report.tasks.is_empty() {
        s += "Training: none. This is the random-initialisation control: same architecture, seed and \
              preprocessing as the rest of the panel, no training.\n";
        return s;
    }
    let t = &plan.train;
    s += &format!(
        "Training: every weight of the encoder trains (full), with one linear head per task on the final \
         CLS state (heads discarded). {} round(s) over the task(s) in order, each task visit {} epoch(s); \
         AdamW lr {}, weight decay {}, batch {}, warmup {} of each stage then cosine, gradient clipping \
         {}; training seed {} (one stage seed derived from it per stage). Every 5th sample of each \
         task is held out of training and scored at the end.\n\n",
        plan.rounds,
        t.epochs,
        t.lr,
        t.weight_decay,
        t.batch_size,
        t.warmup_ratio,
        t.max_grad_norm.map_or("off".to_string(), |m| format!("at global norm {m}")),
        plan.seed
    );
    s += "| task | kind | loss | train / held out | final train loss (last epoch mean) | held-out accuracy | majority baseline |\n";
    s += "|---|---|---|---|---|---|---|\n";
    for o in &report.tasks {
        s += &format!(
            "| `{}` | {} | {} | {} / {} | {:.4} | {:.4} | {:.4} |\n",
            o.spec,
            o.kind,
            o.loss,
            o.n_train,
            o.n_holdout,
            o.final_train_loss,
            o.holdout_accuracy,
            o.holdout_majority_accuracy
        );
    }
    s += "\nHeld-out accuracy: top-1 for multiclass / ordinal tasks; for multilabel tasks the mean \
          per-label accuracy at logit 0. The majority baseline is the accuracy of always predicting the \
          training rows' majority class (per label: the more frequent value): read the accuracy against it.\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HF's init: LayerNorm weights exactly 1, biases exactly 0, other tensors within ±2σ and
    /// reproducible from (seed, name) alone.
    #[test]
    fn initial_values_follow_hf_init_and_are_seeded_by_name() {
        assert!(initial_values("encoder.layer.0.layernorm_before.weight", 8, 3).iter().all(|v| *v == 1.0));
        assert!(initial_values("encoder.layer.0.output.dense.bias", 8, 3).iter().all(|v| *v == 0.0));
        let w = initial_values("encoder.layer.0.output.dense.weight", 4096, 3);
        assert!(w.iter().all(|v| v.abs() <= (2.0 * INITIALIZER_RANGE) as f32));
        let sd = (w.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
        // A N(0, σ²) truncated at ±2σ has standard deviation 0.88 σ.
        assert!((sd / INITIALIZER_RANGE - 0.88).abs() < 0.05, "sd {sd}");
        assert_eq!(w, initial_values("encoder.layer.0.output.dense.weight", 4096, 3));
        assert_ne!(w, initial_values("encoder.layer.0.output.dense.weight", 4096, 4));
        assert_ne!(w, initial_values("encoder.layer.1.output.dense.weight", 4096, 3));
    }

    #[test]
    fn bad_architecture_is_refused() {
        let arch = VitArchitecture { hidden_size: 30, num_heads: 4, ..VitArchitecture::default() };
        let dir = tempfile::tempdir().unwrap();
        let err = write_initial_checkpoint(&arch, 0, dir.path()).unwrap_err().to_string();
        assert!(err.contains("multiple of num_heads"), "{err}");
    }
}
