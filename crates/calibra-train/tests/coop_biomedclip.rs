//! CoOp / KgCoOp / ProGrad on the BERT text tower of a BiomedCLIP-style OpenCLIP checkpoint, on the
//! tiny random fixture of calibra-models (crates/calibra-models/tests/fixtures/biomedclip, made by
//! scripts/golden/encoders_biomedclip.py), against scripts/golden/coop_biomedclip_steps.py (BiomedCoOp's
//! CoOp on BiomedCLIP re-expressed in torch on open_clip):
//!
//! - the prompts' ids equal BiomedCoOp's tokenised `"X X X X name."` outside the context slots, and
//!   the attended lengths its attention mask;
//! - with the context set to "a photo of a", the prompts' features equal open_clip's `encode_text`
//!   of "a photo of a {name}." within 1e-5;
//! - a few full-batch steps of each method: per-step losses and the final context within 1e-4.

#[path = "support/prompt_golden.rs"]
mod prompt_golden;

use std::path::PathBuf;

use burn::tensor::Device;
use calibra_models::clip::open_clip::{OpenClipTimmBert, TimmBertSources};
use calibra_models::clip::{OpenClipBertTokenizer, PromptTokenizer};
use prompt_golden::{check_methods_step_by_step, check_phrase_prompts, golden, strings};

fn load() -> (OpenClipTimmBert, OpenClipBertTokenizer, Device) {
    let fix = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/biomedclip");
    let args: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fix.join("trunk_model_args.json")).unwrap()).unwrap();
    let hub = fix.join("hub");
    let sources =
        TimmBertSources { hub_cache: Some(&hub), trunk_model_args: args.as_object().unwrap().clone() };
    let device = Device::flex();
    let (model, config, wordpiece) =
        OpenClipTimmBert::load_with(&fix.join("model"), &sources, &device).unwrap();
    (model, OpenClipBertTokenizer { wordpiece, context_length: config.context_length }, device)
}

#[test]
fn bert_prompts_are_biomedcoops_and_a_phrase_context_is_the_plain_prompt() {
    let (model, tok, device) = load();
    let g = golden("coop_biomedclip_steps.json");
    let n_ctx = g["n_ctx"].as_u64().unwrap() as usize;
    let want_ids: Vec<Vec<u32>> = serde_json::from_value(g["prompt_ids"].clone()).unwrap();
    let attended: Vec<usize> = serde_json::from_value(g["attended"].clone()).unwrap();
    for ((name, want), attended) in strings(&g["classnames"]).iter().zip(&want_ids).zip(attended) {
        let p = tok.slotted_prompt(n_ctx, &format!("{name}.")).unwrap();
        assert_eq!(p.ids.len(), want.len(), "{name}");
        let outside_slots = |ids: &[u32]| -> Vec<u32> {
            ids.iter().enumerate().filter(|(i, _)| !(1..1 + n_ctx).contains(i)).map(|(_, &t)| t).collect()
        };
        assert_eq!(outside_slots(&p.ids), outside_slots(want), "{name}");
        assert_eq!((p.slots_start, p.pooled, p.attended), (1, 0, attended), "{name}");
    }
    check_phrase_prompts(&model, &tok, &g, &device, 1e-5);
}

#[test]
fn coop_kgcoop_and_prograd_on_a_bert_text_tower_match_torch_step_by_step() {
    let (model, tok, device) = load();
    let g = golden("coop_biomedclip_steps.json");
    for out in check_methods_step_by_step(&model, &tok, &g, &device) {
        assert_eq!(out.bias, 0.0, "BiomedCLIP's logits have no bias");
    }
}
