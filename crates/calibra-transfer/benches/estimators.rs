//! LogME + H-score + GBC (spherical, PCA-64) + TransRate, and NLEEP, on n = 20,000, d = 768, K = 8.
//! Peer: benches/peers/transfer_peer.py (numpy / scikit-learn references), which writes the data to
//! $CALIBRA_TRANSFER_BENCH_DIR (default /tmp/calibra-transfer-bench) and runs this bench between two
//! peer rounds. Without those files a data set of the same construction is generated here.

use std::path::PathBuf;

use calibra_transfer::{Estimator, Features, ScoreOptions, Targets, score};
use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const N: usize = 20_000;
const D: usize = 768;
const K: usize = 8;

fn data() -> (Features, Vec<usize>) {
    let dir = PathBuf::from(
        std::env::var("CALIBRA_TRANSFER_BENCH_DIR").unwrap_or("/tmp/calibra-transfer-bench".into()),
    );
    if let (Ok(f), Ok(l)) = (std::fs::read(dir.join("features.f64")), std::fs::read(dir.join("labels.u32"))) {
        let x: Vec<f64> = f.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        let y: Vec<usize> =
            l.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize).collect();
        eprintln!("bench data: {}", dir.display());
        return (Features::new(x, N, D).unwrap(), y);
    }
    eprintln!("bench data: generated (no files in {})", dir.display());
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let mut normal = move || {
        // Box–Muller
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    };
    let latent = 24;
    let centres: Vec<f64> = (0..K * latent).map(|_| normal()).collect();
    let w: Vec<f64> = (0..latent * D).map(|_| normal() / (latent as f64).sqrt()).collect();
    let y: Vec<usize> = (0..N).map(|i| (i * 5) % K).collect();
    let mut x = vec![0.0; N * D];
    for i in 0..N {
        let z: Vec<f64> = (0..latent).map(|j| centres[y[i] * latent + j] + normal()).collect();
        for k in 0..D {
            x[i * D + k] = (0..latent).map(|j| z[j] * w[j * D + k]).sum::<f64>() + 0.05 * normal();
        }
    }
    (Features::new(x, N, D).unwrap(), y)
}

fn bench(c: &mut Criterion) {
    let (f, y) = data();
    let targets = Targets::Classes(y);
    let options = ScoreOptions::default();
    let four = [Estimator::Logme, Estimator::Hscore, Estimator::Gbc, Estimator::Transrate];
    let r = score(&f, &targets, &four, &options).unwrap();
    eprintln!("values {:?}", r.scores);
    let r = score(&f, &targets, &[Estimator::Nleep], &options).unwrap();
    eprintln!("nleep {:?}", r.scores);
    let mut g = c.benchmark_group("transfer_20000x768_k8");
    g.sample_size(10);
    g.bench_function("logme+hscore+gbc+transrate", |b| {
        b.iter(|| score(&f, &targets, &four, &options).unwrap())
    });
    g.bench_function("nleep", |b| b.iter(|| score(&f, &targets, &[Estimator::Nleep], &options).unwrap()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
