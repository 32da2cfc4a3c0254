//! `isic2019:` — ISIC 2019 training data: `ISIC_2019_Training_GroundTruth.csv` (`image` and one-hot
//! class columns `MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK` with values 1.0/0.0; exactly one 1 per row),
//! an optional `ISIC_2019_Training_Metadata.csv` (`image,age_approx,anatom_site_general,lesion_id,sex`)
//! joined by `image`, and the images `ISIC_2019_Training_Input/<image>.jpg` (or `images=DIR`).
//! Class names are the ground-truth columns after `image`, in file order. No official splits.

use super::table::{Table, check_image_exists, parse_optional_f64, parse_sex};
use super::{LoadOptions, SampleCollector};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::spec::DatasetSpec;
use std::collections::HashMap;
use std::path::PathBuf;

pub const GROUND_TRUTH: &str = "ISIC_2019_Training_GroundTruth.csv";
pub const METADATA: &str = "ISIC_2019_Training_Metadata.csv";
pub const IMAGES: &str = "ISIC_2019_Training_Input";

/// Reads an ISIC 2019 folder.
pub fn read(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let root = spec.path();
    let gt = Table::read(&root.join(GROUND_TRUTH))?;
    let image_col = gt.require("image")?;
    let class_cols: Vec<usize> = (0..gt.headers.len()).filter(|&i| i != image_col).collect();
    if class_cols.is_empty() {
        return Err(DataError::file(&gt.path, "has no class columns after `image` (expected MEL,NV,...)"));
    }
    let names: Vec<String> = class_cols.iter().map(|&i| gt.headers[i].clone()).collect();
    let meta_path = root.join(METADATA);
    let mut meta: HashMap<String, Metadata> = HashMap::new();
    if meta_path.is_file() {
        let t = Table::read(&meta_path)?;
        let img = t.require("image")?;
        let (age, sex, site, lesion) =
            (t.find("age_approx"), t.find("sex"), t.find("anatom_site_general"), t.find("lesion_id"));
        for (line, r) in &t.rows {
            let cell = |c: Option<usize>| c.and_then(|i| r.get(i)).unwrap_or("").trim();
            let mut m = Metadata {
                age: parse_optional_f64(cell(age), "age_approx").map_err(|e| t.error(*line, e))?,
                sex: parse_sex(cell(sex)),
                ..Metadata::default()
            };
            for (key, value) in [("anatom_site_general", cell(site)), ("lesion_id", cell(lesion))] {
                if !value.is_empty() {
                    m.extra.insert(key.to_string(), value.to_string());
                }
            }
            meta.insert(cell(Some(img)).to_string(), m);
        }
    }
    let images = match spec.option("images") {
        Some(d) => PathBuf::from(d),
        None if root.join(IMAGES).is_dir() => root.join(IMAGES),
        None => root.clone(),
    };
    let mut skipped = Vec::new();
    let mut collector = SampleCollector::new();
    for (line, r) in &gt.rows {
        let id = r.get(image_col).unwrap_or("").trim().to_string();
        if id.is_empty() {
            return Err(gt.error(*line, "column `image` is empty"));
        }
        let mut hot = Vec::new();
        for (k, &c) in class_cols.iter().enumerate() {
            let v = r.get(c).unwrap_or("").trim();
            match v {
                "1" | "1.0" => hot.push(k),
                "0" | "0.0" => {}
                other => {
                    return Err(
                        gt.error(*line, format!("column `{}`: `{other}` is not 1.0 or 0.0", names[k]))
                    );
                }
            }
        }
        if hot.len() != 1 {
            return Err(
                gt.error(*line, format!("expected exactly one class marked 1.0, found {}", hot.len()))
            );
        }
        let file = images.join(format!("{id}.jpg"));
        if !check_image_exists(&file, &gt.path, *line, options.on_bad_image, &mut skipped)? {
            continue;
        }
        let metadata = meta.remove(&id).unwrap_or_default();
        collector.push(
            Sample {
                id,
                image: ImageSource::File(file),
                target: Target::Class(hot[0]),
                metadata,
                official_split: None,
            },
            &gt.path,
            *line,
        )?;
    }
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace { kind: TaskKind::Multiclass, names },
        samples: collector.into_samples(),
        skipped,
        on_bad_image: options.on_bad_image,
    })
}
