//! ViT-B/16-shaped forward pass (224×224, batch 8, random weights) on burn's flex CPU backend.
//!
//! Prints images/s; compare with `benches/peers/vit_peer.py` (PyTorch CPU,
//! `torch.set_num_threads(2)`) through the harness, which interleaves the two and checks the load:
//! `python3 benches/peers/harness.py vit-forward`. Not run in CI (slow); alone:
//! `cargo bench -p calibra-models --bench vit_forward`. Env: `VIT_BENCH_ITERS` (default 5).

use std::time::Instant;

use burn::prelude::*;
use calibra_models::layers::Activation;
use calibra_models::vit::VitConfig;

fn main() {
    // The heap policy the `calibra` binary applies (crate calibra-heap), so that this measures what
    // users run.
    let heap = calibra_heap::HeapPolicy::apply_from_env().expect("CALIBRA_HEAP is retain or system");
    eprintln!("heap: {}", heap.describe());
    let device = Device::flex();
    let iters: usize = std::env::var("VIT_BENCH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let batch = 8;
    let model = VitConfig::new(768, 12, 12, 3072, Activation::GeluExact, 224, 16).init(&device);
    let images =
        Tensor::<4>::random([batch, 3, 224, 224], burn::tensor::Distribution::Normal(0.0, 1.0), &device);
    // Warm-up (allocations, thread pool).
    let out = model.forward(images.clone(), false).expect("valid input");
    let _ = out.cls.into_data();
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t0 = Instant::now();
        let out = model.forward(images.clone(), false).expect("valid input");
        let _ = out.cls.into_data(); // forces the computation to finish
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "burn flex ViT-B/16 224px batch {batch}: median {:.3} s/batch, {:.2} images/s ({iters} iterations)",
        median,
        batch as f64 / median
    );
}
