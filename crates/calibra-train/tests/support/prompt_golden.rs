//! Shared by the prompt-learning golden tests (`tests/maple.rs`, `tests/promptsrc.rs`, `tests/coop.rs`,
//! `tests/coop_siglip.rs`, `tests/coop_biomedclip.rs`): the tiny CLIP fixture of calibra-models, the
//! golden JSON reader, the scripts' `wave` formula, an in-memory image-batch source, and the
//! CoOp-family checks against a `scripts/golden/coop_*_steps.py` file. Included with `#[path]`, so
//! some items are unused in each of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor, TensorData};
use calibra_models::clip::{ClipModel, ContextInit, PromptLearnerConfig, PromptTextEncoder, PromptTokenizer};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_train::build_loss;
use calibra_train::coop::{
    CoopConfig, CoopError, CoopMethod, CoopOutcome, PromptImages, train_prompt_learner,
};
use serde_json::Value;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures")
}

/// The tiny CLIP fixture and its tokenizer, on the CPU.
pub fn load() -> (ClipModel, ClipTokenizer, Device) {
    let device = Device::flex();
    let (model, _) = ClipModel::load(fixtures().join("clip").to_str().unwrap(), &device).unwrap();
    let tok = ClipTokenizer::from_dir(fixtures().join("tokenizer/hf")).unwrap();
    (model, tok, device)
}

/// The tiny SigLIP fixture of calibra-models and its tokenizer, on the CPU.
pub fn load_siglip()
-> (calibra_models::siglip_model::SiglipModel, calibra_models::siglip_tokenizer::SiglipTokenizer, Device) {
    let device = Device::flex();
    let dir = fixtures().join("siglip_model");
    let (model, _) = calibra_models::siglip_model::SiglipModel::load(dir.to_str().unwrap(), &device).unwrap();
    let tok = calibra_models::siglip_tokenizer::SiglipTokenizer::from_dir(&dir).unwrap();
    (model, tok, device)
}

/// `tests/golden/<name>`, parsed.
pub fn golden(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every number of a (nested) JSON array, flattened.
pub fn floats(v: &Value) -> Vec<f32> {
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

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().into()).collect()
}

pub fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
}

/// The scripts' `wave`: `amplitude · sin(0.7·j + phase)` over the flat index, in f64, then f32.
pub fn wave(n: usize, amplitude: f64, phase: f64) -> Vec<f32> {
    (0..n).map(|j| (amplitude * (0.7 * j as f64 + phase).sin()) as f32).collect()
}

/// The golden images: `wave(…, 1, 0.5)` of the JSON's `image_shape`.
pub fn images(g: &Value, device: &Device) -> Tensor<4> {
    let s = usizes(&g["image_shape"]);
    let n: usize = s.iter().product();
    Tensor::from_data(TensorData::new(wave(n, 1.0, 0.5), [s[0], s[1], s[2], s[3]]), device)
}

pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

pub fn host(t: Tensor<2>) -> Vec<f32> {
    t.to_data().iter::<f32>().collect()
}

/// A progress callback that kills the run (panics) at its `stop_after`-th step report, for the
/// kill-and-resume tests; `None` never kills.
pub fn killing_progress(stop_after: Option<usize>) -> impl FnMut(&calibra_train::trainer::StepReport) {
    let mut seen = 0;
    move |_| {
        seen += 1;
        if stop_after == Some(seen) {
            panic!("killed");
        }
    }
}

/// The batch source of a test: rows of an in-memory image tensor.
pub fn rows_of(images: &Tensor<4>) -> impl FnMut(&[usize]) -> Result<PromptImages, CoopError> + '_ {
    move |rows: &[usize]| {
        let index = Tensor::<1, Int>::from_data(
            TensorData::new(rows.iter().map(|&r| r as i64).collect::<Vec<_>>(), [rows.len()]),
            &images.device(),
        );
        Ok(PromptImages::all(rows, images.clone().select(0, index)))
    }
}

/// With the context set to the golden's phrase, the learned prompts' features equal the plain
/// prompts' (`phrase_prompt_features`) within `tol`.
pub fn check_phrase_prompts(
    encoder: &dyn PromptTextEncoder,
    tokenizer: &dyn PromptTokenizer,
    g: &Value,
    device: &Device,
    tol: f32,
) {
    let phrase = g["phrase"].as_str().unwrap().to_string();
    let learner = PromptLearnerConfig::new()
        .with_init(ContextInit::Phrase(phrase))
        .init(encoder, tokenizer, &strings(&g["classnames"]), device)
        .unwrap();
    let got: Vec<f32> = learner.text_features(encoder).unwrap().into_data().try_to_vec().unwrap();
    let diff = max_diff(&got, &floats(&g["phrase_prompt_features"]));
    eprintln!("phrase prompts vs the plain prompts' features: max |diff| {diff:e}");
    assert!(diff <= tol, "phrase prompts vs the plain prompts' features: {diff:e}");
}

/// A few full-batch steps of CoOp, KgCoOp and ProGrad from the golden's context: per-step losses and
/// the final context within 1e-4 of torch. Returns each method's outcome.
pub fn check_methods_step_by_step(
    encoder: &dyn PromptTextEncoder,
    tokenizer: &dyn PromptTokenizer,
    g: &Value,
    device: &Device,
) -> Vec<CoopOutcome> {
    let names = strings(&g["classnames"]);
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
    let mut outcomes = Vec::new();
    for (key, method) in [
        ("coop", CoopMethod::Coop),
        ("kgcoop", CoopMethod::KGCOOP_DEFAULT),
        ("prograd", CoopMethod::PROGRAD_DEFAULT),
    ] {
        let learner = PromptLearnerConfig::new()
            .with_n_ctx(n_ctx)
            .init(encoder, tokenizer, &names, device)
            .unwrap()
            .with_context(Tensor::<3>::from_data(TensorData::new(ctx0.clone(), [1, n_ctx, d]), device))
            .unwrap();
        let config = CoopConfig { method, ..base.clone() };
        let out = train_prompt_learner(
            encoder,
            tokenizer,
            &names,
            learner,
            &features,
            dim,
            &labels,
            ce.as_ref(),
            &config,
            device,
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
        outcomes.push(out);
    }
    outcomes
}
