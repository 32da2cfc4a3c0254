//! One synthetic image by reference ([`SynthImageRef`]): its suite, seed, index and size, enough to
//! regenerate it from the sample's own random stream ([`case_rng`]).

use super::suite::SynthSuite;
use super::{chest, derm, fundus, shapes};
use crate::pixels::ImageU8;
use crate::rng::rng_from_parts;
use rand_chacha::ChaCha20Rng;

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

pub(super) fn case_rng(suite: SynthSuite, seed: u64, index: usize) -> ChaCha20Rng {
    rng_from_parts(&["calibra-synth-v1", suite.name(), &seed.to_string(), &index.to_string()])
}
