//! MaPLe on the tiny random CLIP fixture of calibra-models (crates/calibra-models/tests/fixtures/clip),
//! and on the tiny SigLIP fixture (crates/calibra-models/tests/fixtures/siglip_model), where no
//! reference exists: calibra's port ([`calibra_models::siglip_deep_prompts`]) against the same port
//! stated in torch on transformers' SiglipModel (scripts/golden/deep_prompts_siglip.py, section
//! `maple`), with the same tolerances:
//!
//! - golden: the prompted text and image features, the logits and three full-batch SGD steps from
//!   fixed parameters against scripts/golden/maple_steps.py (the reference's MaPLe re-expressed on
//!   transformers' CLIPModel in torch, float32): features and logits within 1e-5, per-step losses
//!   and every parameter after the last step within 1e-4;
//! - the phrase init: `ctx` starts as the embeddings of the first `n_ctx` tokens of "a photo of a";
//! - determinism and resume: a killed run resumes to the uninterrupted prompts, with crop-flip
//!   augmentation (which gives its own prompts, the same on every run);
//! - bad configs are refused by name.

#[path = "support/prompt_golden.rs"]
mod prompt_golden;

use std::path::Path;

use burn::tensor::{Device, Tensor};
use calibra_models::clip::{DeepPromptModel, MapleConfig, MaplePromptLearner, MapleValues, PromptTokenizer};
use calibra_train::augment::Augment;
use calibra_train::build_loss;
use calibra_train::coop::{CoopConfig, CoopMethod, train_maple, train_maple_learner};
use prompt_golden::{
    floats, host, killing_progress, load, load_siglip, max_diff, rows_of, strings, usizes, wave,
};
use serde_json::Value;

fn golden() -> Value {
    prompt_golden::golden("maple_steps.json")
}

struct Case {
    classnames: Vec<String>,
    n_ctx: usize,
    depth: usize,
    ctx_init: String,
    images: Tensor<4>,
    labels: Vec<usize>,
}

fn case(g: &Value, device: &Device) -> Case {
    Case {
        classnames: strings(&g["classnames"]),
        n_ctx: g["n_ctx"].as_u64().unwrap() as usize,
        depth: g["depth"].as_u64().unwrap() as usize,
        ctx_init: g["ctx_init"].as_str().unwrap().into(),
        images: prompt_golden::images(g, device),
        labels: usizes(&g["labels"]),
    }
}

/// The learner of the golden case, with the script's initial values.
fn golden_learner(
    model: &dyn DeepPromptModel,
    tok: &dyn PromptTokenizer,
    c: &Case,
    device: &Device,
) -> MaplePromptLearner {
    let learner = MapleConfig::new()
        .with_n_ctx(c.n_ctx)
        .with_depth(c.depth)
        .with_ctx_init(Some(c.ctx_init.clone()))
        .init(model, tok, &c.classnames, device)
        .unwrap();
    let (dt, dv) = (model.token_width(), model.vision_width());
    let bound = 1.0 / (dt as f64).sqrt();
    let ctx = learner.values().ctx;
    let values = MapleValues {
        ctx,
        proj: (wave(dv * dt, bound, 0.1), wave(dv, bound, 0.2)),
        deep_text: (0..c.depth - 1).map(|i| wave(c.n_ctx * dt, 0.02, 1.0 + i as f64)).collect(),
        deep_proj: (0..c.depth - 1).map(|_| (wave(dv * dt, bound, 0.3), wave(dv, bound, 0.4))).collect(),
    };
    learner.with_values(&values, device).unwrap()
}

fn golden_config(g: &Value, c: &Case) -> CoopConfig {
    CoopConfig {
        n_ctx: c.n_ctx,
        ctx_init: Some(c.ctx_init.clone()),
        epochs: g["steps"].as_u64().unwrap() as usize,
        batch_size: c.labels.len(), // one full-batch step per epoch
        lr: g["lr"].as_f64().unwrap(),
        momentum: g["momentum"].as_f64().unwrap(),
        weight_decay: g["weight_decay"].as_f64().unwrap(),
        warmup_epochs: g["warmup_epochs"].as_u64().unwrap() as usize,
        warmup_lr: g["warmup_lr"].as_f64().unwrap(),
        method: CoopMethod::Maple { depth: c.depth },
        ..CoopConfig::default()
    }
}

#[test]
fn maple_matches_the_torch_reference_forward_and_step_by_step() {
    let (model, tok, device) = load();
    check_against_torch(&model, &tok, &golden(), &device);
}

/// MaPLe on SigLIP: calibra's port (`calibra_models::siglip_deep_prompts`) against the same port in
/// torch on transformers' SiglipModel (scripts/golden/deep_prompts_siglip.py).
#[test]
fn maple_on_siglip_matches_the_port_in_torch() {
    let (model, tok, device) = load_siglip();
    check_against_torch(&model, &tok, &prompt_golden::golden("deep_prompts_siglip.json")["maple"], &device);
}

/// The golden's features, logits and steps (module docs), on any deep-prompt model.
fn check_against_torch(model: &dyn DeepPromptModel, tok: &dyn PromptTokenizer, g: &Value, device: &Device) {
    let (g, device) = (g.clone(), device.clone());
    let c = case(&g, &device);
    let learner = golden_learner(model, tok, &c, &device);

    let ctx_diff = max_diff(&learner.values().ctx, &floats(&g["ctx_init_values"]));
    assert!(ctx_diff <= 1e-6, "phrase init: max |ctx - torch| {ctx_diff:e}");
    let text = host(learner.text_features(model).unwrap());
    let image = host(learner.image_features(model, c.images.clone()).unwrap());
    let logits = host(learner.logits(model, c.images.clone()).unwrap());
    for (what, got, key) in [
        ("text features", &text, "text_features"),
        ("image features", &image, "image_features"),
        ("logits", &logits, "logits"),
    ] {
        let diff = max_diff(got, &floats(&g[key]));
        eprintln!("{what}: max |calibra - torch| = {diff:e}");
        assert!(diff <= 1e-5, "{what}: max |diff| {diff:e}");
    }

    let config = golden_config(&g, &c);
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let mut batches = rows_of(&c.images);
    let init = learner.values();
    let out = train_maple_learner(
        model,
        tok,
        &c.classnames,
        learner,
        &mut batches,
        &c.labels,
        ce.as_ref(),
        &config,
        &device,
        None,
        &mut |_| {},
    )
    .unwrap();
    let want_losses: Vec<f64> = g["losses"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(out.losses.len(), want_losses.len());
    for (s, (got, want)) in out.losses.iter().zip(&want_losses).enumerate() {
        assert!((got - want).abs() <= 1e-5, "loss of step {s}: {got} vs torch {want}");
    }
    let got = out.learner.values();
    let f = &g["final"];
    let mut checks = vec![
        ("ctx", got.ctx.clone(), floats(&f["ctx"]), init.ctx.clone()),
        ("proj.weight", got.proj.0.clone(), floats(&f["proj_weight"]), init.proj.0.clone()),
        ("proj.bias", got.proj.1.clone(), floats(&f["proj_bias"]), init.proj.1.clone()),
    ];
    for j in 0..c.depth - 1 {
        checks.push((
            "deep_text",
            got.deep_text[j].clone(),
            floats(&f["deep_text"][j]),
            init.deep_text[j].clone(),
        ));
        let (w, b) = (&init.deep_proj[j].0, &init.deep_proj[j].1);
        checks.push((
            "deep_proj.weight",
            got.deep_proj[j].0.clone(),
            floats(&f["deep_weight"][j]),
            w.clone(),
        ));
        checks.push(("deep_proj.bias", got.deep_proj[j].1.clone(), floats(&f["deep_bias"][j]), b.clone()));
    }
    for (what, got, want, start) in checks {
        let diff = max_diff(&got, &want);
        let moved = max_diff(&start, &want);
        eprintln!(
            "{what} after {} steps: max |calibra - torch| = {diff:e} (torch moved it by up to {moved:e})",
            out.losses.len()
        );
        assert!(diff <= 1e-4, "{what}: max |diff| {diff:e}");
        assert!(
            moved > 100.0 * diff.max(1e-6),
            "{what} barely moved ({moved:e}): the check would be vacuous"
        );
    }
}

#[test]
fn runs_are_deterministic_and_a_killed_run_resumes_to_the_same_prompts() {
    let g = golden();
    let (model, tok, device) = load();
    let c = case(&g, &device);
    let config = CoopConfig {
        epochs: 3,
        batch_size: 2,
        lr: 0.05,
        checkpoint_every: 2,
        seed: 5,
        ..golden_config(&g, &c)
    };
    let augmented = CoopConfig { augment: Augment::CropFlip, ..config.clone() };
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let run = |config: &CoopConfig, dir: Option<&Path>, stop_after: Option<usize>| {
        let mut batches = rows_of(&c.images);
        let mut progress = killing_progress(stop_after);
        train_maple(
            &model,
            &tok,
            &c.classnames,
            &mut batches,
            &c.labels,
            ce.as_ref(),
            config,
            &device,
            dir,
            &mut progress,
        )
    };
    let a = run(&config, None, None).unwrap();
    let b = run(&config, None, None).unwrap();
    assert_eq!(a.learner.values(), b.learner.values(), "same seed, same prompts");
    assert_eq!(a.total_steps, 9);

    // Crop-flip augmentation: its own prompts, the same ones on every run.
    let a = run(&augmented, None, None).unwrap();
    assert_ne!(a.learner.values(), b.learner.values(), "the augmentation changed nothing");
    assert_eq!(a.learner.values(), run(&augmented, None, None).unwrap().learner.values());

    // A run killed mid-way resumes to the uninterrupted (augmented) run's prompts.
    let dir = tempfile::tempdir().unwrap();
    let killed =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&augmented, Some(dir.path()), Some(5))));
    assert!(killed.is_err(), "the run was killed at step 5");
    let resumed = run(&augmented, Some(dir.path()), None).unwrap();
    assert_eq!(resumed.resumed_from, Some(4), "the last checkpoint was after step 4");
    assert_eq!(resumed.losses.len(), 9);
    let (x, y) = (resumed.learner.values(), a.learner.values());
    let diff = max_diff(&x.ctx, &y.ctx).max(max_diff(&x.proj.0, &y.proj.0));
    assert!(diff == 0.0, "resumed prompts differ from the uninterrupted run by {diff:e}");
}

#[test]
fn bad_configs_are_refused_by_name() {
    let g = golden();
    let (model, tok, device) = load();
    let c = case(&g, &device);
    let err = MapleConfig::new().init(&model, &tok, &c.classnames, &device).unwrap_err().to_string();
    assert!(err.contains("prompt depth 9") && err.contains("1..=3"), "{err}");
    let err = MapleConfig::new()
        .with_depth(2)
        .with_n_ctx(4)
        .with_ctx_init(Some("a photo".into()))
        .init(&model, &tok, &c.classnames, &device)
        .unwrap_err()
        .to_string();
    assert!(err.contains("fewer than n_ctx"), "{err}");
    let bad = CoopConfig { csc: true, ..golden_config(&g, &c) };
    assert!(bad.validate().unwrap_err().to_string().contains("csc"));
    // CoOp trains on cached features: augmenting them is refused, not ignored.
    let bad = CoopConfig { augment: Augment::CropFlip, ..CoopConfig::default() };
    let err = bad.validate().unwrap_err().to_string();
    assert!(err.contains("crop-flip") && err.contains("cached image features"), "{err}");
    // CoOp's feature-based trainer refuses MaPLe rather than ignoring the image prompts.
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let err = calibra_train::coop::train_coop(
        &model,
        &tok,
        &c.classnames,
        &[1.0; 32],
        32,
        &[0],
        ce.as_ref(),
        &golden_config(&g, &c),
        &device,
        None,
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("train_maple"), "{err}");
}
