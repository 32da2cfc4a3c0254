//! The perturbation gallery (`calibra data perturb`): sample images at every perturbation and
//! severity, for a person to look at. `<out>/<sample>/clean.png`,
//! `<out>/<sample>/<perturbation>-s<severity>.png`, and `<out>/index.json` listing the samples
//! (id, folder, target) and the perturbations with their severity ladders.

use std::path::{Path, PathBuf};

use crate::dataset::{Dataset, SkippedSample};
use crate::error::DataError;
use crate::perturb::{Perturbation, Severity, perturb};
use crate::preprocess::decode_samples;
use crate::readers::BadImagePolicy;
use crate::split::{SplitConfig, split_dataset};

/// What the gallery shows.
#[derive(Debug, Clone)]
pub struct GalleryOptions {
    /// Output folder (created).
    pub out: PathBuf,
    /// How many samples: the first ones of the test split (of the whole dataset when the test split
    /// is empty), in manifest order.
    pub samples: usize,
    /// Perturbations shown (empty: all of them).
    pub perturbations: Vec<Perturbation>,
    /// Split seed (which samples form the test split).
    pub seed: u64,
    pub on_bad_image: BadImagePolicy,
}

/// What the gallery wrote.
#[derive(Debug)]
pub struct GallerySummary {
    /// Images written per sample shown (clean + every perturbation × severity).
    pub images: Vec<usize>,
    /// Samples left out for a bad image (under `Skip`).
    pub skipped: Vec<SkippedSample>,
}

impl GallerySummary {
    /// What was written to `out` (images, samples) and which samples were skipped, one per line.
    pub fn message(&self, out: &Path) -> String {
        let mut msg = format!(
            "wrote {} images for {} samples to {}\n",
            self.images.iter().sum::<usize>(),
            self.images.len(),
            out.display()
        );
        if !self.skipped.is_empty() {
            msg += &format!("skipped {} samples with bad images:\n", self.skipped.len());
            for s in &self.skipped {
                msg += &format!("  {}: {}\n", s.location, s.reason);
            }
        }
        msg
    }
}

/// A file-system-safe folder name for a sample id.
fn safe_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// Writes the gallery of `ds`. Samples are decoded, perturbed and written in parallel; each image's
/// perturbations are seeded by its id, so the files do not depend on the thread count.
pub fn write_gallery(ds: &Dataset, options: &GalleryOptions) -> Result<GallerySummary, DataError> {
    let splits = split_dataset(ds, &SplitConfig { seed: options.seed, ..SplitConfig::default() })?;
    let pool = if splits.test.is_empty() { (0..ds.len()).collect() } else { splits.test.clone() };
    let chosen: Vec<usize> = pool.into_iter().take(options.samples).collect();
    let perturbations = if options.perturbations.is_empty() {
        Perturbation::ALL.to_vec()
    } else {
        options.perturbations.clone()
    };
    std::fs::create_dir_all(&options.out).map_err(|e| DataError::io(&options.out, e))?;
    let decoded = decode_samples(ds, &chosen, options.on_bad_image, |i, image| {
        let id = &ds.samples[i].id;
        let dir = options.out.join(safe_name(id));
        std::fs::create_dir_all(&dir).map_err(|e| DataError::io(&dir, e))?;
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
    let shown: Vec<usize> = decoded.items.iter().map(|(i, _)| *i).collect();
    write_index(&options.out, ds, &shown, &perturbations)?;
    Ok(GallerySummary { images: decoded.items.iter().map(|(_, n)| *n).collect(), skipped: decoded.skipped })
}

fn write_index(
    out: &Path,
    ds: &Dataset,
    samples: &[usize],
    perturbations: &[Perturbation],
) -> Result<(), DataError> {
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
    let text = serde_json::to_string_pretty(&index).map_err(|e| DataError::file(&path, e.to_string()))?;
    std::fs::write(&path, format!("{text}\n")).map_err(|e| DataError::io(&path, e))
}
