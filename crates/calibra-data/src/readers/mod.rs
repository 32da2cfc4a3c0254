//! Readers: one per dataset format, each yielding the common [`Dataset`]. [`load_dataset`] dispatches
//! on a [`DatasetSpec`].

pub mod aptos;
pub mod chexpert;
pub mod generic_csv;
pub mod imagefolder;
pub mod isic;
pub mod medmnist;
pub mod mimic;
pub mod npy;
pub mod table;

use crate::dataset::{Dataset, Sample};
use crate::error::DataError;
use crate::spec::{DatasetFormat, DatasetSpec};
use crate::synth::{SynthConfig, SynthSuite, synth_dataset};
use std::collections::HashMap;
use std::path::Path;
pub use table::{BadImagePolicy, LabelCellRules, UncertaintyPolicy};

/// Options that apply to every reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// What to do with entries whose image file is missing (checked at load) or undecodable
    /// (checked by [`crate::preprocess::decode_samples`] and `calibra data inspect --check-images`).
    pub on_bad_image: BadImagePolicy,
}

/// Loads the dataset a spec names, validated (unique ids, targets fit the label space).
pub fn load_dataset(spec: &DatasetSpec, options: &LoadOptions) -> Result<Dataset, DataError> {
    let dataset = match spec.format {
        DatasetFormat::Csv => generic_csv::read(spec, options)?,
        DatasetFormat::ImageFolder => imagefolder::read(spec, options)?,
        DatasetFormat::Isic2019 => isic::read(spec, options)?,
        DatasetFormat::Aptos2019 => aptos::read(spec, options)?,
        DatasetFormat::CheXpert => chexpert::read(spec, options)?,
        DatasetFormat::MimicCxr => mimic::read(spec, options)?,
        DatasetFormat::MedMnist => medmnist::read(spec)?,
        DatasetFormat::Synth => {
            let suite = SynthSuite::parse(&spec.location).ok_or_else(|| {
                spec.error(format!(
                    "unknown synthetic suite `{}`; expected one of {}",
                    spec.location,
                    SynthSuite::ALL.map(|s| s.name()).join(", ")
                ))
            })?;
            let defaults = SynthConfig::new(suite);
            synth_dataset(&SynthConfig {
                suite,
                n: spec.parsed_option("n", defaults.n)?,
                seed: spec.parsed_option("seed", defaults.seed)?,
                size: spec.parsed_option("size", defaults.size)?,
            })?
        }
    };
    dataset.validate()?;
    Ok(dataset)
}

/// Reads the `policy` and `blank` options into multilabel cell rules.
pub(crate) fn label_rules(spec: &DatasetSpec) -> Result<LabelCellRules, DataError> {
    let uncertain = match spec.option("policy") {
        None => UncertaintyPolicy::Ignore,
        Some(v) => UncertaintyPolicy::parse(v)
            .ok_or_else(|| spec.error(format!("option `policy={v}`: expected ignore, zeros or ones")))?,
    };
    let blank_is_missing = match spec.option("blank") {
        None | Some("zeros") => false,
        Some("ignore") => true,
        Some(v) => return Err(spec.error(format!("option `blank={v}`: expected zeros or ignore"))),
    };
    Ok(LabelCellRules { uncertain, blank_is_missing })
}

/// Collects samples while rejecting duplicate ids with the line of both occurrences.
pub(crate) struct SampleCollector {
    samples: Vec<Sample>,
    first_line: HashMap<String, (String, u64)>,
}

impl SampleCollector {
    pub fn new() -> Self {
        Self { samples: Vec::new(), first_line: HashMap::new() }
    }

    /// Adds a sample read from `file` at `line`; a repeated id is an error naming both lines.
    pub fn push(&mut self, sample: Sample, file: &Path, line: u64) -> Result<(), DataError> {
        if let Some((first_file, first)) = self.first_line.get(&sample.id) {
            return Err(DataError::row(
                file,
                line,
                format!("duplicate sample id `{}` (first seen in {first_file}, line {first})", sample.id),
            ));
        }
        self.first_line.insert(sample.id.clone(), (file.display().to_string(), line));
        self.samples.push(sample);
        Ok(())
    }

    pub fn into_samples(self) -> Vec<Sample> {
        self.samples
    }
}
