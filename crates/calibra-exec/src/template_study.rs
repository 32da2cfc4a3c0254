//! The template study of `calibra zero-shot`: a CLIP or SigLIP model's zero-shot predictions on one split of a
//! dataset under one condition, one predictions file and one run record per prompt template, and the
//! spread of every metric across templates (MVC-Bench's template-stability analysis).
//!
//! It stays outside the grid (a recipe's zero-shot regime predicts the calibration and test splits
//! and calibrates them into a run store): the study predicts any one split, with the caller's class
//! names, tokenizer and batch size, into its own small layout:
//!
//! ```text
//! predictions/<ID>.csv      logits, one per template (ID: P1…P7 for the MVC-Bench family, C1… for
//!                           custom templates)
//! runs.jsonl                one run record per template: regime `zero-shot`, probe `zero-shot:<ID>`,
//!                           calibrator `none`, label fraction 1, seed = the split seed, the condition,
//!                           the record metrics of `calibra run`, paths.predictions
//! templates.json            per template: id, text, metrics; across templates: mean, sample std
//!                           (ddof 1, as the evaluator's seed std), min, max of every metric
//! ```
//!
//! The image tower runs once ([`clip_image_features`]); every template reuses the features through
//! [`zero_shot_logits`], the logits the zero-shot regime computes too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use calibra_core::MVC_BENCH_TEMPLATES;
use calibra_crs::{Regime, RunRecord};
use calibra_data::{Split, SplitConfig, Target};
use calibra_models::parse_device;
use calibra_predictions::{Predictions, ScoreKind, Targets, write_atomically, write_predictions};
use calibra_run::ExecError;
use calibra_train::features::{FeatureCondition, FeatureRequest, PreparedPass};
use serde::Serialize;

use crate::clip_features::{clip_image_features, zero_shot_logits};
use crate::condition::record_condition;
use crate::prompts::{mvc_bench_template, prompt_classnames};
use crate::zero_shot_model::ZeroShotModel;

/// What a template study predicts, with what, and where it writes.
#[derive(Debug, Clone)]
pub struct TemplateStudyOptions {
    /// CLIP or SigLIP checkpoint: a directory, `hf:org/name[@rev]`, or an id in the Hugging Face cache.
    pub encoder: String,
    /// Tokenizer directory (default: the checkpoint's).
    pub tokenizer: Option<PathBuf>,
    /// Dataset spec (single-label tasks).
    pub data: String,
    /// Class names in the dataset's class order (`_` reads as a space); empty: the dataset's.
    pub classnames: Vec<String>,
    /// MVC-Bench templates: `all` (P1…P7), `none`, or ids such as `P1,P3`.
    pub templates: String,
    /// Custom templates with one `{}` each (ids C1, C2… in order).
    pub custom_templates: Vec<String>,
    pub split: Split,
    /// Seed of the train/calibration/test split (also the records' seed).
    pub split_seed: u64,
    /// `clean` or `<perturbation>:<severity>`.
    pub condition: String,
    /// Images per forward pass of the image tower.
    pub batch_size: usize,
    /// `cpu`, `wgpu` or `cuda`.
    pub device: String,
    /// Encoder name in the run records (default: the checkpoint directory's name).
    pub encoder_name: Option<String>,
    /// Dataset name in the run records (default: the spec without its options).
    pub dataset_name: Option<String>,
    /// Output directory (created if needed; its files are replaced atomically).
    pub out: PathBuf,
}

/// Spread of one metric across templates.
#[derive(Debug, Serialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (ddof 1); absent with fewer than two templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
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

/// One template's predictions and record metrics.
#[derive(Debug, Serialize)]
pub struct TemplateResult {
    pub id: String,
    pub template: String,
    pub predictions: String,
    pub metrics: BTreeMap<String, f64>,
}

/// `templates.json`.
#[derive(Debug, Serialize)]
pub struct TemplateReport {
    pub encoder: String,
    pub dataset: String,
    pub split: &'static str,
    pub condition: String,
    pub classnames: Vec<String>,
    pub templates: Vec<TemplateResult>,
    pub across_templates: BTreeMap<String, Spread>,
}

/// What a study did: its report and where it wrote.
#[derive(Debug)]
pub struct TemplateStudy {
    pub report: TemplateReport,
    /// Images predicted.
    pub images: usize,
    /// Seconds from the image tower's start to the last file written.
    pub seconds: f64,
    pub runs_path: PathBuf,
    pub report_path: PathBuf,
}

/// The templates asked for, as (id, text).
fn selected_templates(options: &TemplateStudyOptions) -> Result<Vec<(String, String)>, ExecError> {
    let mut out = Vec::new();
    match options.templates.trim() {
        "all" => {
            for n in 1..=MVC_BENCH_TEMPLATES.len() {
                let id = format!("P{n}");
                let text = mvc_bench_template(&id).ok_or("P1…P7 are MVC-Bench ids")?;
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
                        format!(
                            "--templates: `{item}` is not a template id; expected `all`, `none` or ids P1…P{}",
                            MVC_BENCH_TEMPLATES.len()
                        )
                    })?;
                let id = format!("P{n}");
                if out.iter().any(|(i, _)| *i == id) {
                    return Err(format!("--templates: `{id}` is listed twice").into());
                }
                out.push((id, MVC_BENCH_TEMPLATES[n - 1].to_string()));
            }
        }
    }
    for (i, t) in options.custom_templates.iter().enumerate() {
        if t.matches("{}").count() != 1 {
            return Err(format!(
                "--template {t:?}: a template must contain exactly one `{{}}` for the class name"
            )
            .into());
        }
        out.push((format!("C{}", i + 1), t.clone()));
    }
    if out.is_empty() {
        return Err("no template: --templates none and no --template".into());
    }
    Ok(out)
}

fn default_encoder_name(spec: &str) -> String {
    let trimmed = spec.trim_end_matches('/');
    Path::new(trimmed).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| trimmed.into())
}

/// The class labels of the pass's rows: a single-label dataset and a non-empty split.
fn single_labels(pass: &PreparedPass, options: &TemplateStudyOptions) -> Result<Vec<usize>, ExecError> {
    let labels: Vec<usize> = pass
        .indices
        .iter()
        .map(|&i| match &pass.dataset.samples[i].target {
            Target::Class(c) => Ok(*c),
            Target::Labels(_) => Err(format!(
                "{}: zero-shot classification needs a single-label dataset; this one is multilabel",
                options.data
            )),
        })
        .collect::<Result<_, _>>()?;
    if labels.is_empty() {
        return Err(format!("{}: the {} split is empty", options.data, options.split.name()).into());
    }
    Ok(labels)
}

/// The prompts' class names: the given ones (one per class, non-empty) or the dataset's.
fn classnames(options: &TemplateStudyOptions, dataset_classes: &[String]) -> Result<Vec<String>, ExecError> {
    let classnames: Vec<String> = if options.classnames.is_empty() {
        prompt_classnames(dataset_classes)
    } else {
        options.classnames.iter().map(|c| c.trim().replace('_', " ")).collect()
    };
    if classnames.len() != dataset_classes.len() {
        return Err(format!(
            "--classnames: {} names given, the dataset has {} classes ({}) — give one name per class, in that order",
            classnames.len(),
            dataset_classes.len(),
            dataset_classes.join(", ")
        )
        .into());
    }
    if let Some(i) = classnames.iter().position(|c| c.is_empty()) {
        return Err(format!("--classnames: name {} (class `{}`) is empty", i + 1, dataset_classes[i]).into());
    }
    Ok(classnames)
}

/// Runs the study and writes its files; `progress(done, total)` as the image tower starts (`done`
/// 0) and after each of its batches.
pub fn run_template_study(
    options: &TemplateStudyOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<TemplateStudy, ExecError> {
    let condition = FeatureCondition::parse(&options.condition).map_err(|e| format!("--condition: {e}"))?;
    let device = parse_device(&options.device).map_err(|e| format!("--device: {e}"))?;
    if options.batch_size == 0 {
        return Err("--batch-size must be >= 1".into());
    }
    let templates = selected_templates(options)?;
    let pass = PreparedPass::new(FeatureRequest {
        encoder: options.encoder.clone(),
        data: options.data.clone(),
        split: options.split.into(),
        split_config: SplitConfig { seed: options.split_seed, ..SplitConfig::default() },
        condition,
        layers: vec![1.0],
        batch_size: options.batch_size,
    })?;
    let labels = single_labels(&pass, options)?;
    let dataset_classes = &pass.dataset.labels.names;
    let classnames = classnames(options, dataset_classes)?;

    let checkpoint = pass.checkpoint.clone();
    // CLIP or SigLIP, by config.json model_type (see `crate::zero_shot_model`).
    let model = ZeroShotModel::load(&checkpoint, options.tokenizer.as_deref(), &device)?;

    // The image tower runs once; every template reuses the features.
    let start = Instant::now();
    let total = pass.indices.len();
    progress(0, total);
    let (features, dim) =
        clip_image_features(&pass, &model, options.batch_size, &device, &mut |done| progress(done, total))?;

    let encoder_name = options.encoder_name.clone().unwrap_or_else(|| default_encoder_name(&options.encoder));
    let dataset_name = options
        .dataset_name
        .clone()
        .unwrap_or_else(|| options.data.split('?').next().unwrap_or(&options.data).to_string());
    let ids: Vec<String> = pass.indices.iter().map(|&i| pass.dataset.samples[i].id.clone()).collect();
    let pred_dir = options.out.join("predictions");
    std::fs::create_dir_all(&pred_dir).map_err(|e| format!("{}: cannot create: {e}", pred_dir.display()))?;

    let mut results = Vec::with_capacity(templates.len());
    let mut records = Vec::with_capacity(templates.len());
    for (id, template) in &templates {
        let clf = model
            .head(&classnames, std::slice::from_ref(template), &device)
            .map_err(|e| format!("template {id} {template:?}: {e}"))?;
        let logits = zero_shot_logits(&clf, &features, dim, &device)?;
        let predictions = Predictions::new(
            ids.clone(),
            dataset_classes.clone(),
            ScoreKind::Logit,
            logits,
            Targets::Classes(labels.clone()),
        )
        .map_err(|e| format!("template {id}: predictions: {e}"))?;
        let rel = format!("predictions/{id}.csv");
        let path = options.out.join(&rel);
        write_predictions(&path, &predictions)
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        let metrics = calibra_run::slot_outputs::record_metrics(&predictions)
            .map_err(|e| format!("template {id}: metrics: {e}"))?;
        records.push(RunRecord {
            encoder: encoder_name.clone(),
            dataset: dataset_name.clone(),
            regime: Regime::ZeroShot,
            probe: format!("zero-shot:{id}"),
            calibrator: "none".into(),
            label_fraction: 1.0,
            seed: options.split_seed,
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

    let runs_path = options.out.join("runs.jsonl");
    write_atomically(&runs_path, |w| {
        for r in &records {
            writeln!(w, "{}", serde_json::to_string(r).map_err(std::io::Error::other)?)?;
        }
        Ok(())
    })
    .map_err(|e| format!("{}: cannot write: {e}", runs_path.display()))?;

    let metric_names: BTreeSet<String> = results.iter().flat_map(|r| r.metrics.keys().cloned()).collect();
    let across_templates: BTreeMap<String, Spread> = metric_names
        .into_iter()
        .map(|m| {
            let values: Vec<f64> = results.iter().filter_map(|r| r.metrics.get(&m).copied()).collect();
            (m, spread(&values))
        })
        .collect();
    let report = TemplateReport {
        encoder: encoder_name,
        dataset: dataset_name,
        split: options.split.name(),
        condition: condition.name(),
        classnames,
        templates: results,
        across_templates,
    };
    let report_path = options.out.join("templates.json");
    write_atomically(&report_path, |w| {
        serde_json::to_writer_pretty(&mut *w, &report).map_err(std::io::Error::other)?;
        writeln!(w)
    })
    .map_err(|e| format!("{}: cannot write: {e}", report_path.display()))?;
    Ok(TemplateStudy {
        report,
        images: labels.len(),
        seconds: start.elapsed().as_secs_f64(),
        runs_path,
        report_path,
    })
}

impl TemplateStudy {
    /// The summary `calibra zero-shot` prints: what ran, then accuracy, ECE, MCE, adaptive ECE and
    /// macro AUROC per template (and their std across templates), then where the files are.
    pub fn summary(&self) -> String {
        let r = &self.report;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} on {} ({} split, {}): {} images, image tower {:.1} s",
            r.encoder, r.dataset, r.split, r.condition, self.images, self.seconds
        );
        let shown = ["accuracy", "ece", "mce", "adaptive_ece", "macro_auroc"];
        let _ = writeln!(out, "{:<9} {}", "template", shown.map(|m| format!("{m:>12}")).join(" "));
        let cell = |v: Option<f64>| v.map_or(format!("{:>12}", "-"), |v| format!("{v:>12.4}"));
        for t in &r.templates {
            let _ = writeln!(out, "{:<9} {}", t.id, shown.map(|m| cell(t.metrics.get(m).copied())).join(" "));
        }
        if r.templates.len() >= 2 {
            let stds = shown.map(|m| cell(r.across_templates.get(m).and_then(|s| s.std)));
            let _ = writeln!(out, "{:<9} {}", "std", stds.join(" "));
        }
        let _ = writeln!(out, "wrote {} and {}", self.runs_path.display(), self.report_path.display());
        out
    }
}
