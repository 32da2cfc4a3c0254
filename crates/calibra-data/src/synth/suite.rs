//! The names of the synthetic suites ([`SynthSuite`]) and their label spaces.

use super::{chest, derm, fundus, shapes};
use crate::label_space::LabelSpace;

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
