//! `mimic-cxr:` — MIMIC-CXR-JPG with CheXpert-labeler labels: the labels CSV
//! `mimic-cxr-2.0.0-chexpert.csv` (or `.csv.gz`; `labels=FILE` overrides) has `subject_id`,
//! `study_id` and the 14 observations (any column order; values 1.0/0.0/−1.0/blank, read as
//! CheXpert); the split CSV `mimic-cxr-2.0.0-split.csv[.gz]` (`split=FILE`) has
//! `dicom_id,study_id,subject_id,split` with split train/validate/test (→ train/calibration/test).
//! Each image (dicom) takes the labels of its study; its file is
//! `files/p<first 2 digits of subject>/p<subject>/s<study>/<dicom_id>.jpg` under `images=DIR`
//! (default: the folder). Labels are reported in CheXpert's column order so that a CheXpert-trained
//! probe applies unchanged. Images whose study has no labeler row are recorded as skipped.
//!
//! Demographics (age, sex) are not in MIMIC-CXR-JPG; they come from MIMIC-IV's `patients` table
//! (`subject_id,gender,anchor_age,...`; gender `F`/`M`, anchor_age whole years), found as
//! `patients.csv[.gz]` or `hosp/patients.csv[.gz]` in the folder (MIMIC-IV's own layout), or given
//! with `patients=FILE`. When present, each image's subject gets `sex` from `gender` and `age` from
//! `anchor_age` (the age in the subject's anchor year, not at the study date; MIMIC-IV caps it at 91),
//! and the anchor year in `extra["anchor_year"]`; subjects missing from the table keep no
//! demographics. A malformed row (non-numeric age, gender other than F/M, duplicate subject) is an
//! error naming the file, line and column. Without the table, age and sex stay empty.

use super::table::{Table, check_image_exists, parse_label_cell, parse_optional_f64};
use super::{LoadOptions, SampleCollector, label_rules};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, Sex, SkippedSample, Split, Target, TaskKind};
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
    let patients_path = match spec.option("patients") {
        Some(file) => Some(PathBuf::from(file)),
        None => ["patients", "hosp/patients"]
            .iter()
            .flat_map(|stem| ["csv", "csv.gz"].map(|ext| root.join(format!("{stem}.{ext}"))))
            .find(|p| p.is_file()),
    };
    let patients = match &patients_path {
        Some(path) => read_patients(path)?,
        None => HashMap::new(),
    };

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
        if let Some(p) = patients.get(subject) {
            metadata.age = p.age;
            metadata.sex = p.sex;
            if let Some(year) = &p.anchor_year {
                metadata.extra.insert("anchor_year".into(), year.clone());
            }
        }
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
        on_bad_image: options.on_bad_image,
    })
}

/// One subject's row of MIMIC-IV `patients`.
struct Patient {
    age: Option<f64>,
    sex: Option<Sex>,
    anchor_year: Option<String>,
}

/// Reads MIMIC-IV `patients.csv[.gz]`: required columns `subject_id`, `gender` (`F`, `M`, or blank
/// for unknown) and `anchor_age` (a non-negative number of years, or blank); `anchor_year` optional.
fn read_patients(path: &Path) -> Result<HashMap<String, Patient>, DataError> {
    let t = Table::read(path)?;
    let (subject_col, gender_col, age_col) =
        (t.require("subject_id")?, t.require("gender")?, t.require("anchor_age")?);
    let year_col = t.find("anchor_year");
    let mut out: HashMap<String, (u64, Patient)> = HashMap::new();
    for (line, r) in &t.rows {
        let cell = |i: usize| r.get(i).unwrap_or("").trim();
        let subject = cell(subject_col);
        if subject.is_empty() {
            return Err(t.error(*line, "column `subject_id` is empty"));
        }
        let sex = match cell(gender_col) {
            "" => None,
            "F" | "f" => Some(Sex::Female),
            "M" | "m" => Some(Sex::Male),
            other => {
                return Err(t.error(*line, format!("column `gender`: `{other}` is not F or M (or blank)")));
            }
        };
        let age = parse_optional_f64(cell(age_col), "anchor_age").map_err(|m| t.error(*line, m))?;
        if age.is_some_and(|a| a < 0.0) {
            return Err(t.error(*line, format!("column `anchor_age`: `{}` is negative", cell(age_col))));
        }
        let anchor_year = year_col.map(cell).filter(|y| !y.is_empty()).map(str::to_string);
        if let Some((first, _)) = out.insert(subject.to_string(), (*line, Patient { age, sex, anchor_year }))
        {
            return Err(t.error(*line, format!("duplicate subject_id `{subject}` (first at line {first})")));
        }
    }
    Ok(out.into_iter().map(|(k, (_, p))| (k, p)).collect())
}
