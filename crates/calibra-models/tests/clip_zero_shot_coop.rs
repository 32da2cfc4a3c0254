//! Zero-shot classifier and CoOp prompt assembly against the reference computation in
//! scripts/golden/encoders_clip.py on the tiny transformers 5.24 CLIPModel (tests/fixtures/clip/):
//! zero-shot logits (class names × the seven MVC-Bench templates; prompt-ensemble average) and, for
//! unified and class-specific context at each class-token position (end, middle, front), the
//! assembled prompt embeddings (CoOp `PromptLearner`) and the text features through the text tower.

use std::path::PathBuf;

use burn::prelude::*;
use calibra_models::clip::{
    ClassTokenPosition, ClipModel, ContextInit, MVC_BENCH_TEMPLATES, PromptLearnerConfig, ZeroShotClassifier,
};
use calibra_models::tokenizer::ClipTokenizer;
use serde_json::Value;

mod common;
use common::flat;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn golden() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("clip/golden.json")).unwrap()).unwrap()
}

fn max_diff(got: Vec<f32>, want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max)
}

fn load() -> (ClipModel, ClipTokenizer, Device) {
    let device = Device::flex();
    let (model, _) = ClipModel::load(fixtures().join("clip").to_str().unwrap(), &device).unwrap();
    let tok = ClipTokenizer::from_dir(fixtures().join("tokenizer/hf")).unwrap();
    (model, tok, device)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

#[test]
fn zero_shot_logits_match_the_reference() {
    let (model, tok, device) = load();
    let g = golden();
    let zs = &g["zero_shot"];
    // The golden's phrases are ours with " {}." appended: the same family, in the same order.
    let phrases = strings(&zs["phrases"]);
    let templates: Vec<String> = phrases.iter().map(|p| format!("{p} {{}}.")).collect();
    assert_eq!(templates, MVC_BENCH_TEMPLATES.map(String::from).to_vec());
    let classnames = strings(&zs["classnames"]);
    let clf = ZeroShotClassifier::with_mvc_bench_templates(&model, &tok, &classnames, &device).unwrap();
    let (want, shape) = flat(&zs["class_embeddings"]);
    assert_eq!(clf.class_embeddings.dims().to_vec(), shape);
    let d = max_diff(clf.class_embeddings.clone().into_data().try_to_vec::<f32>().unwrap(), &want);
    assert!(d <= 1e-5, "class embeddings: max |diff| {d:e}");

    let (pix, s) = flat(&g["pixel_values"]);
    let images = Tensor::<4>::from_data(TensorData::new(pix, [s[0], s[1], s[2], s[3]]), &device);
    let rows = clf.logits_rows(&model, images.clone()).unwrap();
    let (want, shape) = flat(&zs["logits"]);
    assert_eq!(shape, vec![2, 3]);
    let d = max_diff(rows.iter().map(|&x| x as f32).collect(), &want);
    assert!(d <= 1e-4, "zero-shot logits: max |diff| {d:e}");

    // A single template (P1) gives different logits, matching the reference too.
    let p1 = ZeroShotClassifier::new(&model, &tok, &classnames, &templates[..1], &device).unwrap();
    let got: Vec<f32> = p1.logits(&model, images).unwrap().into_data().try_to_vec::<f32>().unwrap();
    let (want, _) = flat(&zs["logits_p1_only"]);
    let d = max_diff(got, &want);
    assert!(d <= 1e-4, "P1-only logits: max |diff| {d:e}");
}

#[test]
fn coop_prompt_assembly_and_features_match_the_reference() {
    let (model, tok, device) = load();
    let g = golden();
    let coop = &g["coop"];
    let classnames = strings(&coop["classnames"]);
    let n_ctx = coop["n_ctx"].as_u64().unwrap() as usize;
    let keep = coop["rows_kept"].as_u64().unwrap() as usize;
    let want_eot: Vec<usize> =
        coop["eot_positions"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
    let want_lens: Vec<usize> =
        coop["name_lens"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
    for (kind, ctx_key) in [("unified", "ctx_unified"), ("csc", "ctx_csc")] {
        let (ctx, shape) = flat(&coop[ctx_key]);
        let ctx = if shape.len() == 2 {
            Tensor::<3>::from_data(TensorData::new(ctx, [1, shape[0], shape[1]]), &device)
        } else {
            Tensor::<3>::from_data(TensorData::new(ctx, [shape[0], shape[1], shape[2]]), &device)
        };
        for (pos_name, position) in [
            ("end", ClassTokenPosition::End),
            ("middle", ClassTokenPosition::Middle),
            ("front", ClassTokenPosition::Front),
        ] {
            let learner = PromptLearnerConfig::new()
                .with_n_ctx(n_ctx)
                .with_class_specific(kind == "csc")
                .with_position(position)
                .init(&model, &tok, &classnames, &device)
                .unwrap()
                .with_context(ctx.clone())
                .unwrap();
            assert_eq!(learner.pooled_positions, want_eot);
            assert_eq!(learner.name_lens, want_lens);
            let case = &coop["cases"][format!("{kind}_{pos_name}")];
            let prompts = learner.prompts();
            let [k, l, d] = prompts.dims();
            assert_eq!(l, 77);
            let head: Vec<f32> = prompts.narrow(1, 0, keep).into_data().try_to_vec::<f32>().unwrap();
            let (want, shape) = flat(&case["embeddings_head"]);
            assert_eq!(shape, vec![k, keep, d]);
            let diff = max_diff(head, &want);
            assert!(diff <= 1e-6, "{kind}/{pos_name}: assembled embeddings max |diff| {diff:e}");
            let feats: Vec<f32> =
                learner.text_features(&model).unwrap().into_data().try_to_vec::<f32>().unwrap();
            let (want, _) = flat(&case["text_features"]);
            let diff = max_diff(feats, &want);
            assert!(diff <= 1e-4, "{kind}/{pos_name}: text features max |diff| {diff:e}");
        }
    }
}

#[test]
fn coop_context_from_a_phrase_is_its_token_embeddings() {
    let (model, tok, device) = load();
    let g = golden();
    let coop = &g["coop"];
    let phrase = coop["init_phrase"].as_str().unwrap().to_string();
    let classnames = strings(&coop["classnames"]);
    let learner = PromptLearnerConfig::new()
        .with_init(ContextInit::Phrase(phrase))
        .init(&model, &tok, &classnames, &device)
        .unwrap();
    let (want, shape) = flat(&coop["init_ctx"]);
    assert_eq!(learner.n_ctx(), shape[0]);
    let got: Vec<f32> = learner.ctx.val().into_data().try_to_vec::<f32>().unwrap();
    assert_eq!(max_diff(got, &want), 0.0, "phrase context must be the exact token embeddings");
    // With the phrase as context, the "end" prompts are the plain prompts "a photo of a <class>.":
    // their features equal the text tower on the tokenised prompts.
    let ids: Vec<Vec<u32>> =
        classnames.iter().map(|c| tok.encode_padded(&format!("a photo of a {c}.")).unwrap()).collect();
    let plain: Vec<f32> =
        model.text_features(&ids, &device).unwrap().into_data().try_to_vec::<f32>().unwrap();
    let learned: Vec<f32> = learner.text_features(&model).unwrap().into_data().try_to_vec::<f32>().unwrap();
    assert!(max_diff(learned, &plain) <= 1e-5);
}

#[test]
fn random_context_is_seeded_and_wrong_shapes_are_rejected() {
    let (model, tok, device) = load();
    let names = vec!["melanoma".to_string(), "nevus".to_string()];
    let make = |seed| {
        PromptLearnerConfig::new()
            .with_n_ctx(4)
            .with_init(ContextInit::Random { seed })
            .init(&model, &tok, &names, &device)
            .unwrap()
    };
    let a: Vec<f32> = make(1).ctx.val().into_data().try_to_vec::<f32>().unwrap();
    let b: Vec<f32> = make(1).ctx.val().into_data().try_to_vec::<f32>().unwrap();
    let c: Vec<f32> = make(2).ctx.val().into_data().try_to_vec::<f32>().unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let bad = Tensor::<3>::zeros([1, 5, 48], &device);
    assert!(make(1).with_context(bad).is_err());
    let err = PromptLearnerConfig::new().init(&model, &tok, &[], &device).unwrap_err().to_string();
    assert!(err.contains("no class names"), "{err}");
}
