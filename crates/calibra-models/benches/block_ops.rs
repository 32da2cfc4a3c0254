//! Wall time of each op of one ViT-B/16 block (224 px, batch 8) on burn's flex CPU backend, each
//! timed alone: where a forward pass spends its time, and which ops gain from a second thread
//! (run once with `RAYON_NUM_THREADS=1` and once with 2) or from the heap policy (`CALIBRA_HEAP=system`
//! against the default). Not run in CI; by hand: `cargo bench -p calibra-models --bench block_ops`.
//! Env: `BLOCK_OPS_REPS` (default 9): timed repetitions per op, after one untimed; the median is printed.

use std::time::Instant;

use burn::nn::LinearConfig;
use burn::prelude::*;
use burn::tensor::Distribution;
use burn::tensor::module::attention;
use calibra_models::layers::gelu::gelu_exact;
use calibra_models::layers::layer_norm::LayerNormConfig;

/// One op to time, returning its result as host data.
type TimedOp<'a> = Box<dyn FnMut() -> TensorData + 'a>;

/// Median wall time of `op` over `reps` runs after one warm-up; `op` returns its result as host data
/// so that the computation has finished when the clock stops.
fn median_ms(reps: usize, mut op: impl FnMut() -> TensorData) -> f64 {
    let _ = op();
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            let _ = op();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    // The heap policy the `calibra` binary applies (crate calibra-heap), so that this measures what
    // users run.
    let heap = calibra_heap::HeapPolicy::apply_from_env().expect("CALIBRA_HEAP is retain or system");
    eprintln!("heap: {}", heap.describe());
    let reps: usize = std::env::var("BLOCK_OPS_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(9).max(1);
    let device = Device::flex();
    let (batch, tokens, width, heads) = (8, 197, 768, 12);
    let normal = Distribution::Normal(0.0, 1.0);
    let x = Tensor::<3>::random([batch, tokens, width], normal, &device);
    let hidden = Tensor::<3>::random([batch, tokens, 4 * width], normal, &device);
    let projection = LinearConfig::new(width, width).init(&device);
    let fc1 = LinearConfig::new(width, 4 * width).init(&device);
    let fc2 = LinearConfig::new(4 * width, width).init(&device);
    let norm = LayerNormConfig::new(width).init(&device);
    let split = |t: Tensor<3>| t.reshape([batch, tokens, heads, width / heads]).swap_dims(1, 2);
    let q = split(x.clone());
    let context = x.clone().reshape([batch, heads, tokens, width / heads]);
    let residual = x.clone() * 1.0;

    let ops: Vec<(&str, TimedOp)> = vec![
        ("layer norm [8, 197, 768]", Box::new(|| norm.forward(x.clone()).into_data())),
        ("q/k/v/o projection 768 -> 768, bias", Box::new(|| projection.forward(x.clone()).into_data())),
        (
            "split heads, made contiguous",
            Box::new(|| split(x.clone()).reshape([batch * heads, tokens, width / heads]).into_data()),
        ),
        (
            "attention (flex fused), 12 heads",
            Box::new(|| {
                attention(q.clone(), q.clone(), q.clone(), None, None, Default::default()).into_data()
            }),
        ),
        (
            "merge heads (swap + reshape)",
            Box::new(|| context.clone().swap_dims(1, 2).reshape([batch, tokens, width]).into_data()),
        ),
        ("fc1 768 -> 3072, bias", Box::new(|| fc1.forward(x.clone()).into_data())),
        ("GELU (exact) [8, 197, 3072], N(0, 1)", Box::new(|| gelu_exact(hidden.clone()).into_data())),
        ("fc2 3072 -> 768, bias", Box::new(|| fc2.forward(hidden.clone()).into_data())),
        ("residual add [8, 197, 768], fresh output", Box::new(|| (residual.clone() + x.clone()).into_data())),
    ];
    println!(
        "ViT-B/16 block ops, batch {batch}, {} threads: median of {reps} (ms)",
        rayon::current_num_threads()
    );
    for (name, mut op) in ops {
        println!("{name:40} {:8.2} ms", median_ms(reps, &mut op));
    }
}
