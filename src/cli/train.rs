//! `calibra train`: fit one encoder on one dataset (a probe on frozen features, LoRA, full
//! fine-tuning or CoOp) over the given label fractions and seeds, writing a run store exactly as
//! `calibra run` does: run records, predictions for the clean test split, each perturbation and each
//! shift target, post-hoc calibrators, and the fitted model under `fits/<key>/` (LoRA: a PEFT adapter
//! directory; CoOp: `--method coop|kgcoop|prograd|maple|promptsrc|hicropl`). It is a one-encoder
//! recipe built from the flags (`--print-recipe` shows it), so the store resumes after a kill
//! (`--resume`) and `calibra report DIR` / `calibra eval DIR` read it.

use anyhow::Result;
use calibra_run::execute::ExecuteOptions;
use calibra_run::train_recipe::{TrainPlan, TrainedRegime};
use calibra_run::{Recipe, ValidationOptions};
use std::path::PathBuf;

use crate::cli::run::run_recipe;

/// What trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrainRegime {
    /// A probe (`--probe`) on frozen features.
    Probe,
    /// LoRA branches + a linear head; the encoder stays frozen.
    Lora,
    /// Every encoder weight + a linear head.
    Full,
    /// Prompt context vectors of a CLIP-style or SigLIP encoder (image and text towers frozen;
    /// MaPLe, PromptSRC and HiCroPL prompt both towers, not on BiomedCLIP-style checkpoints).
    Coop,
}

/// `--method`: one of the prompt-learning methods, or the message recipe validation gives for any
/// other name.
fn parse_coop_method(s: &str) -> Result<String, String> {
    match calibra_run::names::coop_method_problem(s) {
        None => Ok(s.to_string()),
        Some(problem) => Err(problem),
    }
}

/// `--lora-targets` when not given: the encoder family's query and value projections (see
/// [`calibra_run::names::lora_targets_for`]); an encoder whose `config.json` cannot be read here gets
/// Hugging Face's names, and recipe validation then says what is wrong with it.
fn default_lora_targets(encoder: &str) -> Vec<String> {
    let cache = calibra_run::encoder_check::hf_hub_cache();
    let model_type = calibra_run::encoder_check::resolve_encoder(encoder, cache.as_deref())
        .and_then(|dir| calibra_run::encoder_check::model_type(&dir))
        .unwrap_or_default();
    calibra_run::names::lora_targets_for(&model_type)
}

#[derive(Debug, clap::Args)]
pub struct TrainArgs {
    /// The encoder: a checkpoint directory (config.json, model.safetensors,
    /// preprocessor_config.json) or `hf:org/name` in the Hugging Face cache.
    #[arg(long, value_name = "DIR|hf:ORG/NAME")]
    pub encoder: String,
    /// The encoder's name in the records (default: the last path component).
    #[arg(long, value_name = "NAME")]
    pub encoder_name: Option<String>,
    /// The dataset (a calibra-data SPEC, e.g. `synth:derm?n=600`).
    #[arg(long, value_name = "SPEC")]
    pub data: String,
    /// A shift target predicted by every fit: `NAME=SPEC` (same labels as --data). Repeatable.
    #[arg(long, value_name = "NAME=SPEC")]
    pub shift: Vec<String>,
    /// What trains.
    #[arg(long, value_enum)]
    pub regime: TrainRegime,
    /// The probe of `--regime probe`: logistic, mlp, knn or prior.
    #[arg(long, default_value = "logistic")]
    pub probe: String,
    /// Feature depth of `--regime probe`, as a fraction of the encoder's blocks.
    #[arg(long, default_value_t = 1.0)]
    pub layer: f64,
    /// Training loss (lora / full / coop): ce, label-smoothing, focal, mdca, mbls, mcm, zs-norm (CoOp),
    /// penalty (CoOp); `ce` is per-label masked BCE on multilabel datasets.
    #[arg(long, default_value = "ce")]
    pub loss: String,
    /// A loss argument `NAME=VALUE` (e.g. `alpha=0.1`). Repeatable.
    #[arg(long = "loss-arg", value_name = "NAME=VALUE")]
    pub loss_args: Vec<String>,
    /// Label fractions of the train split, comma-separated, each in (0, 1].
    #[arg(long, value_delimiter = ',', default_value = "1.0")]
    pub fraction: Vec<f64>,
    /// Seeds (label subset, head / LoRA / context initialisation, batch order), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub seed: Vec<u64>,
    /// Epochs (default: lora 8, full 3, coop 50).
    #[arg(long)]
    pub epochs: Option<u32>,
    /// Peak learning rate (default: lora 2e-4, full 1e-5, coop 2e-3).
    #[arg(long)]
    pub lr: Option<f64>,
    /// LoRA / full: images per forward pass (default 32).
    #[arg(long, value_name = "B")]
    pub batch_size: Option<u32>,
    /// LoRA / full: gradient accumulation, forward passes per optimiser step (which then sees B·N
    /// images while memory holds B; default 1).
    #[arg(long, value_name = "N")]
    pub accumulate: Option<u32>,
    /// LoRA / full, and CoOp with --method maple, promptsrc or hicropl (which train on images):
    /// train-time augmentation, `none` (default) or `crop-flip` (torchvision's RandomResizedCrop +
    /// RandomHorizontalFlip defaults, drawn per image and epoch; MaPLe's, PromptSRC's and HiCroPL's
    /// references train with these two).
    #[arg(long, value_name = "NAME")]
    pub augment: Option<String>,
    /// LoRA rank.
    #[arg(long, default_value_t = 8)]
    pub lora_r: u32,
    /// LoRA alpha (scale alpha / r).
    #[arg(long, default_value_t = 16.0)]
    pub lora_alpha: f64,
    /// Dropout on the LoRA branch input.
    #[arg(long, default_value_t = 0.05)]
    pub lora_dropout: f64,
    /// Projections that get LoRA branches (query, key, value, dense, fc1, fc2, q_proj, ...; on a timm
    /// ViT: qkv, out_proj, fc1, fc2) [default: the attention's query and value: query,value, or qkv on
    /// a timm ViT, whose attention is one fused Linear].
    #[arg(long, value_delimiter = ',')]
    pub lora_targets: Option<Vec<String>>,
    /// CoOp: number of context vectors.
    #[arg(long, default_value_t = 16)]
    pub n_ctx: u32,
    /// CoOp: initialise the context from this phrase (its token count must equal --n-ctx).
    #[arg(long, value_name = "PHRASE")]
    pub ctx_init: Option<String>,
    /// CoOp: one context per class.
    #[arg(long)]
    pub csc: bool,
    /// CoOp: where the class name goes (end, middle, front).
    #[arg(long, default_value = "end")]
    pub class_position: String,
    /// CoOp: the prompt-learning method [default: coop]: coop (CoOp, Zhou et al., IJCV 2022,
    /// `KaiyangZhou/CoOp`), kgcoop (KgCoOp, Yao et al., CVPR 2023, `htyao89/KgCoOp`), prograd
    /// (ProGrad, Zhu et al., ICCV 2023, `BeierZhu/Prompt-align`), maple (MaPLe, Khattak et al.,
    /// CVPR 2023, `muzairkhattak/multimodal-prompt-learning`; prompts both towers, trains on images),
    /// promptsrc (PromptSRC, Khattak et al., ICCV 2023, `muzairkhattak/PromptSRC`; the same, with
    /// self-regularisation and prompt aggregation) or hicropl (HiCroPL, Zheng et al., ICCV 2025,
    /// `zzeoZheng/HiCroPL`; prompts both towers mapped across them, distilled towards the frozen
    /// model, trains on images with Adam). Records name it with the loss (`kgcoop+ce`, `maple+mcm`;
    /// plain CoOp: the loss alone).
    #[arg(long, value_name = "coop|kgcoop|prograd|maple|promptsrc|hicropl", value_parser = parse_coop_method)]
    pub method: Option<String>,
    /// KgCoOp's weight λ of the knowledge-guidance term [default: 8, the reference value of Yao et al.,
    /// CVPR 2023, `htyao89/KgCoOp`]. Needs --method kgcoop.
    #[arg(long, value_name = "LAMBDA")]
    pub kgcoop_lambda: Option<f64>,
    /// ProGrad's projection strength λ [default: 1, the reference value of Zhu et al., ICCV 2023,
    /// `BeierZhu/Prompt-align`]. Needs --method prograd.
    #[arg(long, value_name = "LAMBDA")]
    pub prograd_lambda: Option<f64>,
    /// ProGrad's distillation temperature T [default: 1, the reference value]. Needs --method prograd.
    #[arg(long, value_name = "T")]
    pub prograd_temperature: Option<f64>,
    /// MaPLe's prompt depth: the blocks of both towers that get prompts [default: 9, the reference
    /// value; at most the blocks of the model's smaller tower]. Needs --method maple.
    #[arg(long, value_name = "J")]
    pub maple_depth: Option<u32>,
    /// MaPLe's context tokens per layer [default: 2, the reference value; --n-ctx is CoOp's]. MaPLe
    /// starts them from --ctx-init, else "a photo of a" (the reference). Needs --method maple.
    #[arg(long, value_name = "N")]
    pub maple_n_ctx: Option<u32>,
    /// PromptSRC's prompt depth in both towers [default: 9, the reference value; at most the blocks
    /// of each tower]. Its regulariser weights and aggregation are recipe keys (`--print-recipe`).
    /// Needs --method promptsrc.
    #[arg(long, value_name = "J")]
    pub promptsrc_depth: Option<u32>,
    /// PromptSRC's context tokens per layer in both towers [default: 4, the reference value], the
    /// text ones starting from --ctx-init, else "a photo of a". Needs --method promptsrc.
    #[arg(long, value_name = "N")]
    pub promptsrc_n_ctx: Option<u32>,
    /// HiCroPL's prompt depth in both towers [default: 12, the reference value; in 2..=the blocks of
    /// the model's smaller tower]. Its Adam epsilon is a recipe key (`--print-recipe`). Needs --method
    /// hicropl.
    #[arg(long, value_name = "J")]
    pub hicropl_depth: Option<u32>,
    /// HiCroPL's context tokens per layer in both towers [default: 16, the reference value]; at most
    /// 4 start from --ctx-init, else "a photo of a", more start random (as the reference). Needs
    /// --method hicropl.
    #[arg(long, value_name = "N")]
    pub hicropl_n_ctx: Option<u32>,
    /// HiCroPL's cross layer: the blocks below it map text prompts into vision prompts, the others
    /// vision into text [default: 6, the reference value; in 1..--hicropl-depth]. Needs --method
    /// hicropl.
    #[arg(long, value_name = "K")]
    pub hicropl_cross_layer: Option<u32>,
    /// HiCroPL's weight λ of the distillation towards the frozen model's features [default: 12, the
    /// reference value]. Needs --method hicropl.
    #[arg(long, value_name = "LAMBDA")]
    pub hicropl_lambda: Option<f64>,
    /// HiCroPL's teacher from descriptions of each class instead of the 60 templates: a JSON object
    /// from class name to a list of sentences, the format of the reference's
    /// `gpt_file/<dataset>_prompt.json` (class names with `_` read as a space; every class of the
    /// dataset needs an entry). The fit key holds a digest of its content, not its path. Needs
    /// --method hicropl.
    #[arg(long, value_name = "FILE")]
    pub hicropl_descriptions: Option<String>,
    /// Post-hoc calibrators fitted on the calibration split, comma-separated (none, temperature,
    /// vector, isotonic, dirichlet, ...).
    #[arg(long, value_delimiter = ',', default_value = "none,temperature")]
    pub calibrators: Vec<String>,
    /// Perturbations of the test split (gaussian-blur, jpeg, contrast, rician-noise, fov-crop),
    /// comma-separated; none by default.
    #[arg(long, value_delimiter = ',')]
    pub perturbations: Vec<String>,
    /// Severities of each perturbation, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub severities: Vec<u8>,
    /// Seed of the train / calibration / test split.
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// The run store directory.
    #[arg(long, value_name = "DIR", required_unless_present = "print_recipe")]
    pub out: Option<PathBuf>,
    /// Continue a store that already holds finished fits (a killed run resumes mid-training).
    #[arg(long)]
    pub resume: bool,
    /// Print the recipe these flags make (usable with `calibra run`) and exit.
    #[arg(long)]
    pub print_recipe: bool,
    /// Compute device: `cpu` (default), `wgpu`, `wgpu:N`, `cuda`, `cuda:N` (GPU backends need the
    /// matching cargo feature); checked before anything runs, and not part of any fit key.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
}

/// The one-encoder recipe of `args` (calibra-run's [`TrainPlan`]).
pub fn recipe(args: &TrainArgs) -> Result<Recipe> {
    let regime = match args.regime {
        TrainRegime::Probe => TrainedRegime::Probe,
        TrainRegime::Lora => TrainedRegime::Lora,
        TrainRegime::Full => TrainedRegime::Full,
        TrainRegime::Coop => TrainedRegime::Coop,
    };
    let plan = TrainPlan {
        encoder: args.encoder.clone(),
        encoder_name: args.encoder_name.clone(),
        data: args.data.clone(),
        shift: args.shift.clone(),
        regime,
        probe: args.probe.clone(),
        layer: args.layer,
        loss: args.loss.clone(),
        loss_args: args.loss_args.clone(),
        fractions: args.fraction.clone(),
        seeds: args.seed.clone(),
        epochs: args.epochs,
        lr: args.lr,
        batch_size: args.batch_size,
        accumulate: args.accumulate,
        augment: args.augment.clone(),
        lora_r: args.lora_r,
        lora_alpha: args.lora_alpha,
        lora_dropout: args.lora_dropout,
        lora_targets: args.lora_targets.clone().unwrap_or_else(|| default_lora_targets(&args.encoder)),
        n_ctx: args.n_ctx,
        ctx_init: args.ctx_init.clone(),
        csc: args.csc,
        class_position: args.class_position.clone(),
        coop_method: args.method.clone(),
        kgcoop_lambda: args.kgcoop_lambda,
        prograd_lambda: args.prograd_lambda,
        prograd_temperature: args.prograd_temperature,
        maple_depth: args.maple_depth,
        maple_n_ctx: args.maple_n_ctx,
        promptsrc_depth: args.promptsrc_depth,
        promptsrc_n_ctx: args.promptsrc_n_ctx,
        hicropl_depth: args.hicropl_depth,
        hicropl_n_ctx: args.hicropl_n_ctx,
        hicropl_cross_layer: args.hicropl_cross_layer,
        hicropl_lambda: args.hicropl_lambda,
        hicropl_descriptions: args.hicropl_descriptions.clone(),
        calibrators: args.calibrators.clone(),
        perturbations: args.perturbations.clone(),
        severities: args.severities.iter().map(|&s| u32::from(s)).collect(),
        split_seed: args.split_seed,
    };
    Ok(plan.recipe()?)
}

/// The recipe of `args` as TOML, read back and validated as `calibra run` would read it.
fn recipe_text(args: &TrainArgs, options: ValidationOptions) -> Result<(Recipe, String)> {
    let text =
        format!("# Made by `calibra train`; run it again with `calibra run`.\n{}", recipe(args)?.to_toml()?);
    Ok((Recipe::parse(&text, "the `calibra train` flags", options)?, text))
}

pub fn run(args: &TrainArgs) -> Result<()> {
    if args.print_recipe {
        // The printed recipe is one `calibra run` accepts: validated as written (paths aside).
        print!("{}", recipe_text(args, ValidationOptions { check_paths: false })?.1);
        return Ok(());
    }
    let (recipe, text) = recipe_text(args, ValidationOptions { check_paths: true })?;
    let out = args.out.as_ref().expect("clap requires --out without --print-recipe");
    run_recipe(
        &recipe,
        &text,
        out,
        ExecuteOptions { resume: args.resume, fail_fast: true, ..Default::default() },
        args.device.as_deref(),
        "the `calibra train` flags",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: TrainArgs,
    }

    fn recipe(flags: &[&str]) -> Result<Recipe> {
        let mut argv = vec!["calibra-train"];
        argv.extend_from_slice(flags);
        let args = Cli::try_parse_from(argv)?.args;
        Ok(recipe_text(&args, ValidationOptions { check_paths: false })?.0)
    }

    #[test]
    fn every_regime_makes_a_valid_recipe() {
        let base = ["--encoder", "checkpoints/x", "--data", "synth:derm?n=60", "--out", "o"];
        for regime in ["probe", "lora", "full", "coop"] {
            let mut flags = base.to_vec();
            flags.extend(["--regime", regime, "--fraction", "0.5,1", "--seed", "0,1"]);
            let r = recipe(&flags).unwrap_or_else(|e| panic!("{regime}: {e:#}"));
            assert_eq!(r.seeds, vec![0, 1], "{regime}");
        }
        let mut flags = base.to_vec();
        flags.extend([
            "--regime",
            "lora",
            "--loss",
            "mcm",
            "--loss-arg",
            "alpha=0.1",
            "--loss-arg",
            "beta=0.01",
        ]);
        recipe(&flags).unwrap();
        flags.extend(["--shift", "b=synth:chest-site-b?n=60", "--perturbations", "jpeg,contrast"]);
        recipe(&flags).unwrap();
    }

    #[test]
    fn coop_methods_reach_the_recipe_and_round_trip() {
        let base =
            ["--encoder", "checkpoints/x", "--data", "synth:derm?n=60", "--out", "o", "--regime", "coop"];
        let coop = recipe(&base).unwrap();
        assert_eq!(coop.regimes.coop.as_ref().unwrap().methods, None, "plain CoOp writes no `methods`");
        let mut flags = base.to_vec();
        flags.extend(["--method", "coop"]);
        assert_eq!(recipe(&flags).unwrap(), coop, "--method coop is the default");
        for (method, extra) in [
            ("kgcoop", vec!["--kgcoop-lambda", "4"]),
            ("prograd", vec!["--prograd-lambda", "0.5", "--prograd-temperature", "2"]),
            ("kgcoop", vec![]),
            ("hicropl", vec![]),
            (
                "hicropl",
                vec![
                    "--hicropl-depth",
                    "3",
                    "--hicropl-cross-layer",
                    "2",
                    "--hicropl-n-ctx",
                    "4",
                    "--hicropl-lambda",
                    "6",
                ],
            ),
        ] {
            let mut flags = base.to_vec();
            flags.extend(["--method", method]);
            flags.extend(extra.iter().copied());
            let r = recipe(&flags).unwrap_or_else(|e| panic!("{method}: {e:#}"));
            let c = r.regimes.coop.as_ref().unwrap();
            assert_eq!(c.methods, Some(vec![method.to_string()]));
            let text = r.to_toml().unwrap();
            let again = Recipe::parse(&text, "again", ValidationOptions { check_paths: false }).unwrap();
            assert_eq!(again, r, "{text}");
            let fits = calibra_run::expand(&again);
            assert!(fits.iter().all(|f| f.config.probe == format!("{method}+ce")), "{method}");
        }
        let c =
            recipe(&[&base[..], &["--method", "prograd", "--prograd-temperature", "2"]].concat()).unwrap();
        let c = c.regimes.coop.unwrap();
        assert_eq!((c.prograd_lambda, c.prograd_temperature), (None, Some(2.0)));
        let flags = ["--method", "hicropl", "--hicropl-depth", "3", "--hicropl-cross-layer", "1"];
        let c = recipe(&[&base[..], &flags].concat()).unwrap().regimes.coop.unwrap();
        assert_eq!((c.hicropl_depth, c.hicropl_cross_layer, c.hicropl_n_ctx), (Some(3), Some(1), None));
        assert_eq!((c.hicropl_lambda, c.hicropl_adam_eps), (None, None));
    }

    #[test]
    fn augment_reaches_the_image_prompt_methods_and_is_refused_for_coop() {
        let base = ["--encoder", "e", "--data", "synth:derm", "--out", "o", "--regime", "coop"];
        for method in ["maple", "promptsrc", "hicropl"] {
            let r = recipe(&[&base[..], &["--method", method, "--augment", "crop-flip"]].concat()).unwrap();
            assert_eq!(r.regimes.coop.unwrap().augment.as_deref(), Some("crop-flip"), "{method}");
        }
        for method in ["coop", "kgcoop"] {
            let e = recipe(&[&base[..], &["--method", method, "--augment", "crop-flip"]].concat())
                .unwrap_err()
                .to_string();
            assert!(e.contains("--augment") && e.contains("cached image features"), "{e}");
        }
    }

    #[test]
    fn unknown_or_misplaced_methods_are_refused() {
        let base = ["--encoder", "e", "--data", "synth:derm", "--out", "o"];
        let mut flags = base.to_vec();
        flags.extend(["--regime", "coop", "--method", "bogus"]);
        let e = recipe(&flags).unwrap_err().to_string();
        assert!(
            e.contains("--method")
                && e.contains("unknown CoOp method `bogus`")
                && e.contains("coop, kgcoop, prograd, maple, promptsrc, hicropl"),
            "{e}"
        );
        // MaPLe's, PromptSRC's and HiCroPL's flags need their method.
        for (flag, method) in [
            ("--maple-depth", "promptsrc"),
            ("--promptsrc-n-ctx", "maple"),
            ("--promptsrc-depth", "hicropl"),
            ("--hicropl-depth", "promptsrc"),
            ("--hicropl-n-ctx", "maple"),
            ("--hicropl-cross-layer", "coop"),
            ("--hicropl-lambda", "kgcoop"),
            ("--hicropl-descriptions", "promptsrc"),
        ] {
            let mut flags = base.to_vec();
            flags.extend(["--regime", "coop", "--method", method, flag, "3"]);
            let e = recipe(&flags).unwrap_err().to_string();
            assert!(e.contains(flag) && e.contains(&format!("not --method {method}")), "{e}");
        }
        let mut flags = base.to_vec();
        flags.extend(["--regime", "lora", "--method", "kgcoop"]);
        let e = recipe(&flags).unwrap_err().to_string();
        assert!(e.contains("--method applies to --regime coop"), "{e}");
        let mut flags = base.to_vec();
        flags.extend(["--regime", "coop", "--method", "prograd", "--kgcoop-lambda", "2"]);
        let e = recipe(&flags).unwrap_err().to_string();
        assert!(e.contains("--kgcoop-lambda applies to --method kgcoop"), "{e}");
        let mut flags = base.to_vec();
        flags.extend(["--regime", "coop", "--prograd-lambda", "2"]);
        let e = recipe(&flags).unwrap_err().to_string();
        assert!(e.contains("--prograd-lambda applies to --method prograd, not --method coop"), "{e}");
        let mut flags = base.to_vec();
        flags.extend(["--regime", "coop", "--method", "prograd", "--prograd-temperature", "0"]);
        let e = format!("{:#}", recipe(&flags).unwrap_err());
        assert!(e.contains("prograd_temperature") && e.contains("positive"), "{e}");
        // HiCroPL's depth 3 (the tiny CLIP's blocks) needs a cross layer below it: 6 is the default.
        let mut flags = base.to_vec();
        flags.extend(["--regime", "coop", "--method", "hicropl", "--hicropl-depth", "3"]);
        let e = format!("{:#}", recipe(&flags).unwrap_err());
        assert!(e.contains("hicropl_depth") && e.contains("cross layer 6 (the default)"), "{e}");
        let mut flags = base.to_vec();
        flags.extend(["--regime", "coop", "--method", "hicropl", "--hicropl-lambda=-1"]);
        let e = format!("{:#}", recipe(&flags).unwrap_err());
        assert!(e.contains("hicropl_lambda") && e.contains("a finite number >= 0"), "{e}");
    }

    #[test]
    fn bad_flags_are_named() {
        let base = ["--encoder", "e", "--data", "synth:derm", "--out", "o"];
        let mut flags = base.to_vec();
        flags.extend(["--regime", "lora", "--loss-arg", "alpha"]);
        let e = recipe(&flags).unwrap_err().to_string();
        assert!(e.contains("--loss-arg `alpha`"), "{e}");
        let mut flags = base.to_vec();
        flags.extend(["--regime", "probe", "--loss", "mcm"]);
        assert!(recipe(&flags).unwrap_err().to_string().contains("--loss"));
        let mut flags = base.to_vec();
        flags.extend(["--regime", "lora", "--lora-targets", "query,bogus"]);
        let e = format!("{:#}", recipe(&flags).unwrap_err());
        assert!(e.contains("bogus"), "{e}");
    }
}
