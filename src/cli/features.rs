//! `calibra features`: one frozen-encoder pass over a dataset split (or over every split, each row's
//! split recorded), cached in a safetensors file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use calibra_data::{Split, SplitConfig};
use calibra_models::parse_device;
use calibra_train::features::{
    FeatureCondition, FeatureRequest, FeatureSource, PreparedPass, SplitSelection,
};
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
    let split = SplitSelection::parse(&args.split).context("--split")?;
    let condition = FeatureCondition::parse(&args.condition).context("--condition")?;
    let device = parse_device(&args.device).context("--device")?;
    let request = FeatureRequest {
        encoder: args.encoder.clone(),
        data: args.data.clone(),
        split,
        split_config: SplitConfig { seed: args.split_seed, ..SplitConfig::default() },
        condition,
        layers: args.layers.clone(),
        batch_size: args.batch_size,
    };
    let pass = PreparedPass::new(request)?;
    let bar = ProgressBar::new(pass.indices.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} embedding [{bar:30}] {pos}/{len} images  {msg}  eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    let start = Instant::now();
    let (set, source) = pass.cached(&args.out, &device, &mut |done, _| {
        bar.set_position(done as u64);
        let secs = start.elapsed().as_secs_f64();
        if secs > 0.0 && done > 0 {
            bar.set_message(format!("{:.1} images/s", done as f64 / secs));
        }
    })?;
    bar.finish_and_clear();
    let how = match source {
        FeatureSource::Cache => "read from cache (fingerprint matched)".to_string(),
        FeatureSource::Computed => {
            let secs = start.elapsed().as_secs_f64();
            format!("computed in {secs:.1} s ({:.1} images/s)", set.ids.len() as f64 / secs.max(1e-9))
        }
    };
    let per_split = match &set.splits {
        Some(splits) => {
            let counts: Vec<String> = Split::ALL
                .iter()
                .map(|s| format!("{} {}", splits.iter().filter(|r| *r == s).count(), s.name()))
                .collect();
            format!(" ({})", counts.join(", "))
        }
        None => String::new(),
    };
    println!(
        "{}: {} samples{per_split} x {} dims at layers {:?}, {how}",
        args.out.display(),
        set.ids.len(),
        set.dim,
        args.layers
    );
    Ok(())
}
