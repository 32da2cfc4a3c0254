//! `chexpert:` — CheXpert (Irvin et al. 2019): CSV columns `Path`, `Sex`, `Age`, `Frontal/Lateral`,
//! `AP/PA` and the 14 observations (`No Finding` … `Support Devices`) with values 1.0 (positive),
//! 0.0 (negative), −1.0 (uncertain) or blank (not mentioned).
//!
//! The location is a CSV (`…/train.csv`) or a folder holding `train.csv` and optionally `valid.csv`;
//! from a folder, `train.csv` rows are the official train split and `valid.csv` rows the official test
//! split (the calibration split is then carved from train by [`crate::split`]). `Path` is relative to
//! `root=DIR`, by default the parent of the CSV's folder (so `CheXpert-v1.0-small/train/...` resolves
//! next to the `CheXpert-v1.0-small` folder). Uncertain labels follow `policy=ignore|zeros|ones`
//! (default `ignore`: missing); blanks follow `blank=zeros|ignore` (default `zeros`: negative).

use super::table::{
    LabelCellRules, Table, check_image_exists, parse_label_cell, parse_optional_f64, parse_sex,
};
use super::{LoadOptions, SampleCollector, label_rules};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, SkippedSample, Split, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::spec::DatasetSpec;
use crate::synth::chest::LABEL_NAMES;
use std::path::{Path, PathBuf};

/// Reads a CheXpert CSV or folder.
pub fn read(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let location = spec.path();
    let rules = label_rules(spec)?;
    let files: Vec<(PathBuf, Option<Split>)> = if location.is_dir() {
        let mut f = vec![(location.join("train.csv"), Some(Split::Train))];
        if location.join("valid.csv").is_file() {
            f.push((location.join("valid.csv"), Some(Split::Test)));
        }
        f
    } else {
        vec![(location.clone(), None)]
    };
    let mut skipped = Vec::new();
    let mut collector = SampleCollector::new();
    for (file, split) in &files {
        let root = match spec.option("root") {
            Some(r) => PathBuf::from(r),
            None => file.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default(),
        };
        read_csv(file, *split, &root, rules, options, &mut collector, &mut skipped)?;
    }
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace {
            kind: TaskKind::Multilabel,
            names: LABEL_NAMES.iter().map(|s| s.to_string()).collect(),
        },
        samples: collector.into_samples(),
        skipped,
        on_bad_image: options.on_bad_image,
    })
}

fn read_csv(
    file: &Path,
    split: Option<Split>,
    root: &Path,
    rules: LabelCellRules,
    options: &LoadOptions,
    collector: &mut SampleCollector,
    skipped: &mut Vec<SkippedSample>,
) -> Result<(), DataError> {
    let t = Table::read(file)?;
    let path_col = t.require("Path")?;
    let label_cols: Vec<usize> = LABEL_NAMES.iter().map(|n| t.require(n)).collect::<Result<_, _>>()?;
    let (sex, age, view, projection) =
        (t.find("Sex"), t.find("Age"), t.find("Frontal/Lateral"), t.find("AP/PA"));
    for (line, r) in &t.rows {
        let cell = |c: Option<usize>| c.and_then(|i| r.get(i)).unwrap_or("").trim();
        let rel = cell(Some(path_col));
        if rel.is_empty() {
            return Err(t.error(*line, "column `Path` is empty"));
        }
        let labels = label_cols
            .iter()
            .zip(LABEL_NAMES)
            .map(|(&c, name)| {
                parse_label_cell(cell(Some(c)), rules)
                    .map_err(|m| t.error(*line, format!("column `{name}`: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut metadata = Metadata {
            age: parse_optional_f64(cell(age), "Age").map_err(|m| t.error(*line, m))?,
            sex: parse_sex(cell(sex)),
            ..Metadata::default()
        };
        for (key, value) in [("view", cell(view)), ("projection", cell(projection))] {
            if !value.is_empty() {
                metadata.extra.insert(key.to_string(), value.to_string());
            }
        }
        let image = root.join(rel);
        if !check_image_exists(&image, file, *line, options.on_bad_image, skipped)? {
            continue;
        }
        collector.push(
            Sample {
                id: rel.to_string(),
                image: ImageSource::File(image),
                target: Target::Labels(labels),
                metadata,
                official_split: split,
            },
            file,
            *line,
        )?;
    }
    Ok(())
}
