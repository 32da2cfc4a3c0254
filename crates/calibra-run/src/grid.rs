//! Grid expansion: a recipe becomes a list of fits, each with the record slots it must fill.
//!
//! # Definition
//!
//! A **fit** is one trained (or, for zero-shot, prompted) model:
//!
//! | regime | one fit per |
//! |---|---|
//! | `frozen` | encoder × dataset × probe × layer × label fraction × seed |
//! | `lora`, `full` | encoder × dataset × loss (those whose `regimes` include it) × label fraction × seed |
//! | `coop` | encoder × dataset (its `datasets` when given) × method (`methods`, default `coop`) × loss × label fraction × seed |
//! | `zero-shot` | encoder × dataset (its `datasets` when given) × template × seed (label fraction 1: nothing is trained) |
//! | `estimate` | encoder × dataset × layer, at the first seed and label fraction 1 (estimators are computed, nothing is trained) |
//!
//! restricted to the regime's `encoders` and with its own `label_fractions` when given. Loops nest in
//! that order (encoder outermost, seed innermost), so fits that share frozen features are adjacent.
//!
//! An encoder with a `datasets` list has no fit on the other datasets (a missing cell). Each fit
//! predicts on its **conditions** — the clean test split, every perturbation × severity (names
//! outer, severities inner, recipe order; only at `[perturbations] label_fractions` when given), then
//! every shift target of its dataset — and each
//! post-hoc **calibrator** (recipe order; `none` = raw) is a variant of those predictions. A fit
//! therefore fills `conditions × calibrators` **record slots**, one run record each, with the record's
//! `probe` field = the probe name for frozen fits (`logistic`; `logistic@0.5` when the layer fraction
//! is not 1), the loss label for adapted fits (CoOp methods other than `coop`: `<method>+<loss label>`,
//! e.g. `kgcoop+mcm`, see [`PromptMethod::probe_label`]), and `zero-shot:<ID>` for zero-shot fits (`P1`…`P7`
//! for MVC-Bench templates, `C1`… for custom ones; see [`crate::recipe::ZeroShotRegime`]), so each
//! template's records have their own fit key and the evaluator can tell the templates apart. A
//! zero-shot fit trains nothing: its seeds give identical predictions (the split comes from
//! `[split] seed`), so its seed spread is 0 by construction. An `estimate` fit has exactly one slot
//! (clean, `none`): its record holds the estimators' scores on the train split's features at its
//! layer (probe `estimators`, or `estimators@<layer>` below depth 1), and no predictions.
//!
//! The **fit key** ([`FitKey`]) hashes everything that determines the fitted model: encoder name and
//! source, dataset name and spec, split, regime and its hyper-parameters, probe (and layer) or loss
//! (and arguments), label fraction and seed (see [`FitConfig`]); of a file it reads (HiCroPL's teacher
//! descriptions: its own dataset's file), the digest of its content, not its path. Conditions and
//! calibrators are not in it: they are slots of the fit, so adding a perturbation to a recipe adds
//! slots to existing fits (the store runs such a fit again and appends only the missing slots)
//! instead of re-keying the grid.

use std::collections::BTreeSet;

use calibra_crs::run_record::ESTIMATE_PROBE;
use calibra_crs::{Condition, Regime};
use serde::Serialize;

use crate::descriptions::DescriptionsFile;
use crate::recipe::{EncoderEntry, LossEntry, Recipe, SplitSettings};
use crate::run_key::FitKey;

/// The method of a fit: what is trained and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FitMethod {
    /// A probe on frozen features taken at `layer` (fraction of the encoder's blocks).
    Probe { probe: String, layer: f64 },
    /// LoRA adaptation with a loss. `head_init` and `early_stopping` enter the key only when they
    /// are not the historical behaviour (a random head, no early stopping), so recipes that do not
    /// set them keep the keys (and stored fits) they had before these options existed.
    Lora {
        r: u32,
        alpha: f64,
        dropout: f64,
        lr: f64,
        epochs: u32,
        targets: Vec<String>,
        loss: LossConfig,
        #[serde(skip_serializing_if = "is_random_head")]
        head_init: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        early_stopping: Option<u32>,
        /// Images per forward pass; in the key only when not [`crate::recipe::DEFAULT_TRAIN_BATCH`].
        #[serde(skip_serializing_if = "is_default_batch")]
        batch_size: u32,
        /// Gradient accumulation; in the key only when not 1.
        #[serde(skip_serializing_if = "is_one")]
        accumulate: u32,
        /// Train-time augmentation; in the key only when not `none`.
        #[serde(skip_serializing_if = "is_no_augment")]
        augment: String,
    },
    /// CoOp prompt learning with a loss. `method` enters the key only when it is not plain CoOp, so
    /// recipes without `methods` keep the keys (and stored fits) they had before it existed.
    Coop {
        n_ctx: u32,
        ctx_init: Option<String>,
        csc: bool,
        class_position: String,
        epochs: u32,
        lr: f64,
        loss: LossConfig,
        #[serde(skip_serializing_if = "PromptMethod::is_coop")]
        method: PromptMethod,
        /// Train-time augmentation (MaPLe, PromptSRC, HiCroPL only; `none` for the others); in the key only
        /// when not `none`.
        #[serde(default = "no_augment", skip_serializing_if = "is_no_augment")]
        augment: String,
        /// HiCroPL's teacher descriptions (`hicropl_descriptions`; HiCroPL fits only): the file of
        /// the fit's dataset (the one file, or the table's entry for it), in the key as
        /// `{"sha256": …}`, the digest of its content, never the file's path; absent (and so out of
        /// the key, as before the option existed) for the template teacher.
        #[serde(skip_serializing_if = "Option::is_none")]
        descriptions: Option<DescriptionsFile>,
    },
    /// Full fine-tuning with a loss (`head_init`, `early_stopping`, `batch_size`, `accumulate`: as
    /// for [`FitMethod::Lora`]).
    Full {
        lr: f64,
        epochs: u32,
        loss: LossConfig,
        #[serde(skip_serializing_if = "is_random_head")]
        head_init: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        early_stopping: Option<u32>,
        #[serde(skip_serializing_if = "is_default_batch")]
        batch_size: u32,
        #[serde(skip_serializing_if = "is_one")]
        accumulate: u32,
        #[serde(skip_serializing_if = "is_no_augment")]
        augment: String,
    },
    /// Zero-shot prompting with one template: `id` (`P1`…`P7` or `C1`…) and, for a custom
    /// template, its text (an MVC-Bench template's text is looked up by the executor).
    ZeroShot { id: String, text: Option<String> },
    /// Transferability estimators (calibra-transfer names) on the train split's frozen features at
    /// `layer`.
    Estimate { estimators: Vec<String>, layer: f64 },
}

/// The prompt-learning method of a CoOp fit (`[regimes.coop] methods`), with its hyper-parameters.
///
/// In the fit key it is `{"name": "kgcoop"}` / `{"name": "prograd"}` plus each hyper-parameter that is
/// not its reference default ([`crate::recipe::KGCOOP_DEFAULT_LAMBDA`] etc.), and absent for plain
/// CoOp. The records' `probe` is [`PromptMethod::probe_label`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name")]
pub enum PromptMethod {
    /// CoOp (Zhou et al., IJCV 2022): the loss only.
    #[serde(rename = "coop")]
    Coop,
    /// KgCoOp (Yao et al., CVPR 2023): the loss plus λ times the knowledge-guidance term.
    #[serde(rename = "kgcoop")]
    KgCoop {
        #[serde(skip_serializing_if = "is_kgcoop_default_lambda")]
        lambda: f64,
    },
    /// ProGrad (Zhu et al., ICCV 2023): the loss's gradient projected off the zero-shot
    /// distillation gradient when they conflict (strength λ, temperature T).
    #[serde(rename = "prograd")]
    ProGrad {
        #[serde(skip_serializing_if = "is_prograd_default_lambda")]
        lambda: f64,
        #[serde(skip_serializing_if = "is_prograd_default_temperature")]
        temperature: f64,
    },
    /// MaPLe (Khattak et al., CVPR 2023): `n_ctx` learned tokens in the first `depth` blocks of both
    /// towers, the vision prompts coupled to the text prompts; trains on images.
    #[serde(rename = "maple")]
    Maple {
        #[serde(skip_serializing_if = "is_maple_default_depth")]
        depth: u32,
        #[serde(skip_serializing_if = "is_maple_default_n_ctx")]
        n_ctx: u32,
    },
    /// PromptSRC (Khattak et al., ICCV 2023): independent deep prompts in both towers (`depth`
    /// blocks, `n_ctx` tokens each), regularised towards the frozen model (text and image L1 terms
    /// with their weights, KL to the zero-shot logits), aggregated over epochs with a Gaussian
    /// weighting; trains on images.
    #[serde(rename = "promptsrc")]
    PromptSrc {
        #[serde(skip_serializing_if = "is_promptsrc_default_depth")]
        depth: u32,
        #[serde(skip_serializing_if = "is_promptsrc_default_n_ctx")]
        n_ctx: u32,
        #[serde(skip_serializing_if = "is_promptsrc_default_text_weight")]
        text_weight: f64,
        #[serde(skip_serializing_if = "is_promptsrc_default_image_weight")]
        image_weight: f64,
        #[serde(skip_serializing_if = "is_promptsrc_default_gpa_mean")]
        gpa_mean: f64,
        #[serde(skip_serializing_if = "is_promptsrc_default_gpa_std")]
        gpa_std: f64,
    },
    /// HiCroPL (Zheng et al., ICCV 2025): `n_ctx` prompts in the first `depth` blocks of both towers,
    /// re-mapped across the towers before every step (text → vision below `cross_layer`, vision →
    /// text from it on), prompted features fused with the frozen ones and distilled towards them
    /// with weight `lambda`; trains on images with Adam (epsilon `adam_eps`).
    #[serde(rename = "hicropl")]
    HiCroPL {
        #[serde(skip_serializing_if = "is_hicropl_default_depth")]
        depth: u32,
        #[serde(skip_serializing_if = "is_hicropl_default_n_ctx")]
        n_ctx: u32,
        #[serde(skip_serializing_if = "is_hicropl_default_cross_layer")]
        cross_layer: u32,
        #[serde(skip_serializing_if = "is_hicropl_default_lambda")]
        lambda: f64,
        #[serde(skip_serializing_if = "is_hicropl_default_adam_eps")]
        adam_eps: f64,
    },
}

fn is_hicropl_default_depth(v: &u32) -> bool {
    *v == crate::recipe::HICROPL_DEFAULT_DEPTH
}
fn is_hicropl_default_n_ctx(v: &u32) -> bool {
    *v == crate::recipe::HICROPL_DEFAULT_N_CTX
}
fn is_hicropl_default_cross_layer(v: &u32) -> bool {
    *v == crate::recipe::HICROPL_DEFAULT_CROSS_LAYER
}
fn is_hicropl_default_lambda(v: &f64) -> bool {
    *v == crate::recipe::HICROPL_DEFAULT_LAMBDA
}
fn is_hicropl_default_adam_eps(v: &f64) -> bool {
    *v == crate::recipe::HICROPL_DEFAULT_ADAM_EPS
}

fn is_promptsrc_default_depth(v: &u32) -> bool {
    *v == crate::recipe::PROMPTSRC_DEFAULT_DEPTH
}
fn is_promptsrc_default_n_ctx(v: &u32) -> bool {
    *v == crate::recipe::PROMPTSRC_DEFAULT_N_CTX
}
fn is_promptsrc_default_text_weight(v: &f64) -> bool {
    *v == crate::recipe::PROMPTSRC_DEFAULT_TEXT_WEIGHT
}
fn is_promptsrc_default_image_weight(v: &f64) -> bool {
    *v == crate::recipe::PROMPTSRC_DEFAULT_IMAGE_WEIGHT
}
fn is_promptsrc_default_gpa_mean(v: &f64) -> bool {
    *v == crate::recipe::PROMPTSRC_DEFAULT_GPA_MEAN
}
fn is_promptsrc_default_gpa_std(v: &f64) -> bool {
    *v == crate::recipe::PROMPTSRC_DEFAULT_GPA_STD
}

fn is_maple_default_depth(v: &u32) -> bool {
    *v == crate::recipe::MAPLE_DEFAULT_DEPTH
}
fn is_maple_default_n_ctx(v: &u32) -> bool {
    *v == crate::recipe::MAPLE_DEFAULT_N_CTX
}

fn is_kgcoop_default_lambda(v: &f64) -> bool {
    *v == crate::recipe::KGCOOP_DEFAULT_LAMBDA
}
fn is_prograd_default_lambda(v: &f64) -> bool {
    *v == crate::recipe::PROGRAD_DEFAULT_LAMBDA
}
fn is_prograd_default_temperature(v: &f64) -> bool {
    *v == crate::recipe::PROGRAD_DEFAULT_TEMPERATURE
}

impl PromptMethod {
    /// `coop`, `kgcoop`, `prograd`, `maple`, `promptsrc` or `hicropl` (the names of
    /// [`crate::names::COOP_METHODS`]).
    pub fn name(&self) -> &'static str {
        match self {
            PromptMethod::Coop => "coop",
            PromptMethod::KgCoop { .. } => "kgcoop",
            PromptMethod::ProGrad { .. } => "prograd",
            PromptMethod::Maple { .. } => "maple",
            PromptMethod::PromptSrc { .. } => "promptsrc",
            PromptMethod::HiCroPL { .. } => "hicropl",
        }
    }

    /// Whether this is plain CoOp (which the fit key leaves out).
    pub fn is_coop(&self) -> bool {
        matches!(self, PromptMethod::Coop)
    }

    /// Whether the method prompts the image tower too and so trains on images (MaPLe, PromptSRC, HiCroPL;
    /// [`crate::names::IMAGE_PROMPT_METHODS`]).
    pub fn prompts_images(&self) -> bool {
        crate::names::IMAGE_PROMPT_METHODS.contains(&self.name())
    }

    /// The records' `probe` of this method trained with the loss labelled `loss_label`: the label for
    /// plain CoOp (as before methods existed), `<method>+<label>` otherwise (`kgcoop+mcm`,
    /// `prograd+ce`), so the evaluator sees each method apart.
    pub fn probe_label(&self, loss_label: &str) -> String {
        match self {
            PromptMethod::Coop => loss_label.to_string(),
            other => format!("{}+{loss_label}", other.name()),
        }
    }

    /// Tower passes per training step relative to CoOp (the cost model's factor): ProGrad
    /// back-propagates twice per step (the loss and the distillation loss), MaPLe through both the
    /// text and the image tower, PromptSRC and HiCroPL too plus a frozen image pass (HiCroPL's teacher
    /// text features are computed once, like PromptSRC's, and its mapper, attention over a few dozen
    /// prompt tokens, is negligible beside a tower), the others once through the text tower.
    pub fn passes_per_step(&self) -> f64 {
        match self {
            PromptMethod::ProGrad { .. } | PromptMethod::Maple { .. } => 2.0,
            PromptMethod::PromptSrc { .. } | PromptMethod::HiCroPL { .. } => 3.0,
            _ => 1.0,
        }
    }
}

fn is_default_batch(v: &u32) -> bool {
    *v == crate::recipe::DEFAULT_TRAIN_BATCH
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn no_augment() -> String {
    "none".into()
}

fn is_no_augment(v: &str) -> bool {
    v == "none"
}

/// Whether `head_init` is the historical one (`random`), which the fit key leaves out.
fn is_random_head(head_init: &str) -> bool {
    head_init == "random"
}

/// A loss with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LossConfig {
    pub name: String,
    pub args: std::collections::BTreeMap<String, f64>,
}

impl From<&LossEntry> for LossConfig {
    fn from(l: &LossEntry) -> Self {
        LossConfig { name: l.name.clone(), args: l.args.clone() }
    }
}

/// A named dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedSpec {
    pub name: String,
    pub spec: String,
}

/// Everything that determines a fitted model; its canonical JSON hashes to the [`FitKey`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitConfig {
    /// Version of this layout (`calibra-fit-v1`); bump it when the meaning of a field changes.
    pub schema: &'static str,
    /// Encoder name (as in records) and source.
    pub encoder: NamedSpec,
    pub dataset: NamedSpec,
    pub split: SplitSettings,
    pub regime: Regime,
    pub method: FitMethod,
    /// The record's `probe` field.
    pub probe: String,
    pub label_fraction: f64,
    pub seed: u64,
}

/// One record slot of a fit: a test condition and a calibrator.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    pub condition: Condition,
    pub calibrator: String,
}

/// One fit of the grid, with its key, configuration, shift target specs and record slots.
#[derive(Debug, Clone, PartialEq)]
pub struct FitSpec {
    pub key: FitKey,
    pub config: FitConfig,
    /// Shift targets of the dataset (the specs behind `Condition::Shift` targets).
    pub shift_targets: Vec<NamedSpec>,
    /// Every slot this fit must fill, in order (conditions outer, calibrators inner).
    pub slots: Vec<Slot>,
}

impl FitSpec {
    /// A short human description: `encoder/dataset/regime/probe ρ=… seed=…`.
    pub fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "{}/{}/{}/{} ρ={} seed={}",
            c.encoder.name, c.dataset.name, c.regime, c.probe, c.label_fraction, c.seed
        )
    }

    /// The distinct test conditions of the slots, in slot order.
    pub fn conditions(&self) -> Vec<Condition> {
        let mut seen = BTreeSet::new();
        self.slots.iter().filter(|s| seen.insert(s.condition.clone())).map(|s| s.condition.clone()).collect()
    }

    /// Whether this fit reads frozen features (shared across probes, fractions and seeds).
    pub fn uses_frozen_features(&self) -> bool {
        matches!(self.config.method, FitMethod::Probe { .. } | FitMethod::Estimate { .. })
    }
}

/// A feature pass: one forward pass of an encoder over one dataset under one condition; computed
/// once and shared by every frozen probe, layer, fraction and seed of that (encoder, dataset).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FeaturePass {
    pub encoder: String,
    pub dataset: String,
    pub condition: Condition,
}

/// The conditions of a fit at `label_fraction` on a dataset with these shift targets, in order.
pub fn conditions_of(recipe: &Recipe, shift_targets: &[NamedSpec], label_fraction: f64) -> Vec<Condition> {
    let mut out = vec![Condition::Clean];
    if let Some(p) = &recipe.perturbations
        && p.label_fractions.as_ref().is_none_or(|f| f.contains(&label_fraction))
    {
        for name in &p.names {
            for &severity in &p.severities {
                out.push(Condition::Perturbation { perturbation: name.clone(), severity });
            }
        }
    }
    out.extend(shift_targets.iter().map(|t| Condition::Shift { target: t.name.clone() }));
    out
}

/// The record's `probe` field of a frozen probe at `layer`.
pub fn probe_label(probe: &str, layer: f64) -> String {
    if layer == 1.0 { probe.to_string() } else { format!("{probe}@{layer}") }
}

/// A regime's `head_init`, or [`crate::recipe::DEFAULT_HEAD_INIT`].
fn head_init_of(set: Option<&str>) -> String {
    set.unwrap_or(crate::recipe::DEFAULT_HEAD_INIT).to_string()
}

fn in_scope(encoders: Option<&[String]>, encoder: &EncoderEntry) -> bool {
    encoders.is_none_or(|list| list.iter().any(|n| *n == encoder.display_name()))
}

/// Expands a validated recipe into its fits (see the module docs for the order).
pub fn expand(recipe: &Recipe) -> Vec<FitSpec> {
    let split = recipe.split();
    let mut fits = Vec::new();
    for encoder in &recipe.encoders {
        let enc = NamedSpec { name: encoder.display_name(), spec: encoder.source.clone() };
        for dataset in &recipe.datasets {
            let data = NamedSpec { name: dataset.display_name(), spec: dataset.spec.clone() };
            let shift: Vec<NamedSpec> = dataset
                .shift
                .iter()
                .map(|s| NamedSpec { name: s.display_name(), spec: s.spec.clone() })
                .collect();
            if encoder.datasets.as_ref().is_some_and(|list| !list.contains(&data.name)) {
                continue;
            }
            let slots = |label_fraction: f64| -> Vec<Slot> {
                conditions_of(recipe, &shift, label_fraction)
                    .iter()
                    .flat_map(|c| {
                        recipe
                            .calibrators_for(dataset)
                            .iter()
                            .map(|cal| Slot { condition: c.clone(), calibrator: cal.clone() })
                    })
                    .collect()
            };
            // Estimate fits (one slot, first seed only) go after the cell's other fits.
            let mut methods_estimate: Vec<FitSpec> = Vec::new();
            // (regime, method, probe label, fractions) of this cell, in regime order.
            let mut methods: Vec<(Regime, FitMethod, String, Vec<f64>)> = Vec::new();
            let fractions = |own: Option<&[f64]>| own.unwrap_or(&recipe.label_fractions).to_vec();
            let r = &recipe.regimes;
            if let Some(f) = &r.frozen
                && in_scope(f.encoders.as_deref(), encoder)
            {
                for probe in &f.probes {
                    for &layer in &f.layers {
                        methods.push((
                            Regime::Frozen,
                            FitMethod::Probe { probe: probe.clone(), layer },
                            probe_label(probe, layer),
                            fractions(f.label_fractions.as_deref()),
                        ));
                    }
                }
            }
            for loss in &recipe.losses {
                if let Some(l) = &r.lora
                    && loss.applies_to(Regime::Lora)
                    && in_scope(l.encoders.as_deref(), encoder)
                {
                    methods.push((
                        Regime::Lora,
                        FitMethod::Lora {
                            r: l.r,
                            alpha: l.alpha,
                            dropout: l.dropout,
                            lr: l.lr,
                            epochs: l.epochs,
                            targets: l.targets.clone(),
                            loss: loss.into(),
                            head_init: head_init_of(l.head_init.as_deref()),
                            early_stopping: l.early_stopping,
                            batch_size: l.batch_size.unwrap_or(crate::recipe::DEFAULT_TRAIN_BATCH),
                            accumulate: l.accumulate.unwrap_or(1),
                            augment: l.augment.clone().unwrap_or_else(|| "none".into()),
                        },
                        loss.display_label(),
                        fractions(l.label_fractions.as_deref()),
                    ));
                }
            }
            if let Some(c) = &r.coop
                && in_scope(c.encoders.as_deref(), encoder)
                && c.datasets.as_ref().is_none_or(|list| list.contains(&data.name))
            {
                for method in c.prompt_methods() {
                    for loss in recipe.losses.iter().filter(|l| l.applies_to(Regime::Coop)) {
                        methods.push((
                            Regime::Coop,
                            FitMethod::Coop {
                                n_ctx: c.n_ctx,
                                ctx_init: c.ctx_init.clone(),
                                csc: c.csc,
                                class_position: c.class_position.clone(),
                                epochs: c.epochs,
                                lr: c.lr,
                                loss: loss.into(),
                                method,
                                augment: match c.augment.as_deref() {
                                    Some(a) if method.prompts_images() => a.to_string(),
                                    _ => no_augment(),
                                },
                                // The dataset's own file: its key does not depend on the
                                // files of the recipe's other datasets.
                                descriptions: match method {
                                    PromptMethod::HiCroPL { .. } => c.hicropl_descriptions_for(&data.name),
                                    _ => None,
                                },
                            },
                            method.probe_label(&loss.display_label()),
                            fractions(c.label_fractions.as_deref()),
                        ));
                    }
                }
            }
            for loss in &recipe.losses {
                if let Some(f) = &r.full
                    && loss.applies_to(Regime::Full)
                    && in_scope(f.encoders.as_deref(), encoder)
                {
                    methods.push((
                        Regime::Full,
                        FitMethod::Full {
                            lr: f.lr,
                            epochs: f.epochs,
                            loss: loss.into(),
                            head_init: head_init_of(f.head_init.as_deref()),
                            early_stopping: f.early_stopping,
                            batch_size: f.batch_size.unwrap_or(crate::recipe::DEFAULT_TRAIN_BATCH),
                            accumulate: f.accumulate.unwrap_or(1),
                            augment: f.augment.clone().unwrap_or_else(|| "none".into()),
                        },
                        loss.display_label(),
                        fractions(f.label_fractions.as_deref()),
                    ));
                }
            }
            if let Some(z) = &r.zero_shot
                && in_scope(z.encoders.as_deref(), encoder)
                && z.datasets.as_ref().is_none_or(|list| list.contains(&data.name))
            {
                for t in z.resolved_templates() {
                    methods.push((
                        Regime::ZeroShot,
                        FitMethod::ZeroShot { id: t.id.clone(), text: t.text },
                        format!("zero-shot:{}", t.id),
                        vec![1.0],
                    ));
                }
            }
            if let Some(e) = &r.estimate
                && in_scope(e.encoders.as_deref(), encoder)
            {
                for &layer in &e.layers {
                    let config = FitConfig {
                        schema: "calibra-fit-v1",
                        encoder: enc.clone(),
                        dataset: data.clone(),
                        split: split.clone(),
                        regime: Regime::Estimate,
                        method: FitMethod::Estimate { estimators: e.estimators.clone(), layer },
                        probe: probe_label(ESTIMATE_PROBE, layer),
                        label_fraction: 1.0,
                        seed: recipe.seeds.first().copied().unwrap_or(0),
                    };
                    let slot = Slot { condition: Condition::Clean, calibrator: "none".into() };
                    methods_estimate.push(FitSpec {
                        key: FitKey::of(&config),
                        config,
                        shift_targets: shift.clone(),
                        slots: vec![slot],
                    });
                }
            }
            for (regime, method, label, fracs) in methods {
                for &label_fraction in &fracs {
                    for &seed in &recipe.seeds {
                        let config = FitConfig {
                            schema: "calibra-fit-v1",
                            encoder: enc.clone(),
                            dataset: data.clone(),
                            split: split.clone(),
                            regime,
                            method: method.clone(),
                            probe: label.clone(),
                            label_fraction,
                            seed,
                        };
                        fits.push(FitSpec {
                            key: FitKey::of(&config),
                            config,
                            shift_targets: shift.clone(),
                            slots: slots(label_fraction),
                        });
                    }
                }
            }
            fits.append(&mut methods_estimate);
        }
    }
    fits
}

/// The distinct feature passes of the frozen fits (and of CoOp / zero-shot image features), in order.
pub fn feature_passes(fits: &[FitSpec]) -> Vec<FeaturePass> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for fit in fits.iter().filter(|f| {
        matches!(
            f.config.method,
            FitMethod::Probe { .. }
                | FitMethod::Coop { .. }
                | FitMethod::ZeroShot { .. }
                | FitMethod::Estimate { .. }
        )
    }) {
        for condition in fit.conditions() {
            let pass = FeaturePass {
                encoder: fit.config.encoder.name.clone(),
                dataset: fit.config.dataset.name.clone(),
                condition,
            };
            if seen.insert(pass.clone()) {
                out.push(pass);
            }
        }
    }
    out
}
