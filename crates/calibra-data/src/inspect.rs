//! Dataset inspection (`calibra data inspect`): a dataset the way the protocol will see it — counts
//! per split and class (positives, negatives and missing values per label on multilabel data),
//! label-fraction sizes, metadata coverage, skipped entries and the problems that would stop a study
//! (too few classes, an empty split, a class absent from a split) — as a serialisable report and as
//! the command's text table.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::dataset::{Dataset, SkippedSample, Split, Target, TaskKind};
use crate::error::DataError;
use crate::preprocess::decode_samples;
use crate::readers::BadImagePolicy;
use crate::split::{PROTOCOL_FRACTIONS, SplitConfig, label_fraction, split_dataset};

/// What an inspection does beyond counting.
#[derive(Debug, Clone)]
pub struct InspectOptions {
    /// The train / calibration / test split to count.
    pub split: SplitConfig,
    /// Decode every image (in parallel) to find undecodable files.
    pub check_images: bool,
    /// What to do with an entry whose image cannot be decoded (with `check_images`).
    pub on_bad_image: BadImagePolicy,
}

/// Samples (multiclass / ordinal) or positives (multilabel) of one class in one split.
#[derive(Debug, Serialize)]
pub struct ClassCount {
    pub name: String,
    /// Samples of the class (multiclass/ordinal) or positives (multilabel).
    pub count: usize,
    /// Multilabel only: negatives and missing values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub negatives: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<usize>,
}

/// One split: its size, how many of its samples come from an official split, its class counts.
#[derive(Debug, Serialize)]
pub struct SplitReport {
    pub split: Split,
    pub samples: usize,
    pub official: usize,
    pub classes: Vec<ClassCount>,
}

/// The train-split size at one protocol label fraction.
#[derive(Debug, Serialize)]
pub struct FractionReport {
    pub fraction: f64,
    pub samples: usize,
}

/// How many samples carry each metadata field.
#[derive(Debug, Serialize)]
pub struct Coverage {
    pub age: usize,
    pub sex: usize,
    pub quality: usize,
    pub site: usize,
    /// Other metadata columns and how many samples have them.
    pub extra: BTreeMap<String, usize>,
}

/// The whole inspection (the JSON of `calibra data inspect --format json`).
#[derive(Debug, Serialize)]
pub struct InspectReport {
    pub dataset: String,
    pub task: TaskKind,
    pub samples: usize,
    pub labels: Vec<String>,
    pub splits: Vec<SplitReport>,
    pub label_fractions: Vec<FractionReport>,
    pub metadata_coverage: Coverage,
    pub skipped: Vec<SkippedSample>,
    pub images_checked: bool,
    pub problems: Vec<String>,
}

/// Inspects `ds` (its `skipped` entries move into the report). With `check_images`, samples whose
/// image does not decode are dropped (`Skip`) or are the error (`Fail`). A dataset with no usable
/// sample left is an error naming it.
pub fn inspect(mut ds: Dataset, options: &InspectOptions) -> Result<InspectReport, DataError> {
    let mut skipped = std::mem::take(&mut ds.skipped);
    if options.check_images {
        skipped.extend(drop_undecodable(&mut ds, options.on_bad_image)?);
    }
    if ds.is_empty() {
        return Err(DataError::Invalid(format!("dataset `{}` has no usable samples left", ds.name)));
    }
    let splits = split_dataset(&ds, &options.split)?;
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
    let mut problems = class_problems(&ds);
    problems.extend(split_problems(&ds, &split_reports));
    let label_fractions = if splits.train.is_empty() {
        Vec::new()
    } else {
        PROTOCOL_FRACTIONS
            .iter()
            .map(|&f| {
                Ok(FractionReport {
                    fraction: f,
                    samples: label_fraction(&ds, &splits.train, f, options.split.seed)?.len(),
                })
            })
            .collect::<Result<_, DataError>>()?
    };
    if !skipped.is_empty() {
        problems.push(format!("{} entries skipped (listed above)", skipped.len()));
    }
    Ok(InspectReport {
        dataset: ds.name.clone(),
        task: ds.labels.kind,
        samples: ds.len(),
        labels: ds.labels.names.clone(),
        splits: split_reports,
        label_fractions,
        metadata_coverage: coverage(&ds),
        skipped,
        images_checked: options.check_images,
        problems,
    })
}

/// Decodes every image; removes the samples that fail under `Skip` and returns their entries.
fn drop_undecodable(ds: &mut Dataset, policy: BadImagePolicy) -> Result<Vec<SkippedSample>, DataError> {
    let all: Vec<usize> = (0..ds.len()).collect();
    let decoded = decode_samples(ds, &all, policy, |_, _| Ok(()))?;
    if !decoded.skipped.is_empty() {
        let kept: HashSet<usize> = decoded.items.iter().map(|(i, _)| *i).collect();
        let mut i = 0;
        ds.samples.retain(|_| {
            i += 1;
            kept.contains(&(i - 1))
        });
    }
    Ok(decoded.skipped)
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

/// A single-label dataset needs samples of at least two classes.
fn class_problems(ds: &Dataset) -> Vec<String> {
    if ds.labels.kind == TaskKind::Multilabel {
        return Vec::new();
    }
    let all: Vec<usize> = (0..ds.len()).collect();
    let present: Vec<&String> =
        ds.labels.names.iter().zip(ds.class_counts(&all)).filter(|(_, n)| *n > 0).map(|(c, _)| c).collect();
    if present.len() >= 2 {
        return Vec::new();
    }
    vec![format!(
        "only {} class{} ({}): a classifier needs samples of at least 2 classes (an ImageFolder needs \
         one subfolder per class)",
        present.len(),
        if present.len() == 1 { "" } else { "es" },
        present.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
    )]
}

/// An empty split, or a class (label: positive) absent from a split.
fn split_problems(ds: &Dataset, splits: &[SplitReport]) -> Vec<String> {
    let mut problems = Vec::new();
    for r in splits {
        if r.samples == 0 {
            problems.push(format!("the {} split is empty", r.split.name()));
            continue;
        }
        for c in r.classes.iter().filter(|c| c.count == 0) {
            let what =
                if ds.labels.kind == TaskKind::Multilabel { "has no positive" } else { "has no sample" };
            problems.push(format!(
                "{} `{}` {what} in the {} split",
                label_word(ds.labels.kind),
                c.name,
                r.split.name()
            ));
        }
    }
    problems
}

fn coverage(ds: &Dataset) -> Coverage {
    let mut coverage = Coverage { age: 0, sex: 0, quality: 0, site: 0, extra: BTreeMap::new() };
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
    coverage
}

fn label_word(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Multiclass => "class",
        TaskKind::Ordinal => "grade",
        TaskKind::Multilabel => "label",
    }
}

fn task_name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::Multiclass => "multiclass",
        TaskKind::Ordinal => "ordinal",
        TaskKind::Multilabel => "multilabel",
    }
}

impl InspectReport {
    /// The text table of `calibra data inspect`: counts per class and split, label fractions,
    /// metadata coverage, skipped entries (the first 20) and problems.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let task = task_name(self.task);
        let multilabel = self.task == TaskKind::Multilabel;
        let _ = writeln!(out, "dataset {}", self.dataset);
        let _ = writeln!(
            out,
            "{} samples, task {task}, {} {}",
            self.samples,
            self.labels.len(),
            if multilabel { "labels" } else { "classes" }
        );
        let _ = writeln!(out);
        self.write_counts(&mut out);
        if !self.label_fractions.is_empty() {
            let _ = writeln!(out);
            let fr: Vec<String> =
                self.label_fractions.iter().map(|f| format!("{}: {}", f.fraction, f.samples)).collect();
            let _ = writeln!(out, "label fractions of train (samples): {}", fr.join(", "));
        }
        let c = &self.metadata_coverage;
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "metadata coverage: age {}/{n}, sex {}/{n}, quality {}/{n}, site {}/{n}",
            c.age,
            c.sex,
            c.quality,
            c.site,
            n = self.samples
        );
        if !c.extra.is_empty() {
            let extra: Vec<String> =
                c.extra.iter().map(|(k, v)| format!("{k} {v}/{}", self.samples)).collect();
            let _ = writeln!(out, "other metadata: {}", extra.join(", "));
        }
        self.write_skipped(&mut out);
        let _ = writeln!(out);
        if self.problems.is_empty() {
            let _ = writeln!(
                out,
                "problems: none{}",
                if self.images_checked { "" } else { " found (images not decoded; use --check-images)" }
            );
        } else {
            let _ = writeln!(out, "problems:");
            for p in &self.problems {
                let _ = writeln!(out, "  - {p}");
            }
        }
        out
    }

    /// One row per class with its count in every split, then the totals and official counts.
    fn write_counts(&self, out: &mut String) {
        let header = if self.task == TaskKind::Multilabel { "label (positives)" } else { "class" };
        let width =
            self.labels.iter().map(String::len).max().unwrap_or(0).max(header.len()).max("official".len());
        let mut row = |name: &str, cell: &dyn Fn(&SplitReport) -> String| {
            let _ = write!(out, "{name:<width$}");
            for s in &self.splits {
                let _ = write!(out, " {:>12}", cell(s));
            }
            let _ = writeln!(out);
        };
        row(header, &|s| s.split.name().to_string());
        for (j, name) in self.labels.iter().enumerate() {
            row(name, &|s| s.classes[j].count.to_string());
        }
        row("total", &|s| s.samples.to_string());
        row("official", &|s| s.official.to_string());
    }

    fn write_skipped(&self, out: &mut String) {
        if self.skipped.is_empty() {
            return;
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "skipped {} entries:", self.skipped.len());
        for s in self.skipped.iter().take(20) {
            let _ = writeln!(out, "  {}: {}", s.location, s.reason);
        }
        if self.skipped.len() > 20 {
            let _ = writeln!(out, "  ... and {} more (see --format json)", self.skipped.len() - 20);
        }
    }
}
