//! `calibra data inspect SPEC`, `calibra data perturb SPEC --out DIR` and `calibra data export SPEC
//! --out DIR`: look at a dataset the way the protocol will see it (splits, classes, label fractions,
//! metadata, problems) and at its perturbed images, and write it to disk as an ImageFolder.

use crate::cli::output::{OutputFormat, emit};
use anyhow::Result;
use calibra_data::export_imagefolder::{ExportFormat, export_imagefolder};
use calibra_data::inspect::{InspectOptions, inspect};
use calibra_data::perturb_gallery::{GalleryOptions, write_gallery};
use calibra_data::{
    BadImagePolicy, Dataset, DatasetSpec, LoadOptions, Perturbation, SplitConfig, load_dataset,
};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum DataCommand {
    /// Counts per split and class, label-fraction sizes, metadata coverage and problems of a dataset.
    Inspect(InspectArgs),
    /// Write sample images at every perturbation and severity, for a person to look at.
    Perturb(PerturbArgs),
    /// Write a single-label dataset as an ImageFolder (`OUT/<class>/<sample>.jpg`) that
    /// `imagefolder:OUT` reads back, e.g. a generated `synth:` set as real JPEG files; a second run
    /// writes only what is missing.
    Export(ExportArgs),
}

/// Options shared by the data commands.
#[derive(Debug, clap::Args)]
pub struct DatasetArgs {
    /// Dataset spec `FORMAT:LOCATION[?k=v&...]`, e.g. `synth:derm?n=600`, `isic2019:/data/isic`,
    /// `chexpert:/data/CheXpert-v1.0-small?policy=ones`, `medmnist:/data/chestmnist.npz`, `csv:/d/m.csv`.
    pub spec: String,
    /// What to do with an entry whose image is missing or undecodable: `fail` (default) or `skip`
    /// (skips are counted and listed).
    #[arg(long, default_value = "fail", value_parser = parse_policy)]
    pub on_bad_image: BadImagePolicy,
}

fn parse_policy(s: &str) -> Result<BadImagePolicy, String> {
    s.parse()
}

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Split seed.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = crate::cli::eval::numbers::seed)]
    pub seed: u64,
    /// Train share (of samples without an official split).
    #[arg(long, default_value_t = 0.70)]
    pub train: f64,
    /// Calibration share.
    #[arg(long, default_value_t = 0.15)]
    pub calibration: f64,
    /// Test share.
    #[arg(long, default_value_t = 0.15)]
    pub test: f64,
    /// Ignore the source's official splits.
    #[arg(long)]
    pub ignore_official_splits: bool,
    /// Decode every image (in parallel) to find undecodable files.
    #[arg(long)]
    pub check_images: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

#[derive(Debug, clap::Args)]
pub struct PerturbArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Output folder (created): `<sample>/clean.png` and `<sample>/<perturbation>-s<severity>.png`.
    #[arg(long)]
    pub out: PathBuf,
    /// How many samples (the first ones of the test split, in manifest order).
    #[arg(long, default_value_t = 4)]
    pub samples: usize,
    /// Only these perturbations (repeatable): gaussian-blur, jpeg, contrast, rician-noise, fov-crop.
    #[arg(long = "perturbation", value_parser = parse_perturbation)]
    pub perturbations: Vec<Perturbation>,
    /// Split seed (which samples form the test split).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = crate::cli::eval::numbers::seed)]
    pub seed: u64,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Output folder (created): one folder per class, one image per sample.
    #[arg(long)]
    pub out: PathBuf,
    /// Image format: `jpeg` (default) or `png` (lossless).
    #[arg(long, default_value = "jpeg", value_parser = ["jpeg", "png"])]
    pub image_format: String,
    /// JPEG quality, 1–100 (4:2:0 chroma subsampling).
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: u8,
}

fn parse_perturbation(s: &str) -> Result<Perturbation, String> {
    Perturbation::parse(s).ok_or_else(|| {
        format!(
            "unknown perturbation `{s}`; expected one of {}",
            Perturbation::ALL.map(|p| p.name()).join(", ")
        )
    })
}

pub fn run(args: &DataArgs) -> Result<()> {
    match &args.command {
        DataCommand::Inspect(a) => inspect_command(a),
        DataCommand::Perturb(a) => perturb_command(a),
        DataCommand::Export(a) => export_command(a),
    }
}

fn load(args: &DatasetArgs) -> Result<Dataset> {
    let spec = DatasetSpec::parse(&args.spec)?;
    Ok(load_dataset(&spec, &LoadOptions { on_bad_image: args.on_bad_image })?)
}

fn inspect_command(args: &InspectArgs) -> Result<()> {
    let split = SplitConfig {
        train: args.train,
        calibration: args.calibration,
        test: args.test,
        seed: args.seed,
        use_official: !args.ignore_official_splits,
    };
    let options =
        InspectOptions { split, check_images: args.check_images, on_bad_image: args.dataset.on_bad_image };
    let report = inspect(load(&args.dataset)?, &options)?;
    match args.format {
        OutputFormat::Json => emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
        OutputFormat::Table => emit(&report.to_table())?,
    }
    Ok(())
}

fn perturb_command(args: &PerturbArgs) -> Result<()> {
    let ds = load(&args.dataset)?;
    let options = GalleryOptions {
        out: args.out.clone(),
        samples: args.samples,
        perturbations: args.perturbations.clone(),
        seed: args.seed,
        on_bad_image: args.dataset.on_bad_image,
    };
    emit(&write_gallery(&ds, &options)?.message(&args.out))?;
    Ok(())
}

fn export_command(args: &ExportArgs) -> Result<()> {
    let ds = load(&args.dataset)?;
    let format =
        if args.image_format == "png" { ExportFormat::Png } else { ExportFormat::Jpeg(args.quality) };
    let total = ds.len();
    let step = (total / 20).max(1);
    let progress = |n: usize| {
        if n.is_multiple_of(step) || n == total {
            eprintln!("        export: {n}/{total} images");
        }
    };
    let summary = export_imagefolder(&ds, &args.out, format, args.dataset.on_bad_image, &progress)?;
    let mut message = format!(
        "{}: {} images written, {} already there; read it with `imagefolder:{}`\n",
        args.out.display(),
        summary.written,
        summary.existing,
        args.out.display()
    );
    for s in &summary.skipped {
        message.push_str(&format!("skipped {}: {}\n", s.location, s.reason));
    }
    emit(&message)?;
    Ok(())
}
