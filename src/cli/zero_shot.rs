//! `calibra zero-shot`: a CLIP or SigLIP model's zero-shot predictions on a dataset split, one predictions file
//! and one run record per prompt template, plus the spread of the metrics across templates
//! (MVC-Bench's template-stability analysis). The study and its output layout are calibra-exec's
//! [`calibra_exec::template_study`].
//!
//! `calibra eval OUT/runs.jsonl --regime zero-shot` reads the records: each template is its own
//! probe, so its metric row appears beside the others.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use calibra_data::Split;
use calibra_exec::clip_features::IMAGE_BATCH;
use calibra_exec::template_study::{TemplateStudyOptions, run_template_study};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Debug, clap::Args)]
pub struct ZeroShotArgs {
    /// CLIP or SigLIP checkpoint: a directory (config.json with model_type `clip` or `siglip`,
    /// model.safetensors, preprocessor_config.json), `hf:org/name[@rev]`, or an id in the Hugging
    /// Face cache.
    #[arg(long)]
    pub encoder: String,
    /// Tokenizer directory (CLIP: tokenizer.json, or vocab.json + merges.txt; SigLIP: spiece.model)
    /// [default: the checkpoint's].
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Dataset spec, e.g. `synth:derm`, `isic2019:/data/isic` (single-label tasks).
    #[arg(long)]
    pub data: String,
    /// Class names in the dataset's class order, comma-separated (`_` reads as a space)
    /// [default: the dataset's class names].
    #[arg(long, value_delimiter = ',')]
    pub classnames: Vec<String>,
    /// Templates of the MVC-Bench family: `all` (P1…P7) or a comma-separated list such as `P1,P3`;
    /// `none` to use only --template.
    #[arg(long, default_value = "all")]
    pub templates: String,
    /// An extra template with one `{}` for the class name (repeatable), e.g. "a dermoscopy image of {}.".
    #[arg(long = "template", value_name = "TEXT")]
    pub custom_templates: Vec<String>,
    /// Which split to predict: train, calibration or test.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Seed of the deterministic train/calibration/test split (also the records' seed).
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// `clean` or `<perturbation>:<severity>` (e.g. `contrast:2`).
    #[arg(long, default_value = "clean")]
    pub condition: String,
    /// Images per forward pass of the image tower.
    #[arg(long, default_value_t = IMAGE_BATCH)]
    pub batch_size: usize,
    /// `cpu` (default), `wgpu` or `cuda` (the latter two need the matching cargo feature).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Encoder name in the run records [default: the checkpoint directory's name].
    #[arg(long)]
    pub encoder_name: Option<String>,
    /// Dataset name in the run records [default: the spec without its options, e.g. `synth:derm`].
    #[arg(long)]
    pub dataset_name: Option<String>,
    /// Output directory (created if needed; its files are replaced atomically).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: &ZeroShotArgs) -> Result<()> {
    super::device_notice::announce_unless_cpu(&args.device)?;
    let split = Split::parse(&args.split)
        .with_context(|| format!("--split `{}`: expected train, calibration or test", args.split))?;
    let options = TemplateStudyOptions {
        encoder: args.encoder.clone(),
        tokenizer: args.tokenizer.clone(),
        data: args.data.clone(),
        classnames: args.classnames.clone(),
        templates: args.templates.clone(),
        custom_templates: args.custom_templates.clone(),
        split,
        split_seed: args.split_seed,
        condition: args.condition.clone(),
        batch_size: args.batch_size,
        device: args.device.clone(),
        encoder_name: args.encoder_name.clone(),
        dataset_name: args.dataset_name.clone(),
        out: args.out.clone(),
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} image tower [{bar:30}] {pos}/{len} images  {msg}  eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    let mut start = Instant::now();
    let study = run_template_study(&options, &mut |done, total| {
        if done == 0 {
            start = Instant::now();
            bar.set_length(total as u64);
        }
        bar.set_position(done as u64);
        bar.set_message(format!("{:.1} images/s", done as f64 / start.elapsed().as_secs_f64().max(1e-9)));
    })
    .map_err(|e| anyhow!(e));
    bar.finish_and_clear();
    print!("{}", study?.summary());
    Ok(())
}
