//! `calibra zero-shot`: a CLIP model's zero-shot predictions on a dataset split, one predictions file
//! and one run record per prompt template, plus the spread of the metrics across templates
//! (MVC-Bench's template-stability analysis).
//!
//! Output directory:
//!
//! ```text
//! predictions/<ID>.csv      logits, one per template (ID: P1…P7 for the MVC-Bench family, C1… for
//!                           templates given with --template)
//! runs.jsonl                one run record per template: regime `zero-shot`, probe `zero-shot:<ID>`,
//!                           calibrator `none`, label fraction 1, seed = the split seed, the condition,
//!                           the record metrics of `calibra run`, paths.predictions
//! templates.json            per template: id, text, metrics; across templates: mean, sample std
//!                           (ddof 1, as the evaluator's seed std), min, max of every metric
//! ```
//!
//! `calibra eval OUT/runs.jsonl --regime zero-shot` reads the records: each template is its own
//! probe, so its metric row appears beside the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use calibra_crs::{Regime, RunRecord};
use calibra_data::{Split, SplitConfig, Target};
use calibra_exec::clip_features::{IMAGE_BATCH, clip_image_features, zero_shot_logits};
use calibra_exec::condition::record_condition;
use calibra_exec::prompts::{mvc_bench_template, prompt_classnames};
use calibra_models::clip::{ClipModel, MVC_BENCH_TEMPLATES, ZeroShotClassifier};
use calibra_models::parse_device;
use calibra_models::tokenizer::ClipTokenizer;
use calibra_predictions::{Predictions, ScoreKind, Targets, write_atomically, write_predictions};
use calibra_train::features::{FeatureCondition, FeatureRequest, PreparedPass};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub struct ZeroShotArgs {
    /// CLIP checkpoint: a directory (config.json with model_type `clip`, model.safetensors,
    /// preprocessor_config.json), `hf:org/name[@rev]`, or an id in the Hugging Face cache.
    #[arg(long)]
    pub encoder: String,
    /// Tokenizer directory (tokenizer.json, or vocab.json + merges.txt) [default: the checkpoint's].
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

/// The templates asked for, as (id, text).
fn selected_templates(args: &ZeroShotArgs) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    match args.templates.trim() {
        "all" => {
            for n in 1..=MVC_BENCH_TEMPLATES.len() {
                let id = format!("P{n}");
                let text = mvc_bench_template(&id).expect("P1…P7 are MVC-Bench ids");
                out.push((id, text.to_string()));
            }
        }
        "none" => {}
        list => {
            for item in list.split(',').map(str::trim) {
                let n: usize = item
                    .strip_prefix(['P', 'p'])
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=MVC_BENCH_TEMPLATES.len()).contains(n))
                    .ok_or_else(|| {
                        anyhow!(
                            "--templates: `{item}` is not a template id; expected `all`, `none` or ids P1…P{}",
                            MVC_BENCH_TEMPLATES.len()
                        )
                    })?;
                let id = format!("P{n}");
                if out.iter().any(|(i, _)| *i == id) {
                    bail!("--templates: `{id}` is listed twice");
                }
                out.push((id, MVC_BENCH_TEMPLATES[n - 1].to_string()));
            }
        }
    }
    for (i, t) in args.custom_templates.iter().enumerate() {
        if t.matches("{}").count() != 1 {
            bail!("--template {t:?}: a template must contain exactly one `{{}}` for the class name");
        }
        out.push((format!("C{}", i + 1), t.clone()));
    }
    if out.is_empty() {
        bail!("no template: --templates none and no --template");
    }
    Ok(out)
}

fn default_encoder_name(spec: &str) -> String {
    let trimmed = spec.trim_end_matches('/');
    Path::new(trimmed).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| trimmed.into())
}

/// Spread of one metric across templates.
#[derive(Debug, Serialize)]
struct Spread {
    n: usize,
    mean: f64,
    /// Sample standard deviation (ddof 1); absent with fewer than two templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    std: Option<f64>,
    min: f64,
    max: f64,
}

fn spread(values: &[f64]) -> Spread {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let std =
        (n >= 2).then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let min = values.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    Spread { n, mean, std, min, max }
}

#[derive(Debug, Serialize)]
struct TemplateResult {
    id: String,
    template: String,
    predictions: String,
    metrics: BTreeMap<String, f64>,
}

#[derive(Debug, Serialize)]
struct TemplateReport<'a> {
    encoder: &'a str,
    dataset: &'a str,
    split: &'a str,
    condition: String,
    classnames: &'a [String],
    templates: &'a [TemplateResult],
    across_templates: BTreeMap<String, Spread>,
}

pub fn run(args: &ZeroShotArgs) -> Result<()> {
    let split = Split::parse(&args.split)
        .with_context(|| format!("--split `{}`: expected train, calibration or test", args.split))?;
    let condition = FeatureCondition::parse(&args.condition).context("--condition")?;
    let device = parse_device(&args.device).context("--device")?;
    if args.batch_size == 0 {
        bail!("--batch-size must be >= 1");
    }
    let templates = selected_templates(args)?;
    let pass = PreparedPass::new(FeatureRequest {
        encoder: args.encoder.clone(),
        data: args.data.clone(),
        split: split.into(),
        split_config: SplitConfig { seed: args.split_seed, ..SplitConfig::default() },
        condition,
        layers: vec![1.0],
        batch_size: args.batch_size,
    })?;
    let dataset = &pass.dataset;
    let labels: Vec<usize> = pass
        .indices
        .iter()
        .map(|&i| match &dataset.samples[i].target {
            Target::Class(c) => Ok(*c),
            Target::Labels(_) => Err(anyhow!(
                "{}: zero-shot classification needs a single-label dataset; this one is multilabel",
                args.data
            )),
        })
        .collect::<Result<_>>()?;
    if labels.is_empty() {
        bail!("{}: the {} split is empty", args.data, split.name());
    }
    let dataset_classes = &dataset.labels.names;
    let classnames: Vec<String> = if args.classnames.is_empty() {
        prompt_classnames(dataset_classes)
    } else {
        args.classnames.iter().map(|c| c.trim().replace('_', " ")).collect()
    };
    if classnames.len() != dataset_classes.len() {
        bail!(
            "--classnames: {} names given, the dataset has {} classes ({}) — give one name per class, in that order",
            classnames.len(),
            dataset_classes.len(),
            dataset_classes.join(", ")
        );
    }
    if let Some(i) = classnames.iter().position(|c| c.is_empty()) {
        bail!("--classnames: name {} (class `{}`) is empty", i + 1, dataset_classes[i]);
    }

    let checkpoint = pass.checkpoint.clone();
    let spec = checkpoint.to_str().ok_or_else(|| anyhow!("{}: not a UTF-8 path", checkpoint.display()))?;
    let (model, _) = ClipModel::load(spec, &device)
        .with_context(|| format!("{}: cannot load a CLIP model", checkpoint.display()))?;
    let tok_dir = args.tokenizer.clone().unwrap_or_else(|| checkpoint.clone());
    let tokenizer = ClipTokenizer::from_dir(&tok_dir).with_context(|| {
        format!("{}: cannot load the CLIP tokenizer (use --tokenizer DIR)", tok_dir.display())
    })?;

    // The image tower runs once; every template reuses the features.
    let bar = ProgressBar::new(pass.indices.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} image tower [{bar:30}] {pos}/{len} images  {msg}  eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    let start = Instant::now();
    let (features, dim) = clip_image_features(&pass, &model, args.batch_size, &device, &mut |done| {
        bar.set_position(done as u64);
        let secs = start.elapsed().as_secs_f64();
        bar.set_message(format!("{:.1} images/s", done as f64 / secs.max(1e-9)));
    })
    .map_err(|e| anyhow!(e))?;
    bar.finish_and_clear();
    let n = labels.len();

    let encoder_name = args.encoder_name.clone().unwrap_or_else(|| default_encoder_name(&args.encoder));
    let dataset_name = args
        .dataset_name
        .clone()
        .unwrap_or_else(|| args.data.split('?').next().unwrap_or(&args.data).to_string());
    let ids: Vec<String> = pass.indices.iter().map(|&i| dataset.samples[i].id.clone()).collect();
    let pred_dir = args.out.join("predictions");
    std::fs::create_dir_all(&pred_dir).with_context(|| format!("{}: cannot create", pred_dir.display()))?;

    let mut results = Vec::with_capacity(templates.len());
    let mut records = Vec::with_capacity(templates.len());
    for (id, template) in &templates {
        let clf =
            ZeroShotClassifier::new(&model, &tokenizer, &classnames, std::slice::from_ref(template), &device)
                .with_context(|| format!("template {id} {template:?}"))?;
        let logits = zero_shot_logits(&clf, &features, dim, &device).map_err(|e| anyhow!(e))?;
        let predictions = Predictions::new(
            ids.clone(),
            dataset_classes.clone(),
            ScoreKind::Logit,
            logits,
            Targets::Classes(labels.clone()),
        )
        .with_context(|| format!("template {id}: predictions"))?;
        let rel = format!("predictions/{id}.csv");
        let path = args.out.join(&rel);
        write_predictions(&path, &predictions)
            .with_context(|| format!("{}: cannot write", path.display()))?;
        let metrics = calibra_run::slot_outputs::record_metrics(&predictions)
            .map_err(|e| anyhow!("template {id}: metrics: {e}"))?;
        records.push(RunRecord {
            encoder: encoder_name.clone(),
            dataset: dataset_name.clone(),
            regime: Regime::ZeroShot,
            probe: format!("zero-shot:{id}"),
            calibrator: "none".into(),
            label_fraction: 1.0,
            seed: args.split_seed,
            condition: record_condition(condition),
            metrics: metrics.clone(),
            paths: BTreeMap::from([("predictions".to_string(), rel.clone())]),
            timings: BTreeMap::new(),
            versions: BTreeMap::from([("calibra".to_string(), env!("CARGO_PKG_VERSION").to_string())]),
            training: None,
        });
        results.push(TemplateResult {
            id: id.clone(),
            template: template.clone(),
            predictions: rel,
            metrics,
        });
    }

    let runs_path = args.out.join("runs.jsonl");
    write_atomically(&runs_path, |w| {
        for r in &records {
            writeln!(w, "{}", serde_json::to_string(r).map_err(std::io::Error::other)?)?;
        }
        Ok(())
    })
    .with_context(|| format!("{}: cannot write", runs_path.display()))?;

    let metric_names: Vec<String> = results
        .iter()
        .flat_map(|r| r.metrics.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let across: BTreeMap<String, Spread> = metric_names
        .iter()
        .map(|m| {
            let values: Vec<f64> = results.iter().filter_map(|r| r.metrics.get(m).copied()).collect();
            (m.clone(), spread(&values))
        })
        .collect();
    let report = TemplateReport {
        encoder: &encoder_name,
        dataset: &dataset_name,
        split: split.name(),
        condition: condition.name(),
        classnames: &classnames,
        templates: &results,
        across_templates: across,
    };
    let report_path = args.out.join("templates.json");
    write_atomically(&report_path, |w| {
        serde_json::to_writer_pretty(&mut *w, &report).map_err(std::io::Error::other)?;
        writeln!(w)
    })
    .with_context(|| format!("{}: cannot write", report_path.display()))?;

    println!(
        "{encoder_name} on {dataset_name} ({} split, {}): {n} images, image tower {:.1} s",
        split.name(),
        condition.name(),
        start.elapsed().as_secs_f64()
    );
    let shown = ["accuracy", "ece", "mce", "adaptive_ece", "macro_auroc"];
    println!("{:<9} {}", "template", shown.map(|m| format!("{m:>12}")).join(" "));
    let cell = |v: Option<f64>| v.map_or(format!("{:>12}", "-"), |v| format!("{v:>12.4}"));
    for r in &results {
        println!("{:<9} {}", r.id, shown.map(|m| cell(r.metrics.get(m).copied())).join(" "));
    }
    if results.len() >= 2 {
        println!(
            "{:<9} {}",
            "std",
            shown.map(|m| cell(report.across_templates.get(m).and_then(|s| s.std))).join(" ")
        );
    }
    println!("wrote {} and {}", runs_path.display(), report_path.display());
    Ok(())
}
