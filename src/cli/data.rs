//! `calibra data inspect SPEC` and `calibra data perturb SPEC --out DIR`: look at a dataset the way the
//! protocol will see it (splits, classes, label fractions, metadata, problems) and at its perturbed
//! images.

use crate::cli::output::{OutputFormat, emit};
use anyhow::{Context, Result, bail};
use calibra_data::{
    BadImagePolicy, Dataset, DatasetSpec, LoadOptions, PROTOCOL_FRACTIONS, Perturbation, Severity,
    SkippedSample, Split, SplitConfig, Target, TaskKind, decode_samples, label_fraction, load_dataset,
    perturb, split_dataset,
};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
        DataCommand::Inspect(a) => inspect(a),
        DataCommand::Perturb(a) => perturb_command(a),
    }
}

fn load(args: &DatasetArgs) -> Result<Dataset> {
    let spec = DatasetSpec::parse(&args.spec)?;
    Ok(load_dataset(&spec, &LoadOptions { on_bad_image: args.on_bad_image })?)
}

#[derive(Debug, Serialize)]
struct ClassCount {
    name: String,
    /// Samples of the class (multiclass/ordinal) or positives (multilabel).
    count: usize,
    /// Multilabel only: negatives and missing values.
    #[serde(skip_serializing_if = "Option::is_none")]
    negatives: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<usize>,
}

#[derive(Debug, Serialize)]
struct SplitReport {
    split: Split,
    samples: usize,
    official: usize,
    classes: Vec<ClassCount>,
}

#[derive(Debug, Serialize)]
struct FractionReport {
    fraction: f64,
    samples: usize,
}

#[derive(Debug, Serialize)]
struct Coverage {
    age: usize,
    sex: usize,
    quality: usize,
    site: usize,
    /// Other metadata columns and how many samples have them.
    extra: std::collections::BTreeMap<String, usize>,
}

#[derive(Debug, Serialize)]
struct InspectReport {
    dataset: String,
    task: TaskKind,
    samples: usize,
    labels: Vec<String>,
    splits: Vec<SplitReport>,
    label_fractions: Vec<FractionReport>,
    metadata_coverage: Coverage,
    skipped: Vec<SkippedSample>,
    images_checked: bool,
    problems: Vec<String>,
}

fn class_counts(ds: &Dataset, idx: &[usize]) -> Vec<ClassCount> {
    let positives = ds.class_counts(idx);
    ds.labels
        .names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let (negatives, missing) = if ds.labels.kind == TaskKind::Multilabel {
                let value = |v: Option<bool>| {
                    idx.iter()
                        .filter(|&&i| matches!(&ds.samples[i].target, Target::Labels(l) if l[j] == v))
                        .count()
                };
                (Some(value(Some(false))), Some(value(None)))
            } else {
                (None, None)
            };
            ClassCount { name: name.clone(), count: positives[j], negatives, missing }
        })
        .collect()
}

fn inspect(args: &InspectArgs) -> Result<()> {
    let mut ds = load(&args.dataset)?;
    let mut skipped = std::mem::take(&mut ds.skipped);
    let mut problems = Vec::new();
    if args.check_images {
        let all: Vec<usize> = (0..ds.len()).collect();
        let decoded = decode_samples(&ds, &all, args.dataset.on_bad_image, |_, _| Ok(()))?;
        if !decoded.skipped.is_empty() {
            let bad: std::collections::HashSet<usize> = {
                let kept: std::collections::HashSet<usize> = decoded.items.iter().map(|(i, _)| *i).collect();
                all.iter().copied().filter(|i| !kept.contains(i)).collect()
            };
            let mut i = 0;
            ds.samples.retain(|_| {
                i += 1;
                !bad.contains(&(i - 1))
            });
            skipped.extend(decoded.skipped);
        }
    }
    if ds.is_empty() {
        bail!("dataset `{}` has no usable samples left", ds.name);
    }
    let config = SplitConfig {
        train: args.train,
        calibration: args.calibration,
        test: args.test,
        seed: args.seed,
        use_official: !args.ignore_official_splits,
    };
    let splits = split_dataset(&ds, &config)?;
    let split_reports: Vec<SplitReport> = Split::ALL
        .into_iter()
        .map(|split| {
            let idx = splits.get(split);
            SplitReport {
                split,
                samples: idx.len(),
                official: idx.iter().filter(|&&i| ds.samples[i].official_split.is_some()).count(),
                classes: class_counts(&ds, idx),
            }
        })
        .collect();
    if ds.labels.kind != TaskKind::Multilabel {
        let all: Vec<usize> = (0..ds.len()).collect();
        let present: Vec<&String> = ds
            .labels
            .names
            .iter()
            .zip(ds.class_counts(&all))
            .filter(|(_, n)| *n > 0)
            .map(|(c, _)| c)
            .collect();
        if present.len() < 2 {
            problems.push(format!(
                "only {} class{} ({}): a classifier needs samples of at least 2 classes (an ImageFolder needs \
                 one subfolder per class)",
                present.len(),
                if present.len() == 1 { "" } else { "es" },
                present.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    for r in &split_reports {
        if r.samples == 0 {
            problems.push(format!("the {} split is empty", r.split.name()));
            continue;
        }
        for c in &r.classes {
            if c.count == 0 {
                let what =
                    if ds.labels.kind == TaskKind::Multilabel { "has no positive" } else { "has no sample" };
                problems.push(format!(
                    "{} `{}` {what} in the {} split",
                    label_word(&ds),
                    c.name,
                    r.split.name()
                ));
            }
        }
    }
    let label_fractions = if splits.train.is_empty() {
        Vec::new()
    } else {
        PROTOCOL_FRACTIONS
            .iter()
            .map(|&f| {
                Ok(FractionReport {
                    fraction: f,
                    samples: label_fraction(&ds, &splits.train, f, args.seed)?.len(),
                })
            })
            .collect::<Result<_>>()?
    };
    let mut coverage = Coverage { age: 0, sex: 0, quality: 0, site: 0, extra: Default::default() };
    for s in &ds.samples {
        let m = &s.metadata;
        coverage.age += usize::from(m.age.is_some());
        coverage.sex += usize::from(m.sex.is_some());
        coverage.quality += usize::from(m.quality.is_some());
        coverage.site += usize::from(m.site.is_some());
        for k in m.extra.keys() {
            *coverage.extra.entry(k.clone()).or_default() += 1;
        }
    }
    if !skipped.is_empty() {
        problems.push(format!("{} entries skipped (listed above)", skipped.len()));
    }
    let report = InspectReport {
        dataset: ds.name.clone(),
        task: ds.labels.kind,
        samples: ds.len(),
        labels: ds.labels.names.clone(),
        splits: split_reports,
        label_fractions,
        metadata_coverage: coverage,
        skipped,
        images_checked: args.check_images,
        problems,
    };
    match args.format {
        OutputFormat::Json => emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
        OutputFormat::Table => emit(&inspect_table(&report))?,
    }
    Ok(())
}

fn label_word(ds: &Dataset) -> &'static str {
    match ds.labels.kind {
        TaskKind::Multiclass => "class",
        TaskKind::Ordinal => "grade",
        TaskKind::Multilabel => "label",
    }
}

fn inspect_table(r: &InspectReport) -> String {
    let mut out = String::new();
    let task =
        serde_json::to_value(r.task).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let _ = writeln!(out, "dataset {}", r.dataset);
    let _ = writeln!(
        out,
        "{} samples, task {task}, {} {}",
        r.samples,
        r.labels.len(),
        if task == "multilabel" { "labels" } else { "classes" }
    );
    let _ = writeln!(out);
    let multilabel = task == "multilabel";
    let header = if multilabel { "label (positives)" } else { "class" };
    let width = r.labels.iter().map(String::len).max().unwrap_or(0).max(header.len()).max("official".len());
    let _ = write!(out, "{header:<width$}");
    for s in &r.splits {
        let _ = write!(out, " {:>12}", s.split.name());
    }
    let _ = writeln!(out);
    for (j, name) in r.labels.iter().enumerate() {
        let _ = write!(out, "{name:<width$}");
        for s in &r.splits {
            let _ = write!(out, " {:>12}", s.classes[j].count);
        }
        let _ = writeln!(out);
    }
    let _ = write!(out, "{:<width$}", "total");
    for s in &r.splits {
        let _ = write!(out, " {:>12}", s.samples);
    }
    let _ = writeln!(out);
    let _ = write!(out, "{:<width$}", "official");
    for s in &r.splits {
        let _ = write!(out, " {:>12}", s.official);
    }
    let _ = writeln!(out);
    if !r.label_fractions.is_empty() {
        let _ = writeln!(out);
        let fr: Vec<String> =
            r.label_fractions.iter().map(|f| format!("{}: {}", f.fraction, f.samples)).collect();
        let _ = writeln!(out, "label fractions of train (samples): {}", fr.join(", "));
    }
    let c = &r.metadata_coverage;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "metadata coverage: age {}/{n}, sex {}/{n}, quality {}/{n}, site {}/{n}",
        c.age,
        c.sex,
        c.quality,
        c.site,
        n = r.samples
    );
    if !c.extra.is_empty() {
        let extra: Vec<String> = c.extra.iter().map(|(k, v)| format!("{k} {v}/{}", r.samples)).collect();
        let _ = writeln!(out, "other metadata: {}", extra.join(", "));
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "skipped {} entries:", r.skipped.len());
        for s in r.skipped.iter().take(20) {
            let _ = writeln!(out, "  {}: {}", s.location, s.reason);
        }
        if r.skipped.len() > 20 {
            let _ = writeln!(out, "  ... and {} more (see --format json)", r.skipped.len() - 20);
        }
    }
    let _ = writeln!(out);
    if r.problems.is_empty() {
        let _ = writeln!(
            out,
            "problems: none{}",
            if r.images_checked { "" } else { " found (images not decoded; use --check-images)" }
        );
    } else {
        let _ = writeln!(out, "problems:");
        for p in &r.problems {
            let _ = writeln!(out, "  - {p}");
        }
    }
    out
}

/// A file-system-safe folder name for a sample id.
fn safe_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

fn perturb_command(args: &PerturbArgs) -> Result<()> {
    let ds = load(&args.dataset)?;
    let splits = split_dataset(&ds, &SplitConfig { seed: args.seed, ..SplitConfig::default() })?;
    let pool = if splits.test.is_empty() { (0..ds.len()).collect() } else { splits.test.clone() };
    let chosen: Vec<usize> = pool.into_iter().take(args.samples).collect();
    let perturbations =
        if args.perturbations.is_empty() { Perturbation::ALL.to_vec() } else { args.perturbations.clone() };
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    // decode_samples runs the closure on rayon's pool: samples are decoded, perturbed and written in
    // parallel; each image's perturbations are seeded by its id, so the files do not depend on threads.
    let decoded = decode_samples(&ds, &chosen, args.dataset.on_bad_image, |i, image| {
        let id = &ds.samples[i].id;
        let dir = args.out.join(safe_name(id));
        std::fs::create_dir_all(&dir).map_err(|e| calibra_data::DataError::io(&dir, e))?;
        image.save_png(&dir.join("clean.png"))?;
        let mut n = 1;
        for &p in &perturbations {
            for s in Severity::ALL {
                perturb(&image, id, p, s)?.save_png(&dir.join(format!("{}-s{}.png", p.name(), s.level())))?;
                n += 1;
            }
        }
        Ok(n)
    })?;
    let written: Vec<usize> = decoded.items.iter().map(|(_, n)| *n).collect();
    write_index(&args.out, &ds, &decoded.items.iter().map(|(i, _)| *i).collect::<Vec<_>>(), &perturbations)?;
    let mut msg = format!(
        "wrote {} images for {} samples to {}\n",
        written.iter().sum::<usize>(),
        written.len(),
        args.out.display()
    );
    if !decoded.skipped.is_empty() {
        let _ = writeln!(msg, "skipped {} samples with bad images:", decoded.skipped.len());
        for s in &decoded.skipped {
            let _ = writeln!(msg, "  {}: {}", s.location, s.reason);
        }
    }
    emit(&msg)?;
    Ok(())
}

fn write_index(out: &Path, ds: &Dataset, samples: &[usize], perturbations: &[Perturbation]) -> Result<()> {
    let index = serde_json::json!({
        "dataset": ds.name,
        "samples": samples.iter().map(|&i| serde_json::json!({
            "id": ds.samples[i].id,
            "folder": safe_name(&ds.samples[i].id),
            "target": ds.samples[i].target,
        })).collect::<Vec<_>>(),
        "perturbations": perturbations.iter().map(|p| serde_json::json!({
            "name": p.name(),
            "severities": p.ladder(),
        })).collect::<Vec<_>>(),
    });
    let path = out.join("index.json");
    std::fs::write(&path, format!("{}\n", serde_json::to_string_pretty(&index)?))
        .with_context(|| format!("writing {}", path.display()))
}
