//! The common dataset types every reader yields: [`Dataset`], [`Sample`], [`Split`], [`SkippedSample`];
//! a sample's [`Target`] and [`LabelSpace`] live in [`crate::label_space`], its [`Metadata`] in
//! [`crate::metadata`] (re-exported here), so that the synthetic suites, which draw them, need not
//! depend on this file.

use crate::error::DataError;
use crate::image_source::ImageSource;
pub use crate::label_space::{LabelSpace, Target, TaskKind};
pub use crate::metadata::{Metadata, Sex};
use crate::readers::BadImagePolicy;
use serde::Serialize;
use std::collections::HashSet;

/// The three evaluation splits of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    Train,
    Calibration,
    Test,
}

impl Split {
    /// All splits in protocol order.
    pub const ALL: [Split; 3] = [Split::Train, Split::Calibration, Split::Test];

    /// Parses an official split name: `train`; `val`, `valid`, `validate`, `validation`,
    /// `calibration`, `cal`; `test`. Case-insensitive.
    pub fn parse(name: &str) -> Option<Split> {
        match name.trim().to_ascii_lowercase().as_str() {
            "train" | "training" => Some(Split::Train),
            "val" | "valid" | "validate" | "validation" | "calibration" | "cal" => Some(Split::Calibration),
            "test" | "testing" => Some(Split::Test),
            _ => None,
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Calibration => "calibration",
            Split::Test => "test",
        }
    }
}

/// One image with its label(s).
#[derive(Debug, Clone)]
pub struct Sample {
    /// Unique within the dataset; keys splits, fractions and perturbation seeds.
    pub id: String,
    pub image: ImageSource,
    pub target: Target,
    pub metadata: Metadata,
    /// The split the source assigns, when it has official splits.
    pub official_split: Option<Split>,
}

/// A manifest entry left out under `--on-bad-image skip`, with the reason (never silent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedSample {
    /// Where the entry came from: `file, line N` or the image path.
    pub location: String,
    pub reason: String,
}

/// A labelled image collection in calibra's common form.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The spec or name it was loaded from.
    pub name: String,
    pub labels: LabelSpace,
    pub samples: Vec<Sample>,
    /// Entries skipped under the `skip` bad-image policy.
    pub skipped: Vec<SkippedSample>,
    /// How an image that cannot be read is treated: the policy the dataset was loaded under (from
    /// the spec's `on_bad_image` option or the caller's [`crate::LoadOptions`]). A reader checks
    /// that files exist; an image that exists but fails to decode is met later, when it is read
    /// (a training epoch streamed from disk), and treated by this policy there.
    pub on_bad_image: BadImagePolicy,
}

impl Dataset {
    /// Checks the invariants readers must uphold: unique ids, every target of the label space's
    /// kind and size, at least one sample.
    pub fn validate(&self) -> Result<(), DataError> {
        if self.samples.is_empty() {
            return Err(DataError::Invalid(format!("dataset `{}` has no samples", self.name)));
        }
        let mut seen = HashSet::with_capacity(self.samples.len());
        for s in &self.samples {
            if !seen.insert(s.id.as_str()) {
                return Err(DataError::Invalid(format!(
                    "dataset `{}`: duplicate sample id `{}`",
                    self.name, s.id
                )));
            }
            match (&s.target, self.labels.kind) {
                (Target::Class(c), TaskKind::Multiclass | TaskKind::Ordinal) if *c < self.labels.len() => {}
                (Target::Labels(v), TaskKind::Multilabel) if v.len() == self.labels.len() => {}
                _ => {
                    return Err(DataError::Invalid(format!(
                        "dataset `{}`: sample `{}` has target {:?}, which does not fit the {:?} label space of {} names",
                        self.name,
                        s.id,
                        s.target,
                        self.labels.kind,
                        self.labels.len()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Per class: the number of samples of that class (multiclass/ordinal), or the number of
    /// positives (multilabel), over the given sample indices.
    pub fn class_counts(&self, indices: &[usize]) -> Vec<usize> {
        let mut counts = vec![0; self.labels.len()];
        for &i in indices {
            match &self.samples[i].target {
                Target::Class(c) => counts[*c] += 1,
                Target::Labels(v) => {
                    for (j, l) in v.iter().enumerate() {
                        if *l == Some(true) {
                            counts[j] += 1;
                        }
                    }
                }
            }
        }
        counts
    }
}
