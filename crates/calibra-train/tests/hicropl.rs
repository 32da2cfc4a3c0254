//! HiCroPL on the tiny random CLIP fixture of calibra-models (crates/calibra-models/tests/fixtures/clip),
//! and on the tiny SigLIP fixture (crates/calibra-models/tests/fixtures/siglip_model), where no
//! reference exists: calibra's port ([`calibra_models::siglip_deep_prompts`]) against the same port
//! stated in torch on transformers' SiglipModel (scripts/golden/deep_prompts_siglip.py, section
//! `hicropl`), with the same tolerances:
//!
//! - golden: the teacher text features, the mapped prompts, the fused features, the logits, the
//!   distillation terms and three full-batch Adam steps from fixed parameters against
//!   scripts/golden/hicropl_steps.py (the reference's `CrossModalPromptLearner` / `CustomCLIP`
//!   re-expressed in torch on transformers' CLIPModel, float32, with `torch.nn.MultiheadAttention`
//!   in the mappers): forward values within 1e-5, per-step losses, the prompts after the last step and
//!   the logits of the trained learner within 1e-4; the mapping alone for a second cross layer;
//! - the mapper gets no gradient (its values do not move), as the reference's `.data.copy_` implies;
//! - determinism and resume: a killed run resumes to the uninterrupted prompts (Adam's state is
//!   checkpointed);
//! - bad configs are refused by name.

#[path = "support/prompt_golden.rs"]
mod prompt_golden;

use std::collections::BTreeMap;
use std::path::Path;

use burn::tensor::Device;
use calibra_models::clip::{
    DeepPromptModel, HicroplConfig, HicroplPromptLearner, PromptTokenizer, teacher_from_descriptions,
};
use calibra_train::build_loss;
use calibra_train::coop::{CoopConfig, CoopMethod, hicropl_terms, train_hicropl, train_hicropl_learner};
use prompt_golden::{
    floats, host, killing_progress, load, load_siglip, max_diff, rows_of, strings, usizes, wave,
};
use serde_json::Value;

fn golden() -> Value {
    prompt_golden::golden("hicropl_steps.json")
}

/// The values of the golden's `init` list: `offset + wave(shape, amplitude, phase)` by name.
fn init_values(list: &Value) -> Vec<(String, Vec<f32>)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let n: usize = usizes(&e["shape"]).iter().product();
            let offset = e["offset"].as_f64().unwrap() as f32;
            let v = wave(n, e["amplitude"].as_f64().unwrap(), e["phase"].as_f64().unwrap());
            (e["name"].as_str().unwrap().to_string(), v.into_iter().map(|x| x + offset).collect())
        })
        .collect()
}

fn learner_config(g: &Value, cross_layer: usize) -> HicroplConfig {
    HicroplConfig::new()
        .with_n_ctx(g["n_ctx"].as_u64().unwrap() as usize)
        .with_depth(g["depth"].as_u64().unwrap() as usize)
        .with_cross_layer(cross_layer)
        .with_heads(g["heads"].as_u64().unwrap() as usize)
        .with_ctx_init(Some(g["ctx_init"].as_str().unwrap().into()))
}

/// The learner of a golden case, with the script's initial values.
fn golden_learner(
    model: &dyn DeepPromptModel,
    tok: &dyn PromptTokenizer,
    g: &Value,
    cross_layer: usize,
    init: &Value,
    device: &Device,
) -> HicroplPromptLearner {
    let classnames = strings(&g["classnames"]);
    let learner = learner_config(g, cross_layer).init(model, tok, &classnames, device).unwrap();
    learner.with_named_values(&init_values(init), device).unwrap()
}

/// Every prompt of `learner` against the golden's `{name: values}` map, within `tol`.
fn check_prompts(what: &str, learner: &HicroplPromptLearner, want: &Value, tol: f32) {
    for (name, got) in learner.prompt_values() {
        let diff = max_diff(&got, &floats(&want[&name]));
        eprintln!("{what} {name}: max |calibra - torch| = {diff:e}");
        assert!(diff <= tol, "{what} {name}: max |diff| {diff:e}");
    }
}

fn golden_config(g: &Value) -> CoopConfig {
    CoopConfig {
        n_ctx: g["n_ctx"].as_u64().unwrap() as usize,
        ctx_init: Some(g["ctx_init"].as_str().unwrap().into()),
        epochs: g["epochs"].as_u64().unwrap() as usize,
        batch_size: usizes(&g["labels"]).len(), // one full-batch step per epoch
        lr: g["lr"].as_f64().unwrap(),
        weight_decay: g["weight_decay"].as_f64().unwrap(),
        warmup_epochs: g["warmup_epochs"].as_u64().unwrap() as usize,
        warmup_lr: g["warmup_lr"].as_f64().unwrap(),
        method: CoopMethod::HiCroPL {
            depth: g["depth"].as_u64().unwrap() as usize,
            cross_layer: g["cross_layer"].as_u64().unwrap() as usize,
            lambda: g["lambda"].as_f64().unwrap(),
            adam_eps: g["adam_eps"].as_f64().unwrap(),
        },
        ..CoopConfig::default()
    }
}

fn scalar(v: &Value) -> f64 {
    floats(v)[0] as f64
}

#[test]
fn hicropl_matches_the_torch_reference_forward_and_step_by_step() {
    let (model, tok, device) = load();
    check_against_torch(&model, &tok, &golden(), &device);
}

/// HiCroPL on SigLIP: calibra's port (`calibra_models::siglip_deep_prompts`) against the same port in
/// torch on transformers' SiglipModel (scripts/golden/deep_prompts_siglip.py), 4 mapper heads.
#[test]
fn hicropl_on_siglip_matches_the_port_in_torch() {
    let (model, tok, device) = load_siglip();
    check_against_torch(&model, &tok, &prompt_golden::golden("deep_prompts_siglip.json")["hicropl"], &device);
}

/// The golden's mapping, features, logits and steps (module docs), on any deep-prompt model.
fn check_against_torch(model: &dyn DeepPromptModel, tok: &dyn PromptTokenizer, g: &Value, device: &Device) {
    let (g, device) = (g.clone(), device.clone());
    let images = prompt_golden::images(&g, &device);
    let labels = usizes(&g["labels"]);
    let cross_layer = g["cross_layer"].as_u64().unwrap() as usize;
    let learner = golden_learner(model, tok, &g, cross_layer, &g["init"], &device);

    let ctx = &learner.prompt_values()[0];
    assert_eq!(ctx.0, "cross_prompts_text.0");
    let ctx_diff = max_diff(&ctx.1, &floats(&g["ctx_init_values"]));
    assert!(ctx_diff <= 1e-6, "phrase init: max |ctx - torch| {ctx_diff:e}");
    let teacher_diff = max_diff(&host(learner.teacher_text.clone()), &floats(&g["teacher_text"]));
    eprintln!("teacher text features: max |calibra - torch| = {teacher_diff:e}");
    assert!(teacher_diff <= 1e-5, "teacher text features: {teacher_diff:e}");

    // One forward pass: map, then the fused features, the logits and the terms.
    let mapped = learner.clone().mapped();
    check_prompts("mapped", &mapped, &g["mapped"], 1e-5);
    let text = host(mapped.text_features(model).unwrap());
    let image = host(mapped.image_features(model, images.clone()).unwrap());
    let (logits, distill_text, distill_image) = hicropl_terms(&mapped, model, images.clone()).unwrap();
    for (what, got, key) in [
        ("fused text features", &text, "text_features"),
        ("fused image features", &image, "image_features"),
        ("logits", &host(logits), "logits"),
    ] {
        let diff = max_diff(got, &floats(&g[key]));
        eprintln!("{what}: max |calibra - torch| = {diff:e}");
        assert!(diff <= 1e-5, "{what}: max |diff| {diff:e}");
    }
    for (what, got, key) in
        [("text", distill_text, "distill_text"), ("image", distill_image, "distill_image")]
    {
        let want = scalar(&g["terms"][key]);
        assert!((got - want).abs() <= 1e-5, "distillation ({what}): {got} vs torch {want}");
    }

    // Three full-batch Adam steps.
    let config = golden_config(&g);
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let mut batches = rows_of(&images);
    let classnames = strings(&g["classnames"]);
    let mut start = learner.clone();
    let mapper_before: Vec<(String, Vec<f32>)> = named_mapper_values(&mut start);
    let out = train_hicropl_learner(
        model,
        &classnames,
        learner.clone(),
        &mut batches,
        &labels,
        ce.as_ref(),
        &config,
        None,
        &mut |_| {},
    )
    .unwrap();
    let want_losses: Vec<f64> = g["losses"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(out.losses.len(), want_losses.len());
    for (s, (got, want)) in out.losses.iter().zip(&want_losses).enumerate() {
        eprintln!("loss of step {s}: calibra {got}, torch {want}");
        assert!((got - want).abs() <= 1e-4, "loss of step {s}: {got} vs torch {want}");
    }
    // The trained learner is the last step's prompts mapped once more: the golden's final prompts,
    // mapped by calibra, must equal it, and its logits the reference's next forward pass.
    let want_final = golden_learner(model, tok, &g, cross_layer, &g["init"], &device)
        .with_named_values(&named(&g["final"]), &device)
        .unwrap();
    let start_values = learner.prompt_values();
    for ((name, got), (_, want)) in
        want_final.clone().mapped().prompt_values().iter().zip(out.learner.prompt_values())
    {
        let diff = max_diff(got, &want);
        eprintln!("trained {name}: max |calibra - mapped torch| = {diff:e}");
        assert!(diff <= 1e-4, "trained {name}: max |diff| {diff:e}");
    }
    for (name, start) in &start_values {
        let moved = max_diff(start, &floats(&g["final"][name]));
        assert!(moved > 1e-3, "{name} barely moved in torch ({moved:e}): the check would be vacuous");
    }
    let logits = host(out.learner.logits(model, images.clone()).unwrap());
    let diff = max_diff(&logits, &floats(&g["inference_logits"]));
    eprintln!("logits of the trained learner: max |calibra - torch| = {diff:e}");
    assert!(diff <= 1e-4, "logits of the trained learner: max |diff| {diff:e}");
    // The mapper got no gradient: its values did not move.
    let mut trained = out.learner;
    assert_eq!(named_mapper_values(&mut trained), mapper_before, "the mapper moved");
}

/// The first file called `name` under `dir`.
fn find_file(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

/// `{name: values}` of a golden map, as a list.
fn named(map: &Value) -> Vec<(String, Vec<f32>)> {
    map.as_object().unwrap().iter().map(|(k, v)| (k.clone(), floats(v))).collect()
}

/// The values of every parameter that is not a prompt, by name.
fn named_mapper_values(learner: &mut HicroplPromptLearner) -> Vec<(String, Vec<f32>)> {
    learner
        .named_params()
        .into_iter()
        .filter(|(n, _)| !n.starts_with("cross_prompts_"))
        .map(|(n, p)| (n, host(p.val())))
        .collect()
}

#[test]
fn the_other_cross_layer_maps_as_the_reference() {
    let g = golden();
    let (model, tok, device) = load();
    let case = &g["mapping_cross1"];
    let learner = golden_learner(&model, &tok, &g, 1, &case["init"], &device);
    check_prompts("mapped (cross layer 1)", &learner.mapped(), &case["mapped"], 1e-5);
}

/// The reference's own teacher: class descriptions (its `gpt_file` format), each sentence's frozen
/// features normalised, averaged and normalised, as `gpt_clip_classifier`; a run given them trains
/// against that teacher. A class without sentences, and descriptions for another method, are refused.
#[test]
fn the_teacher_can_come_from_class_descriptions_as_the_reference() {
    let g = golden();
    let (model, tok, device) = load();
    let classnames = strings(&g["classnames"]);
    let descriptions: BTreeMap<String, Vec<String>> =
        serde_json::from_value(g["descriptions"].clone()).unwrap();
    let teacher = teacher_from_descriptions(&model, &tok, &classnames, &descriptions, &device).unwrap();
    let diff = max_diff(&host(teacher), &floats(&g["teacher_from_descriptions"]));
    eprintln!("teacher from descriptions: max |calibra - torch| = {diff:e}");
    assert!(diff <= 1e-5, "teacher from descriptions: {diff:e}");

    let images = prompt_golden::images(&g, &device);
    let config =
        CoopConfig { epochs: 1, teacher_descriptions: Some(descriptions.clone()), ..golden_config(&g) };
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let labels = usizes(&g["labels"]);
    let out = train_hicropl(
        &model,
        &tok,
        &classnames,
        &mut rows_of(&images),
        &labels,
        ce.as_ref(),
        &config,
        &device,
        None,
        &mut |_| {},
    )
    .unwrap();
    let diff = max_diff(&host(out.learner.teacher_text.clone()), &floats(&g["teacher_from_descriptions"]));
    assert!(diff <= 1e-5, "the run's teacher is not the descriptions': {diff:e}");

    let mut missing = descriptions.clone();
    missing.remove("melanoma");
    let err =
        teacher_from_descriptions(&model, &tok, &classnames, &missing, &device).unwrap_err().to_string();
    assert!(err.contains("no sentences for class \"melanoma\""), "{err}");
    // A sentence longer than the context length is refused (the reference's tokenizer raises).
    let mut long = descriptions.clone();
    long.insert("melanoma".into(), vec![["a dark lesion"; 40].join(" and ")]);
    let err = teacher_from_descriptions(&model, &tok, &classnames, &long, &device).unwrap_err().to_string();
    assert!(err.contains("class \"melanoma\"") && err.contains("context length 77"), "{err}");
    let mut empty = descriptions.clone();
    empty.insert("melanoma".into(), vec![]);
    let err = CoopConfig { teacher_descriptions: Some(empty), ..golden_config(&g) }.validate().unwrap_err();
    assert!(err.to_string().contains("class \"melanoma\" has no sentences"), "{err}");
    let err = CoopConfig {
        teacher_descriptions: Some(descriptions),
        method: CoopMethod::MAPLE_DEFAULT,
        ..golden_config(&g)
    }
    .validate()
    .unwrap_err();
    assert!(err.to_string().contains("HiCroPL's teacher"), "{err}");
}

#[test]
fn runs_are_deterministic_and_a_killed_run_resumes_to_the_same_prompts() {
    let g = golden();
    let (model, tok, device) = load();
    let images = prompt_golden::images(&g, &device);
    let labels = usizes(&g["labels"]);
    let classnames = strings(&g["classnames"]);
    let config = CoopConfig { epochs: 3, batch_size: 2, checkpoint_every: 2, seed: 5, ..golden_config(&g) };
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let run = |dir: Option<&Path>, stop_after: Option<usize>| {
        let mut batches = rows_of(&images);
        let mut progress = killing_progress(stop_after);
        train_hicropl(
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
    let a = run(None, None).unwrap();
    let b = run(None, None).unwrap();
    assert_eq!(a.learner.prompt_values(), b.learner.prompt_values(), "same seed, same prompts");
    assert_eq!(a.total_steps, 9);

    let dir = tempfile::tempdir().unwrap();
    let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(Some(dir.path()), Some(5))));
    assert!(killed.is_err(), "the run was killed at step 5");
    // The checkpoint holds the prompts, not the mapper (which never trains and is rebuilt from the
    // seed): here ~12 KB of prompts against ~330 KB of mapper values.
    let learner_file = find_file(dir.path(), "learner.bpk").expect("a learner checkpoint");
    let size = std::fs::metadata(&learner_file).unwrap().len();
    assert!(size < 64 * 1024, "{} is {size} bytes: the mapper was saved", learner_file.display());
    let resumed = run(Some(dir.path()), None).unwrap();
    assert_eq!(resumed.resumed_from, Some(4), "the last checkpoint was after step 4");
    assert_eq!(resumed.losses, a.losses);
    assert_eq!(resumed.learner.prompt_values(), a.learner.prompt_values(), "resumed prompts differ");
}

#[test]
fn bad_configs_are_refused_by_name() {
    let g = golden();
    let (model, tok, device) = load();
    let classnames = strings(&g["classnames"]);
    let refused = |config: HicroplConfig, words: &[&str]| {
        let err = config.init(&model, &tok, &classnames, &device).unwrap_err().to_string();
        assert!(words.iter().all(|w| err.contains(w)), "{err}");
    };
    refused(HicroplConfig::new(), &["prompt depth 12", "2..=3"]);
    refused(HicroplConfig::new().with_depth(3).with_cross_layer(3), &["cross layer 3", "1..3"]);
    refused(
        HicroplConfig::new().with_depth(3).with_cross_layer(1).with_heads(5),
        &["5 attention heads", "48"],
    );
    // A context far longer than the prompt is refused before it is allocated.
    refused(
        HicroplConfig::new().with_depth(3).with_cross_layer(1).with_n_ctx(1 << 40),
        &["context length 77"],
    );
    let bad = |method: CoopMethod, word: &str| {
        let e = CoopConfig { method, ..golden_config(&g) }.validate().unwrap_err().to_string();
        assert!(e.contains(word), "{e}");
    };
    bad(CoopMethod::HiCroPL { depth: 3, cross_layer: 0, lambda: 12.0, adam_eps: 1e-3 }, "cross_layer");
    bad(CoopMethod::HiCroPL { depth: 3, cross_layer: 1, lambda: -1.0, adam_eps: 1e-3 }, "lambda");
    bad(CoopMethod::HiCroPL { depth: 3, cross_layer: 1, lambda: 12.0, adam_eps: 0.0 }, "adam_eps");
    let err = CoopConfig { csc: true, ..golden_config(&g) }.validate().unwrap_err().to_string();
    assert!(err.contains("csc"), "{err}");
}
