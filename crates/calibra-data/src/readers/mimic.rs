//! `mimic-cxr:` — MIMIC-CXR-JPG with CheXpert-labeler labels: the labels CSV
//! `mimic-cxr-2.0.0-chexpert.csv` (or `.csv.gz`; `labels=FILE` overrides) has `subject_id`,
//! `study_id` and the 14 observations (any column order; values 1.0/0.0/−1.0/blank, read as
//! CheXpert); the split CSV `mimic-cxr-2.0.0-split.csv[.gz]` (`split=FILE`) has
//! `dicom_id,study_id,subject_id,split` with split train/validate/test (→ train/calibration/test).
//! Each image (dicom) takes the labels of its study; its file is
//! `files/p<first 2 digits of subject>/p<subject>/s<study>/<dicom_id>.jpg` under `images=DIR`
//! (default: the folder). Labels are reported in CheXpert's column order so that a CheXpert-trained
//! probe applies unchanged. Images whose study has no labeler row are recorded as skipped.

use super::table::{Table, check_image_exists, parse_label_cell};
use super::{LoadOptions, SampleCollector, label_rules};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, SkippedSample, Split, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::spec::DatasetSpec;
use crate::synth::chest::LABEL_NAMES;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn find_csv(root: &Path, stem: &str) -> PathBuf {
    let plain = root.join(format!("{stem}.csv"));
    if plain.is_file() { plain } else { root.join(format!("{stem}.csv.gz")) }
}

/// Reads a MIMIC-CXR folder.
pub fn read(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let root = spec.path();
    let rules = label_rules(spec)?;
    let labels_path =
        spec.option("labels").map_or_else(|| find_csv(&root, "mimic-cxr-2.0.0-chexpert"), PathBuf::from);
    let split_path =
        spec.option("split").map_or_else(|| find_csv(&root, "mimic-cxr-2.0.0-split"), PathBuf::from);
    let images = spec.option("images").map_or_else(|| root.clone(), PathBuf::from);

    let lt = Table::read(&labels_path)?;
    let study_col = lt.require("study_id")?;
    let cols: Vec<usize> = LABEL_NAMES.iter().map(|n| lt.require(n)).collect::<Result<_, _>>()?;
    let mut by_study: HashMap<String, (u64, Vec<Option<bool>>)> = HashMap::new();
    for (line, r) in &lt.rows {
        let study = r.get(study_col).unwrap_or("").trim().to_string();
        let labels = cols
            .iter()
            .zip(LABEL_NAMES)
            .map(|(&c, name)| {
                parse_label_cell(r.get(c).unwrap_or(""), rules)
                    .map_err(|m| lt.error(*line, format!("column `{name}`: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some((first, _)) = by_study.insert(study.clone(), (*line, labels)) {
            return Err(lt.error(*line, format!("duplicate study_id `{study}` (first at line {first})")));
        }
    }

    let st = Table::read(&split_path)?;
    let (dicom_col, sstudy_col, subject_col, split_col) =
        (st.require("dicom_id")?, st.require("study_id")?, st.require("subject_id")?, st.require("split")?);
    let mut skipped: Vec<SkippedSample> = Vec::new();
    let mut collector = SampleCollector::new();
    for (line, r) in &st.rows {
        let cell = |i: usize| r.get(i).unwrap_or("").trim();
        let (dicom, study, subject) = (cell(dicom_col), cell(sstudy_col), cell(subject_col));
        if dicom.is_empty() || study.is_empty() || subject.len() < 2 {
            return Err(st.error(*line, "dicom_id, study_id and subject_id must be non-empty"));
        }
        let split = Split::parse(cell(split_col)).ok_or_else(|| {
            st.error(*line, format!("column `split`: `{}` is not train, validate or test", cell(split_col)))
        })?;
        let Some((_, labels)) = by_study.get(study) else {
            skipped.push(SkippedSample {
                location: format!("{}, line {line}", st.path.display()),
                reason: format!("study {study} has no row in {}", lt.path.display()),
            });
            continue;
        };
        let file = images
            .join("files")
            .join(format!("p{}", &subject[..2]))
            .join(format!("p{subject}"))
            .join(format!("s{study}"))
            .join(format!("{dicom}.jpg"));
        if !check_image_exists(&file, &st.path, *line, options.on_bad_image, &mut skipped)? {
            continue;
        }
        let mut metadata = Metadata { site: Some("MIMIC-CXR".into()), ..Metadata::default() };
        metadata.extra.insert("subject_id".into(), subject.to_string());
        metadata.extra.insert("study_id".into(), study.to_string());
        collector.push(
            Sample {
                id: dicom.to_string(),
                image: ImageSource::File(file),
                target: Target::Labels(labels.clone()),
                metadata,
                official_split: Some(split),
            },
            &st.path,
            *line,
        )?;
    }
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace {
            kind: TaskKind::Multilabel,
            names: LABEL_NAMES.iter().map(|s| s.to_string()).collect(),
        },
        samples: collector.into_samples(),
        skipped,
    })
}
