//! LoRA training step of a ViT classifier on burn's flex CPU backend (issue #7, "Speed").
//!
//! One step = what [`calibra_train::trainer::train`] does per batch: forward (encoder + linear head
//! on the feature the family's transformers `*ForImageClassification` classifies,
//! `Encoder::classification_feature`), cross-entropy, backward, global-norm clipping, AdamW update of
//! the LoRA factors and the head. LoRA r 8, α 16, dropout 0.05 on `q_proj` / `v_proj`; the rest of
//! the encoder is frozen; random initialisation; batch 32 (`LORA_BENCH_BATCH`); 10 classes. Shapes
//! (`LORA_BENCH_SHAPE`):
//!
//! - `tiny`: hidden 96, 4 layers, 3 heads, MLP 384, 32 px, patch 4 (65 tokens); default 20 timed steps.
//! - `vitb`: ViT-B/16 (hidden 768, 12 layers, 12 heads, MLP 3072), 224 px (197 tokens); default 3.
//! - `dinov2b`: DINOv2-B/14 at 224 px (257 tokens; head on [CLS ‖ mean of patches]); default 3.
//! - `clipb`: CLIP ViT-B/16 vision tower (quick GELU), 224 px (197 tokens; head on the mean patch
//!   token); default 3.
//! - `siglipb`: SigLIP-B/16 vision tower (tanh GELU, no pooling head), 224 px (196 tokens; head on the
//!   mean token); default 3.
//!
//! `LORA_BENCH_DEVICE` picks the device as `--device` does (`cpu`, the default; `wgpu`, `wgpu:N`,
//! `cuda:N`, each needing its cargo feature: `cargo bench -p calibra-train --features wgpu`). Every
//! step reads the gradient norm and the loss back to the host, so a GPU step's time is its whole work.
//!
//! One shape per process, so the peak RSS (`VmHWM`) is that shape's alone. The first step is a
//! warm-up and is not timed; the median step time over `LORA_BENCH_STEPS` further steps is reported.
//! `LORA_BENCH_MARK_STEPS=1` prints `lora_step: step N done` as each step ends (for scripts/dev/kernel_profile.py).
//! Compare with `benches/peers/lora_step_peer.py` (torch + peft, same shapes, 2 threads) through
//! `python3 benches/peers/harness.py lora-step-tiny` (or `lora-step-vitb`, `lora-step-dinov2b`,
//! `lora-step-clipb`, `lora-step-siglipb`), or alone:
//!
//! ```text
//! RAYON_NUM_THREADS=2 LORA_BENCH_SHAPE=tiny cargo bench -p calibra-train --bench lora_step
//! ```

use std::time::Instant;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use calibra_models::clip::ClipVisionConfig;
use calibra_models::dinov2::Dinov2Config;
use calibra_models::hf::HfConfig;
use calibra_models::layers::Activation;
use calibra_models::lora::{LoraConfig, TargetModules, apply_lora};
use calibra_models::siglip::SiglipVisionConfig;
use calibra_models::vit::VitConfig;
use calibra_models::{Encoder, EncoderModel};
use calibra_train::build_loss;
use calibra_train::trainer::{Classifier, TrainConfig, TrainSet, train};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::json;

/// Images per step unless `LORA_BENCH_BATCH` says otherwise.
const DEFAULT_BATCH: usize = 32;
const CLASSES: usize = 10;

#[derive(Module, Debug)]
struct LoraVitClassifier {
    encoder: Encoder,
    classifier: Linear,
}

impl Classifier for LoraVitClassifier {
    fn logits(&self, images: Tensor<4>) -> Tensor<2> {
        self.classifier.forward(self.encoder.classification_feature(images).expect("images fit the encoder"))
    }
}

/// Peak resident set size of this process in MiB (`VmHWM` of /proc/self/status).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The positive count in environment variable `name`, `default` when it is unset; anything else
/// ends the bench with a message rather than measuring a size nobody asked for.
fn count_from_env(name: &str, default: usize) -> usize {
    let Ok(text) = std::env::var(name) else { return default };
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => n,
        _ => {
            eprintln!("{name}={text}: expected a whole number > 0");
            std::process::exit(2);
        }
    }
}

/// A randomly initialised encoder of `shape`, its input side and the default number of timed steps.
fn encoder_for(shape: &str, device: &Device) -> (Encoder, usize, usize) {
    let hf = |json: serde_json::Value| HfConfig::from_value("lora_step bench", json);
    let base = json!({"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "image_size": 224, "num_channels": 3});
    let with = |mut extra: serde_json::Value| {
        for (k, v) in base.as_object().expect("object") {
            extra[k] = v.clone();
        }
        extra
    };
    let (model, model_type, side, steps) = match shape {
        "tiny" | "vitb" => {
            let vit = if shape == "tiny" {
                VitConfig::new(96, 4, 3, 384, Activation::GeluExact, 32, 4)
            } else {
                VitConfig::new(768, 12, 12, 3072, Activation::GeluExact, 224, 16)
            };
            let steps = if shape == "tiny" { 20 } else { 3 };
            (EncoderModel::Vit(vit.init(device)), "vit", vit.image_size, steps)
        }
        "dinov2b" => {
            let cfg = hf(with(json!({"model_type": "dinov2", "patch_size": 14, "mlp_ratio": 4,
                "hidden_act": "gelu", "layer_norm_eps": 1e-6})));
            let dinov2 = Dinov2Config::from_hf(&cfg).expect("a DINOv2-B/14 config");
            (EncoderModel::Dinov2(dinov2.init(device)), "dinov2", 224, 3)
        }
        "clipb" => {
            let cfg = hf(with(json!({"model_type": "clip_vision_model", "patch_size": 16,
                "intermediate_size": 3072, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5})));
            let clip = ClipVisionConfig::from_hf(&cfg).expect("a CLIP ViT-B/16 vision config");
            (EncoderModel::ClipVision(clip.init(device)), "clip_vision_model", 224, 3)
        }
        "siglipb" => {
            let cfg = hf(with(json!({"model_type": "siglip_vision_model", "patch_size": 16,
                "intermediate_size": 3072, "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": 1e-6,
                "vision_use_head": false})));
            let siglip = SiglipVisionConfig::from_hf(&cfg).expect("a SigLIP-B/16 vision config");
            (EncoderModel::SiglipVision(siglip.init(device)), "siglip_vision_model", 224, 3)
        }
        other => panic!("LORA_BENCH_SHAPE must be tiny, vitb, dinov2b, clipb or siglipb, got {other:?}"),
    };
    (Encoder { model, config: hf(json!({ "model_type": model_type })) }, side, steps)
}

fn main() {
    // The heap policy the `calibra` binary applies (crate calibra-heap), so that this measures what
    // users run.
    let heap = calibra_heap::HeapPolicy::apply_from_env().expect("CALIBRA_HEAP is retain or system");
    eprintln!("heap: {}", heap.describe());
    let shape = std::env::var("LORA_BENCH_SHAPE").unwrap_or_else(|_| "tiny".into());
    let device_name = std::env::var("LORA_BENCH_DEVICE").unwrap_or_else(|_| "cpu".into());
    let device = match calibra_models::device::parse_device(&device_name) {
        Ok(device) => device.autodiff(),
        Err(e) => {
            eprintln!("LORA_BENCH_DEVICE={device_name}: {e}");
            std::process::exit(2);
        }
    };
    device.seed(0);
    let (encoder, side, default_steps) = encoder_for(&shape, &device);
    let steps = count_from_env("LORA_BENCH_STEPS", default_steps);
    let batch = count_from_env("LORA_BENCH_BATCH", DEFAULT_BATCH);
    let dim = encoder.classification_dim();
    let mut encoder = encoder.no_grad();
    let lora = LoraConfig {
        r: 8,
        lora_alpha: 16.0,
        lora_dropout: 0.05,
        target_modules: Some(TargetModules::Names(vec!["q_proj".into(), "v_proj".into()])),
        modules_to_save: Some(vec!["classifier".into()]),
        ..LoraConfig::default()
    };
    let wrapped = apply_lora(&mut encoder, &lora, 0).expect("q/v exist");
    let model = LoraVitClassifier { encoder, classifier: LinearConfig::new(dim, CLASSES).init(&device) };

    // One batch of images, visited once per epoch: `steps + 1` epochs of one step each.
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let pixels: Vec<f32> = (0..batch * 3 * side * side).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let data = TrainSet::classes([3, side, side], pixels, (0..batch).map(|i| i % CLASSES).collect());
    let config =
        TrainConfig { epochs: steps + 1, batch_size: batch, checkpoint_every: 0, ..TrainConfig::default() };
    let loss = build_loss::<&str>("ce", &[]).expect("ce");

    // `LORA_BENCH_MARK_STEPS=1` prints a line as each step ends, so that a kernel profile written to the
    // same stream (scripts/dev/kernel_profile.py) can leave the warm-up step out.
    let mark_steps = std::env::var_os("LORA_BENCH_MARK_STEPS").is_some();
    let mut times = Vec::with_capacity(steps);
    let mut last = Instant::now();
    let outcome = train(model, &data, loss.as_ref(), &config, &device, None, &mut |r| {
        let now = Instant::now();
        if r.step > 1 {
            times.push(now.duration_since(last).as_secs_f64());
        }
        if mark_steps {
            println!("lora_step: step {} done", r.step);
        }
        last = now;
    })
    .expect("training runs");
    assert!(outcome.losses.iter().all(|l| l.is_finite()));

    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let rss = peak_rss_mib().map_or("n/a".to_string(), |m| format!("{m:.0} MiB"));
    println!(
        "burn {device_name} LoRA step {shape} ({} q/v modules, r 8) batch {batch}: median {median:.3} s/step, \
         {:.2} images/s ({steps} timed steps after 1 warm-up; min {:.3} s, max {:.3} s); peak RSS {rss}",
        wrapped.len(),
        batch as f64 / median,
        times[0],
        times[times.len() - 1],
    );
}
