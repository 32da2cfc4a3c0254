//! Benchmark of fitting every post-hoc calibrator on 100,000 × 10 logits (issue 3's speed target:
//! at least as fast as the Python peer measured in the same run).
//!
//! Run by hand, together with the Python peers on the same data:
//!
//!     scripts/golden/venv.sh python benches/peers/calibrate_peer.py
//!
//! (writes the data to benches/data/, times sklearn / scipy / dirichletcal, runs this bench and prints
//! the ratios), or alone: `cargo bench --bench calibrate` (uses the peer's data when present, otherwise
//! data of the same shape from a seeded generator).

use calibra_calibrate::{
    Calibrator, DirichletCalibration, DirichletSelection, IsotonicCalibration, MatrixScaling, PlattScaling,
    PlattScore, Regulariser, TemperatureScaling, VectorScaling,
};
use calibra_predictions::{Predictions, ScoreKind, Targets};
use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

const N: usize = 100_000;
const K: usize = 10;
/// The fixed ODIR strengths of the Dirichlet benchmark (no cross-validation; same as the peer).
const DIRICHLET_LAMBDA: f64 = 1e-3;
const DIRICHLET_MU: f64 = 1e-3;

fn data_dir() -> PathBuf {
    std::env::var_os("CALIBRA_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/data"))
}

fn read_bytes(name: &str) -> Option<Vec<u8>> {
    std::fs::read(data_dir().join(name)).ok()
}

/// Logits and labels: the peer's files if present, else a seeded over-confident generator.
fn data() -> (Vec<f64>, Vec<usize>) {
    if let (Some(z), Some(y)) = (read_bytes("calibrate_logits.f64"), read_bytes("calibrate_labels.u32")) {
        let z: Vec<f64> =
            z.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        let y: Vec<usize> =
            y.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize).collect();
        assert_eq!(z.len(), N * K, "benches/data/calibrate_logits.f64 has the wrong size");
        return (z, y);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut z = Vec::with_capacity(N * K);
    let mut y = Vec::with_capacity(N);
    for _ in 0..N {
        let label = rng.random_range(0..K);
        z.extend(
            (0..K).map(|k| 3.0 * (if k == label { 1.5 } else { 0.0 } + 2.0 * (rng.random::<f64>() - 0.5))),
        );
        y.push(label);
    }
    (z, y)
}

fn table(scores: Vec<f64>, kind: ScoreKind, labels: &[usize]) -> Predictions {
    let ids = (0..N).map(|i| format!("r{i}")).collect();
    let names = (0..K).map(|k| format!("c{k}")).collect();
    Predictions::new(ids, names, kind, scores, Targets::Classes(labels.to_vec())).expect("valid table")
}

fn bench(c: &mut Criterion) {
    let (z, y) = data();
    let logits = table(z, ScoreKind::Logit, &y);
    let probs = table(logits.probabilities(), ScoreKind::Probability, &y);
    let mut group = c.benchmark_group("calibrate_fit_100k_x10");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    group.bench_function("temperature", |b| {
        b.iter(|| TemperatureScaling::default().fit(black_box(&logits)).unwrap())
    });
    group.bench_function("isotonic", |b| b.iter(|| IsotonicCalibration.fit(black_box(&probs)).unwrap()));
    group.bench_function("platt", |b| {
        b.iter(|| PlattScaling { score: PlattScore::Logit }.fit(black_box(&logits)).unwrap())
    });
    group.bench_function("vector", |b| b.iter(|| VectorScaling.fit(black_box(&logits)).unwrap()));
    group.bench_function("matrix", |b| b.iter(|| MatrixScaling::default().fit(black_box(&logits)).unwrap()));
    let dirichlet = DirichletCalibration {
        selection: DirichletSelection::Fixed(Regulariser::Odir {
            lambda: DIRICHLET_LAMBDA,
            mu: DIRICHLET_MU,
            normalised: true,
        }),
        ref_row: true,
    };
    group.bench_function("dirichlet", |b| b.iter(|| dirichlet.fit(black_box(&probs)).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
