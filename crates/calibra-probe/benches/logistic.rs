//! Benchmark of the logistic-regression probe fit on n = 20,000, d = 768, K = 8 (issue 7's speed
//! target: at least 2× faster than sklearn's lbfgs on the same data, same solution).
//!
//! Run by hand, together with the Python peer on the same data:
//!
//!     CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python benches/peers/probe_peer.py
//!
//! (writes the data to benches/data/probe_*.{f64,u32}, times sklearn, runs this bench, reads
//! criterion's estimate and this bench's probabilities, prints the ratio and the largest probability
//! difference), or alone: `cargo bench -p calibra-probe --bench logistic` (uses the peer's data when
//! present, otherwise data of the same shape from a seeded generator).
//!
//! The fit runs on the features as written (the peer writes standardised features), with
//! `tolerance = 1e-6, max_iterations = 1000` — the same settings the peer gives sklearn.

use calibra_probe::{Features, LogisticOptions, LogisticRegression, Targets};
use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

const N: usize = 20_000;
const D: usize = 768;
const K: usize = 8;

fn data_dir() -> PathBuf {
    std::env::var_os("CALIBRA_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benches/data"))
}

fn options() -> LogisticOptions {
    LogisticOptions { tolerance: 1e-6, max_iterations: 1000, ..LogisticOptions::default() }
}

/// Features and labels: the peer's files if present, else seeded Gaussian classes.
fn data() -> (Vec<f64>, Vec<usize>) {
    let dir = data_dir();
    if let (Ok(x), Ok(y)) = (std::fs::read(dir.join("probe_x.f64")), std::fs::read(dir.join("probe_y.u32"))) {
        let x: Vec<f64> =
            x.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        let y: Vec<usize> =
            y.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize).collect();
        assert_eq!(x.len(), N * D, "benches/data/probe_x.f64 has the wrong size");
        assert_eq!(y.len(), N, "benches/data/probe_y.u32 has the wrong size");
        return (x, y);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    // Class means ~ U(−0.15, 0.15) per feature; noise ~ sum of 3 uniforms (roughly Gaussian, var 1).
    let means: Vec<f64> = (0..K * D).map(|_| rng.random_range(-0.15..0.15)).collect();
    let y: Vec<usize> = (0..N).map(|_| rng.random_range(0..K)).collect();
    let x = (0..N * D)
        .map(|i| {
            let noise: f64 = (0..3).map(|_| rng.random_range(-1.0..1.0)).sum();
            means[y[i / D] * D + i % D] + noise
        })
        .collect();
    (x, y)
}

fn bench(c: &mut Criterion) {
    let (x, y) = data();
    let features = Features::new(&x, D).expect("finite features");
    let targets = Targets::Classes { labels: &y, n_classes: K };
    // One fit outside the timing: report its diagnostics and leave its probabilities for the peer.
    let fitted = LogisticRegression::fit(features, targets, &options()).expect("fit");
    eprintln!("calibra logistic fit: {:?}", fitted.diagnostics[0]);
    let p = fitted.predict_proba(features).expect("predict");
    let bytes: Vec<u8> = p.iter().flat_map(|v| v.to_le_bytes()).collect();
    let _ = std::fs::create_dir_all(data_dir());
    if let Err(e) = std::fs::write(data_dir().join("probe_rust_proba.f64"), bytes) {
        eprintln!("could not write probe_rust_proba.f64: {e}");
    }

    let mut group = c.benchmark_group("probe_logistic_fit");
    group.sample_size(10).warm_up_time(Duration::from_millis(1)).measurement_time(Duration::from_secs(20));
    group.bench_function("n20000_d768_k8", |b| {
        b.iter(|| LogisticRegression::fit(black_box(features), targets, &options()).expect("fit"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
