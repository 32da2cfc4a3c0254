//! `aptos2019:` — APTOS 2019 Blindness Detection: `train.csv` (`id_code,diagnosis`, diagnosis an
//! ordinal grade 0–4) and images `train_images/<id_code>.png` (or `images=DIR`). No official
//! labelled test split (the Kaggle test set has no labels).

use super::table::{Table, check_image_exists};
use super::{LoadOptions, SampleCollector};
use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, Target, TaskKind};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::spec::DatasetSpec;
use std::path::PathBuf;

/// Reads an APTOS 2019 folder.
pub fn read(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let root = spec.path();
    let t = Table::read(&root.join("train.csv"))?;
    let id_col = t.require("id_code")?;
    let dx_col = t.require("diagnosis")?;
    let images = spec.option("images").map_or_else(|| root.join("train_images"), PathBuf::from);
    let mut skipped = Vec::new();
    let mut collector = SampleCollector::new();
    for (line, r) in &t.rows {
        let id = r.get(id_col).unwrap_or("").trim().to_string();
        if id.is_empty() {
            return Err(t.error(*line, "column `id_code` is empty"));
        }
        let dx = r.get(dx_col).unwrap_or("").trim();
        let grade = dx.parse::<usize>().ok().filter(|g| *g <= 4).ok_or_else(|| {
            t.error(*line, format!("unknown label value `{dx}` in column `diagnosis`; expected a grade 0-4"))
        })?;
        let file = images.join(format!("{id}.png"));
        if !check_image_exists(&file, &t.path, *line, options.on_bad_image, &mut skipped)? {
            continue;
        }
        collector.push(
            Sample {
                id,
                image: ImageSource::File(file),
                target: Target::Class(grade),
                metadata: Metadata::default(),
                official_split: None,
            },
            &t.path,
            *line,
        )?;
    }
    Ok(Dataset {
        name: spec.raw.clone(),
        labels: LabelSpace { kind: TaskKind::Ordinal, names: (0..5).map(|g| g.to_string()).collect() },
        samples: collector.into_samples(),
        skipped,
        on_bad_image: options.on_bad_image,
    })
}
