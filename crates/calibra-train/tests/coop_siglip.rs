//! CoOp / KgCoOp / ProGrad on SigLIP's text tower, on the tiny random `SiglipModel` fixture of
//! calibra-models (crates/calibra-models/tests/fixtures/siglip_model, made by
//! scripts/golden/siglip_text.py), against scripts/golden/coop_siglip_steps.py:
//!
//! - the slotted prompts' ids (no start token; the context takes the first `n` positions; SigLIP's
//!   canonicalised class tokens, `</s>`, padding);
//! - with the context set to "a photo of a", the prompts' features equal transformers'
//!   `get_text_features` of "a photo of a {name}." within 1e-5;
//! - a few full-batch steps of each method (SigLIP's logits `exp(logit_scale)·cos + logit_bias`):
//!   per-step losses and the final context within 1e-4;
//! - the learned head's logits carry SigLIP's bias, and a prompt too long for the context is named.

use std::path::{Path, PathBuf};

use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::clip::{ContextInit, PromptLearnerConfig, PromptTokenizer};
use calibra_models::siglip_model::SiglipModel;
use calibra_models::siglip_tokenizer::SiglipTokenizer;
use calibra_train::build_loss;
use calibra_train::coop::{CoopConfig, CoopMethod, train_prompt_learner};
use serde_json::Value;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/siglip_model")
}

fn load() -> (SiglipModel, SiglipTokenizer, Device) {
    let device = Device::flex();
    let (model, _) = SiglipModel::load(fixture().to_str().unwrap(), &device).unwrap();
    let tok = SiglipTokenizer::from_dir(fixture()).unwrap();
    (model, tok, device)
}

fn golden() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/coop_siglip_steps.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    fn rec(v: &Value, out: &mut Vec<f32>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| rec(x, out)),
            x => out.push(x.as_f64().expect("number") as f32),
        }
    }
    let mut out = Vec::new();
    rec(v, &mut out);
    out
}

fn classnames(g: &Value) -> Vec<String> {
    g["classnames"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn siglip_prompts_are_laid_out_as_the_torch_port_and_a_phrase_context_is_the_plain_prompt() {
    let (model, tok, device) = load();
    let g = golden();
    let names = classnames(&g);
    let n_ctx = g["n_ctx"].as_u64().unwrap() as usize;
    let want_ids: Vec<Vec<u32>> = serde_json::from_value(g["prompt_ids"].clone()).unwrap();
    for (name, want) in names.iter().zip(&want_ids) {
        let p = tok.slotted_prompt(n_ctx, &format!("{name}.")).unwrap();
        assert_eq!(&p.ids, want, "{name}");
        assert_eq!((p.slots_start, p.pooled), (0, want.len() - 1));
    }
    let phrase = g["phrase"].as_str().unwrap().to_string();
    let learner = PromptLearnerConfig::new()
        .with_init(ContextInit::Phrase(phrase))
        .init(&model, &tok, &names, &device)
        .unwrap();
    assert!(learner.token_prefix.is_none(), "SigLIP has no start token before the context");
    let got: Vec<f32> = learner.text_features(&model).unwrap().into_data().try_to_vec().unwrap();
    let diff = max_diff(&got, &floats(&g["phrase_prompt_features"]));
    assert!(diff <= 1e-5, "phrase prompts vs get_text_features: {diff:e}");
}

#[test]
fn coop_kgcoop_and_prograd_on_siglip_match_torch_step_by_step() {
    let (model, tok, device) = load();
    let g = golden();
    let names = classnames(&g);
    let n_ctx = g["n_ctx"].as_u64().unwrap() as usize;
    let ctx0 = floats(&g["ctx_init"]);
    let d = ctx0.len() / n_ctx;
    let features = floats(&g["image_features"]);
    let labels: Vec<usize> = serde_json::from_value(g["labels"].clone()).unwrap();
    let n = labels.len();
    let dim = features.len() / n;
    let steps = g["steps"].as_u64().unwrap() as usize;
    let base = CoopConfig {
        epochs: steps,
        batch_size: n,
        lr: g["lr"].as_f64().unwrap(),
        momentum: g["momentum"].as_f64().unwrap(),
        weight_decay: g["weight_decay"].as_f64().unwrap(),
        warmup_epochs: g["warmup_epochs"].as_u64().unwrap() as usize,
        warmup_lr: g["warmup_lr"].as_f64().unwrap(),
        zero_shot_template: g["zero_shot_template"].as_str().unwrap().into(),
        ..CoopConfig::default()
    };
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    for (key, method) in [
        ("coop", CoopMethod::Coop),
        ("kgcoop", CoopMethod::KGCOOP_DEFAULT),
        ("prograd", CoopMethod::PROGRAD_DEFAULT),
    ] {
        let learner = PromptLearnerConfig::new()
            .with_n_ctx(n_ctx)
            .init(&model, &tok, &names, &device)
            .unwrap()
            .with_context(Tensor::<3>::from_data(TensorData::new(ctx0.clone(), [1, n_ctx, d]), &device))
            .unwrap();
        let config = CoopConfig { method, ..base.clone() };
        let out = train_prompt_learner(
            &model,
            &tok,
            &names,
            learner,
            &features,
            dim,
            &labels,
            ce.as_ref(),
            &config,
            &device,
            None,
            &mut |_| {},
        )
        .unwrap();
        let want: Vec<f64> = serde_json::from_value(g[key]["losses"].clone()).unwrap();
        assert_eq!(out.losses.len(), want.len());
        for (s, (got, want)) in out.losses.iter().zip(&want).enumerate() {
            assert!((got - want).abs() <= 1e-4, "{key}: loss of step {s}: {got} vs torch {want}");
        }
        let got_ctx: Vec<f32> = out.learner.ctx.val().to_data().iter::<f32>().collect();
        let diff = max_diff(&got_ctx, &floats(&g[key]["ctx_final"]));
        let moved = max_diff(&ctx0, &floats(&g[key]["ctx_final"]));
        eprintln!("{key}: max |ctx - torch| = {diff:e} (the context moved by up to {moved:e})");
        assert!(diff <= 1e-4, "{key}: ctx after {steps} steps: {diff:e}");

        // The learned head scores with SigLIP's own logit: scale·cos + bias.
        assert_eq!(out.bias, f64::from(model.logit_bias));
        let logits = out.logits(&features[..dim]).unwrap();
        let v: Vec<f64> = features[..dim].iter().map(|&x| f64::from(x)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (k, w) in out.text_features.chunks(out.dim).enumerate() {
            let cos: f64 = v.iter().zip(w).map(|(a, b)| a / norm * f64::from(*b)).sum();
            assert!((logits[k] - (out.scale * cos + out.bias)).abs() < 1e-9);
        }
    }
}

#[test]
fn a_siglip_prompt_longer_than_the_context_is_named() {
    let (model, tok, device) = load();
    let names = vec!["melanoma".to_string(), "basal cell carcinoma".to_string()];
    let err = PromptLearnerConfig::new()
        .with_init(ContextInit::Phrase("a photo of a".into()))
        .init(&model, &tok, &names, &device)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("basal cell carcinoma") && err.contains("context length 16") && err.contains("SigLIP"),
        "{err}"
    );
}
