//! A whole synthetic dataset ([`synth_dataset`] of a [`SynthConfig`]): each sample's labels and
//! metadata drawn from the head of its stream, its image left to [`SynthImageRef::render`].

use super::image_ref::{SynthImageRef, case_rng};
use super::suite::SynthSuite;
use super::{chest, derm, fundus, shapes};
use crate::dataset::{Dataset, Sample};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::label_space::Target;
use crate::metadata::Metadata;

/// How to generate a synthetic dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthConfig {
    pub suite: SynthSuite,
    /// Number of samples (default 600).
    pub n: usize,
    /// Dataset seed (default 0): different seeds give different patients.
    pub seed: u64,
    /// Image side in pixels, at least 28 (default 64).
    pub size: u32,
}

impl SynthConfig {
    /// The defaults for a suite: 600 samples, seed 0, 64×64.
    pub fn new(suite: SynthSuite) -> Self {
        Self { suite, n: 600, seed: 0, size: 64 }
    }
}

/// The labels and metadata of sample `index` (the first draws of its stream).
fn draw_target(suite: SynthSuite, seed: u64, index: usize) -> (Target, Metadata) {
    let mut rng = case_rng(suite, seed, index);
    match suite {
        SynthSuite::Derm => {
            let c = derm::draw(&mut rng);
            (Target::Class(c.recorded_class), c.metadata)
        }
        SynthSuite::Fundus => {
            let c = fundus::draw(&mut rng);
            (Target::Class(c.recorded_grade), c.metadata)
        }
        SynthSuite::Chest | SynthSuite::ChestSiteB => {
            let c = chest::draw(&mut rng, suite == SynthSuite::ChestSiteB);
            (Target::Labels(c.findings.iter().map(|&f| Some(f)).collect()), c.metadata)
        }
        SynthSuite::Shapes => {
            let c = shapes::draw(&mut rng);
            (Target::Class(c.class), c.metadata)
        }
    }
}

/// Generates the dataset described by `config`. Images are rendered lazily (see [`SynthImageRef`]).
pub fn synth_dataset(config: &SynthConfig) -> Result<Dataset, DataError> {
    if config.size < 28 {
        return Err(DataError::Invalid(format!(
            "synthetic images are at least 28 pixels wide, not {}",
            config.size
        )));
    }
    if config.n == 0 {
        return Err(DataError::Invalid("a synthetic dataset needs n >= 1 samples".into()));
    }
    let samples = (0..config.n)
        .map(|index| {
            let (target, metadata) = draw_target(config.suite, config.seed, index);
            Sample {
                id: format!("{}-{}-{index:06}", config.suite.name(), config.seed),
                image: ImageSource::Synthetic(SynthImageRef {
                    suite: config.suite,
                    seed: config.seed,
                    index,
                    size: config.size,
                }),
                target,
                metadata,
                official_split: None,
            }
        })
        .collect();
    Ok(Dataset {
        name: format!(
            "synth:{}?n={}&seed={}&size={}",
            config.suite.name(),
            config.n,
            config.seed,
            config.size
        ),
        labels: config.suite.label_space(),
        samples,
        skipped: Vec::new(),
        on_bad_image: crate::BadImagePolicy::Fail,
    })
}
