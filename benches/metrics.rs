//! Benchmark of the full `calibra metrics` set on 1,000,000 predictions × 8 classes, and of Kendall
//! τ-b / Spearman ρ on n = 100,000 pairs.
//!
//! Run by hand, together with the Python peers on the same data:
//!
//!     python3 benches/peers/metrics_peer.py      # (inside scripts/golden/venv.sh) writes the data,
//!                                                # times sklearn + netcal + scipy, runs this bench,
//!                                                # and prints the ratios
//!
//! or alone: `cargo bench --bench metrics` (uses the peer's data in benches/data/ when present,
//! otherwise generates data of the same shape with a seeded RNG).

use calibra_metrics::{SummaryOptions, kendall_tau_b, spearman_rho, summarize_single_label};
use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::path::PathBuf;

const N: usize = 1_000_000;
const K: usize = 8;
const N_RANK: usize = 100_000;

fn data_dir() -> PathBuf {
    std::env::var_os("CALIBRA_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/data"))
}

fn read_f64(name: &str) -> Option<Vec<f64>> {
    let bytes = std::fs::read(data_dir().join(name)).ok()?;
    Some(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
}

fn read_labels(name: &str) -> Option<Vec<usize>> {
    let bytes = std::fs::read(data_dir().join(name)).ok()?;
    Some(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize).collect())
}

/// The peer's data if it was written, else the same shape from a seeded generator.
fn classification_data() -> (Vec<f64>, Vec<usize>) {
    if let (Some(p), Some(y)) = (read_f64("metrics_probs.f64"), read_labels("metrics_labels.u32")) {
        assert_eq!(p.len(), N * K, "benches/data/metrics_probs.f64 has the wrong size");
        return (p, y);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let mut probs = Vec::with_capacity(N * K);
    let mut labels = Vec::with_capacity(N);
    for _ in 0..N {
        let y = rng.random_range(0..K);
        let z: Vec<f64> =
            (0..K).map(|k| if k == y { 2.0 } else { 0.0 } + 2.0 * rng.random::<f64>()).collect();
        let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
        probs.extend(z.iter().map(|v| (v - m).exp() / s));
        labels.push(y);
    }
    (probs, labels)
}

fn rank_data() -> (Vec<f64>, Vec<f64>) {
    if let (Some(x), Some(y)) = (read_f64("rank_x.f64"), read_f64("rank_y.f64")) {
        return (x, y);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let x: Vec<f64> = (0..N_RANK).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = x.iter().map(|v| v + rng.random::<f64>()).collect();
    (x, y)
}

fn bench(c: &mut Criterion) {
    let (probs, labels) = classification_data();
    let options = SummaryOptions::default();
    let mut group = c.benchmark_group("metrics");
    group.sample_size(10);
    group.bench_function("full_set_1m_x8", |b| {
        b.iter(|| summarize_single_label(black_box(&probs), None, K, black_box(&labels), &options).unwrap())
    });
    group.finish();

    let (x, y) = rank_data();
    let mut group = c.benchmark_group("rank");
    group.sample_size(20);
    group.bench_function("kendall_tau_b_100k", |b| b.iter(|| kendall_tau_b(black_box(&x), black_box(&y))));
    group.bench_function("spearman_rho_100k", |b| b.iter(|| spearman_rho(black_box(&x), black_box(&y))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
