//! CPU-time harness for the issue-5 image path (the per-image work of `benches/data.rs`: JPEG decode,
//! Rician noise at severity 2 seeded per image id, bilinear resize to 224 × 224, ImageNet
//! normalisation to a CHW `f32` tensor), for timing under `perf stat -e task-clock` on a machine too
//! loaded for wall-clock numbers to mean much.
//!
//!     cargo run --release -p calibra-data --example image_path_timing -- DIR PASSES
//!
//! reads every `*.jpg` of `DIR` (sorted by name; the peer `benches/peers/data_peer.py` writes them to
//! `benches/data/data_images/`), then runs `PASSES` passes over all of them and prints the wall time per
//! image of each pass. With `PASSES` 0 it only reads the files, so that
//! `(task-clock(PASSES) − task-clock(0)) / (PASSES · images)` is the CPU time per image.

use calibra_data::preprocess::PreprocessConfig;
use calibra_data::{ImageU8, Perturbation, Severity, perturb};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: image_path_timing DIR PASSES";
    let dir = PathBuf::from(args.next().ok_or(usage)?);
    let passes: usize = args.next().ok_or(usage)?.parse().map_err(|e| format!("PASSES: {e}"))?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("{}: no .jpg files", dir.display()).into());
    }
    let mut files = Vec::with_capacity(paths.len());
    for p in &paths {
        let id = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        files.push((id, std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?));
    }
    let config = PreprocessConfig::from_hf_json(
        r#"{"size": {"height": 224, "width": 224}, "resample": 2,
            "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}"#,
    )?;
    let severity = Severity::new(2)?;
    for pass in 0..passes {
        let t0 = Instant::now();
        let mut checksum = 0f32;
        for (id, bytes) in &files {
            let image = ImageU8::decode(black_box(bytes), id)?;
            let noisy = perturb(&image, id, Perturbation::RicianNoise, severity)?;
            checksum += config.apply(&noisy).data[0];
        }
        let per_image = t0.elapsed().as_secs_f64() * 1e3 / files.len() as f64;
        println!("pass {pass}: {per_image:.2} ms/image wall ({} images, checksum {checksum})", files.len());
    }
    Ok(())
}
