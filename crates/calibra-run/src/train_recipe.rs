//! The one-encoder recipe `calibra train` makes from its flags: one encoder, one dataset (with its
//! shift targets), one trained regime with one loss, over label fractions × seeds. It is a
//! [`Recipe`] value, written with [`Recipe::to_toml`] and read back by `calibra run`, so the fits
//! and their run keys are those of the same recipe written by hand.

use std::collections::BTreeMap;

use crate::descriptions::DescriptionsSetting;
use crate::error::RunError;
use crate::recipe::{
    CoopRegime, DEFAULT_COOP_METHOD, DatasetEntry, EncoderEntry, EvaluatorSettings, FrozenRegime, FullRegime,
    LoraRegime, LossEntry, Perturbations, Recipe, Regimes, ShiftEntry, SplitSettings,
};

/// What `calibra train` trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainedRegime {
    /// A probe on frozen features.
    Probe,
    Lora,
    Full,
    Coop,
}

impl TrainedRegime {
    /// The recipe's (and the records') name of the regime.
    pub fn recipe_name(self) -> &'static str {
        match self {
            TrainedRegime::Probe => "frozen",
            TrainedRegime::Lora => "lora",
            TrainedRegime::Full => "full",
            TrainedRegime::Coop => "coop",
        }
    }
}

/// The flags of `calibra train`, as plain values (see its `--help` for each).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainPlan {
    pub encoder: String,
    pub encoder_name: Option<String>,
    pub data: String,
    /// Shift targets as `NAME=SPEC`.
    pub shift: Vec<String>,
    pub regime: TrainedRegime,
    pub probe: String,
    pub layer: f64,
    pub loss: String,
    /// Loss arguments as `NAME=VALUE`.
    pub loss_args: Vec<String>,
    pub fractions: Vec<f64>,
    pub seeds: Vec<u64>,
    pub epochs: Option<u32>,
    pub lr: Option<f64>,
    /// LoRA / full: images per forward pass (`None`: the default 32).
    pub batch_size: Option<u32>,
    /// LoRA / full: gradient accumulation (`None`: 1).
    pub accumulate: Option<u32>,
    /// LoRA / full: train-time augmentation (`None`: none).
    pub augment: Option<String>,
    pub lora_r: u32,
    pub lora_alpha: f64,
    pub lora_dropout: f64,
    pub lora_targets: Vec<String>,
    pub n_ctx: u32,
    pub ctx_init: Option<String>,
    pub csc: bool,
    pub class_position: String,
    /// CoOp's prompt-learning method (`coop`, `kgcoop`, `prograd`, `maple`, `promptsrc`, `hicropl`;
    /// `None`: coop).
    pub coop_method: Option<String>,
    /// KgCoOp's λ (`None`: the reference 8).
    pub kgcoop_lambda: Option<f64>,
    /// ProGrad's λ (`None`: the reference 1).
    pub prograd_lambda: Option<f64>,
    /// ProGrad's temperature (`None`: the reference 1).
    pub prograd_temperature: Option<f64>,
    /// MaPLe's prompt depth (`None`: the reference 9).
    pub maple_depth: Option<u32>,
    /// MaPLe's context tokens per layer (`None`: the reference 2).
    pub maple_n_ctx: Option<u32>,
    /// PromptSRC's prompt depth (`None`: the reference 9).
    pub promptsrc_depth: Option<u32>,
    /// PromptSRC's context tokens per layer (`None`: the reference 4).
    pub promptsrc_n_ctx: Option<u32>,
    /// HiCroPL's prompt depth (`None`: the reference 12).
    pub hicropl_depth: Option<u32>,
    /// HiCroPL's context tokens per layer (`None`: the reference 16).
    pub hicropl_n_ctx: Option<u32>,
    /// HiCroPL's cross layer (`None`: the reference 6).
    pub hicropl_cross_layer: Option<u32>,
    /// HiCroPL's distillation weight λ (`None`: the reference 12).
    pub hicropl_lambda: Option<f64>,
    /// HiCroPL's teacher descriptions, a JSON file (`None`: the 60 templates; see
    /// [`crate::descriptions`]).
    pub hicropl_descriptions: Option<String>,
    pub calibrators: Vec<String>,
    pub perturbations: Vec<String>,
    pub severities: Vec<u32>,
    pub split_seed: u64,
}

/// A flag that cannot become part of the recipe.
fn flag_error(message: String) -> RunError {
    RunError::Recipe { file: "the `calibra train` flags".into(), line: None, key: String::new(), message }
}

impl TrainPlan {
    /// The one-encoder recipe (not yet validated: [`Recipe::parse`] of its TOML does that). Without
    /// `epochs` / `lr`: LoRA 8 epochs at 2e-4 (CRS-Bench), full fine-tuning 3 at 1e-5, CoOp 50 at
    /// 2e-3 (CoOp's reference configuration).
    pub fn recipe(&self) -> Result<Recipe, RunError> {
        let epochs = |default: u32| self.epochs.unwrap_or(default);
        let lr = |default: f64| self.lr.unwrap_or(default);
        self.coop_method_flags()?;
        self.batch_flags()?;
        let (batch_size, accumulate, augment) = (self.batch_size, self.accumulate, self.augment.clone());
        let mut regimes = Regimes::default();
        match self.regime {
            TrainedRegime::Probe => {
                let (probes, layers) = (vec![self.probe.clone()], vec![self.layer]);
                regimes.frozen = Some(FrozenRegime { probes, layers, encoders: None, label_fractions: None });
            }
            TrainedRegime::Lora => {
                regimes.lora = Some(LoraRegime {
                    r: self.lora_r,
                    alpha: self.lora_alpha,
                    dropout: self.lora_dropout,
                    lr: lr(2e-4),
                    epochs: epochs(8),
                    targets: self.lora_targets.clone(),
                    head_init: None,
                    early_stopping: None,
                    batch_size,
                    accumulate,
                    augment,
                    encoders: None,
                    label_fractions: None,
                });
            }
            TrainedRegime::Full => {
                let (lr, epochs) = (lr(1e-5), epochs(3));
                let (head_init, early_stopping, encoders, label_fractions) = (None, None, None, None);
                regimes.full = Some(FullRegime {
                    lr,
                    epochs,
                    head_init,
                    early_stopping,
                    batch_size,
                    accumulate,
                    augment,
                    encoders,
                    label_fractions,
                });
            }
            TrainedRegime::Coop => {
                // Plain CoOp leaves `methods` out: the recipe (and its run keys) are those of before.
                let methods = self.coop_method.clone().filter(|m| m != DEFAULT_COOP_METHOD).map(|m| vec![m]);
                regimes.coop = Some(CoopRegime {
                    n_ctx: self.n_ctx,
                    ctx_init: self.ctx_init.clone(),
                    csc: self.csc,
                    class_position: self.class_position.clone(),
                    epochs: epochs(50),
                    lr: lr(2e-3),
                    methods,
                    kgcoop_lambda: self.kgcoop_lambda,
                    prograd_lambda: self.prograd_lambda,
                    prograd_temperature: self.prograd_temperature,
                    maple_depth: self.maple_depth,
                    maple_n_ctx: self.maple_n_ctx,
                    promptsrc_depth: self.promptsrc_depth,
                    promptsrc_n_ctx: self.promptsrc_n_ctx,
                    promptsrc_text_weight: None,
                    promptsrc_image_weight: None,
                    promptsrc_gpa_mean: None,
                    promptsrc_gpa_std: None,
                    hicropl_depth: self.hicropl_depth,
                    hicropl_n_ctx: self.hicropl_n_ctx,
                    hicropl_cross_layer: self.hicropl_cross_layer,
                    hicropl_lambda: self.hicropl_lambda,
                    hicropl_adam_eps: None,
                    hicropl_descriptions: self.hicropl_descriptions.clone().map(DescriptionsSetting::OneFile),
                    // Filled when the recipe's TOML is parsed (`Recipe::parse` reads the file).
                    hicropl_descriptions_sha256: Default::default(),
                    augment,
                    encoders: None,
                    datasets: None,
                    label_fractions: None,
                });
            }
        }
        let perturbations = (!self.perturbations.is_empty()).then(|| Perturbations {
            names: self.perturbations.clone(),
            severities: self.severities.clone(),
            label_fractions: None,
        });
        Ok(Recipe {
            name: Some("calibra-train".into()),
            description: None,
            seeds: self.seeds.clone(),
            label_fractions: self.fractions.clone(),
            calibrators: self.calibrators.clone(),
            encoders: vec![EncoderEntry {
                name: self.encoder_name.clone(),
                source: self.encoder.clone(),
                datasets: None,
            }],
            datasets: vec![DatasetEntry {
                name: None,
                spec: self.data.clone(),
                shift: self.shift()?,
                calibrators: None,
            }],
            perturbations,
            split: Some(SplitSettings { seed: self.split_seed, ..SplitSettings::default() }),
            regimes,
            losses: self.losses()?,
            // `calibra report` profiles the regime that was trained.
            evaluator: Some(EvaluatorSettings {
                regime: self.regime.recipe_name().into(),
                bootstrap: 1000,
                ..EvaluatorSettings::default()
            }),
            cost: None,
            runtime: None,
        })
    }

    /// The method flags apply to `--regime coop`, and each hyper-parameter to its own method.
    fn coop_method_flags(&self) -> Result<(), RunError> {
        let given = [
            ("--method", self.coop_method.is_some(), None),
            ("--kgcoop-lambda", self.kgcoop_lambda.is_some(), Some("kgcoop")),
            ("--prograd-lambda", self.prograd_lambda.is_some(), Some("prograd")),
            ("--prograd-temperature", self.prograd_temperature.is_some(), Some("prograd")),
            ("--maple-depth", self.maple_depth.is_some(), Some("maple")),
            ("--maple-n-ctx", self.maple_n_ctx.is_some(), Some("maple")),
            ("--promptsrc-depth", self.promptsrc_depth.is_some(), Some("promptsrc")),
            ("--promptsrc-n-ctx", self.promptsrc_n_ctx.is_some(), Some("promptsrc")),
            ("--hicropl-depth", self.hicropl_depth.is_some(), Some("hicropl")),
            ("--hicropl-n-ctx", self.hicropl_n_ctx.is_some(), Some("hicropl")),
            ("--hicropl-cross-layer", self.hicropl_cross_layer.is_some(), Some("hicropl")),
            ("--hicropl-lambda", self.hicropl_lambda.is_some(), Some("hicropl")),
            ("--hicropl-descriptions", self.hicropl_descriptions.is_some(), Some("hicropl")),
        ];
        let method = self.coop_method.as_deref().unwrap_or(DEFAULT_COOP_METHOD);
        for (flag, _, applies_to) in given.into_iter().filter(|g| g.1) {
            if self.regime != TrainedRegime::Coop {
                return Err(flag_error(format!("{flag} applies to --regime coop")));
            }
            if let Some(m) = applies_to
                && m != method
            {
                return Err(flag_error(format!("{flag} applies to --method {m}, not --method {method}")));
            }
        }
        Ok(())
    }

    /// `--batch-size` / `--accumulate` apply to the fine-tuning regimes only, `--augment` to them
    /// and to the prompt methods that train on images (`--regime coop --method
    /// maple|promptsrc|hicropl`).
    fn batch_flags(&self) -> Result<(), RunError> {
        let given =
            [("--batch-size", self.batch_size.is_some()), ("--accumulate", self.accumulate.is_some())];
        for (flag, _) in given.into_iter().filter(|g| g.1) {
            if !matches!(self.regime, TrainedRegime::Lora | TrainedRegime::Full) {
                return Err(flag_error(format!("{flag} applies to --regime lora and full")));
            }
        }
        if self.augment.is_some() {
            let method = self.coop_method.as_deref().unwrap_or(DEFAULT_COOP_METHOD);
            let images = crate::names::IMAGE_PROMPT_METHODS.contains(&method);
            match self.regime {
                TrainedRegime::Lora | TrainedRegime::Full => {}
                TrainedRegime::Coop if images => {}
                TrainedRegime::Coop => {
                    return Err(flag_error(format!(
                        "--augment applies to --regime coop only with --method maple, promptsrc or \
                         hicropl (which train on images); --method {method} trains on cached image features"
                    )));
                }
                _ => return Err(flag_error("--augment applies to --regime lora, full and coop".into())),
            }
        }
        Ok(())
    }

    fn shift(&self) -> Result<Vec<ShiftEntry>, RunError> {
        let entry = |s: &String| match s.split_once('=') {
            Some((name, spec)) => Ok(ShiftEntry { name: Some(name.into()), spec: spec.into() }),
            None => Err(flag_error(format!(
                "--shift `{s}`: expected NAME=SPEC (e.g. site-b=synth:chest-site-b?n=600)"
            ))),
        };
        self.shift.iter().map(entry).collect()
    }

    /// The one loss of an adapted regime; none for a probe (which refuses --loss / --loss-arg).
    fn losses(&self) -> Result<Vec<LossEntry>, RunError> {
        if self.regime == TrainedRegime::Probe {
            if self.loss != "ce" || !self.loss_args.is_empty() {
                return Err(flag_error(
                    "--loss / --loss-arg apply to lora, full and coop; a frozen probe has its own objective"
                        .into(),
                ));
            }
            return Ok(Vec::new());
        }
        let mut args = BTreeMap::new();
        for a in &self.loss_args {
            let Some((k, v)) = a.split_once('=') else {
                return Err(flag_error(format!("--loss-arg `{a}`: expected NAME=VALUE (e.g. alpha=0.1)")));
            };
            let value: f64 = v
                .trim()
                .parse()
                .map_err(|e| flag_error(format!("--loss-arg `{a}`: `{v}` is not a number: {e}")))?;
            args.insert(k.trim().to_string(), value);
        }
        Ok(vec![LossEntry { name: self.loss.clone(), label: None, args, regimes: None }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValidationOptions;

    fn plan(regime: TrainedRegime) -> TrainPlan {
        TrainPlan {
            encoder: "checkpoints/x".into(),
            encoder_name: Some("x-enc".into()),
            data: "synth:derm?n=60".into(),
            shift: vec!["b=synth:chest-site-b?n=60".into()],
            regime,
            probe: "logistic".into(),
            layer: 1.0,
            loss: if regime == TrainedRegime::Probe { "ce" } else { "mcm" }.into(),
            loss_args: if regime == TrainedRegime::Probe {
                vec![]
            } else {
                vec!["alpha=0.1".into(), "beta = 0.01".into()]
            },
            fractions: vec![0.5, 1.0],
            seeds: vec![0, 1],
            epochs: None,
            lr: Some(1e-3),
            batch_size: None,
            accumulate: None,
            augment: None,
            lora_r: 8,
            lora_alpha: 16.0,
            lora_dropout: 0.05,
            lora_targets: vec!["query".into(), "value".into()],
            n_ctx: 16,
            ctx_init: Some("a photo of a".into()),
            csc: true,
            class_position: "end".into(),
            coop_method: None,
            kgcoop_lambda: None,
            prograd_lambda: None,
            prograd_temperature: None,
            maple_depth: None,
            maple_n_ctx: None,
            promptsrc_depth: None,
            promptsrc_n_ctx: None,
            hicropl_depth: None,
            hicropl_n_ctx: None,
            hicropl_cross_layer: None,
            hicropl_lambda: None,
            hicropl_descriptions: None,
            calibrators: vec!["none".into(), "temperature".into()],
            perturbations: vec!["jpeg".into(), "contrast".into()],
            severities: vec![1, 2, 3],
            split_seed: 3,
        }
    }

    /// The TOML `calibra train` wrote by hand before it serialised a `Recipe` (its run keys are the
    /// ones existing stores hold).
    fn hand_written(regime: TrainedRegime) -> String {
        let head = r#"name = "calibra-train"
seeds = [0, 1]
label_fractions = [0.5, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
name = "x-enc"
source = "checkpoints/x"

[[datasets]]
spec = "synth:derm?n=60"
shift = [{ name = "b", spec = "synth:chest-site-b?n=60" }]

[perturbations]
names = ["jpeg", "contrast"]
severities = [1, 2, 3]

[split]
seed = 3
"#;
        let (section, name) = match regime {
            TrainedRegime::Probe => ("[regimes.frozen]\nprobes = [\"logistic\"]\nlayers = [1.0]", "frozen"),
            TrainedRegime::Lora => (
                "[regimes.lora]\nr = 8\nalpha = 16.0\ndropout = 0.05\nlr = 0.001\nepochs = 8\n\
                 targets = [\"query\", \"value\"]",
                "lora",
            ),
            TrainedRegime::Full => ("[regimes.full]\nlr = 0.001\nepochs = 3", "full"),
            TrainedRegime::Coop => (
                "[regimes.coop]\nn_ctx = 16\nctx_init = \"a photo of a\"\ncsc = true\nclass_position = \"end\"\n\
                 epochs = 50\nlr = 0.001",
                "coop",
            ),
        };
        let loss = if regime == TrainedRegime::Probe {
            ""
        } else {
            "\n[[losses]]\nname = \"mcm\"\nargs = { alpha = 0.1, beta = 0.01 }\n"
        };
        format!("{head}\n{section}\n\n[evaluator]\nregime = \"{name}\"\nbootstrap = 1000\n{loss}")
    }

    #[test]
    fn the_recipe_equals_the_hand_written_one_and_round_trips_with_its_run_keys() {
        let options = ValidationOptions { check_paths: false };
        for regime in [TrainedRegime::Probe, TrainedRegime::Lora, TrainedRegime::Full, TrainedRegime::Coop] {
            let recipe = plan(regime).recipe().unwrap();
            let before = Recipe::parse(&hand_written(regime), "before", options).unwrap();
            assert_eq!(recipe, before, "{regime:?}");
            let text = recipe.to_toml().unwrap();
            let again = Recipe::parse(&text, "after", options).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(again, recipe, "{regime:?}\n{text}");
            let keys = |r: &Recipe| crate::expand(r).into_iter().map(|f| f.key).collect::<Vec<_>>();
            assert_eq!(keys(&again), keys(&before), "{regime:?}");
        }
    }

    #[test]
    fn a_coop_method_reaches_the_recipe_and_round_trips() {
        let options = ValidationOptions { check_paths: false };
        let plain = plan(TrainedRegime::Coop).recipe().unwrap();
        let mut p = plan(TrainedRegime::Coop);
        p.coop_method = Some("coop".into());
        assert_eq!(p.recipe().unwrap(), plain, "--method coop writes no `methods`");
        p.coop_method = Some("prograd".into());
        p.prograd_temperature = Some(2.0);
        let recipe = p.recipe().unwrap();
        let text = recipe.to_toml().unwrap();
        assert!(
            text.contains("methods = [\"prograd\"]") && text.contains("prograd_temperature = 2.0"),
            "{text}"
        );
        let again = Recipe::parse(&text, "after", options).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again, recipe);
        assert!(crate::expand(&again).iter().all(|f| f.config.probe == "prograd+mcm"));
        p.kgcoop_lambda = Some(1.0);
        let e = p.recipe().unwrap_err().to_string();
        assert!(e.contains("--kgcoop-lambda applies to --method kgcoop, not --method prograd"), "{e}");
        let mut p = plan(TrainedRegime::Full);
        p.coop_method = Some("kgcoop".into());
        assert!(p.recipe().unwrap_err().to_string().contains("--method applies to --regime coop"));
    }

    #[test]
    fn hicropl_flags_reach_the_recipe_and_need_their_method() {
        let options = ValidationOptions { check_paths: false };
        let mut p = plan(TrainedRegime::Coop);
        p.coop_method = Some("hicropl".into());
        p.hicropl_depth = Some(3);
        p.hicropl_n_ctx = Some(4);
        p.hicropl_cross_layer = Some(2);
        p.hicropl_lambda = Some(6.0);
        let recipe = p.recipe().unwrap();
        let text = recipe.to_toml().unwrap();
        for line in [
            "methods = [\"hicropl\"]",
            "hicropl_depth = 3",
            "hicropl_n_ctx = 4",
            "hicropl_cross_layer = 2",
            "hicropl_lambda = 6.0",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        let again = Recipe::parse(&text, "after", options).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again, recipe);
        assert!(crate::expand(&again).iter().all(|f| f.config.probe == "hicropl+mcm"));
        p.coop_method = Some("promptsrc".into());
        let e = p.recipe().unwrap_err().to_string();
        assert!(e.contains("--hicropl-depth applies to --method hicropl, not --method promptsrc"), "{e}");
        let p = TrainPlan { hicropl_lambda: Some(1.0), ..plan(TrainedRegime::Coop) };
        let e = p.recipe().unwrap_err().to_string();
        assert!(e.contains("--hicropl-lambda applies to --method hicropl, not --method coop"), "{e}");
    }

    #[test]
    fn hicropl_descriptions_reach_the_recipe_and_need_their_method() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("derm_prompt.json");
        std::fs::write(&file, r#"{"nevus": ["A round mole."]}"#).unwrap();
        let mut p = plan(TrainedRegime::Coop);
        p.coop_method = Some("hicropl".into());
        p.hicropl_depth = Some(3);
        p.hicropl_cross_layer = Some(2);
        p.hicropl_descriptions = Some(file.display().to_string());
        let text = p.recipe().unwrap().to_toml().unwrap();
        assert!(text.contains(&format!("hicropl_descriptions = \"{}\"", file.display())), "{text}");
        // Parsing the written recipe reads the file: its digest is in the HiCroPL fits' keys.
        let again = Recipe::parse(&text, "after", ValidationOptions { check_paths: false }).unwrap();
        let c = again.regimes.coop.as_ref().unwrap();
        let sha256 = c.hicropl_descriptions_sha256.get(&file.display().to_string()).unwrap();
        assert_eq!(sha256.len(), 64);
        let fits = crate::expand(&again);
        assert!(
            fits.iter()
                .all(|f| serde_json::to_value(&f.config.method).unwrap()["descriptions"]["sha256"].as_str()
                    == Some(sha256.as_str()))
        );
        p.coop_method = Some("promptsrc".into());
        (p.hicropl_depth, p.hicropl_cross_layer) = (None, None);
        let e = p.recipe().unwrap_err().to_string();
        assert!(
            e.contains("--hicropl-descriptions applies to --method hicropl, not --method promptsrc"),
            "{e}"
        );
        let p = TrainPlan { hicropl_descriptions: Some("d.json".into()), ..plan(TrainedRegime::Lora) };
        let e = p.recipe().unwrap_err().to_string();
        assert!(e.contains("--hicropl-descriptions applies to --regime coop"), "{e}");
    }

    #[test]
    fn bad_flags_are_named() {
        let mut p = plan(TrainedRegime::Lora);
        p.loss_args = vec!["alpha".into()];
        assert!(p.recipe().unwrap_err().to_string().contains("--loss-arg `alpha`"));
        let mut p = plan(TrainedRegime::Probe);
        p.loss = "mcm".into();
        assert!(p.recipe().unwrap_err().to_string().contains("--loss / --loss-arg"));
        let mut p = plan(TrainedRegime::Full);
        p.shift = vec!["nameless".into()];
        assert!(p.recipe().unwrap_err().to_string().contains("--shift `nameless`"));
    }

    #[test]
    fn batch_flags_reach_the_fine_tuning_recipes_and_are_refused_elsewhere() {
        for regime in [TrainedRegime::Lora, TrainedRegime::Full] {
            let p = TrainPlan { batch_size: Some(8), accumulate: Some(4), ..plan(regime) };
            let text = p.recipe().unwrap().to_toml().unwrap();
            assert!(text.contains("batch_size = 8") && text.contains("accumulate = 4"), "{text}");
            Recipe::parse(&text, "t", ValidationOptions { check_paths: false }).unwrap();
        }
        for regime in [TrainedRegime::Probe, TrainedRegime::Coop] {
            let err = TrainPlan { accumulate: Some(2), ..plan(regime) }.recipe().unwrap_err().to_string();
            assert!(err.contains("--accumulate applies to --regime lora and full"), "{err}");
        }
    }
}
