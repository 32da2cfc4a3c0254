//! Benchmark of `calibra eval`'s computation on issue 4's design: 15 encoders × 3 datasets × 5 seeds,
//! clean runs at label fractions 0.01/0.05/0.10/0.25/1.0 and 15 perturbation × severity conditions at
//! fraction 1.0 (4,500 run records), with 10,000 paired-seed bootstrap replicates (target: under 2 s on
//! 2 cores, and at least 50× faster than the numpy oracle `benches/peers/eval_peer.py`, which generates
//! the same design shape and times the same replicates:
//! `scripts/golden/venv.sh python benches/peers/eval_peer.py`).
//!
//! `cargo bench --bench eval`. `CALIBRA_EVAL_BENCH_REPLICATES=N` overrides the replicate count (e.g. a
//! smoke check: `CALIBRA_EVAL_BENCH_REPLICATES=20 cargo test --bench eval`, which runs each benchmark once).

use calibra_crs::evaluation::{Evaluation, EvaluationOptions};
use calibra_crs::{
    AxisConfig, BootstrapConfig, Condition, Regime, RunRecord, RunRecordSet, SeedTable, paired_seed_bootstrap,
};
use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

const FRACTIONS: [f64; 5] = [0.01, 0.05, 0.10, 0.25, 1.0];
const PERTURBATIONS: [&str; 5] = ["gaussian_blur", "jpeg", "contrast", "rician_noise", "fov_crop"];

fn replicates() -> usize {
    std::env::var("CALIBRA_EVAL_BENCH_REPLICATES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

/// The design with seeded synthetic metrics (a latent quality per encoder plus noise).
fn design() -> RunRecordSet {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let mut records = Vec::new();
    let record =
        |encoder: usize, dataset: usize, fraction: f64, seed: u64, condition, auroc: f64, ece: f64| {
            RunRecord {
                encoder: format!("enc{encoder:02}"),
                dataset: format!("ds{dataset}"),
                regime: Regime::Frozen,
                probe: "linear-ce".into(),
                calibrator: "none".into(),
                label_fraction: fraction,
                seed,
                condition,
                metrics: BTreeMap::from([("macro_auroc".to_string(), auroc), ("ece".to_string(), ece)]),
                paths: BTreeMap::new(),
                timings: BTreeMap::new(),
                versions: BTreeMap::new(),
                training: None,
            }
        };
    for e in 0..15 {
        let quality: f64 = rng.random_range(-0.05..0.05);
        for d in 0..3 {
            for s in 0..5u64 {
                let clean = 0.8 + quality + rng.random_range(-0.01..0.01);
                for f in FRACTIONS {
                    let drop = if f == 1.0 { 0.0 } else { 0.05 * (1.0 / f).log10() };
                    let auroc = clean - drop + rng.random_range(-0.01..0.01);
                    records.push(record(e, d, f, s, Condition::Clean, auroc, rng.random_range(0.02..0.12)));
                }
                for p in PERTURBATIONS {
                    for severity in 1..=3u32 {
                        let auroc = clean - 0.02 * f64::from(severity) * rng.random_range(0.5..1.5);
                        let condition = Condition::Perturbation { perturbation: p.into(), severity };
                        records.push(record(e, d, 1.0, s, condition, auroc, rng.random_range(0.02..0.2)));
                    }
                }
            }
        }
    }
    RunRecordSet::from_records(records, "bench design").expect("valid design")
}

fn bench(c: &mut Criterion) {
    let set = design();
    let n = replicates();
    let mut group = c.benchmark_group("eval");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    let table = SeedTable::from_records(&set);
    let config = BootstrapConfig { replicates: n, ..BootstrapConfig::default() };
    group.bench_function(format!("bootstrap_{n}"), |b| {
        b.iter(|| black_box(paired_seed_bootstrap(&table, &AxisConfig::default(), &config).unwrap()))
    });
    let options = EvaluationOptions { bootstrap: Some(config.clone()), ..EvaluationOptions::default() };
    group.bench_function(format!("evaluation_{n}_with_stability"), |b| {
        b.iter(|| black_box(Evaluation::build(&set, &options).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
