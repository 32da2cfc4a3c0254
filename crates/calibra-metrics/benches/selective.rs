//! Benchmark of the selective-prediction metric set (`summarize_selective_single_label`: AURC,
//! E-AURC, AUGRC, risk at 80 % coverage, coverage at 5 % risk with the MSP, AURC / E-AURC / AUGRC of
//! each of the five confidence scores, relplot's smooth ECE and Kumar's debiased ECE) on
//! 1,000,000 predictions × 8 classes.
//!
//! Run by hand with the Python peers on the same data (results: benches/RESULTS.md):
//!
//!     PYTHONPATH=<venv with relplot, uncertainty-calibration>/lib/python3.11/site-packages \
//!         /work/main/.venv-golden/bin/python benches/peers/selective_peer.py
//!
//! or alone: `cargo bench -p calibra-metrics --bench selective` (reads benches/data/selective_*.f64 when
//! the peer wrote them, else generates data of the same shape with a fixed generator).

use calibra_metrics::input::softmax_rows;
use calibra_metrics::summarize_selective_single_label;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;

const N: usize = 1_000_000;
const K: usize = 8;

fn data_dir() -> PathBuf {
    std::env::var_os("CALIBRA_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benches/data"))
}

fn data() -> (Vec<f64>, Vec<usize>) {
    let dir = data_dir();
    if let (Ok(z), Ok(y)) =
        (std::fs::read(dir.join("selective_logits.f64")), std::fs::read(dir.join("selective_labels.u32")))
    {
        let z: Vec<f64> = z.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        let y: Vec<usize> =
            y.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize).collect();
        assert_eq!(z.len(), N * K, "selective_logits.f64 has the wrong size");
        return (z, y);
    }
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let y: Vec<usize> = (0..N).map(|_| (next() * K as f64) as usize).collect();
    let z = y.iter().flat_map(|&l| (0..K).map(move |j| if j == l { 2.0 } else { 0.0 })).collect::<Vec<f64>>();
    (z.into_iter().map(|v| v + 2.5 * next()).collect(), y)
}

fn bench(c: &mut Criterion) {
    let (z, y) = data();
    let p = softmax_rows(&z, K);
    let mut group = c.benchmark_group("selective");
    group.sample_size(10);
    group.bench_function("selective_set_1m_x8", |b| {
        b.iter(|| {
            summarize_selective_single_label(black_box(&p), Some(black_box(&z)), K, black_box(&y)).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
