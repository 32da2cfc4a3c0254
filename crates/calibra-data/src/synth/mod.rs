//! The synthetic suites (`synth:` datasets): procedurally generated, deterministic from a seed, any
//! size from 28×28 up, no download. They exercise the three task kinds of the protocol and an
//! institutional shift; the generative rules are documented per suite (and in the crate README) so
//! that a result on them can be read for what it is: a test of the pipeline, not of medicine.
//!
//! Every sample `i` of suite `S` with seed `s` owns one random stream, ChaCha20 seeded with
//! SHA-256(`calibra-synth-v1`, S, s, i): the stream first draws the labels and metadata, then the
//! pixels. So a sample's image and labels do not depend on `n`, on the image size's draw order, on
//! other samples or on threads; the image is regenerated on demand by [`SynthImageRef::render`].

mod canvas;
pub mod chest;
pub mod derm;
pub mod fundus;
pub mod shapes;

use crate::dataset::{Dataset, LabelSpace, Metadata, Sample, Target};
use crate::error::DataError;
use crate::image_source::ImageSource;
use crate::pixels::ImageU8;
use crate::rng::rng_from_parts;
use rand_chacha::ChaCha20Rng;

/// One of the synthetic suites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SynthSuite {
    /// `synth:derm`: dermatology-like multiclass, 6 imbalanced lesion classes ([`derm`]).
    Derm,
    /// `synth:fundus`: fundus-like ordinal, 5 grades ([`fundus`]).
    Fundus,
    /// `synth:chest`: chest-radiograph-like multilabel, the 14 CheXpert findings, site A ([`chest`]).
    Chest,
    /// `synth:chest-site-b`: the same findings from a second institution (different intensity
    /// curve, noise, blur, field of view and an older population): the shift target of `synth:chest`.
    ChestSiteB,
    /// `synth:shapes`: a non-medical multiclass task, 6 geometric shapes on textured backgrounds
    /// ([`shapes`]); the pretraining task of the shipped `generalist` encoder.
    Shapes,
}

impl SynthSuite {
    /// All suites.
    pub const ALL: [SynthSuite; 5] =
        [SynthSuite::Derm, SynthSuite::Fundus, SynthSuite::Chest, SynthSuite::ChestSiteB, SynthSuite::Shapes];

    /// The spec name (`derm`, `fundus`, `chest`, `chest-site-b`).
    pub fn name(self) -> &'static str {
        match self {
            SynthSuite::Derm => "derm",
            SynthSuite::Fundus => "fundus",
            SynthSuite::Chest => "chest",
            SynthSuite::ChestSiteB => "chest-site-b",
            SynthSuite::Shapes => "shapes",
        }
    }

    /// Parses a spec name.
    pub fn parse(name: &str) -> Option<SynthSuite> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The label space of the suite.
    pub fn label_space(self) -> LabelSpace {
        match self {
            SynthSuite::Derm => derm::label_space(),
            SynthSuite::Fundus => fundus::label_space(),
            SynthSuite::Chest | SynthSuite::ChestSiteB => chest::label_space(),
            SynthSuite::Shapes => shapes::label_space(),
        }
    }
}

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

/// A reference to one generated image: enough to regenerate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthImageRef {
    pub suite: SynthSuite,
    pub seed: u64,
    pub index: usize,
    pub size: u32,
}

impl SynthImageRef {
    /// Regenerates the image (identical on every call, machine and thread).
    pub fn render(&self) -> ImageU8 {
        let mut rng = case_rng(self.suite, self.seed, self.index);
        let size = self.size as usize;
        match self.suite {
            SynthSuite::Derm => {
                let case = derm::draw(&mut rng);
                derm::render(&case, size, &mut rng)
            }
            SynthSuite::Fundus => {
                let case = fundus::draw(&mut rng);
                fundus::render(&case, size, &mut rng)
            }
            SynthSuite::Chest | SynthSuite::ChestSiteB => {
                let site_b = self.suite == SynthSuite::ChestSiteB;
                let case = chest::draw(&mut rng, site_b);
                chest::render(&case, size, site_b, &mut rng)
            }
            SynthSuite::Shapes => {
                let case = shapes::draw(&mut rng);
                shapes::render(&case, size, &mut rng)
            }
        }
    }

    /// `synth:<suite>#<index>`.
    pub fn describe(&self) -> String {
        format!("synth:{}?seed={}&size={}#{}", self.suite.name(), self.seed, self.size, self.index)
    }
}

fn case_rng(suite: SynthSuite, seed: u64, index: usize) -> ChaCha20Rng {
    rng_from_parts(&["calibra-synth-v1", suite.name(), &seed.to_string(), &index.to_string()])
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
    })
}

/// Draws an index from unnormalised weights.
fn categorical<R: rand::Rng>(rng: &mut R, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}

/// A normal draw with mean and standard deviation, clamped to `[lo, hi]`.
fn normal_clamped<R: rand::Rng>(rng: &mut R, mean: f64, sd: f64, lo: f64, hi: f64) -> f64 {
    (mean + sd * crate::rng::standard_normal(rng)).clamp(lo, hi)
}

/// The metadata every synthetic case carries: age, sex, acquisition quality (rounded to 3 decimals,
/// as written to manifests) and the acquisition site.
pub(crate) fn case_metadata(age: f64, sex: crate::dataset::Sex, quality: f64, site: &str) -> Metadata {
    Metadata {
        age: Some(age),
        sex: Some(sex),
        quality: Some((quality * 1000.0).round() / 1000.0),
        site: Some(site.into()),
        ..Metadata::default()
    }
}
