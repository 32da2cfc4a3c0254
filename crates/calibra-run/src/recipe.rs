//! Recipes: one TOML file declaring a whole study (see the README section "Recipes and the run store"
//! and `recipes/*.toml` for complete examples).
//!
//! # Schema
//!
//! Unknown keys are rejected at every level. Relative paths (local encoders, dataset locations,
//! HiCroPL's descriptions, the evaluator reference) are resolved against the working directory of
//! the `calibra` process.
//!
//! ```toml
//! name = "quickstart"                 # optional
//! description = "…"                   # optional
//! seeds = [0, 1, 2]                   # non-negative integers, non-empty, distinct
//! label_fractions = [0.01, 0.1, 1.0]  # each in (0, 1], non-empty, distinct
//! calibrators = ["none", "temperature"]   # names::calibrators(), non-empty, distinct
//!
//! [[encoders]]                        # non-empty
//! name = "scratch"                    # optional; default: the last path component of `source`
//! source = "checkpoints/scratch"      # a local path (must exist) or `hf:org/model`
//! datasets = ["derm"]                 # optional: the datasets it has an interface for (default: all)
//!
//! [[datasets]]                        # non-empty
//! name = "derm"                       # optional; default: synth suite name or file stem of the location
//! spec = "synth:derm?n=600"           # a calibra-data dataset SPEC
//! shift = [{ name = "chest-b", spec = "synth:chest-site-b" }]   # optional shift targets
//! calibrators = ["none", "temperature"]   # optional: this dataset's list (default: the top-level one);
//!                                     # `vector` and `dirichlet` are single-label only
//!
//! [perturbations]                     # optional; absent = clean test split only
//! names = ["gaussian-blur", "jpeg"]   # names::perturbations()
//! severities = [1, 2, 3]              # each in 1..=names::MAX_SEVERITY
//! label_fractions = [1.0]             # optional: only fits at these fractions get perturbed slots
//!
//! [split]                             # optional; defaults shown
//! train = 0.7
//! calibration = 0.15
//! test = 0.15
//! seed = 0
//!
//! [regimes.frozen]                    # at least one regime
//! probes = ["logistic", "knn"]        # names::PROBES
//! layers = [0.5, 1.0]                 # fractions of the encoder's blocks, (0, 1]; default [1.0]
//! # every regime also takes: encoders = ["scratch"] (default: all) and label_fractions = [...]
//! # (default: the top-level list)
//!
//! [regimes.lora]
//! r = 8
//! alpha = 16.0
//! dropout = 0.1                       # [0, 1)
//! lr = 1e-4                           # > 0
//! epochs = 5                          # >= 1
//! targets = ["query", "value"]        # names::LORA_TARGETS
//! head_init = "probe"                 # optional (lora and full): "probe" = LP-FT (the frozen logistic
//!                                     # probe as the starting head) or "random"; default "random"
//! early_stopping = 2                  # optional (lora and full): patience in epochs on the
//!                                     # calibration-split loss, best epoch's weights kept; default none
//!
//! [regimes.coop]
//! n_ctx = 4
//! ctx_init = "a photo of a"           # optional
//! csc = false                         # class-specific contexts
//! class_position = "end"              # names::COOP_CLASS_POSITIONS
//! epochs = 10
//! lr = 2e-3
//! methods = ["coop", "kgcoop"]        # optional; names::COOP_METHODS, each its own fit; default
//!                                     # ["coop"]. Records: probe `<loss label>` for coop,
//!                                     # `kgcoop+<loss label>` / `prograd+<loss label>` for the others
//! kgcoop_lambda = 8.0                 # optional; KgCoOp's λ, default 8 (its reference)
//! prograd_lambda = 1.0                # optional; ProGrad's λ, default 1 (its reference)
//! prograd_temperature = 1.0           # optional; ProGrad's T, default 1 (its reference)
//! maple_depth = 9                     # optional; MaPLe's prompt depth, default 9 (its reference;
//!                                     # at most the blocks of the model's smaller tower)
//! maple_n_ctx = 2                     # optional; MaPLe's context tokens per layer, default 2; MaPLe's
//!                                     # init phrase is ctx_init, else "a photo of a" (its reference)
//! promptsrc_depth = 9                 # optional; PromptSRC's prompt depth in both towers, default 9
//! promptsrc_n_ctx = 4                 # optional; its context tokens per layer in both towers, default 4
//! promptsrc_text_weight = 25.0        # optional; weight of its text-feature L1 regulariser, default 25
//! promptsrc_image_weight = 10.0       # optional; weight of its image-feature L1 regulariser, default 10
//! promptsrc_gpa_mean = 15.0           # optional; mean (in epochs) of its Gaussian prompt aggregation
//! promptsrc_gpa_std = 1.0             # optional; its standard deviation (all: PromptSRC's reference)
//! hicropl_depth = 12                  # optional; HiCroPL's prompt depth in both towers, default 12
//!                                     # (in 2..=the blocks of the model's smaller tower)
//! hicropl_n_ctx = 16                  # optional; its context tokens per layer in both towers, default
//!                                     # 16; at most 4 start from ctx_init, else "a photo of a", more
//!                                     # start random (as its reference)
//! hicropl_cross_layer = 6             # optional; blocks below it map text → vision prompts, the rest
//!                                     # vision → text; in 1..hicropl_depth, default 6
//! hicropl_lambda = 12.0               # optional; weight of its distillation term, default 12
//! hicropl_adam_eps = 1e-3             # optional; its Adam epsilon, default 1e-3 (all: HiCroPL's reference,
//!                                     # zzeoZheng/HiCroPL configs/trainers/HiCroPL/
//!                                     # vit_b16_c2_ep50_batch32_16ctx_few_shot.yaml)
//! hicropl_descriptions = "gpt/derm.json"  # optional; its teacher from descriptions of each class: a
//!                                     # JSON object from class name to a non-empty list of sentences
//!                                     # (the reference's gpt_file/<dataset>_prompt.json; class names
//!                                     # with `_` read as a space); default: none, the 60 templates.
//!                                     # One file for every dataset, or a table from dataset name to
//!                                     # file, e.g. { derm = "gpt/derm.json", chest = "gpt/chest.json" }:
//!                                     # then it names every dataset HiCroPL trains on, and only those.
//!                                     # Relative to the working directory. A fit's key holds the
//!                                     # digest of its dataset's file's content, not its path
//!                                     # (crate::descriptions)
//! datasets = ["derm"]                 # optional (zero-shot too): single-label datasets only
//!
//! [regimes.full]
//! lr = 1e-5
//! epochs = 3
//!
//! [regimes.zero-shot]                 # one fit per encoder × dataset × seed × template
//! templates = ["P1", "P2", "a dermoscopy image of {}."]   # MVC-Bench ids P1…P7, "mvc-bench" (all
//!                                     # seven), or a template text with exactly one `{}` (C1, C2… in order)
//! datasets = ["derm"]                 # optional: the datasets it runs on (default: all); single-label only
//!
//! [regimes.estimate]                  # transferability estimators on the cached frozen features of
//!                                     # the train split; one fit per encoder × dataset × layer, seed =
//!                                     # the first of `seeds`; records hold the scores, no predictions
//! estimators = ["logme", "hscore"]    # optional; default: all of names::ESTIMATORS
//! layers = [0.25, 0.5, 0.75, 1.0]     # optional; default shown (fractions of the encoder's blocks)
//! encoders = ["generalist"]           # optional (default: all)
//!
//! [[losses]]                          # the adapted regimes (lora, coop, full) need >= 1 loss each
//! name = "mcm"                        # names::LOSSES
//! label = "mcm"                       # optional; the record's `probe` field; default: `name`
//! args = { alpha = 0.1, beta = 0.01 } # exactly the loss's arguments (names::LOSSES)
//! regimes = ["coop"]                  # optional; default: every adapted regime of the recipe
//!
//! [evaluator]                         # optional: what `calibra report` passes to the evaluator
//! reference = "ref.json"              # optional saved reference
//! bootstrap = 1000                    # replicates (0 = none); default 10000
//! seed = 0
//! weights = [0.60, 0.25, 0.15]        # optional α_D, α_S, α_W
//! axis_weights = [0.25, 0.25, 0.25, 0.25]   # optional
//! robustness = "with-shift"           # or "corruption-only"
//! regime = "frozen"                   # the regime whose runs define the axes
//!
//! [cost]                              # optional: the dry-run cost model (see crate::cost)
//! pass_seconds = 2.0                  # seconds of one encoder forward pass over one test split
//!
//! [runtime]                           # optional; never part of a fit key
//! device = "wgpu"                     # cpu (default), wgpu, wgpu:N, cuda, cuda:N, ndarray
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use calibra_crs::Regime;
use serde::{Deserialize, Serialize};

use crate::descriptions::{DescriptionsFile, DescriptionsSetting};
use crate::error::RunError;
use crate::locate::{line_of, line_of_path, path_at};
use crate::names;

/// One encoder of the study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncoderEntry {
    /// Name written in run records (default: derived from `source`, see [`EncoderEntry::display_name`]).
    #[serde(default)]
    pub name: Option<String>,
    /// A local path (`checkpoints/<name>`, any directory in Hugging Face layout) or `hf:org/model`.
    pub source: String,
    /// Dataset names this encoder has an interface for (default: all). A cell left out is missing,
    /// never imputed (e.g. a chest-only encoder has no fundus cell).
    #[serde(default)]
    pub datasets: Option<Vec<String>>,
}

impl EncoderEntry {
    /// The explicit name, else `org/model` of an `hf:` id, else the last path component.
    pub fn display_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        if let Some(id) = self.source.strip_prefix("hf:") {
            return id.to_string();
        }
        last_component(&self.source)
    }

    /// Whether the source is a Hugging Face hub id (not a local path).
    pub fn is_hub_id(&self) -> bool {
        self.source.starts_with("hf:")
    }
}

fn last_component(path: &str) -> String {
    let trimmed = path.trim_end_matches(['/', '\\']);
    let base = Path::new(trimmed).file_stem().map(|s| s.to_string_lossy().to_string());
    base.filter(|s| !s.is_empty()).unwrap_or_else(|| trimmed.to_string())
}

/// A shift target: a dataset predicted by the model trained on its parent dataset, without retraining.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShiftEntry {
    /// Name written in the record's condition (default: derived from `spec` as for datasets).
    #[serde(default)]
    pub name: Option<String>,
    /// A calibra-data dataset SPEC.
    pub spec: String,
}

impl ShiftEntry {
    /// The explicit name or the default derived from the spec.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| spec_default_name(&self.spec))
    }
}

/// One dataset of the study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetEntry {
    /// Name written in run records (default: the synthetic suite, or the location's file stem).
    #[serde(default)]
    pub name: Option<String>,
    /// A calibra-data dataset SPEC (`synth:derm`, `isic2019:/data/isic`, ...).
    pub spec: String,
    /// Shift targets.
    #[serde(default)]
    pub shift: Vec<ShiftEntry>,
    /// Post-hoc calibrators for this dataset and its shift targets (default: the top-level list),
    /// e.g. to leave the multiclass-only `dirichlet` out for a multilabel dataset.
    #[serde(default)]
    pub calibrators: Option<Vec<String>>,
}

impl DatasetEntry {
    /// The explicit name or the default derived from the spec.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| spec_default_name(&self.spec))
    }
}

/// `synth:derm?n=10` → `derm`; `isic2019:/data/isic` → `isic`; `medmnist:/d/chestmnist.npz` →
/// `chestmnist`.
fn spec_default_name(spec: &str) -> String {
    let rest = spec.split_once(':').map_or(spec, |(_, r)| r);
    let location = rest.split_once('?').map_or(rest, |(l, _)| l);
    last_component(location)
}

/// Perturbation conditions: every name at every severity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perturbations {
    pub names: Vec<String>,
    pub severities: Vec<u32>,
    /// Label fractions whose fits are also tested under perturbation (default: every fraction).
    #[serde(default)]
    pub label_fractions: Option<Vec<f64>>,
}

/// The train / calibration / test split (fixed across seeds; seeds vary the fit and the label subset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitSettings {
    #[serde(default = "default_train")]
    pub train: f64,
    #[serde(default = "default_held_out")]
    pub calibration: f64,
    #[serde(default = "default_held_out")]
    pub test: f64,
    #[serde(default)]
    pub seed: u64,
}

impl SplitSettings {
    /// The calibra-data split configuration (official splits respected where a format has them).
    pub fn config(&self) -> calibra_data::SplitConfig {
        calibra_data::SplitConfig {
            train: self.train,
            calibration: self.calibration,
            test: self.test,
            seed: self.seed,
            use_official: true,
        }
    }
}

fn default_train() -> f64 {
    0.70
}
fn default_held_out() -> f64 {
    0.15
}

impl Default for SplitSettings {
    fn default() -> Self {
        SplitSettings {
            train: default_train(),
            calibration: default_held_out(),
            test: default_held_out(),
            seed: 0,
        }
    }
}

/// The filters every trained regime accepts (`encoders`, `label_fractions`), viewed together.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RegimeScope<'a> {
    /// Encoder names this regime runs on (`None`: all).
    pub encoders: Option<&'a [String]>,
    /// Label fractions of this regime (`None`: the recipe's list).
    pub label_fractions: Option<&'a [f64]>,
}

/// `[regimes.frozen]`: probes on frozen features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrozenRegime {
    pub probes: Vec<String>,
    /// Feature depth as fractions of the encoder's blocks (1.0 = the last block).
    #[serde(default = "default_layers")]
    pub layers: Vec<f64>,
    /// Encoder names this regime runs on (default: all).
    #[serde(default)]
    pub encoders: Option<Vec<String>>,
    /// Label fractions of this regime (default: the recipe's list).
    #[serde(default)]
    pub label_fractions: Option<Vec<f64>>,
}

fn default_layers() -> Vec<f64> {
    vec![1.0]
}

/// The head initialisation of a LoRA / full fit whose regime does not set `head_init`: `random`,
/// what every fit did before `head_init` existed, so such recipes keep their fit keys (the key holds
/// `head_init` only when it is not `random`; see `crate::grid::FitMethod`).
pub const DEFAULT_HEAD_INIT: &str = "random";

/// Values of `head_init`.
pub const HEAD_INITS: &[&str] = &["probe", "random"];

/// Images per forward pass of LoRA / full fine-tuning when `batch_size` is absent (calibra-train's
/// `TrainConfig` default; a calibra-exec test keeps the two equal).
pub const DEFAULT_TRAIN_BATCH: u32 = 32;

/// Values of `augment` (calibra-train's `Augment` names; a calibra-exec test keeps them equal).
pub const AUGMENTS: &[&str] = &["none", "crop-flip"];

/// `[regimes.lora]`: low-rank adaptation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraRegime {
    pub r: u32,
    pub alpha: f64,
    pub dropout: f64,
    pub lr: f64,
    pub epochs: u32,
    pub targets: Vec<String>,
    /// Where the linear head starts: `probe` (LP-FT) or `random` (default: [`DEFAULT_HEAD_INIT`]).
    #[serde(default)]
    pub head_init: Option<String>,
    /// Early stopping on the calibration-split loss: patience in epochs (absent: none).
    #[serde(default)]
    pub early_stopping: Option<u32>,
    /// Images per forward pass (default [`DEFAULT_TRAIN_BATCH`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// Gradient accumulation: forward passes per optimiser step, which then sees
    /// `batch_size · accumulate` images (default 1; Hugging Face's `gradient_accumulation_steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulate: Option<u32>,
    /// Train-time augmentation: `none` (default) or `crop-flip` (torchvision's RandomResizedCrop +
    /// RandomHorizontalFlip defaults, see calibra-train's `augment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<String>,
    /// Encoder names this regime runs on (default: all).
    #[serde(default)]
    pub encoders: Option<Vec<String>>,
    /// Label fractions of this regime (default: the recipe's list).
    #[serde(default)]
    pub label_fractions: Option<Vec<f64>>,
}

/// `[regimes.coop]`: context optimisation on a CLIP-style encoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoopRegime {
    pub n_ctx: u32,
    #[serde(default)]
    pub ctx_init: Option<String>,
    #[serde(default)]
    pub csc: bool,
    #[serde(default = "default_class_position")]
    pub class_position: String,
    pub epochs: u32,
    pub lr: f64,
    /// Prompt-learning methods, each its own fit ([`names::COOP_METHODS`]: `coop`, `kgcoop`,
    /// `prograd`, `maple`, `promptsrc`, `hicropl`; default `["coop"]`, what every CoOp fit was before
    /// this key existed, so such recipes keep their fit keys). See [`crate::grid::PromptMethod`].
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// KgCoOp's weight λ of the knowledge-guidance term (default [`KGCOOP_DEFAULT_LAMBDA`]).
    #[serde(default)]
    pub kgcoop_lambda: Option<f64>,
    /// ProGrad's projection strength λ (default [`PROGRAD_DEFAULT_LAMBDA`]).
    #[serde(default)]
    pub prograd_lambda: Option<f64>,
    /// ProGrad's distillation temperature T (default [`PROGRAD_DEFAULT_TEMPERATURE`]).
    #[serde(default)]
    pub prograd_temperature: Option<f64>,
    /// MaPLe's prompt depth (default [`MAPLE_DEFAULT_DEPTH`]).
    #[serde(default)]
    pub maple_depth: Option<u32>,
    /// MaPLe's context tokens per layer (default [`MAPLE_DEFAULT_N_CTX`]; `n_ctx` is CoOp's).
    #[serde(default)]
    pub maple_n_ctx: Option<u32>,
    /// PromptSRC's prompt depth in both towers (default [`PROMPTSRC_DEFAULT_DEPTH`]).
    #[serde(default)]
    pub promptsrc_depth: Option<u32>,
    /// PromptSRC's context tokens per layer in both towers (default [`PROMPTSRC_DEFAULT_N_CTX`]).
    #[serde(default)]
    pub promptsrc_n_ctx: Option<u32>,
    /// Weight of PromptSRC's text-feature L1 term (default [`PROMPTSRC_DEFAULT_TEXT_WEIGHT`]).
    #[serde(default)]
    pub promptsrc_text_weight: Option<f64>,
    /// Weight of PromptSRC's image-feature L1 term (default [`PROMPTSRC_DEFAULT_IMAGE_WEIGHT`]).
    #[serde(default)]
    pub promptsrc_image_weight: Option<f64>,
    /// Mean of PromptSRC's Gaussian prompt aggregation, in epochs (default [`PROMPTSRC_DEFAULT_GPA_MEAN`]).
    #[serde(default)]
    pub promptsrc_gpa_mean: Option<f64>,
    /// Its standard deviation (default [`PROMPTSRC_DEFAULT_GPA_STD`]).
    #[serde(default)]
    pub promptsrc_gpa_std: Option<f64>,
    /// HiCroPL's prompt depth in both towers (default [`HICROPL_DEFAULT_DEPTH`]).
    #[serde(default)]
    pub hicropl_depth: Option<u32>,
    /// HiCroPL's context tokens per layer in both towers (default [`HICROPL_DEFAULT_N_CTX`]; `n_ctx`
    /// is CoOp's).
    #[serde(default)]
    pub hicropl_n_ctx: Option<u32>,
    /// HiCroPL's cross layer: blocks below it map text → vision, the others vision → text (default
    /// [`HICROPL_DEFAULT_CROSS_LAYER`]).
    #[serde(default)]
    pub hicropl_cross_layer: Option<u32>,
    /// Weight of HiCroPL's distillation term (default [`HICROPL_DEFAULT_LAMBDA`]).
    #[serde(default)]
    pub hicropl_lambda: Option<f64>,
    /// HiCroPL's Adam epsilon (default [`HICROPL_DEFAULT_ADAM_EPS`]).
    #[serde(default)]
    pub hicropl_adam_eps: Option<f64>,
    /// HiCroPL's teacher descriptions: a JSON file from class name to sentences (the reference's
    /// `gpt_file/<dataset>_prompt.json`, see [`crate::descriptions`]) for every dataset, or a table
    /// from dataset name to such a file; relative to the working directory. Default: none, the
    /// teacher is the frozen model's features of 60 templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hicropl_descriptions: Option<DescriptionsSetting>,
    /// The digests ([`crate::descriptions::descriptions_sha256`]) of the files `hicropl_descriptions`
    /// names, by path, when the recipe was loaded: what the fit keys hold. Not a recipe key:
    /// [`Recipe::parse`] fills it (a file that could not be read has no entry, which validation
    /// refuses unless paths are not checked).
    #[serde(skip)]
    pub hicropl_descriptions_sha256: BTreeMap<String, String>,
    /// Train-time augmentation of the methods that train on images (MaPLe, PromptSRC, HiCroPL): `none`
    /// (default) or `crop-flip` (the references' random resized crop + flip; see calibra-train's
    /// `augment`). CoOp, KgCoOp and ProGrad train on cached image features and are not augmented.
    #[serde(default)]
    pub augment: Option<String>,
    /// Encoder names this regime runs on (default: all); they must be CLIP-style checkpoints.
    #[serde(default)]
    pub encoders: Option<Vec<String>>,
    /// Dataset names this regime runs on (default: all). CoOp learns class prompts scored by a softmax,
    /// so multilabel datasets are refused: leave them out here.
    #[serde(default)]
    pub datasets: Option<Vec<String>>,
    /// Label fractions of this regime (default: the recipe's list).
    #[serde(default)]
    pub label_fractions: Option<Vec<f64>>,
}

fn default_class_position() -> String {
    "end".to_string()
}

/// The prompt-learning method of a `[regimes.coop]` section without `methods`: plain CoOp.
pub const DEFAULT_COOP_METHOD: &str = "coop";

/// KgCoOp's reference λ (Yao et al., CVPR 2023; code `htyao89/KgCoOp`), as calibra-train's
/// `CoopMethod::KGCOOP_DEFAULT`.
pub const KGCOOP_DEFAULT_LAMBDA: f64 = 8.0;

/// ProGrad's reference λ (Zhu et al., ICCV 2023; code `BeierZhu/Prompt-align`), as calibra-train's
/// `CoopMethod::PROGRAD_DEFAULT`.
pub const PROGRAD_DEFAULT_LAMBDA: f64 = 1.0;

/// ProGrad's reference distillation temperature T, as calibra-train's `CoopMethod::PROGRAD_DEFAULT`.
pub const PROGRAD_DEFAULT_TEMPERATURE: f64 = 1.0;

/// MaPLe's reference prompt depth (`PROMPT_DEPTH`, `muzairkhattak/multimodal-prompt-learning
/// configs/trainers/MaPLe/vit_b16_c2_ep5_batch4_2ctx.yaml`), as calibra-train's `CoopMethod::MAPLE_DEFAULT`.
pub const MAPLE_DEFAULT_DEPTH: u32 = 9;

/// MaPLe's reference context tokens per layer (`N_CTX`, same config).
pub const MAPLE_DEFAULT_N_CTX: u32 = 2;

/// PromptSRC's reference prompt depth of both towers (`PROMPT_DEPTH_TEXT`, `PROMPT_DEPTH_VISION`,
/// `muzairkhattak/PromptSRC configs/trainers/PromptSRC/vit_b16_c2_ep20_batch4_4+4ctx.yaml`), as
/// calibra-train's `CoopMethod::PROMPTSRC_DEFAULT`.
pub const PROMPTSRC_DEFAULT_DEPTH: u32 = 9;
/// PromptSRC's reference context tokens per layer of both towers (`N_CTX_TEXT`, `N_CTX_VISION`).
pub const PROMPTSRC_DEFAULT_N_CTX: u32 = 4;
/// PromptSRC's reference weight of the text L1 term (`TEXT_LOSS_WEIGHT`).
pub const PROMPTSRC_DEFAULT_TEXT_WEIGHT: f64 = 25.0;
/// PromptSRC's reference weight of the image L1 term (`IMAGE_LOSS_WEIGHT`).
pub const PROMPTSRC_DEFAULT_IMAGE_WEIGHT: f64 = 10.0;
/// PromptSRC's reference mean of the Gaussian prompt aggregation (`GPA_MEAN`).
pub const PROMPTSRC_DEFAULT_GPA_MEAN: f64 = 15.0;
/// PromptSRC's reference standard deviation of the aggregation (`GPA_STD`).
pub const PROMPTSRC_DEFAULT_GPA_STD: f64 = 1.0;

/// HiCroPL's reference prompt depth of both towers (`PROMPT_DEPTH`, `zzeoZheng/HiCroPL
/// configs/trainers/HiCroPL/vit_b16_c2_ep50_batch32_16ctx_few_shot.yaml`), as calibra-train's
/// `CoopMethod::HICROPL_DEFAULT`.
pub const HICROPL_DEFAULT_DEPTH: u32 = 12;
/// HiCroPL's reference context tokens per layer of both towers (`N_CTX`, same config), as
/// calibra-train's `CoopConfig::hicropl_reference`.
pub const HICROPL_DEFAULT_N_CTX: u32 = 16;
/// HiCroPL's reference cross layer (`CROSS_LAYER`).
pub const HICROPL_DEFAULT_CROSS_LAYER: u32 = 6;
/// HiCroPL's reference weight of the distillation term (`LAMBD`).
pub const HICROPL_DEFAULT_LAMBDA: f64 = 12.0;
/// HiCroPL's reference Adam epsilon (`OPTIM.EPS`, which the repository's Dassl passes to Adam).
pub const HICROPL_DEFAULT_ADAM_EPS: f64 = 1e-3;

impl CoopRegime {
    /// HiCroPL's teacher descriptions for the fits of `dataset` (a dataset name): its file and the
    /// digest read when the recipe was loaded. `None` without `hicropl_descriptions`, or when its
    /// table does not name the dataset (validation refuses that for a dataset HiCroPL trains on).
    pub fn hicropl_descriptions_for(&self, dataset: &str) -> Option<DescriptionsFile> {
        let path = self.hicropl_descriptions.as_ref()?.path_for(dataset)?;
        Some(DescriptionsFile {
            path: path.to_string(),
            sha256: self.hicropl_descriptions_sha256.get(path).cloned(),
        })
    }

    /// The method names of the section (`methods`, else `["coop"]`).
    pub fn method_names(&self) -> Vec<String> {
        self.methods.clone().unwrap_or_else(|| vec![DEFAULT_COOP_METHOD.to_string()])
    }

    /// The prompt-learning methods with their hyper-parameters, in `methods` order. Assumes a
    /// validated recipe (an unknown name is left out).
    pub fn prompt_methods(&self) -> Vec<crate::grid::PromptMethod> {
        use crate::grid::PromptMethod;
        self.method_names()
            .iter()
            .filter_map(|name| match name.as_str() {
                "coop" => Some(PromptMethod::Coop),
                "kgcoop" => {
                    Some(PromptMethod::KgCoop { lambda: self.kgcoop_lambda.unwrap_or(KGCOOP_DEFAULT_LAMBDA) })
                }
                "prograd" => Some(PromptMethod::ProGrad {
                    lambda: self.prograd_lambda.unwrap_or(PROGRAD_DEFAULT_LAMBDA),
                    temperature: self.prograd_temperature.unwrap_or(PROGRAD_DEFAULT_TEMPERATURE),
                }),
                "maple" => Some(PromptMethod::Maple {
                    depth: self.maple_depth.unwrap_or(MAPLE_DEFAULT_DEPTH),
                    n_ctx: self.maple_n_ctx.unwrap_or(MAPLE_DEFAULT_N_CTX),
                }),
                "promptsrc" => Some(PromptMethod::PromptSrc {
                    depth: self.promptsrc_depth.unwrap_or(PROMPTSRC_DEFAULT_DEPTH),
                    n_ctx: self.promptsrc_n_ctx.unwrap_or(PROMPTSRC_DEFAULT_N_CTX),
                    text_weight: self.promptsrc_text_weight.unwrap_or(PROMPTSRC_DEFAULT_TEXT_WEIGHT),
                    image_weight: self.promptsrc_image_weight.unwrap_or(PROMPTSRC_DEFAULT_IMAGE_WEIGHT),
                    gpa_mean: self.promptsrc_gpa_mean.unwrap_or(PROMPTSRC_DEFAULT_GPA_MEAN),
                    gpa_std: self.promptsrc_gpa_std.unwrap_or(PROMPTSRC_DEFAULT_GPA_STD),
                }),
                "hicropl" => Some(PromptMethod::HiCroPL {
                    depth: self.hicropl_depth.unwrap_or(HICROPL_DEFAULT_DEPTH),
                    n_ctx: self.hicropl_n_ctx.unwrap_or(HICROPL_DEFAULT_N_CTX),
                    cross_layer: self.hicropl_cross_layer.unwrap_or(HICROPL_DEFAULT_CROSS_LAYER),
                    lambda: self.hicropl_lambda.unwrap_or(HICROPL_DEFAULT_LAMBDA),
                    adam_eps: self.hicropl_adam_eps.unwrap_or(HICROPL_DEFAULT_ADAM_EPS),
                }),
                _ => None,
            })
            .collect()
    }
}

/// `[regimes.full]`: full fine-tuning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FullRegime {
    pub lr: f64,
    pub epochs: u32,
    /// As [`LoraRegime::head_init`].
    #[serde(default)]
    pub head_init: Option<String>,
    /// As [`LoraRegime::early_stopping`].
    #[serde(default)]
    pub early_stopping: Option<u32>,
    /// As [`LoraRegime::batch_size`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
    /// As [`LoraRegime::accumulate`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulate: Option<u32>,
    /// As [`LoraRegime::augment`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<String>,
    /// Encoder names this regime runs on (default: all).
    #[serde(default)]
    pub encoders: Option<Vec<String>>,
    /// Label fractions of this regime (default: the recipe's list).
    #[serde(default)]
    pub label_fractions: Option<Vec<f64>>,
}

/// `[regimes.zero-shot]`: prompted prediction, no training (label fraction is always 1).
///
/// Each `templates` entry is an MVC-Bench template id (`P1`…`P7`, the texts of
/// `calibra_models::clip::MVC_BENCH_TEMPLATES`), the word `mvc-bench` (all seven, in order), or a
/// custom template text with exactly one `{}` for the class name; custom templates get the ids `C1`,
/// `C2`… in the order they are listed. Every template is its own fit, whose records carry the probe
/// label `zero-shot:<ID>` (the evaluator's template convention).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZeroShotRegime {
    pub templates: Vec<String>,
    /// Encoder names this regime runs on (default: all); they must be CLIP-style checkpoints.
    #[serde(default)]
    pub encoders: Option<Vec<String>>,
    /// Dataset names this regime runs on (default: all). Zero-shot classification is a softmax over
    /// class prompts, so multilabel datasets are refused: leave them out here.
    #[serde(default)]
    pub datasets: Option<Vec<String>>,
}

/// Number of MVC-Bench prompt templates (`P1`…`P7`), from the workspace's one list of their texts
/// (`calibra_core::MVC_BENCH_TEMPLATES`).
pub const MVC_BENCH_TEMPLATE_COUNT: usize = calibra_core::MVC_BENCH_TEMPLATES.len();

/// One zero-shot prompt template as a fit uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ZeroShotTemplate {
    /// `P1`…`P7` (MVC-Bench) or `C1`, `C2`… (custom, in recipe order).
    pub id: String,
    /// The custom template's text (one `{}`); `None` for an MVC-Bench id, whose text the executor
    /// looks up.
    pub text: Option<String>,
}

/// The MVC-Bench index (1-based) of an entry `P<n>` with `n` digits only, whether or not in range.
fn mvc_bench_index(entry: &str) -> Option<usize> {
    let digits = entry.strip_prefix('P')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().unwrap_or(usize::MAX))
}

impl ZeroShotRegime {
    /// The templates in recipe order, `mvc-bench` expanded to `P1`…`P7` and custom texts numbered
    /// `C1`, `C2`…. Assumes a validated recipe (an out-of-range id is kept as written).
    pub fn resolved_templates(&self) -> Vec<ZeroShotTemplate> {
        let mut out = Vec::new();
        let mut custom = 0;
        for entry in &self.templates {
            if entry == "mvc-bench" {
                out.extend(
                    (1..=MVC_BENCH_TEMPLATE_COUNT)
                        .map(|n| ZeroShotTemplate { id: format!("P{n}"), text: None }),
                );
            } else if mvc_bench_index(entry).is_some() {
                out.push(ZeroShotTemplate { id: entry.clone(), text: None });
            } else {
                custom += 1;
                out.push(ZeroShotTemplate { id: format!("C{custom}"), text: Some(entry.clone()) });
            }
        }
        out
    }
}

/// `[regimes.estimate]`: transferability estimators (calibra-transfer) on the frozen train-split
/// features, at each layer, with no extra encoder pass where the frozen regime caches the same layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EstimateRegime {
    /// Estimator names ([`names::ESTIMATORS`]; default: all).
    #[serde(default = "default_estimators")]
    pub estimators: Vec<String>,
    /// Feature depths as fractions of the encoder's blocks (default 25 / 50 / 75 / 100 %).
    #[serde(default = "default_estimate_layers")]
    pub layers: Vec<f64>,
    /// Encoder names this regime runs on (default: all).
    #[serde(default)]
    pub encoders: Option<Vec<String>>,
}

fn default_estimators() -> Vec<String> {
    names::ESTIMATORS.iter().map(|s| s.to_string()).collect()
}

fn default_estimate_layers() -> Vec<f64> {
    vec![0.25, 0.5, 0.75, 1.0]
}

macro_rules! scoped {
    ($($t:ty),*) => {$(
        impl $t {
            /// The regime's encoder and label-fraction filters.
            pub fn scope(&self) -> RegimeScope<'_> {
                RegimeScope { encoders: self.encoders.as_deref(), label_fractions: self.label_fractions.as_deref() }
            }
        }
    )*};
}
scoped!(FrozenRegime, LoraRegime, CoopRegime, FullRegime);

/// `[regimes]`: at least one must be present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regimes {
    #[serde(default)]
    pub frozen: Option<FrozenRegime>,
    #[serde(default)]
    pub lora: Option<LoraRegime>,
    #[serde(default)]
    pub coop: Option<CoopRegime>,
    #[serde(default)]
    pub full: Option<FullRegime>,
    #[serde(default, rename = "zero-shot")]
    pub zero_shot: Option<ZeroShotRegime>,
    #[serde(default)]
    pub estimate: Option<EstimateRegime>,
}

/// `[[losses]]`: a training loss of the adapted regimes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossEntry {
    pub name: String,
    /// The record's `probe` field (default: `name`); labels must be unique per regime.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub args: BTreeMap<String, f64>,
    /// Adapted regimes this loss trains (default: every adapted regime of the recipe).
    #[serde(default)]
    pub regimes: Option<Vec<String>>,
}

impl LossEntry {
    /// The explicit label or the name.
    pub fn display_label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.name.clone())
    }

    /// Whether this loss trains regime `regime` (an adapted regime).
    pub fn applies_to(&self, regime: Regime) -> bool {
        self.regimes.as_ref().is_none_or(|list| list.iter().any(|r| r == regime.name()))
    }
}

/// `[evaluator]`: the settings `calibra report` passes to the evaluator. They do not affect fits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorSettings {
    #[serde(default)]
    pub reference: Option<String>,
    #[serde(default = "default_bootstrap")]
    pub bootstrap: usize,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub weights: Option<[f64; 3]>,
    #[serde(default)]
    pub axis_weights: Option<[f64; 4]>,
    #[serde(default = "default_robustness")]
    pub robustness: String,
    #[serde(default = "default_regime")]
    pub regime: String,
}

fn default_bootstrap() -> usize {
    10_000
}
fn default_robustness() -> String {
    "with-shift".to_string()
}
fn default_regime() -> String {
    "frozen".to_string()
}

impl Default for EvaluatorSettings {
    fn default() -> Self {
        EvaluatorSettings {
            reference: None,
            bootstrap: default_bootstrap(),
            seed: 0,
            weights: None,
            axis_weights: None,
            robustness: default_robustness(),
            regime: default_regime(),
        }
    }
}

/// `[cost]`: the dry-run cost model's one calibration constant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSettings {
    /// Seconds of one encoder forward pass over one test split (the cost unit); when absent the dry run
    /// reports units only.
    #[serde(default)]
    pub pass_seconds: Option<f64>,
}

/// `[runtime]`: where the grid runs. Never part of a fit key: the same fits run on any device, and a
/// store resumes on another one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSettings {
    /// The compute device: `cpu` (the default), `wgpu`, `wgpu:N`, `cuda`, `cuda:N`, `ndarray` (the GPU
    /// backends need the matching cargo feature). `calibra run --device` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// A whole recipe, as written (see the module docs for the schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub seeds: Vec<u64>,
    pub label_fractions: Vec<f64>,
    pub calibrators: Vec<String>,
    pub encoders: Vec<EncoderEntry>,
    pub datasets: Vec<DatasetEntry>,
    #[serde(default)]
    pub perturbations: Option<Perturbations>,
    #[serde(default)]
    pub split: Option<SplitSettings>,
    pub regimes: Regimes,
    #[serde(default)]
    pub losses: Vec<LossEntry>,
    #[serde(default)]
    pub evaluator: Option<EvaluatorSettings>,
    #[serde(default)]
    pub cost: Option<CostSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSettings>,
}

/// What validation checks beyond the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Check that local encoder paths, dataset locations and the evaluator reference exist, and that
    /// HiCroPL's descriptions file reads as descriptions (`--no-check-paths` turns this off, e.g. to
    /// dry-run a recipe for data you have not downloaded).
    pub check_paths: bool,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        ValidationOptions { check_paths: true }
    }
}

impl Recipe {
    /// Reads and validates the recipe file at `path`.
    pub fn load(path: &Path, options: ValidationOptions) -> Result<Recipe, RunError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| RunError::io(path, "cannot read the recipe", e))?;
        Recipe::parse(&text, &path.display().to_string(), options)
    }

    /// Parses and validates recipe text; `source` names it in errors. Every validation problem is
    /// reported (with its key and line), not only the first.
    pub fn parse(text: &str, source: &str, options: ValidationOptions) -> Result<Recipe, RunError> {
        let recipe: Recipe = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_string();
            // A field missing at the top level is reported with a span over the whole document: no
            // line or key is at fault then (naming the first key of the file would mislead).
            let top_level = e.span().is_some_and(|s| s.start == 0) && message.starts_with("missing field");
            if top_level {
                let hint = match message.trim_start_matches("missing field ").trim_matches('`') {
                    "encoders" => " (add at least one [[encoders]] table with a `source`)",
                    "datasets" => " (add at least one [[datasets]] table with a `spec`)",
                    _ => "",
                };
                return RunError::Recipe {
                    file: source.to_string(),
                    line: None,
                    key: String::new(),
                    message: format!("{message} at the top level of the recipe{hint}"),
                };
            }
            let line = e.span().map(|s| line_of(text, s.start));
            // An unknown key's message names it; for other errors, name the key the span falls in.
            let key =
                e.span().and_then(|s| path_at(text, s.start)).map(|p| p.to_string()).unwrap_or_default();
            RunError::Recipe { file: source.to_string(), line, key, message }
        })?;
        let problems = recipe.problems(options);
        if problems.is_empty() {
            let mut recipe = recipe;
            recipe.digest_files();
            return Ok(recipe);
        }
        let mut errors: Vec<RunError> = problems
            .into_iter()
            .map(|p| RunError::Recipe {
                file: source.to_string(),
                line: line_of_path(text, &p.path),
                key: p.path.to_string(),
                message: p.message,
            })
            .collect();
        if errors.len() == 1 { Err(errors.remove(0)) } else { Err(RunError::RecipeProblems(errors)) }
    }

    /// The recipe as TOML text (the `toml` crate's serialisation of the schema types), which
    /// [`Recipe::parse`] reads back into an equal recipe: same fits, same run keys.
    pub fn to_toml(&self) -> Result<String, RunError> {
        toml::to_string(self).map_err(|e| RunError::Recipe {
            file: self.name.clone().unwrap_or_else(|| "the recipe".into()),
            line: None,
            key: String::new(),
            message: format!("cannot write the recipe as TOML: {e}"),
        })
    }

    /// Reads what the fit keys hold of the files the recipe names: the digest of each of HiCroPL's
    /// descriptions files (none for a file that cannot be read or parsed).
    fn digest_files(&mut self) {
        if let Some(c) = &mut self.regimes.coop {
            c.hicropl_descriptions_sha256 = c
                .hicropl_descriptions
                .iter()
                .flat_map(DescriptionsSetting::paths)
                .filter_map(|path| {
                    let descriptions = crate::descriptions::read_descriptions(Path::new(path)).ok()?;
                    Some((path.to_string(), crate::descriptions::descriptions_sha256(&descriptions)))
                })
                .collect();
        }
    }

    /// The split (explicit or default).
    pub fn split(&self) -> SplitSettings {
        self.split.clone().unwrap_or_default()
    }

    /// The evaluator settings (explicit or default).
    pub fn evaluator(&self) -> EvaluatorSettings {
        self.evaluator.clone().unwrap_or_default()
    }

    /// The post-hoc calibrators of `dataset`: its own list, else the top-level one.
    pub fn calibrators_for<'a>(&'a self, dataset: &'a DatasetEntry) -> &'a [String] {
        dataset.calibrators.as_deref().unwrap_or(&self.calibrators)
    }

    /// The adapted regimes present in the recipe (those that train with a loss).
    pub fn adapted_regimes(&self) -> Vec<Regime> {
        let r = &self.regimes;
        [(r.lora.is_some(), Regime::Lora), (r.coop.is_some(), Regime::Coop), (r.full.is_some(), Regime::Full)]
            .into_iter()
            .filter_map(|(present, regime)| present.then_some(regime))
            .collect()
    }
}

mod validate;

#[cfg(test)]
mod tests;
