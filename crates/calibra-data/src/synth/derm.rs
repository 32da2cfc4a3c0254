//! `synth:derm` — a dermoscopy-like multiclass task.
//!
//! Generative rules (per sample, in stream order):
//! 1. True class from the ISIC-like imbalanced prior [`CLASS_PRIOR`] over [`CLASS_NAMES`].
//! 2. Metadata: age ~ N(class mean age, 12²) clamped to [5, 95] (nevi young, keratoses old); sex male
//!    with probability 0.58 for melanoma and BCC, 0.5 otherwise; quality ~ U(0.2, 1).
//! 3. Label noise: with probability [`LABEL_NOISE`] the *recorded* class is another class drawn
//!    uniformly (the image still shows the true class), so no classifier reaches AUROC 1.
//! 4. Image: a skin-toned background (tone varies with sex; mottled for age > 60) and one lesion, a
//!    star-shaped blob `r(θ) = r₀ (1 + Σₖ aₖ cos(kθ + φₖ))`, k = 2..4, stretched by an eccentricity and
//!    rotated. The class sets the radius, eccentricity, border irregularity (aₖ), border sharpness,
//!    colour and texture (value-noise amplitude and scale); melanoma is variegated (two tones).
//!    For age > 60 the lesion contrast is 0.7× (a harder subgroup that subgroup analyses should find).
//! 5. Acquisition quality q: Gaussian blur σ = 1.5 (1 − q) · size/64 pixels and noise σ = 0.06 (1 − q),
//!    so the low-quality stratum is harder.

use super::canvas::{Canvas, ValueNoise, soft_inside};
use super::draw::{case_metadata, categorical, normal_clamped};
use crate::label_space::{LabelSpace, TaskKind};
use crate::metadata::{Metadata, Sex};
use crate::pixels::ImageU8;
use rand::Rng;

/// Class names, in index order.
pub const CLASS_NAMES: [&str; 6] =
    ["nevus", "melanoma", "basal_cell_carcinoma", "benign_keratosis", "actinic_keratosis", "vascular_lesion"];
/// Prior class probabilities (ISIC-like imbalance).
pub const CLASS_PRIOR: [f64; 6] = [0.45, 0.20, 0.13, 0.11, 0.07, 0.04];
/// Probability that the recorded label differs from the true class.
pub const LABEL_NOISE: f64 = 0.05;

/// Per class: (radius r₀, eccentricity, border irregularity, edge softness, rgb colour, texture
/// amplitude, texture cells, mean age).
struct ClassLook {
    radius: f64,
    eccentricity: f64,
    irregularity: f64,
    softness: f64,
    color: [f64; 3],
    texture: f64,
    cells: usize,
    age: f64,
}

const LOOKS: [ClassLook; 6] = [
    ClassLook {
        radius: 0.20,
        eccentricity: 0.08,
        irregularity: 0.03,
        softness: 0.012,
        color: [0.47, 0.31, 0.22],
        texture: 0.06,
        cells: 4,
        age: 40.0,
    },
    ClassLook {
        radius: 0.28,
        eccentricity: 0.22,
        irregularity: 0.20,
        softness: 0.02,
        color: [0.24, 0.14, 0.12],
        texture: 0.35,
        cells: 5,
        age: 60.0,
    },
    ClassLook {
        radius: 0.23,
        eccentricity: 0.12,
        irregularity: 0.10,
        softness: 0.02,
        color: [0.80, 0.60, 0.60],
        texture: 0.18,
        cells: 12,
        age: 68.0,
    },
    ClassLook {
        radius: 0.26,
        eccentricity: 0.30,
        irregularity: 0.08,
        softness: 0.015,
        color: [0.56, 0.44, 0.28],
        texture: 0.25,
        cells: 7,
        age: 62.0,
    },
    ClassLook {
        radius: 0.19,
        eccentricity: 0.35,
        irregularity: 0.15,
        softness: 0.045,
        color: [0.76, 0.44, 0.40],
        texture: 0.20,
        cells: 10,
        age: 70.0,
    },
    ClassLook {
        radius: 0.15,
        eccentricity: 0.10,
        irregularity: 0.04,
        softness: 0.01,
        color: [0.68, 0.16, 0.24],
        texture: 0.12,
        cells: 9,
        age: 45.0,
    },
];

/// The label space of `synth:derm`.
pub fn label_space() -> LabelSpace {
    LabelSpace { kind: TaskKind::Multiclass, names: CLASS_NAMES.iter().map(|s| s.to_string()).collect() }
}

/// The latent description of one sample.
pub struct Case {
    pub true_class: usize,
    pub recorded_class: usize,
    pub metadata: Metadata,
    quality: f64,
}

/// Draws labels and metadata (the first part of a sample's stream).
pub fn draw<R: Rng>(rng: &mut R) -> Case {
    let true_class = categorical(rng, &CLASS_PRIOR);
    let age = normal_clamped(rng, LOOKS[true_class].age, 12.0, 5.0, 95.0).round();
    let p_male = if true_class == 1 || true_class == 2 { 0.58 } else { 0.5 };
    let sex = if rng.random::<f64>() < p_male { Sex::Male } else { Sex::Female };
    let quality = 0.2 + 0.8 * rng.random::<f64>();
    let recorded_class = if rng.random::<f64>() < LABEL_NOISE {
        let other = rng.random_range(0..CLASS_NAMES.len() - 1);
        if other >= true_class { other + 1 } else { other }
    } else {
        true_class
    };
    let metadata = case_metadata(age, sex, quality, "A");
    Case { true_class, recorded_class, metadata, quality }
}

/// Renders the image of a drawn case (the rest of the stream).
pub fn render<R: Rng>(case: &Case, size: usize, rng: &mut R) -> ImageU8 {
    let look = &LOOKS[case.true_class];
    let old = case.metadata.age.unwrap_or(0.0) > 60.0;
    let tone = if case.metadata.sex == Some(Sex::Male) { 0.95 } else { 1.0 };
    let skin = [0.88 * tone, 0.70 * tone, 0.62 * tone];
    let mut canvas = Canvas::filled(size, &skin);
    let skin_noise = ValueNoise::new(rng, 6);
    let mottling = if old { 0.08 } else { 0.03 };
    canvas.add(|u, v| mottling * (skin_noise.at(u, v) - 0.5));

    let jitter = |rng: &mut R, x: f64, rel: f64| x * (1.0 + rel * (2.0 * rng.random::<f64>() - 1.0));
    let r0 = jitter(rng, look.radius, 0.2);
    let ecc = jitter(rng, look.eccentricity, 0.3);
    let angle = rng.random::<f64>() * std::f64::consts::PI;
    let (cx, cy) = (0.5 + 0.08 * (rng.random::<f64>() - 0.5), 0.5 + 0.08 * (rng.random::<f64>() - 0.5));
    let harmonics: Vec<(f64, f64)> = (2..=4)
        .map(|_| (jitter(rng, look.irregularity, 0.5) / 1.5, rng.random::<f64>() * std::f64::consts::TAU))
        .collect();
    let texture = ValueNoise::new(rng, look.cells);
    let variegation = ValueNoise::new(rng, 3);
    let contrast = if old { 0.7 } else { 1.0 };
    let (ca, sa) = (angle.cos(), angle.sin());
    let s = size as f64;
    for y in 0..size {
        for x in 0..size {
            let (u, v) = ((x as f64 + 0.5) / s - cx, (y as f64 + 0.5) / s - cy);
            let (ru, rv) = ((u * ca + v * sa) / (1.0 + ecc), (-u * sa + v * ca) / (1.0 - ecc));
            let theta = rv.atan2(ru);
            let border: f64 = 1.0
                + harmonics
                    .iter()
                    .enumerate()
                    .map(|(k, (a, p))| a * ((k + 2) as f64 * theta + p).cos())
                    .sum::<f64>();
            let d = (ru * ru + rv * rv).sqrt() - r0 * border;
            let alpha = contrast * soft_inside(d, look.softness);
            if alpha < 1e-4 {
                continue;
            }
            let t = 1.0 + look.texture * 2.0 * (texture.at(u + cx, v + cy) - 0.5);
            let mut color = look.color;
            if case.true_class == 1 && variegation.at(u + cx, v + cy) > 0.55 {
                color = [0.38, 0.40, 0.50]; // blue-grey veil of a melanoma
            }
            let p = (y * size + x) * 3;
            for (c, col) in color.iter().enumerate() {
                canvas.data[p + c] = (1.0 - alpha) * canvas.data[p + c] + alpha * col * t;
            }
        }
    }
    canvas.blur(1.5 * (1.0 - case.quality) * s / 64.0);
    canvas.noise(rng, 0.06 * (1.0 - case.quality));
    canvas.to_image()
}
