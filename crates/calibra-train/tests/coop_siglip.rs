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

#[path = "support/prompt_golden.rs"]
mod prompt_golden;

use std::path::PathBuf;

use burn::tensor::Device;
use calibra_models::clip::{ContextInit, PromptLearnerConfig, PromptTokenizer};
use calibra_models::siglip_model::SiglipModel;
use calibra_models::siglip_tokenizer::SiglipTokenizer;
use prompt_golden::{check_methods_step_by_step, check_phrase_prompts, golden, strings};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/siglip_model")
}

fn load() -> (SiglipModel, SiglipTokenizer, Device) {
    let device = Device::flex();
    let (model, _) = SiglipModel::load(fixture().to_str().unwrap(), &device).unwrap();
    let tok = SiglipTokenizer::from_dir(fixture()).unwrap();
    (model, tok, device)
}

#[test]
fn siglip_prompts_are_laid_out_as_the_torch_port_and_a_phrase_context_is_the_plain_prompt() {
    let (model, tok, device) = load();
    let g = golden("coop_siglip_steps.json");
    let n_ctx = g["n_ctx"].as_u64().unwrap() as usize;
    let want_ids: Vec<Vec<u32>> = serde_json::from_value(g["prompt_ids"].clone()).unwrap();
    for (name, want) in strings(&g["classnames"]).iter().zip(&want_ids) {
        let p = tok.slotted_prompt(n_ctx, &format!("{name}.")).unwrap();
        assert_eq!(&p.ids, want, "{name}");
        assert_eq!((p.slots_start, p.pooled), (0, want.len() - 1));
    }
    let learner = PromptLearnerConfig::new()
        .with_init(ContextInit::Phrase("a photo of a".into()))
        .init(&model, &tok, &strings(&g["classnames"]), &device)
        .unwrap();
    assert!(learner.token_prefix.is_none(), "SigLIP has no start token before the context");
    check_phrase_prompts(&model, &tok, &g, &device, 1e-5);
}

#[test]
fn coop_kgcoop_and_prograd_on_siglip_match_torch_step_by_step() {
    let (model, tok, device) = load();
    let g = golden("coop_siglip_steps.json");
    let features = prompt_golden::floats(&g["image_features"]);
    for out in check_methods_step_by_step(&model, &tok, &g, &device) {
        // The learned head scores with SigLIP's own logit: scale·cos + bias.
        assert_eq!(out.bias, f64::from(model.logit_bias));
        let dim = out.dim;
        let logits = out.logits(&features[..dim]).unwrap();
        let v: Vec<f64> = features[..dim].iter().map(|&x| f64::from(x)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (k, w) in out.text_features.chunks(dim).enumerate() {
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
