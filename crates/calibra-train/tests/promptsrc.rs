//! PromptSRC on the tiny random CLIP fixture of calibra-models (crates/calibra-models/tests/fixtures/clip),
//! and on the tiny SigLIP fixture (crates/calibra-models/tests/fixtures/siglip_model), where no
//! reference exists: calibra's port ([`calibra_models::siglip_deep_prompts`]) against the same port
//! stated in torch on transformers' SiglipModel (scripts/golden/deep_prompts_siglip.py, section
//! `promptsrc`), with the same tolerances:
//!
//! - golden: the frozen text features averaged over PromptSRC's 60 templates, the zero-shot and the
//!   prompted logits, three full-batch steps of the full objective (CE + text L1 + image L1 + KL) and
//!   the Gaussian prompt aggregate against scripts/golden/promptsrc_steps.py (the reference's
//!   PromptSRC re-expressed on transformers' CLIPModel in torch, float32): features and logits within
//!   1e-5, per-step losses within 1e-5, the aggregated prompts within 1e-4;
//! - a killed run resumes to the same aggregated prompts (the aggregate is checkpointed);
//! - bad depths are refused by name.

#[path = "support/prompt_golden.rs"]
mod prompt_golden;

use std::path::Path;

use burn::tensor::Device;
use calibra_models::clip::{
    DeepPromptModel, IvlpConfig, IvlpPromptLearner, IvlpValues, PromptTokenizer, l2_normalize,
};
use calibra_train::build_loss;
use calibra_train::coop::promptsrc::{gpa_weights, template_mean_text_features};
use calibra_train::coop::{CoopConfig, CoopMethod, train_promptsrc, train_promptsrc_learner};
use prompt_golden::{
    floats, host, images, killing_progress, load, load_siglip, max_diff, rows_of, strings, usizes, wave,
};
use serde_json::Value;

fn golden() -> Value {
    prompt_golden::golden("promptsrc_steps.json")
}

fn get(g: &Value, key: &str) -> usize {
    g[key].as_u64().unwrap() as usize
}

fn learner(
    g: &Value,
    model: &dyn DeepPromptModel,
    tok: &dyn PromptTokenizer,
    device: &Device,
) -> IvlpPromptLearner {
    let (mt, mv) = (get(g, "n_ctx_text"), get(g, "n_ctx_vision"));
    let (jt, jv) = (get(g, "depth_text"), get(g, "depth_vision"));
    let learner = IvlpConfig::new()
        .with_n_ctx_text(mt)
        .with_n_ctx_vision(mv)
        .with_depth_text(jt)
        .with_depth_vision(jv)
        .with_ctx_init(Some(g["ctx_init"].as_str().unwrap().into()))
        .init(model, tok, &strings(&g["classnames"]), device)
        .unwrap();
    let (dt, dv) = (model.token_width(), model.vision_width());
    let values = IvlpValues {
        ctx: learner.values().ctx,
        deep_text: (0..jt - 1).map(|i| wave(mt * dt, 0.02, 1.0 + i as f64)).collect(),
        vision_ctx: wave(mv * dv, 0.02, 2.0),
        deep_vision: (0..jv - 1).map(|i| wave(mv * dv, 0.02, 3.0 + i as f64)).collect(),
    };
    learner.with_values(&values, device).unwrap()
}

fn config(g: &Value) -> CoopConfig {
    CoopConfig {
        n_ctx: get(g, "n_ctx_text"),
        ctx_init: Some(g["ctx_init"].as_str().unwrap().into()),
        epochs: get(g, "epochs"),
        batch_size: usizes(&g["labels"]).len(), // one full-batch step per epoch
        lr: g["lr"].as_f64().unwrap(),
        momentum: g["momentum"].as_f64().unwrap(),
        weight_decay: g["weight_decay"].as_f64().unwrap(),
        warmup_epochs: get(g, "warmup_epochs"),
        warmup_lr: g["warmup_lr"].as_f64().unwrap(),
        method: CoopMethod::PromptSrc {
            depth_text: get(g, "depth_text"),
            depth_vision: get(g, "depth_vision"),
            n_ctx_vision: get(g, "n_ctx_vision"),
            text_weight: g["text_weight"].as_f64().unwrap(),
            image_weight: g["image_weight"].as_f64().unwrap(),
            gpa_mean: g["gpa_mean"].as_f64().unwrap(),
            gpa_std: g["gpa_std"].as_f64().unwrap(),
        },
        ..CoopConfig::default()
    }
}

fn flat_of(v: &Value) -> Vec<f32> {
    let mut out = floats(&v["ctx"]);
    out.extend(floats(&v["deep_text"]));
    out.extend(floats(&v["vision_ctx"]));
    out.extend(floats(&v["deep_vision"]));
    out
}

#[test]
fn promptsrc_matches_the_torch_reference_step_by_step_with_prompt_aggregation() {
    let (model, tok, device) = load();
    check_against_torch(&model, &tok, &golden(), &device);
}

/// PromptSRC on SigLIP: calibra's port (`calibra_models::siglip_deep_prompts`) against the same port
/// in torch on transformers' SiglipModel (scripts/golden/deep_prompts_siglip.py).
#[test]
fn promptsrc_on_siglip_matches_the_port_in_torch() {
    let (model, tok, device) = load_siglip();
    check_against_torch(
        &model,
        &tok,
        &prompt_golden::golden("deep_prompts_siglip.json")["promptsrc"],
        &device,
    );
}

/// The golden's features, logits, steps and aggregate (module docs), on any deep-prompt model.
fn check_against_torch(model: &dyn DeepPromptModel, tok: &dyn PromptTokenizer, g: &Value, device: &Device) {
    let (g, device) = (g.clone(), device.clone());
    let classnames = strings(&g["classnames"]);
    let labels = usizes(&g["labels"]);
    let images = images(&g, &device);
    let learner = learner(&g, model, tok, &device);

    let diff = max_diff(&learner.values().ctx, &floats(&g["ctx_init_values"]));
    assert!(diff <= 1e-6, "phrase init: {diff:e}");
    let fixed = template_mean_text_features(model, tok, &classnames, &device).unwrap();
    let frozen = l2_normalize(model.frozen_image_features(images.clone()).unwrap());
    let zs_logits = host(model.prompt_logits(frozen, fixed.clone()));
    let logits = host(learner.logits(model, images.clone()).unwrap());
    for (what, got, key) in [
        ("template-mean text features", host(fixed), "fixed_text_features"),
        ("zero-shot logits", zs_logits, "zero_shot_logits"),
        ("prompted logits", logits, "logits"),
    ] {
        let diff = max_diff(&got, &floats(&g[key]));
        eprintln!("{what}: max |calibra - torch| = {diff:e}");
        assert!(diff <= 1e-5, "{what}: {diff:e}");
    }
    let want_w: Vec<f64> = g["gpa_weights"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let w = gpa_weights(get(&g, "epochs"), g["gpa_mean"].as_f64().unwrap(), g["gpa_std"].as_f64().unwrap());
    assert!(w.iter().zip(&want_w).all(|(a, b)| (a - b).abs() < 1e-12), "{w:?} vs {want_w:?}");

    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let mut batches = rows_of(&images);
    let out = train_promptsrc_learner(
        model,
        tok,
        &classnames,
        learner,
        &mut batches,
        &labels,
        ce.as_ref(),
        &config(&g),
        &device,
        None,
        &mut |_| {},
    )
    .unwrap();
    let want: Vec<f64> = g["losses"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(out.losses.len(), want.len());
    for (s, (got, want)) in out.losses.iter().zip(&want).enumerate() {
        eprintln!("step {s}: loss {got} (torch {want})");
        assert!((got - want).abs() <= 1e-5, "loss of step {s}: {got} vs torch {want}");
    }
    let got = out.learner.values().flat();
    let (aggregate, last) = (flat_of(&g["final"]), flat_of(&g["last"]));
    let diff = max_diff(&got, &aggregate);
    let apart = max_diff(&aggregate, &last);
    eprintln!(
        "aggregated prompts: max |calibra - torch| = {diff:e} (the aggregate is {apart:e} from the last epoch's)"
    );
    assert!(diff <= 1e-4, "aggregated prompts: {diff:e}");
    assert!(
        apart > 100.0 * diff.max(1e-6),
        "the aggregate barely differs from the last epoch: the check would be vacuous"
    );
}

#[test]
fn a_killed_run_resumes_to_the_same_aggregated_prompts() {
    let g = golden();
    let (model, tok, device) = load();
    let classnames = strings(&g["classnames"]);
    let labels = usizes(&g["labels"]);
    let images = images(&g, &device);
    let config = CoopConfig { batch_size: 2, lr: 0.05, checkpoint_every: 2, seed: 3, ..config(&g) };
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let run = |dir: Option<&Path>, stop_after: Option<usize>| {
        let mut batches = rows_of(&images);
        let mut progress = killing_progress(stop_after);
        train_promptsrc(
            &model,
            &tok,
            &classnames,
            &mut batches,
            &labels,
            ce.as_ref(),
            &config,
            &device,
            dir,
            &mut progress,
        )
    };
    let whole = run(None, None).unwrap();
    assert_eq!(whole.total_steps, 9);
    let dir = tempfile::tempdir().unwrap();
    // Killed in epoch 3 (after step 7), the last checkpoint is after step 6: two epochs aggregated.
    let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(Some(dir.path()), Some(7))));
    assert!(killed.is_err());
    let resumed = run(Some(dir.path()), None).unwrap();
    assert_eq!(resumed.resumed_from, Some(6));
    assert_eq!(resumed.learner.values(), whole.learner.values(), "resumed prompts differ");
}

#[test]
fn depths_beyond_the_towers_are_refused_by_name() {
    let g = golden();
    let (model, tok, device) = load();
    let classnames = strings(&g["classnames"]);
    let err = IvlpConfig::new().init(&model, &tok, &classnames, &device).unwrap_err().to_string();
    assert!(err.contains("depth_text") && err.contains("1..=3"), "{err}");
    let err =
        IvlpConfig::new().with_depth_text(2).with_depth_vision(4).init(&model, &tok, &classnames, &device);
    assert!(err.unwrap_err().to_string().contains("depth_vision"));
    let bad = CoopConfig { csc: true, ..config(&g) };
    assert!(bad.validate().unwrap_err().to_string().contains("promptsrc"));
}
