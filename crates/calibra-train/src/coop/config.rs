//! Hyper-parameters of a CoOp run ([`CoopConfig`]) and the prompt-tuning method ([`CoopMethod`]).

use crate::augment::Augment;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, ModuleOptimizer, SgdConfig};
use calibra_models::clip::{
    ClassTokenPosition, ContextInit, HicroplConfig, IvlpConfig, MapleConfig, PromptLearnerConfig,
};
use serde::{Deserialize, Serialize};

use super::error::CoopError;

/// Which prompt-tuning objective a run optimises (spec §E).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CoopMethod {
    /// CoOp (Zhou et al., IJCV 2022): the configured loss only.
    Coop,
    /// KgCoOp (Yao et al., CVPR 2023), code form (`htyao89/KgCoOp trainers/kgcoop.py`):
    /// `L = loss + λ · (1 − (1/K) Σ_k cos(w_k, w_k^clip))` with `w_k^clip` the frozen zero-shot text
    /// feature of class `k` ([`CoopConfig::zero_shot_template`]); reference λ = 8.
    KgCoop {
        /// Weight λ of the knowledge-guidance term.
        lambda: f64,
    },
    /// ProGrad (Zhu et al., ICCV 2023): the gradient `g` of the configured loss is replaced by
    /// `g − λ (g·ĝ_kl) ĝ_kl` when `g·g_kl < 0`, where `g_kl` is the gradient of
    /// `L_kl = (1/B) Σ_i Σ_k −softmax(z^zs_i/T)_k · log softmax(z_i/T)_k · T²` (zero-shot teacher);
    /// `L_kl` itself is not minimised. Reference λ = 1, T = 1.
    ProGrad {
        /// Projection strength λ (1: onto the normal plane of `g_kl`).
        lambda: f64,
        /// Distillation temperature T.
        temperature: f64,
    },
    /// MaPLe (Khattak et al., CVPR 2023; `muzairkhattak/multimodal-prompt-learning
    /// trainers/maple.py`): `n_ctx` learned tokens in the first `depth` blocks of both towers, the
    /// vision prompts coupled to the text prompts by linear maps
    /// ([`calibra_models::clip::MaplePromptLearner`]); trains on images (the image tower runs every
    /// step), with the configured loss. Reference depth 9.
    Maple {
        /// Prompt depth J (1: the first layer only).
        depth: usize,
    },
    /// PromptSRC (Khattak et al., ICCV 2023; `muzairkhattak/PromptSRC trainers/promptsrc.py`):
    /// independent deep prompts in both towers ([`calibra_models::clip::IvlpPromptLearner`]; the text
    /// context size is [`CoopConfig::n_ctx`]) trained on images with the configured loss plus its
    /// self-regularisers — L1 of the prompted to the frozen text (mean over
    /// [`calibra_models::clip::PROMPTSRC_TEMPLATES`]) and image features, KL of the prompted to the
    /// frozen logits — and Gaussian-weighted prompt aggregation over epochs.
    PromptSrc {
        /// Text prompt depth (`PROMPT_DEPTH_TEXT`, reference 9).
        depth_text: usize,
        /// Vision prompt depth (`PROMPT_DEPTH_VISION`, reference 9).
        depth_vision: usize,
        /// Vision context tokens (`N_CTX_VISION`, reference 4).
        n_ctx_vision: usize,
        /// Weight of the text L1 term (`TEXT_LOSS_WEIGHT`, reference 25).
        text_weight: f64,
        /// Weight of the image L1 term (`IMAGE_LOSS_WEIGHT`, reference 10).
        image_weight: f64,
        /// Mean of the Gaussian over epochs 1..=N (`GPA_MEAN`, reference 15).
        gpa_mean: f64,
        /// Its standard deviation (`GPA_STD`, reference 1).
        gpa_std: f64,
    },
    /// HiCroPL (hierarchical cross-modal prompt learning, 2025; `zzeoZheng/HiCroPL
    /// trainers/hicropl.py`): `n_ctx` prompts in the first `depth` blocks of both towers, re-mapped
    /// before every forward pass — the text prompts of blocks `0..cross_layer` map into the vision
    /// prompts of those blocks, the vision prompts of blocks `cross_layer..depth` into the text
    /// prompts of those — through attention mappers and per-layer knowledge proxies
    /// ([`calibra_models::clip::HicroplPromptLearner`]). Prompted features are fused with the frozen
    /// ones, and the objective adds `λ · (2 − mean cos(text, teacher) − mean cos(image, frozen))`.
    /// Trains with Adam (betas 0.9 / 0.999, `adam_eps`; [`CoopConfig::momentum`] is not used).
    /// Reference values: `configs/trainers/HiCroPL/vit_b16_c2_ep50_batch32_16ctx_few_shot.yaml`.
    #[serde(rename = "hicropl")]
    HiCroPL {
        /// Prompt depth in both towers (`PROMPT_DEPTH`, reference 12).
        depth: usize,
        /// Blocks `0..cross_layer` map text → vision, the rest vision → text (`CROSS_LAYER`,
        /// reference 6); in `1..depth`.
        cross_layer: usize,
        /// Weight of the distillation term (`LAMBD`, reference 12).
        lambda: f64,
        /// Adam's epsilon (`OPTIM.EPS`, reference 1e-3; the repository's Dassl passes it to Adam).
        adam_eps: f64,
    },
}

impl CoopMethod {
    /// MaPLe with the reference prompt depth 9 (`PROMPT_DEPTH`).
    pub const MAPLE_DEFAULT: CoopMethod = CoopMethod::Maple { depth: 9 };
    /// PromptSRC with its reference values
    /// (`configs/trainers/PromptSRC/vit_b16_c2_ep20_batch4_4+4ctx.yaml`).
    pub const PROMPTSRC_DEFAULT: CoopMethod = CoopMethod::PromptSrc {
        depth_text: 9,
        depth_vision: 9,
        n_ctx_vision: 4,
        text_weight: 25.0,
        image_weight: 10.0,
        gpa_mean: 15.0,
        gpa_std: 1.0,
    };
    /// HiCroPL with its few-shot reference values (depth 12, cross layer 6, λ 12, Adam eps 1e-3).
    pub const HICROPL_DEFAULT: CoopMethod =
        CoopMethod::HiCroPL { depth: 12, cross_layer: 6, lambda: 12.0, adam_eps: 1e-3 };
    /// KgCoOp with the reference weight λ = 8 (spec §E2).
    pub const KGCOOP_DEFAULT: CoopMethod = CoopMethod::KgCoop { lambda: 8.0 };
    /// ProGrad with the reference λ = 1, T = 1 (spec §E3).
    pub const PROGRAD_DEFAULT: CoopMethod = CoopMethod::ProGrad { lambda: 1.0, temperature: 1.0 };

    /// A short name: `coop`, `kgcoop`, `prograd`, `maple`, `promptsrc`, `hicropl`.
    pub fn name(&self) -> &'static str {
        match self {
            CoopMethod::Coop => "coop",
            CoopMethod::KgCoop { .. } => "kgcoop",
            CoopMethod::ProGrad { .. } => "prograd",
            CoopMethod::Maple { .. } => "maple",
            CoopMethod::PromptSrc { .. } => "promptsrc",
            CoopMethod::HiCroPL { .. } => "hicropl",
        }
    }

    /// Whether the method needs the frozen zero-shot classifier.
    pub fn needs_zero_shot(&self) -> bool {
        matches!(self, CoopMethod::KgCoop { .. } | CoopMethod::ProGrad { .. })
    }

    /// Whether the method prompts the image tower too, so that it trains on images rather than on
    /// cached image features ([`crate::coop::train_maple`]).
    pub fn prompts_images(&self) -> bool {
        matches!(self, CoopMethod::Maple { .. } | CoopMethod::PromptSrc { .. } | CoopMethod::HiCroPL { .. })
    }
}

/// Hyper-parameters of a CoOp / KgCoOp / ProGrad run.
///
/// Defaults are CoOp's reference config (`KaiyangZhou/CoOp configs/trainers/CoOp/vit_b16_ep50.yaml`
/// with Dassl's optimiser defaults, spec §E1): 16 random context tokens (`N(0, 0.02²)`), unified
/// context, class token at the end; SGD lr 0.002, momentum 0.9 (dampening 0, no Nesterov), weight
/// decay 5e-4 added to the gradient (`torch.optim.SGD`); 50 epochs of batch 32 with Dassl's cosine
/// schedule stepped per epoch after 1 warm-up epoch at the constant rate 1e-5
/// ([`crate::ConstantWarmupCosine`]). CoOp uses 50 epochs for 1–2 shots, 100 for 4–8 and 200 for 16.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoopConfig {
    /// Number of context tokens (ignored when `ctx_init` is set: the phrase's token count wins).
    pub n_ctx: usize,
    /// Initialise the context from this phrase (e.g. `"a photo of a"`) instead of at random.
    pub ctx_init: Option<String>,
    /// Class-specific context (CoOp `CSC`).
    pub csc: bool,
    /// Where the class-name tokens go.
    pub class_position: ClassTokenPosition,
    /// Epochs (Dassl `MAX_EPOCH`; also the cosine period).
    pub epochs: usize,
    /// Images per step. As Dassl's train loader, the last incomplete batch of an epoch is dropped
    /// when the training set holds at least one full batch.
    pub batch_size: usize,
    /// Base learning rate.
    pub lr: f64,
    /// SGD momentum (dampening 0, no Nesterov).
    pub momentum: f64,
    /// L2 weight decay added to the gradient (`torch.optim.SGD` form).
    pub weight_decay: f64,
    /// Epochs of constant warm-up.
    pub warmup_epochs: usize,
    /// Learning rate during warm-up.
    pub warmup_lr: f64,
    /// Seeds the random context init and the batch order.
    pub seed: u64,
    /// CoOp, KgCoOp or ProGrad.
    pub method: CoopMethod,
    /// The hand-crafted template (one `{}`) of the frozen zero-shot classifier used by KgCoOp,
    /// ProGrad and the losses that need zero-shot logits (`zs_norm`, `range_penalty`).
    pub zero_shot_template: String,
    /// Write a checkpoint every this many steps when a checkpoint directory is given (0: at the end only).
    pub checkpoint_every: usize,
    /// Train-time augmentation of the training images (MaPLe and PromptSRC, which train on images;
    /// the references use `random_resized_crop` + `random_flip`). CoOp, KgCoOp and ProGrad train on
    /// cached image features and refuse anything but [`Augment::None`].
    #[serde(default)]
    pub augment: Augment,
    /// HiCroPL's teacher from descriptions of each class (class name → sentences, the reference's
    /// `gpt_file` format; [`calibra_models::clip::teacher_from_descriptions`]); `None`: the 60
    /// templates. Other methods refuse it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teacher_descriptions: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

impl Default for CoopConfig {
    fn default() -> Self {
        CoopConfig {
            n_ctx: 16,
            ctx_init: None,
            csc: false,
            class_position: ClassTokenPosition::End,
            epochs: 50,
            batch_size: 32,
            lr: 0.002,
            momentum: 0.9,
            weight_decay: 5e-4,
            warmup_epochs: 1,
            warmup_lr: 1e-5,
            seed: 1,
            method: CoopMethod::Coop,
            zero_shot_template: "a photo of a {}.".into(),
            checkpoint_every: 0,
            augment: Augment::None,
            teacher_descriptions: None,
        }
    }
}

fn finite_at_least(what: &str, value: f64, min: f64) -> Result<(), CoopError> {
    if !(value.is_finite() && value >= min) {
        return Err(CoopError::Config(format!("{what} must be a finite number >= {min}, got {value}")));
    }
    Ok(())
}

impl CoopConfig {
    /// Checks every field. Errors name the field and the accepted range.
    pub fn validate(&self) -> Result<(), CoopError> {
        if self.epochs == 0 || self.batch_size == 0 {
            return Err(CoopError::Config(format!(
                "epochs ({}) and batch_size ({}) must be >= 1",
                self.epochs, self.batch_size
            )));
        }
        if self.ctx_init.is_none() && self.n_ctx == 0 {
            return Err(CoopError::Config("n_ctx must be >= 1 with a random context init".into()));
        }
        if let Some(phrase) = &self.ctx_init
            && phrase.trim().is_empty()
        {
            return Err(CoopError::Config("ctx_init is an empty phrase; omit it for a random init".into()));
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(CoopError::Config(format!("lr must be a positive number, got {}", self.lr)));
        }
        finite_at_least("warmup_lr", self.warmup_lr, 0.0)?;
        finite_at_least("weight_decay", self.weight_decay, 0.0)?;
        if !(self.momentum.is_finite() && (0.0..1.0).contains(&self.momentum)) {
            return Err(CoopError::Config(format!("momentum must be in [0, 1), got {}", self.momentum)));
        }
        match self.method {
            CoopMethod::Coop => {}
            CoopMethod::KgCoop { lambda } => finite_at_least("KgCoOp lambda", lambda, 0.0)?,
            CoopMethod::ProGrad { lambda, temperature } => {
                finite_at_least("ProGrad lambda", lambda, 0.0)?;
                if !(temperature.is_finite() && temperature > 0.0) {
                    return Err(CoopError::Config(format!(
                        "ProGrad temperature must be a positive number, got {temperature}"
                    )));
                }
            }
            CoopMethod::Maple { depth } => {
                if depth == 0 {
                    return Err(CoopError::Config("MaPLe depth must be >= 1".into()));
                }
            }
            CoopMethod::PromptSrc {
                depth_text,
                depth_vision,
                n_ctx_vision,
                text_weight,
                image_weight,
                gpa_mean,
                gpa_std,
            } => {
                if depth_text == 0 || depth_vision == 0 || n_ctx_vision == 0 {
                    return Err(CoopError::Config(format!(
                        "PromptSRC depths ({depth_text}, {depth_vision}) and n_ctx_vision ({n_ctx_vision}) must \
                         be >= 1"
                    )));
                }
                finite_at_least("PromptSRC text_weight", text_weight, 0.0)?;
                finite_at_least("PromptSRC image_weight", image_weight, 0.0)?;
                if !(gpa_mean.is_finite() && gpa_std.is_finite() && gpa_std > 0.0) {
                    return Err(CoopError::Config(format!(
                        "PromptSRC gpa_mean ({gpa_mean}) must be finite and gpa_std ({gpa_std}) positive"
                    )));
                }
            }
            CoopMethod::HiCroPL { depth, cross_layer, lambda, adam_eps } => {
                if depth < 2 || cross_layer == 0 || cross_layer >= depth {
                    return Err(CoopError::Config(format!(
                        "HiCroPL needs depth >= 2 and cross_layer in 1..depth (both mapping directions \
                         need a block), got depth {depth}, cross_layer {cross_layer}"
                    )));
                }
                finite_at_least("HiCroPL lambda", lambda, 0.0)?;
                if !(adam_eps.is_finite() && adam_eps > 0.0) {
                    return Err(CoopError::Config(format!(
                        "HiCroPL adam_eps must be a positive number, got {adam_eps}"
                    )));
                }
            }
        }
        if self.method.prompts_images() && (self.csc || self.class_position != ClassTokenPosition::End) {
            return Err(CoopError::Config(format!(
                "{} has one shared context before the class name: csc must be false and class_position \
                 \"end\"",
                self.method.name()
            )));
        }
        if self.augment != Augment::None && !self.method.prompts_images() {
            return Err(CoopError::Config(format!(
                "augment \"{}\" applies to MaPLe, PromptSRC and HiCroPL, which train on images; {} trains \
                 on cached image features",
                self.augment.name(),
                self.method.name()
            )));
        }
        if self.teacher_descriptions.is_some() && !matches!(self.method, CoopMethod::HiCroPL { .. }) {
            return Err(CoopError::Config(format!(
                "teacher descriptions are HiCroPL's teacher; {} has none",
                self.method.name()
            )));
        }
        if let Some((name, _)) =
            self.teacher_descriptions.iter().flatten().find(|(_, sentences)| sentences.is_empty())
        {
            return Err(CoopError::Config(format!("teacher descriptions: class {name:?} has no sentences")));
        }
        if self.zero_shot_template.matches("{}").count() != 1 {
            return Err(CoopError::Config(format!(
                "zero_shot_template {:?} must contain exactly one '{{}}'",
                self.zero_shot_template
            )));
        }
        Ok(())
    }

    /// MaPLe's reference run (`configs/trainers/MaPLe/vit_b16_c2_ep5_batch4_2ctx.yaml` with Dassl's
    /// SGD defaults): 2 context tokens from "a photo of a", depth 9, lr 0.0035, batch 4, 5 epochs,
    /// 1 warm-up epoch at the constant rate 1e-5, momentum 0.9, weight decay 5e-4.
    pub fn maple_reference() -> Self {
        CoopConfig {
            n_ctx: 2,
            ctx_init: Some("a photo of a".into()),
            epochs: 5,
            batch_size: 4,
            lr: 0.0035,
            method: CoopMethod::MAPLE_DEFAULT,
            ..CoopConfig::default()
        }
    }

    /// The run's optimiser: [`Self::sgd`], or for HiCroPL Adam (betas 0.9 / 0.999, its
    /// `adam_eps`) with the weight decay added to the gradient, as `torch.optim.Adam` (Dassl's `adam`).
    pub(crate) fn optimizer(&self) -> ModuleOptimizer {
        match self.method {
            CoopMethod::HiCroPL { adam_eps, .. } => {
                let decay =
                    (self.weight_decay > 0.0).then(|| WeightDecayConfig::new(self.weight_decay as f32));
                AdamConfig::new()
                    .with_beta_1(0.9)
                    .with_beta_2(0.999)
                    .with_epsilon(adam_eps as f32)
                    .with_weight_decay(decay)
                    .init()
            }
            _ => self.sgd(),
        }
    }

    /// SGD with momentum (dampening 0, no Nesterov) and weight decay added to the gradient, as
    /// `torch.optim.SGD` (Dassl's `sgd`).
    pub(crate) fn sgd(&self) -> ModuleOptimizer {
        let momentum = (self.momentum > 0.0).then(|| {
            MomentumConfig::new().with_momentum(self.momentum).with_dampening(0.0).with_nesterov(false)
        });
        let decay = (self.weight_decay > 0.0).then(|| WeightDecayConfig::new(self.weight_decay as f32));
        SgdConfig::new().with_momentum(momentum).with_weight_decay(decay).init()
    }

    /// PromptSRC's reference run (`configs/trainers/PromptSRC/vit_b16_c2_ep20_batch4_4+4ctx.yaml` with
    /// Dassl's SGD defaults): 4 text context tokens from "a photo of a", the reference
    /// [`CoopMethod::PROMPTSRC_DEFAULT`], lr 0.0025, batch 4, 20 epochs, 1 warm-up epoch at 1e-5.
    pub fn promptsrc_reference() -> Self {
        CoopConfig {
            n_ctx: 4,
            ctx_init: Some("a photo of a".into()),
            epochs: 20,
            batch_size: 4,
            lr: 0.0025,
            method: CoopMethod::PROMPTSRC_DEFAULT,
            ..CoopConfig::default()
        }
    }

    /// HiCroPL's few-shot reference run (`configs/trainers/HiCroPL/vit_b16_c2_ep50_batch32_16ctx_few_shot.yaml`
    /// with the repository's Dassl): 16 context tokens (more than 4, so the phrase "a photo of a" is
    /// not used and the context starts random, as the reference), [`CoopMethod::HICROPL_DEFAULT`],
    /// Adam lr 0.0025, weight decay 5e-4, batch 32, 50 epochs, 1 warm-up epoch at 1e-5.
    pub fn hicropl_reference() -> Self {
        CoopConfig {
            n_ctx: 16,
            ctx_init: Some("a photo of a".into()),
            epochs: 50,
            batch_size: 32,
            lr: 0.0025,
            method: CoopMethod::HICROPL_DEFAULT,
            ..CoopConfig::default()
        }
    }

    /// The HiCroPL learner config of a HiCroPL run (`None` for the other methods).
    pub fn hicropl_learner(&self) -> Option<HicroplConfig> {
        let CoopMethod::HiCroPL { depth, cross_layer, .. } = self.method else {
            return None;
        };
        Some(
            HicroplConfig::new()
                .with_n_ctx(self.n_ctx)
                .with_depth(depth)
                .with_cross_layer(cross_layer)
                .with_ctx_init(self.ctx_init.clone())
                .with_seed(self.seed),
        )
    }

    /// The IVLP learner config of a PromptSRC run (`None` for the other methods).
    pub fn promptsrc_learner(&self) -> Option<IvlpConfig> {
        let CoopMethod::PromptSrc { depth_text, depth_vision, n_ctx_vision, .. } = self.method else {
            return None;
        };
        Some(
            IvlpConfig::new()
                .with_n_ctx_text(self.n_ctx)
                .with_n_ctx_vision(n_ctx_vision)
                .with_depth_text(depth_text)
                .with_depth_vision(depth_vision)
                .with_ctx_init(self.ctx_init.clone())
                .with_seed(self.seed),
        )
    }

    /// The MaPLe learner config of a MaPLe run (`None` for the other methods).
    pub fn maple_learner(&self) -> Option<MapleConfig> {
        let CoopMethod::Maple { depth } = self.method else {
            return None;
        };
        Some(
            MapleConfig::new()
                .with_n_ctx(self.n_ctx)
                .with_depth(depth)
                .with_ctx_init(self.ctx_init.clone())
                .with_seed(self.seed),
        )
    }

    /// The prompt-learner config this run builds its context from (random init seeded by `seed`).
    pub fn prompt_learner(&self) -> PromptLearnerConfig {
        let init = match &self.ctx_init {
            Some(phrase) => ContextInit::Phrase(phrase.clone()),
            None => ContextInit::Random { seed: self.seed },
        };
        PromptLearnerConfig::new()
            .with_n_ctx(self.n_ctx)
            .with_class_specific(self.csc)
            .with_position(self.class_position)
            .with_init(init)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        CoopConfig::default().validate().unwrap();
        let bad = |c: CoopConfig, word: &str| {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(word), "{e}");
        };
        bad(CoopConfig { epochs: 0, ..CoopConfig::default() }, "epochs");
        bad(CoopConfig { lr: 0.0, ..CoopConfig::default() }, "lr");
        bad(CoopConfig { momentum: 1.0, ..CoopConfig::default() }, "momentum");
        bad(CoopConfig { n_ctx: 0, ..CoopConfig::default() }, "n_ctx");
        bad(
            CoopConfig { zero_shot_template: "a photo".into(), ..CoopConfig::default() },
            "zero_shot_template",
        );
        bad(
            CoopConfig {
                method: CoopMethod::ProGrad { lambda: 1.0, temperature: 0.0 },
                ..CoopConfig::default()
            },
            "temperature",
        );
    }

    #[test]
    fn config_round_trips_through_json() {
        let c = CoopConfig {
            method: CoopMethod::KGCOOP_DEFAULT,
            ctx_init: Some("a photo of a".into()),
            ..CoopConfig::default()
        };
        let back: CoopConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }
}
