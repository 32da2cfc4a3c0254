//! The five acquisition-quality perturbations of the protocol (crs-protocol §3), three severities each.
//!
//! | perturbation | parameter | severity 1 | severity 2 | severity 3 |
//! |---|---|---|---|---|
//! | `gaussian-blur` | σ in pixels (× shorter side / 224 above 224 pixels) | 1.0 | 2.0 | 4.0 |
//! | `jpeg` | JPEG quality (libjpeg scaling, 4:2:0 chroma subsampling for RGB) | 40 | 20 | 10 |
//! | `contrast` | factor c in `x' = m + c (x − m)`, m the per-channel image mean | 0.7 | 0.5 | 0.3 |
//! | `rician-noise` | σ on the [0, 1] intensity scale | 0.03 | 0.06 | 0.12 |
//! | `fov-crop` | fraction of each side kept (centre crop, then resized back) | 0.90 | 0.80 | 0.70 |
//!
//! Perturbations act on the stored image (before an encoder's own resize), so the same perturbed
//! pixels reach every encoder. Blur is scaled by the shorter side above 224 pixels so that a severity
//! means about the same blur, relative to the anatomy, on 224-pixel and 1024-pixel images once an encoder
//! has resized them to its input; below 224 pixels σ stays in pixels (a smaller σ would vanish on
//! 28-pixel MedMNIST images, whose detail is already at the pixel scale).
//!
//! Randomness: each (image, perturbation, severity) has its own ChaCha20 stream seeded with
//! SHA-256(`calibra-perturb-v1`, image id, perturbation name, severity) ([`perturbation_seed`]);
//! only Rician noise draws from it today (two 64-bit words per value, both outputs of one Box–Muller
//! transform), but every perturbation receives it, so a future random variant cannot silently share
//! streams. Results are identical across runs, machines and thread counts (images are perturbed
//! independently; the Rician noise of one image runs in blocks that each seek their own position in
//! the stream). [`Perturbation::definition_version`] says when a definition changed its pixels.

mod blur;
mod contrast;
mod fast_math;
mod fov_crop;
pub(crate) mod jpeg;
mod rician;

pub use blur::gaussian_blur;
pub use contrast::reduce_contrast;
pub use fov_crop::fov_crop;
pub use jpeg::{encode_jpeg, jpeg_roundtrip};
pub use rician::{rician_noise, rician_noise_reference};

use crate::error::DataError;
use crate::hashing::sha256_parts;
use crate::pixels::ImageU8;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

/// One of the five perturbations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Perturbation {
    GaussianBlur,
    Jpeg,
    Contrast,
    RicianNoise,
    FovCrop,
}

impl Perturbation {
    /// All five, in protocol order.
    pub const ALL: [Perturbation; 5] = [
        Perturbation::GaussianBlur,
        Perturbation::Jpeg,
        Perturbation::Contrast,
        Perturbation::RicianNoise,
        Perturbation::FovCrop,
    ];

    /// The stable name used in seeds, files and run keys.
    pub fn name(self) -> &'static str {
        match self {
            Perturbation::GaussianBlur => "gaussian-blur",
            Perturbation::Jpeg => "jpeg",
            Perturbation::Contrast => "contrast",
            Perturbation::RicianNoise => "rician-noise",
            Perturbation::FovCrop => "fov-crop",
        }
    }

    /// Parses a name from [`Perturbation::name`].
    pub fn parse(name: &str) -> Option<Perturbation> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The version of this perturbation's definition: it changes whenever the same (image, id,
    /// severity) gives different pixels, so anything that caches perturbed pixels or features must
    /// put it in its key. Rician noise is at 2 (one Box–Muller pair per value since 2026-11-30,
    /// see [`rician_noise`]); the others are at 1.
    pub fn definition_version(self) -> u32 {
        match self {
            Perturbation::RicianNoise => 2,
            Perturbation::GaussianBlur
            | Perturbation::Jpeg
            | Perturbation::Contrast
            | Perturbation::FovCrop => 1,
        }
    }

    /// The documented parameter of each severity 1, 2, 3 (see the module table).
    pub fn ladder(self) -> [f64; Severity::MAX_LEVEL as usize] {
        match self {
            Perturbation::GaussianBlur => [1.0, 2.0, 4.0],
            Perturbation::Jpeg => [40.0, 20.0, 10.0],
            Perturbation::Contrast => [0.7, 0.5, 0.3],
            Perturbation::RicianNoise => [0.03, 0.06, 0.12],
            Perturbation::FovCrop => [0.90, 0.80, 0.70],
        }
    }
}

/// A severity level, 1 (mild) to 3 (severe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Severity(u8);

impl Severity {
    /// The largest level implemented (levels are `1..=MAX_LEVEL`). The one source of truth: the
    /// ladders above have this many steps, and recipe validation (calibra-run) reads it.
    pub const MAX_LEVEL: u8 = 3;

    /// All three severities.
    pub const ALL: [Severity; Self::MAX_LEVEL as usize] = [Severity(1), Severity(2), Severity(3)];

    /// A severity from 1, 2 or 3.
    pub fn new(level: u8) -> Result<Severity, DataError> {
        if (1..=Self::MAX_LEVEL).contains(&level) {
            Ok(Severity(level))
        } else {
            Err(DataError::Invalid(format!("severity must be 1..={}, got {level}", Self::MAX_LEVEL)))
        }
    }

    /// 1, 2 or 3.
    pub fn level(self) -> u8 {
        self.0
    }
}

/// The 32-byte seed of the random stream of (image id, perturbation, severity):
/// SHA-256 of `calibra-perturb-v1 \0 id \0 name \0 level`.
pub fn perturbation_seed(image_id: &str, perturbation: Perturbation, severity: Severity) -> [u8; 32] {
    sha256_parts(&["calibra-perturb-v1", image_id, perturbation.name(), &severity.level().to_string()])
}

/// Applies one perturbation at one severity to the image of sample `image_id`.
pub fn perturb(
    image: &ImageU8,
    image_id: &str,
    perturbation: Perturbation,
    severity: Severity,
) -> Result<ImageU8, DataError> {
    let mut rng = ChaCha20Rng::from_seed(perturbation_seed(image_id, perturbation, severity));
    let p = perturbation.ladder()[severity.level() as usize - 1];
    match perturbation {
        Perturbation::GaussianBlur => {
            let short = f64::from(image.width.min(image.height));
            Ok(gaussian_blur(image, p * (short / 224.0).max(1.0)))
        }
        Perturbation::Jpeg => jpeg_roundtrip(image, p as u8),
        Perturbation::Contrast => Ok(reduce_contrast(image, p)),
        Perturbation::RicianNoise => Ok(rician_noise(image, p, &mut rng)),
        Perturbation::FovCrop => Ok(fov_crop(image, p)),
    }
}
