//! CoOp, KgCoOp and ProGrad fits on a CLIP-style (BiomedCLIP's BERT text tower included) or SigLIP
//! checkpoint (image and text towers; SigLIP's
//! logits are `exp(logit_scale)·cos + logit_bias`, read through the softmax over classes like CLIP's,
//! see calibra-train's `coop::trainer`): the image tower runs once per
//! encoder, dataset, split and condition for the whole grid (CoOp never updates it; the projected
//! features are the store's cached pass of `clip_features`, shared with zero-shot and with every
//! other CoOp fit, loss, label fraction and seed), the context vectors train on those projected
//! features with calibra-train's `train_coop` (SGD + momentum, Dassl's warmup-cosine; CoOp's reference
//! values except the recipe's epochs and lr), and the learned prompts classify the calibration
//! split and the test split under every condition of the fit. Class names are the dataset's label
//! names (underscores read as spaces). Single-label datasets only: CoOp's objective is a softmax
//! over classes.
//!
//! `fits/<fit key>/train/` holds the training checkpoint (a killed fit resumes from it) and
//! `fits/<fit key>/prompt.json` the learned text features (what the fit's predictions use).

use std::collections::HashMap;
use std::path::Path;

use calibra_crs::Condition;
use calibra_data::Split;
use calibra_run::{ExecError, FitMethod, FitOutcome, FitSpec, PromptMethod, RunContext, split_of};
use calibra_train::coop::{CoopConfig, CoopMethod, CoopOutcome, train_coop};

use crate::RunExecutor;
use crate::adapted::recipe_loss;
use crate::clip_features::{ImageFeatures, store_image_features};
use crate::clip_fit::{ClipPredictor, PromptParts, load_prompt_model, prompt_learning_refusal};
use crate::epoch_log::EpochLog;
use crate::prompts::prompt_classnames;

/// The CoOp configuration of a fit.
fn config_of(fit: &FitSpec) -> Result<(CoopConfig, &calibra_run::grid::LossConfig), String> {
    let FitMethod::Coop {
        n_ctx,
        ctx_init,
        csc,
        class_position,
        epochs,
        lr,
        loss,
        method,
        augment,
        descriptions,
    } = &fit.config.method
    else {
        return Err("not a CoOp fit".into());
    };
    // MaPLe, PromptSRC and HiCroPL start from their reference runs (their batch sizes, 4 / 4 / 32,
    // their own context sizes, "a photo of a"; HiCroPL's Adam, weight decay and warm-up), the recipe
    // setting epochs and lr.
    let (base, n_ctx, ctx_init) = match method {
        PromptMethod::Maple { n_ctx: own, .. } => {
            let base = CoopConfig::maple_reference();
            let init = ctx_init.clone().or_else(|| base.ctx_init.clone());
            (base, *own, init)
        }
        PromptMethod::PromptSrc { n_ctx: own, .. } => {
            let base = CoopConfig::promptsrc_reference();
            let init = ctx_init.clone().or_else(|| base.ctx_init.clone());
            (base, *own, init)
        }
        PromptMethod::HiCroPL { n_ctx: own, .. } => {
            let base = CoopConfig::hicropl_reference();
            let init = ctx_init.clone().or_else(|| base.ctx_init.clone());
            (base, *own, init)
        }
        _ => (CoopConfig::default(), *n_ctx, ctx_init.clone()),
    };
    let config = CoopConfig {
        n_ctx: n_ctx as usize,
        ctx_init,
        csc: *csc,
        class_position: class_position.parse().map_err(|e| format!("class_position: {e}"))?,
        augment: calibra_train::augment::Augment::parse(augment)?,
        epochs: *epochs as usize,
        lr: *lr,
        seed: fit.config.seed,
        method: coop_method(*method),
        checkpoint_every: 50,
        // Read again and checked against the digest in the fit key (the file may have changed
        // since the recipe was loaded).
        teacher_descriptions: descriptions
            .as_ref()
            .map(calibra_run::descriptions::load_checked)
            .transpose()?,
        ..base
    };
    config.validate().map_err(|e| e.to_string())?;
    Ok((config, loss))
}

/// The file of HiCroPL's teacher descriptions of a fit, if it has one.
pub(crate) fn descriptions_file(fit: &FitSpec) -> Option<&str> {
    match &fit.config.method {
        FitMethod::Coop { descriptions: Some(d), .. } => Some(d.path.as_str()),
        _ => None,
    }
}

/// calibra-train's method of a recipe's prompt-learning method (same hyper-parameters).
fn coop_method(method: PromptMethod) -> CoopMethod {
    match method {
        PromptMethod::Coop => CoopMethod::Coop,
        PromptMethod::KgCoop { lambda } => CoopMethod::KgCoop { lambda },
        PromptMethod::ProGrad { lambda, temperature } => CoopMethod::ProGrad { lambda, temperature },
        PromptMethod::Maple { depth, .. } => CoopMethod::Maple { depth: depth as usize },
        PromptMethod::PromptSrc { depth, n_ctx, text_weight, image_weight, gpa_mean, gpa_std } => {
            CoopMethod::PromptSrc {
                depth_text: depth as usize,
                depth_vision: depth as usize,
                n_ctx_vision: n_ctx as usize,
                text_weight,
                image_weight,
                gpa_mean,
                gpa_std,
            }
        }
        PromptMethod::HiCroPL { depth, cross_layer, lambda, adam_eps, .. } => {
            CoopMethod::HiCroPL { depth: depth as usize, cross_layer: cross_layer as usize, lambda, adam_eps }
        }
    }
}

/// Accepts a prompt-learning fit (CoOp, KgCoOp, ProGrad, MaPLe, PromptSRC, HiCroPL) whose options
/// and loss resolve, and whose encoder the method runs on (refused up front as the fit would refuse
/// it, see [`prompt_learning_refusal`]: MaPLe, PromptSRC and HiCroPL on CLIP and SigLIP, not on a
/// BiomedCLIP-style checkpoint).
pub(crate) fn supports(fit: &FitSpec) -> Result<(), String> {
    let (config, loss) = config_of(fit)?;
    recipe_loss(loss, false)?;
    let encoder = &fit.config.encoder;
    if let Ok(checkpoint) = calibra_models::hf::resolve_checkpoint(&encoder.spec)
        && let Some(why) = prompt_learning_refusal(
            &encoder.name,
            &checkpoint.dir,
            config.method.name(),
            config.method.prompts_images(),
        )
    {
        return Err(why);
    }
    Ok(())
}

fn write_prompt(path: &Path, outcome: &CoopOutcome) -> Result<(), ExecError> {
    let json = serde_json::json!({
        "dim": outcome.dim, "scale": outcome.scale, "bias": outcome.bias, "text_features": outcome.text_features,
        "losses": outcome.losses,
    });
    calibra_core::write_bytes_atomically(path, &serde_json::to_vec(&json)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// Trains the context vectors on the projected image features of the train split's label fraction
/// (resuming from `fits/<key>/train/`) and saves the learned prompts.
pub(crate) fn fit<'a>(
    executor: &'a RunExecutor,
    fit: &'a FitSpec,
    ctx: &mut RunContext<'_>,
) -> Result<FitOutcome<'a>, ExecError> {
    let c = &fit.config;
    let (config, loss) = config_of(fit)?;
    let loss = recipe_loss(loss, false)?;
    if config.method.prompts_images() {
        return crate::prompted_towers::fit(executor, fit, &config, loss.as_ref(), ctx);
    }
    let device = &executor.device;
    let method = config.method.name();
    let PromptParts { model, dataset } = load_prompt_model(executor, fit, method)?;
    let (encoder, tokenizer) = model.prompt_tower();
    let classnames = prompt_classnames(&dataset.labels.names);
    let split = split_of(&dataset, &c.split)?;
    let train_rows = calibra_data::label_fraction(&dataset, &split.train, c.label_fraction, c.seed)?;
    let labels = dataset.row_classes(&train_rows)?;
    ctx.report(&format!("coop: image features of {} training images", train_rows.len()));
    let train = (Split::Train, &Condition::Clean, c.dataset.spec.as_str());
    let split_features = store_image_features(&model, fit, train, Some(&split.train), device, ctx)?;
    let (train_features, dim) = (select_rows(&split_features, &train_rows)?, split_features.dim);
    let fit_dir = ctx.fit_dir();
    let mut log = EpochLog::new(config.method.name());
    let outcome = train_coop(
        encoder,
        tokenizer,
        &classnames,
        &train_features,
        dim,
        &labels,
        loss.as_ref(),
        &config,
        device,
        Some(&fit_dir.join("train")),
        &mut |s| log.step(s, ctx),
    )?;
    log.resumed(ctx, outcome.resumed_from);
    std::fs::create_dir_all(&fit_dir).map_err(|e| format!("{}: {e}", fit_dir.display()))?;
    write_prompt(&fit_dir.join("prompt.json"), &outcome)?;

    let head = outcome;
    Ok(FitOutcome::Model(Box::new(ClipPredictor { kind: "coop", fit, model, head, device })))
}

/// The feature rows of dataset rows `rows` (each in the pass), in `rows`' order.
fn select_rows(f: &ImageFeatures, rows: &[usize]) -> Result<Vec<f32>, ExecError> {
    let position: HashMap<usize, usize> = f.pass.indices.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    let mut out = Vec::with_capacity(rows.len() * f.dim);
    for i in rows {
        let r = *position
            .get(i)
            .ok_or_else(|| format!("dataset row {i} is not in the train split's features"))?;
        out.extend_from_slice(&f.features[r * f.dim..(r + 1) * f.dim]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_run::recipe::{
        HICROPL_DEFAULT_ADAM_EPS, HICROPL_DEFAULT_CROSS_LAYER, HICROPL_DEFAULT_DEPTH, HICROPL_DEFAULT_LAMBDA,
        HICROPL_DEFAULT_N_CTX, KGCOOP_DEFAULT_LAMBDA, MAPLE_DEFAULT_DEPTH, MAPLE_DEFAULT_N_CTX,
        PROGRAD_DEFAULT_LAMBDA, PROGRAD_DEFAULT_TEMPERATURE, PROMPTSRC_DEFAULT_DEPTH,
        PROMPTSRC_DEFAULT_GPA_MEAN, PROMPTSRC_DEFAULT_GPA_STD, PROMPTSRC_DEFAULT_IMAGE_WEIGHT,
        PROMPTSRC_DEFAULT_N_CTX, PROMPTSRC_DEFAULT_TEXT_WEIGHT,
    };

    #[test]
    fn the_recipe_defaults_are_calibra_trains_reference_values() {
        let kg = PromptMethod::KgCoop { lambda: KGCOOP_DEFAULT_LAMBDA };
        assert_eq!(coop_method(kg), CoopMethod::KGCOOP_DEFAULT);
        let pg = PromptMethod::ProGrad {
            lambda: PROGRAD_DEFAULT_LAMBDA,
            temperature: PROGRAD_DEFAULT_TEMPERATURE,
        };
        assert_eq!(coop_method(pg), CoopMethod::PROGRAD_DEFAULT);
        assert_eq!(coop_method(PromptMethod::Coop), CoopMethod::Coop);
        let maple = PromptMethod::Maple { depth: MAPLE_DEFAULT_DEPTH, n_ctx: MAPLE_DEFAULT_N_CTX };
        assert_eq!(coop_method(maple), CoopMethod::MAPLE_DEFAULT);
        let src = PromptMethod::PromptSrc {
            depth: PROMPTSRC_DEFAULT_DEPTH,
            n_ctx: PROMPTSRC_DEFAULT_N_CTX,
            text_weight: PROMPTSRC_DEFAULT_TEXT_WEIGHT,
            image_weight: PROMPTSRC_DEFAULT_IMAGE_WEIGHT,
            gpa_mean: PROMPTSRC_DEFAULT_GPA_MEAN,
            gpa_std: PROMPTSRC_DEFAULT_GPA_STD,
        };
        assert_eq!(coop_method(src), CoopMethod::PROMPTSRC_DEFAULT);
        let hi = PromptMethod::HiCroPL {
            depth: HICROPL_DEFAULT_DEPTH,
            n_ctx: HICROPL_DEFAULT_N_CTX,
            cross_layer: HICROPL_DEFAULT_CROSS_LAYER,
            lambda: HICROPL_DEFAULT_LAMBDA,
            adam_eps: HICROPL_DEFAULT_ADAM_EPS,
        };
        assert_eq!(coop_method(hi), CoopMethod::HICROPL_DEFAULT);
        assert_eq!(CoopConfig::maple_reference().n_ctx, MAPLE_DEFAULT_N_CTX as usize);
        assert_eq!(CoopConfig::promptsrc_reference().n_ctx, PROMPTSRC_DEFAULT_N_CTX as usize);
        assert_eq!(CoopConfig::hicropl_reference().n_ctx, HICROPL_DEFAULT_N_CTX as usize);
        for m in [PromptMethod::Coop, kg, pg, maple, src, hi] {
            assert_eq!(coop_method(m).name(), m.name());
        }
    }

    /// A HiCroPL fit of a recipe trains as HiCroPL's reference run (batch 32, Adam with weight decay
    /// and warm-up) with the recipe's epochs, lr and hyper-parameters.
    #[test]
    fn a_hicropl_fit_starts_from_the_reference_run() {
        let text = r#"seeds = [3]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
source = "hf:org/clip"

[[datasets]]
spec = "synth:derm?n=40"

[regimes.coop]
n_ctx = 4
epochs = 7
lr = 1e-3
methods = ["hicropl"]
hicropl_depth = 3
hicropl_cross_layer = 2
hicropl_lambda = 4.0

[[losses]]
name = "ce"
"#;
        let options = calibra_run::ValidationOptions { check_paths: false };
        let recipe = calibra_run::Recipe::parse(text, "r.toml", options).unwrap();
        let fits = calibra_run::expand(&recipe);
        assert_eq!(fits.len(), 1);
        let (config, _) = config_of(&fits[0]).unwrap();
        let reference = CoopConfig::hicropl_reference();
        assert_eq!(
            config,
            CoopConfig {
                epochs: 7,
                lr: 1e-3,
                seed: 3,
                checkpoint_every: 50,
                method: CoopMethod::HiCroPL { depth: 3, cross_layer: 2, lambda: 4.0, adam_eps: 1e-3 },
                ..reference
            }
        );
        assert_eq!((config.n_ctx, config.batch_size), (16, 32), "HiCroPL's own context size, not n_ctx");
        assert_eq!(config.teacher_descriptions, None, "the template teacher without descriptions");
    }

    /// `hicropl_descriptions` reach calibra-train's config, read from the file the recipe names, and
    /// a file changed after the recipe was loaded is refused naming it.
    #[test]
    fn hicropl_descriptions_reach_the_config_unless_the_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("derm_prompt.json");
        std::fs::write(&file, r#"{"nevus": ["A round mole.", "An even brown spot."]}"#).unwrap();
        let text = format!(
            "seeds = [0]\nlabel_fractions = [1.0]\ncalibrators = [\"none\"]\n\n[[encoders]]\n\
             source = \"hf:org/clip\"\n\n[[datasets]]\nspec = \"synth:derm?n=40\"\n\n[regimes.coop]\n\
             n_ctx = 4\nepochs = 1\nlr = 1e-3\nmethods = [\"coop\", \"hicropl\"]\nhicropl_depth = 3\n\
             hicropl_cross_layer = 2\nhicropl_descriptions = \"{}\"\n\n[[losses]]\nname = \"ce\"\n",
            file.display()
        );
        let options = calibra_run::ValidationOptions { check_paths: false };
        let recipe = calibra_run::Recipe::parse(&text, "r.toml", options).unwrap();
        let fits = calibra_run::expand(&recipe);
        let (coop, _) = config_of(&fits[0]).unwrap();
        assert_eq!(coop.teacher_descriptions, None, "CoOp has no teacher");
        let (hicropl, _) = config_of(&fits[1]).unwrap();
        let expected =
            [("nevus".to_string(), vec!["A round mole.".to_string(), "An even brown spot.".into()])];
        assert_eq!(hicropl.teacher_descriptions, Some(expected.into_iter().collect()));
        assert_eq!(descriptions_file(&fits[1]), file.to_str());
        // Re-indented: the same content, still accepted.
        std::fs::write(&file, "{\n \"nevus\": [\"A round mole.\", \"An even brown spot.\"]\n}\n").unwrap();
        config_of(&fits[1]).unwrap();
        std::fs::write(&file, r#"{"nevus": ["A round mole."]}"#).unwrap();
        let e = config_of(&fits[1]).unwrap_err();
        assert!(e.contains(&format!("`{}` changed after the recipe was loaded", file.display())), "{e}");
        assert!(supports(&fits[1]).unwrap_err().contains("changed after the recipe was loaded"));
    }

    /// With `hicropl_descriptions` a table from dataset to file, each dataset's HiCroPL fit reads its
    /// own file.
    #[test]
    fn per_dataset_hicropl_descriptions_reach_each_datasets_config() {
        let dir = tempfile::tempdir().unwrap();
        let derm = dir.path().join("derm_prompt.json");
        let fundus = dir.path().join("fundus_prompt.json");
        std::fs::write(&derm, r#"{"nevus": ["A round mole."]}"#).unwrap();
        std::fs::write(&fundus, r#"{"grade 0": ["A healthy retina."]}"#).unwrap();
        let text = format!(
            "seeds = [0]\nlabel_fractions = [1.0]\ncalibrators = [\"none\"]\n\n[[encoders]]\n\
             source = \"hf:org/clip\"\n\n[[datasets]]\nspec = \"synth:derm?n=40\"\n\n[[datasets]]\n\
             spec = \"synth:fundus?n=40\"\n\n[regimes.coop]\nn_ctx = 4\nepochs = 1\nlr = 1e-3\n\
             methods = [\"hicropl\"]\nhicropl_depth = 3\nhicropl_cross_layer = 2\n\
             hicropl_descriptions = {{ derm = \"{}\", fundus = \"{}\" }}\n\n[[losses]]\nname = \"ce\"\n",
            derm.display(),
            fundus.display()
        );
        let options = calibra_run::ValidationOptions { check_paths: false };
        let recipe = calibra_run::Recipe::parse(&text, "r.toml", options).unwrap();
        let fits = calibra_run::expand(&recipe);
        assert_eq!(fits.len(), 2);
        for (fit, file, class, sentence) in
            [(&fits[0], &derm, "nevus", "A round mole."), (&fits[1], &fundus, "grade 0", "A healthy retina.")]
        {
            let (config, _) = config_of(fit).unwrap();
            let expected = [(class.to_string(), vec![sentence.to_string()])];
            assert_eq!(config.teacher_descriptions, Some(expected.into_iter().collect()));
            assert_eq!(descriptions_file(fit), file.to_str());
        }
    }
}
