//! `calibra features`: one frozen-encoder pass over a dataset split (or over every split, each
//! row's split recorded) into a safetensors file that is reused as a cache when its fingerprint
//! matches. The request comes as the command takes it (split, condition and device by name).

use std::path::PathBuf;
use std::time::Instant;

use calibra_data::{Split, SplitConfig};
use calibra_models::{ModelError, parse_device};
use calibra_train::features::{
    FeatureCondition, FeatureError, FeatureRequest, FeatureSet, FeatureSource, PreparedPass, SplitSelection,
};
use thiserror::Error;

/// Why the pass could not run; names the flag or the file.
#[derive(Debug, Error)]
pub enum FeatureFileError {
    #[error("--split")]
    Split(#[source] FeatureError),
    #[error("--condition")]
    Condition(#[source] FeatureError),
    #[error("--device")]
    Device(#[source] ModelError),
    #[error(transparent)]
    Pass(#[from] FeatureError),
}

/// One `calibra features`.
#[derive(Debug, Clone)]
pub struct FeatureFileRequest {
    pub encoder: String,
    pub data: String,
    /// `train`, `calibration`, `test` or `all`.
    pub split: String,
    /// `clean` or `<perturbation>:<severity>`.
    pub condition: String,
    pub layers: Vec<f64>,
    pub batch_size: usize,
    pub split_seed: u64,
    /// `cpu`, `wgpu` or `cuda`.
    pub device: String,
    pub out: PathBuf,
}

/// A pass ready to run: the dataset and encoder are resolved, no image is read yet.
pub struct FeatureFileJob {
    request: FeatureFileRequest,
    pass: PreparedPass,
    device: burn::tensor::Device,
}

/// The features written (or found cached), where they came from, and how long the job took.
pub struct FeatureFile {
    pub set: FeatureSet,
    pub source: FeatureSource,
    pub seconds: f64,
}

impl FeatureFileJob {
    /// Parse the request's names, resolve the encoder and load the dataset's split.
    pub fn prepare(request: FeatureFileRequest) -> Result<Self, FeatureFileError> {
        let split = SplitSelection::parse(&request.split).map_err(FeatureFileError::Split)?;
        let condition = FeatureCondition::parse(&request.condition).map_err(FeatureFileError::Condition)?;
        let device = parse_device(&request.device).map_err(FeatureFileError::Device)?;
        let pass = PreparedPass::new(FeatureRequest {
            encoder: request.encoder.clone(),
            data: request.data.clone(),
            split,
            split_config: SplitConfig { seed: request.split_seed, ..SplitConfig::default() },
            condition,
            layers: request.layers.clone(),
            batch_size: request.batch_size,
        })?;
        Ok(FeatureFileJob { request, pass, device })
    }

    /// Images the pass embeds.
    pub fn images(&self) -> usize {
        self.pass.indices.len()
    }

    /// Read the cache or embed the images (reporting `(done, total)` to `progress`) and write it.
    pub fn run(&self, progress: &mut dyn FnMut(usize, usize)) -> Result<FeatureFile, FeatureFileError> {
        let start = Instant::now();
        let (set, source) = self.pass.cached(&self.request.out, &self.device, progress)?;
        Ok(FeatureFile { set, source, seconds: start.elapsed().as_secs_f64() })
    }

    /// The line that reports the file: samples (per split), dimensions, layers and the source.
    pub fn summary(&self, file: &FeatureFile) -> String {
        let set = &file.set;
        let how = match file.source {
            FeatureSource::Cache => "read from cache (fingerprint matched)".to_string(),
            FeatureSource::Computed => {
                let secs = file.seconds;
                format!("computed in {secs:.1} s ({:.1} images/s)", set.ids.len() as f64 / secs.max(1e-9))
            }
        };
        let per_split = match &set.splits {
            Some(splits) => {
                let counts: Vec<String> = Split::ALL
                    .iter()
                    .map(|s| format!("{} {}", splits.iter().filter(|r| *r == s).count(), s.name()))
                    .collect();
                format!(" ({})", counts.join(", "))
            }
            None => String::new(),
        };
        format!(
            "{}: {} samples{per_split} x {} dims at layers {:?}, {how}",
            self.request.out.display(),
            set.ids.len(),
            set.dim,
            self.request.layers
        )
    }
}
