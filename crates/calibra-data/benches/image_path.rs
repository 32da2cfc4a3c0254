//! Benchmark of the image path of calibra-data (issue 5), in the crate itself so that building it does
//! not build the `calibra` binary's dependencies (burn): JPEG decode + one perturbation (Rician noise,
//! severity 2, seeded per image) + resize to 224 × 224 (bilinear) + normalise to a CHW float tensor,
//! on 256 × 256 RGB JPEGs, one image at a time, like the peer (batch decoding in calibra goes
//! through rayon on top of this).
//!
//! Threads: the Rician noise of one image runs in blocks on the rayon pool (same bytes at any
//! thread count). With `RAYON_NUM_THREADS=1` the whole path runs on one thread and the benchmark is
//! named `decode_rician_resize224_1thread`; otherwise it is `decode_rician_resize224_rayon`.
//!
//! Run by hand, together with the Python peer (Pillow + numpy, one process) on the same files:
//!
//!     scripts/golden/venv.sh python benches/peers/data_peer.py     # writes benches/data/data_images/,
//!                                                                  # times the peer, runs this bench
//!                                                                  # with 1 thread and with rayon,
//!                                                                  # prints images/s of both
//!
//! or alone: `cargo bench -p calibra-data --bench image_path` (uses the peer's JPEGs when present,
//! otherwise encodes synthetic dermatology images of the same size at quality 90).

use calibra_data::perturb::encode_jpeg;
use calibra_data::preprocess::PreprocessConfig;
use calibra_data::{ImageU8, Perturbation, Severity, SynthConfig, SynthSuite, perturb, synth_dataset};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;

const N_IMAGES: usize = 64;
const SIDE: u32 = 256;

fn data_dir() -> PathBuf {
    std::env::var_os("CALIBRA_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benches/data"))
        .join("data_images")
}

fn jpegs() -> Vec<(String, Vec<u8>)> {
    if let Ok(entries) = std::fs::read_dir(data_dir()) {
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        let out: Vec<_> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
            .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read(p).unwrap()))
            .collect();
        if !out.is_empty() {
            return out;
        }
    }
    let ds =
        synth_dataset(&SynthConfig { suite: SynthSuite::Derm, n: N_IMAGES, seed: 0, size: SIDE }).unwrap();
    ds.samples.iter().map(|s| (s.id.clone(), encode_jpeg(&s.image.load().unwrap(), 90).unwrap())).collect()
}

fn config() -> PreprocessConfig {
    // Bilinear (PIL code 2) resize to exactly 224 × 224, ImageNet normalisation, no crop.
    PreprocessConfig::from_hf_json(
        r#"{"size": {"height": 224, "width": 224}, "resample": 2,
            "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}"#,
    )
    .unwrap()
}

fn one(id: &str, bytes: &[u8], config: &PreprocessConfig) -> f32 {
    let image = ImageU8::decode(bytes, id).unwrap();
    let noisy = perturb(&image, id, Perturbation::RicianNoise, Severity::new(2).unwrap()).unwrap();
    let t = config.apply(&noisy);
    t.data[0]
}

fn bench(c: &mut Criterion) {
    let files = jpegs();
    let config = config();
    let mut group = c.benchmark_group("data");
    group.sample_size(10);
    group.throughput(Throughput::Elements(files.len() as u64));
    let one_thread = std::env::var("RAYON_NUM_THREADS").is_ok_and(|v| v.trim() == "1");
    let name = if one_thread { "decode_rician_resize224_1thread" } else { "decode_rician_resize224_rayon" };
    group.bench_function(name, |b| {
        b.iter(|| files.iter().map(|(id, bytes)| one(id, black_box(bytes), &config)).sum::<f32>())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
