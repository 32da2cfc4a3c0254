//! The wgpu backend computes what the CPU backend computes (issue 16). Built only with the `wgpu`
//! feature (`cargo test --workspace --features wgpu --test wgpu_parity`); on a machine without a GPU
//! it runs on Mesa's lavapipe, a Vulkan driver on the CPU (Debian: `mesa-vulkan-drivers`,
//! `libvulkan1`).
//!
//! - every encoder family's features (ViT, DeiT, DINOv2 with and without registers, CLIP vision,
//!   SigLIP vision) on wgpu within 1e-4 of flex;
//! - three LoRA steps (AdamW, clipping, a head) on wgpu: losses and every trained weight within 1e-3
//!   of flex;
//! - one CoOp step on the tiny CLIP fixture: loss and context within 1e-3.
//!
//! Where no wgpu adapter comes up, the tests fail with the device check's message (it says what was
//! looked for and what to install); they never pass without having run on wgpu.
#![cfg(feature = "wgpu")]

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::Encoder;
use calibra_models::clip::{ClipModel, PromptLearnerConfig};
use calibra_models::lora::{LoraConfig, TargetModules};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_train::build_loss;
use calibra_train::coop::{CoopConfig, train_prompt_learner};
use calibra_train::fine_tune::{Adaptation, EncoderClassifier};
use calibra_train::trainer::{TrainConfig, TrainSet, train};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn wgpu() -> Device {
    calibra_models::parse_device("wgpu").unwrap_or_else(|e| panic!("no usable wgpu device: {e}"))
}

fn model_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures")
}

fn checkpoints() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints")
}

/// `image_size` of a checkpoint's `config.json` (top level, or its `vision_config`).
fn image_size(dir: &Path) -> usize {
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["image_size"]
        .as_u64()
        .or_else(|| config["vision_config"]["image_size"].as_u64())
        .unwrap_or_else(|| panic!("{}: no image_size", dir.display())) as usize
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().expect("f32 tensor")
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn every_encoder_family_embeds_the_same_on_wgpu_and_the_cpu() {
    let gpu = wgpu();
    let cpu = Device::flex();
    let fixtures = model_fixtures();
    for (family, dir) in [
        ("vit (shipped scratch)", checkpoints().join("scratch")),
        ("vit", fixtures.join("vit")),
        ("deit", fixtures.join("deit")),
        ("dinov2", fixtures.join("dinov2")),
        ("dinov2 with registers", fixtures.join("dinov2/registers")),
        ("clip vision", fixtures.join("clip")),
        ("siglip vision", fixtures.join("siglip")),
    ] {
        let side = image_size(&dir);
        let pixels = random(3 * 3 * side * side, 1);
        let embed = |device: &Device| {
            let encoder = Encoder::load_dir(&dir, device).unwrap_or_else(|e| panic!("{family}: {e}"));
            let images = Tensor::<4>::from_data(TensorData::new(pixels.clone(), [3, 3, side, side]), device);
            floats(encoder.embed(images).unwrap_or_else(|e| panic!("{family}: {e}")))
        };
        let (on_cpu, on_gpu) = (embed(&cpu), embed(&gpu));
        let diff = max_diff(&on_cpu, &on_gpu);
        eprintln!("{family}: max |wgpu - cpu| = {diff:e} over {} features", on_cpu.len());
        assert!(diff <= 1e-4, "{family}: features differ by {diff:e}");
    }
}

/// Every float parameter of a module, flattened, in visiting order.
struct CollectFloats<'a>(&'a mut Vec<f32>);

impl burn::module::ModuleVisitor for CollectFloats<'_> {
    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        self.0.extend(floats(param.val()));
    }
}

/// Three LoRA steps on the shipped generalist ViT: every step's loss, then every parameter (the
/// trained LoRA factors and head among them).
fn three_lora_steps(device: &Device) -> (Vec<f64>, Vec<f32>) {
    let device = device.clone().autodiff();
    let dir = checkpoints().join("generalist");
    let side = image_size(&dir);
    let encoder = Encoder::load_dir(&dir, &device).unwrap();
    let lora = LoraConfig {
        r: 4,
        lora_alpha: 8.0,
        lora_dropout: 0.0,
        target_modules: Some(TargetModules::Names(vec!["q_proj".into(), "v_proj".into()])),
        modules_to_save: Some(vec!["classifier".into()]),
        ..LoraConfig::default()
    };
    let adaptation = Adaptation::Lora(Box::new(lora));
    let (model, _) = EncoderClassifier::new(encoder, 64, 3, &adaptation, 5, &device).unwrap();
    let n = 24;
    let labels = (0..n).map(|i| i % 3).collect();
    let data = TrainSet::classes([3, side, side], random(n * 3 * side * side, 2), labels);
    let config = TrainConfig {
        epochs: 1,
        batch_size: 8,
        lr: 1e-2,
        warmup_ratio: 0.0,
        checkpoint_every: 0,
        max_grad_norm: Some(1.0),
        ..TrainConfig::default()
    };
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let outcome = train(model, &data, loss.as_ref(), &config, &device, None, &mut |_| {}).unwrap();
    assert_eq!(outcome.losses.len(), 3, "24 images in batches of 8");
    let mut weights = Vec::new();
    outcome.model.visit(&mut CollectFloats(&mut weights));
    (outcome.losses, weights)
}

#[test]
fn three_lora_steps_on_wgpu_equal_the_cpu_steps() {
    let gpu = wgpu();
    let (cpu_losses, cpu_weights) = three_lora_steps(&Device::flex());
    let (gpu_losses, gpu_weights) = three_lora_steps(&gpu);
    for (step, (c, g)) in cpu_losses.iter().zip(&gpu_losses).enumerate() {
        assert!((c - g).abs() <= 1e-3, "step {step}: loss {g} on wgpu, {c} on the cpu");
    }
    let diff = max_diff(&cpu_weights, &gpu_weights);
    eprintln!("LoRA: losses cpu {cpu_losses:?} wgpu {gpu_losses:?}; max |weight diff| {diff:e}");
    assert!(diff <= 1e-3, "weights after 3 steps differ by {diff:e}");
}

/// One full-batch CoOp step on the tiny CLIP fixture from a fixed context: the loss and the context.
fn one_coop_step(device: &Device) -> (Vec<f64>, Vec<f32>) {
    let fixtures = model_fixtures();
    let (model, config) = ClipModel::load(fixtures.join("clip").to_str().unwrap(), device).unwrap();
    let tokenizer = ClipTokenizer::from_dir(fixtures.join("tokenizer/hf")).unwrap();
    let classnames: Vec<String> = ["nevus", "melanoma", "keratosis"].map(String::from).to_vec();
    let n_ctx = 4;
    let learner =
        PromptLearnerConfig::new().with_n_ctx(n_ctx).init(&model, &tokenizer, &classnames, device).unwrap();
    let d = learner.ctx.val().dims()[2];
    let context = Tensor::<3>::from_data(TensorData::new(random(n_ctx * d, 3), [1, n_ctx, d]), device);
    let learner = learner.with_context(context).unwrap();
    let dim = config.projection_dim;
    let n = 12;
    let features = random(n * dim, 4);
    let labels: Vec<usize> = (0..n).map(|i| i % 3).collect();
    // No warmup: the one step runs at the full lr, so the context moves (by about 1e-3).
    let config = CoopConfig { epochs: 1, batch_size: n, lr: 2e-3, warmup_epochs: 0, ..CoopConfig::default() };
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let out = train_prompt_learner(
        &model,
        &tokenizer,
        &classnames,
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
    (out.losses, floats(out.learner.ctx.val()))
}

#[test]
fn one_coop_step_on_wgpu_equals_the_cpu_step() {
    let gpu = wgpu();
    let (cpu_losses, cpu_ctx) = one_coop_step(&Device::flex());
    let (gpu_losses, gpu_ctx) = one_coop_step(&gpu);
    assert_eq!(cpu_losses.len(), 1);
    assert!(
        (cpu_losses[0] - gpu_losses[0]).abs() <= 1e-3,
        "loss {gpu_losses:?} on wgpu, {cpu_losses:?} on the cpu"
    );
    let diff = max_diff(&cpu_ctx, &gpu_ctx);
    let start = random(cpu_ctx.len(), 3);
    let moved = max_diff(&start, &cpu_ctx);
    eprintln!(
        "CoOp: loss cpu {cpu_losses:?} wgpu {gpu_losses:?}; max |context diff| {diff:e} (the step moved it by {moved:e})"
    );
    assert!(moved > 1e-5, "the step must move the context for the comparison to mean anything");
    assert!(diff <= 1e-3, "the context after one step differs by {diff:e}");
}
