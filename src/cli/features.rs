//! `calibra features`: one frozen-encoder pass over a dataset split (or over every split, each row's
//! split recorded), cached in a safetensors file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use calibra_exec::feature_file::{FeatureFileJob, FeatureFileRequest};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Debug, clap::Args)]
pub struct FeaturesArgs {
    /// Encoder: a checkpoint directory (config.json + model.safetensors + preprocessor_config.json),
    /// `hf:org/name[@rev]`, or an id in the Hugging Face cache.
    #[arg(long)]
    pub encoder: String,
    /// Dataset spec, e.g. `synth:derm`, `isic2019:/data/isic`, `csv:/data/labels.csv?root=/data`.
    #[arg(long)]
    pub data: String,
    /// Which split to embed: train, calibration, test, or `all` (one file, train then calibration then
    /// test rows, with each row's split recorded in the file's `splits` metadata).
    #[arg(long, default_value = "test")]
    pub split: String,
    /// `clean` or `<perturbation>:<severity>` (e.g. `rician-noise:3`).
    #[arg(long, default_value = "clean")]
    pub condition: String,
    /// Depth fractions of the encoder's blocks to keep (1.0 = final representation).
    #[arg(long, value_delimiter = ',', default_value = "1.0")]
    pub layers: Vec<f64>,
    /// Images per forward pass.
    #[arg(long, default_value_t = 16)]
    pub batch_size: usize,
    /// Seed of the deterministic train/calibration/test split.
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// `cpu` (default), `wgpu` or `cuda` (the latter two need the matching cargo feature).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Output file (.safetensors). Reused as a cache when its fingerprint matches.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: &FeaturesArgs) -> Result<()> {
    super::device_notice::announce_unless_cpu(&args.device)?;
    let job = FeatureFileJob::prepare(FeatureFileRequest {
        encoder: args.encoder.clone(),
        data: args.data.clone(),
        split: args.split.clone(),
        condition: args.condition.clone(),
        layers: args.layers.clone(),
        batch_size: args.batch_size,
        split_seed: args.split_seed,
        device: args.device.clone(),
        out: args.out.clone(),
    })?;
    let bar = ProgressBar::new(job.images() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} embedding [{bar:30}] {pos}/{len} images  {msg}  eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    let start = Instant::now();
    let file = job.run(&mut |done, _| {
        bar.set_position(done as u64);
        let secs = start.elapsed().as_secs_f64();
        if secs > 0.0 && done > 0 {
            bar.set_message(format!("{:.1} images/s", done as f64 / secs));
        }
    })?;
    bar.finish_and_clear();
    println!("{}", job.summary(&file));
    Ok(())
}
