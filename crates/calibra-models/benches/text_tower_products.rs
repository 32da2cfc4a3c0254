//! The matrix products of one CoOp step on a ViT-B/16-shaped CLIP text tower (12 layers, width 512,
//! MLP 2048, K 5 prompts of 77 tokens: 385 rows), alone: every projection's forward product `x · W`
//! and its backward product to the input, `dY · Wᵀ` (`Wᵀ` a transposed view, as burn's autodiff
//! forms it), on burn's flex CPU backend. Its peer, `peers/text_tower_products_peer.py`, times the same
//! products in PyTorch; the ratio says how much of the CoOp step's distance to torch is the products
//! themselves (gemm against torch's BLAS) and how much is everything else. Not run in CI; by hand:
//! `cargo bench -p calibra-models --bench text_tower_products`.
//! Env: `PRODUCTS_BENCH_REPS` (default 7): timed repetitions after one untimed; the median is printed.

use std::time::Instant;

use burn::prelude::*;
use burn::tensor::Distribution;

/// `(in, out)` of each projection of one layer: q, k, v, out, fc1, fc2.
const PROJECTIONS: [(usize, usize); 6] =
    [(512, 512), (512, 512), (512, 512), (512, 512), (512, 2048), (2048, 512)];
const LAYERS: usize = 12;
const ROWS: usize = 5 * 77;

fn main() {
    // The heap policy the `calibra` binary applies (crate calibra-heap), so that this measures what
    // users run.
    let heap = calibra_heap::HeapPolicy::apply_from_env().expect("CALIBRA_HEAP is retain or system");
    eprintln!("heap: {}", heap.describe());
    let reps: usize =
        std::env::var("PRODUCTS_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(7).max(1);
    let device = Device::flex();
    let normal = Distribution::Normal(0.0, 1.0);
    // One weight per projection and layer (as in the model: no weight is reused across layers).
    let weights: Vec<Tensor<2>> = (0..LAYERS)
        .flat_map(|_| PROJECTIONS.map(|(i, o)| Tensor::<2>::random([i, o], normal, &device)))
        .collect();
    let inputs: Vec<Tensor<2>> =
        PROJECTIONS.iter().map(|&(i, _)| Tensor::<2>::random([ROWS, i], normal, &device)).collect();
    let grads: Vec<Tensor<2>> =
        PROJECTIONS.iter().map(|&(_, o)| Tensor::<2>::random([ROWS, o], normal, &device)).collect();

    let run = |backward: bool| {
        let start = Instant::now();
        let mut sink = 0.0f32;
        for (n, w) in weights.iter().enumerate() {
            let p = n % PROJECTIONS.len();
            let product = if backward {
                grads[p].clone().matmul(w.clone().transpose())
            } else {
                inputs[p].clone().matmul(w.clone())
            };
            // One element read back, so that the product has been computed when the clock stops.
            sink += product.slice([0..1, 0..1]).into_scalar::<f32>();
        }
        (start.elapsed().as_secs_f64(), sink)
    };
    let _ = (run(false), run(true));
    let mut rounds: Vec<(f64, f64)> = (0..reps).map(|_| (run(false).0, run(true).0)).collect();
    let median = |values: Vec<f64>| {
        let mut values = values;
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let forward = median(rounds.iter().map(|r| r.0).collect());
    let backward = median(rounds.iter().map(|r| r.1).collect());
    rounds.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
    let step = rounds[rounds.len() / 2];
    let flops: f64 =
        PROJECTIONS.iter().map(|&(i, o)| 2.0 * (ROWS * i * o) as f64).sum::<f64>() * LAYERS as f64;
    println!(
        "burn flex text-tower products, {ROWS} rows, {} threads: median {:.4} s/step (forward {forward:.4} s, \
         {:.0} GFLOP/s; backward to the input {backward:.4} s, {:.0} GFLOP/s; {reps} repetitions)",
        rayon::current_num_threads(),
        step.0 + step.1,
        flops / forward / 1e9,
        flops / backward / 1e9,
    );
}
