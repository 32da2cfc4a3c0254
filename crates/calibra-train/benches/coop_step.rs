//! One CoOp training step (text tower forward + backward to the context, SGD-momentum update) on
//! burn's flex CPU backend, batch 32 of cached image features, K = 5 classes, 16 context tokens:
//!
//! - `tiny`: the tiny random CLIP fixture of calibra-models (text width 48, 3 layers);
//! - `vit-b16`: a ViT-B/16-shaped CLIP text tower with random weights (width 512, 12 layers,
//!   8 heads, MLP 2048, vocabulary 49,408, projection 512).
//!
//! The image tower never runs (CoOp caches the frozen image features). Prints the median step time
//! and images/s; compare with `benches/peers/coop_step_peer.py` (PyTorch CPU, same shapes,
//! `torch.set_num_threads(2)`) on the same machine and record the ratio
//! (`python3 benches/peers/harness.py coop-step` does both, interleaved). Not run in CI; run with
//! `cargo bench -p calibra-train --bench coop_step`. Env: `COOP_BENCH_STEPS` (default 6, the first
//! one is a warm-up and not counted).

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::Device;
use calibra_models::clip::{ClipConfig, ClipModel, ClipTextConfig, ClipVisionConfig};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_train::build_loss;
use calibra_train::coop::{CoopConfig, train_coop};

const BATCH: usize = 32;
const CLASSES: [&str; 5] =
    ["melanocytic nevus", "melanoma", "basal cell carcinoma", "benign keratosis", "dermatofibroma"];

fn features(n: usize, dim: usize) -> Vec<f32> {
    // Deterministic, non-degenerate rows (no RNG needed for timing).
    (0..n * dim).map(|i| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5).collect()
}

fn bench(name: &str, model: &ClipModel, tok: &ClipTokenizer, dim: usize, steps: usize) {
    let device = Device::flex();
    let classnames: Vec<String> = CLASSES.iter().map(|s| s.to_string()).collect();
    let x = features(BATCH, dim);
    let y: Vec<usize> = (0..BATCH).map(|i| i % CLASSES.len()).collect();
    let loss = build_loss::<&str>("ce", &[]).expect("ce");
    // One full batch per epoch: `steps` epochs = `steps` optimiser steps.
    let config = CoopConfig { n_ctx: 16, epochs: steps, batch_size: BATCH, ..CoopConfig::default() };
    let mut stamps = vec![Instant::now()];
    train_coop(model, tok, &classnames, &x, dim, &y, loss.as_ref(), &config, &device, None, &mut |_| {
        stamps.push(Instant::now())
    })
    .expect("CoOp runs");
    let mut times: Vec<f64> = stamps.windows(2).skip(1).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "burn flex CoOp step [{name}] batch {BATCH}, K {}, n_ctx 16: median {median:.4} s/step, {:.1} images/s ({} steps)",
        CLASSES.len(),
        BATCH as f64 / median,
        times.len()
    );
}

fn main() {
    // The heap policy the `calibra` binary applies (crate calibra-heap), so that this measures what
    // users run.
    let heap = calibra_heap::HeapPolicy::apply_from_env().expect("CALIBRA_HEAP is retain or system");
    eprintln!("heap: {}", heap.describe());
    let steps: usize =
        std::env::var("COOP_BENCH_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(6).max(2);
    let device = Device::flex();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures");
    let tok = ClipTokenizer::from_dir(fixtures.join("tokenizer/hf")).expect("fixture tokenizer");
    let (tiny, _) =
        ClipModel::load(fixtures.join("clip").to_str().expect("utf-8"), &device).expect("fixture CLIP");
    bench("tiny", &tiny, &tok, 32, steps);

    let config = ClipConfig::new(
        ClipVisionConfig::new(64, 1, 1, 64, 32, 16), // never run by CoOp; kept small
        ClipTextConfig::new(49_408, 512, 12, 8, 2048),
        512,
    );
    let vit_b16 = config.init(&device);
    bench("vit-b16", &vit_b16, &tok, 512, steps);
}
