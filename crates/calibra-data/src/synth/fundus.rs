//! `synth:fundus` — a fundus-photograph-like ordinal task with 5 grades (0 = none … 4 = proliferative).
//!
//! Generative rules (per sample, in stream order):
//! 1. True grade from the APTOS-like prior [`GRADE_PRIOR`].
//! 2. Metadata: age ~ N(50 + 3·grade, 12²) clamped to [18, 90]; sex male with probability 0.55;
//!    quality ~ U(0.2, 1).
//! 3. Label noise: with probability [`LABEL_NOISE`] the recorded grade is an adjacent grade (graders
//!    disagree by one step, never by four).
//! 4. Image: black surround, an orange-red disc with radial vignetting, a bright optic disc, and
//!    6 dark vessel arcs leaving it. Lesions follow the grade: microaneurysms (small dark-red dots)
//!    number ≈ 0, 4, 12, 24, 36 for grades 0–4 (jitter ±30 %); from grade 2 hard exudates
//!    (yellow dots, ≈ 3 per grade above 1); from grade 3 blot haemorrhages (larger dark spots, 2 per grade
//!    above 2); grade 4 adds fine neovascular loops near the optic disc. Lesion radius grows with grade.
//! 5. Acquisition quality q: uneven illumination (a brightness gradient of amplitude 0.25 (1 − q)),
//!    blur σ = 1.2 (1 − q) · size/64 and noise σ = 0.05 (1 − q). Men get a slightly darker fundus
//!    (pigmentation 0.92×), a nuisance a subgroup analysis may pick up.

use super::canvas::{Canvas, soft_inside};
use super::draw::{case_metadata, categorical, normal_clamped};
use crate::label_space::{LabelSpace, TaskKind};
use crate::metadata::{Metadata, Sex};
use crate::pixels::ImageU8;
use rand::Rng;

/// Grade prior (APTOS 2019-like).
pub const GRADE_PRIOR: [f64; 5] = [0.49, 0.10, 0.27, 0.05, 0.09];
/// Probability that the recorded grade is off by one.
pub const LABEL_NOISE: f64 = 0.08;
const MICROANEURYSMS: [f64; 5] = [0.0, 4.0, 12.0, 24.0, 36.0];

/// The label space of `synth:fundus` (grades `0`..`4`).
pub fn label_space() -> LabelSpace {
    LabelSpace { kind: TaskKind::Ordinal, names: (0..5).map(|g| g.to_string()).collect() }
}

/// The latent description of one sample.
pub struct Case {
    pub true_grade: usize,
    pub recorded_grade: usize,
    pub metadata: Metadata,
    quality: f64,
}

/// Draws labels and metadata.
pub fn draw<R: Rng>(rng: &mut R) -> Case {
    let true_grade = categorical(rng, &GRADE_PRIOR);
    let age = normal_clamped(rng, 50.0 + 3.0 * true_grade as f64, 12.0, 18.0, 90.0).round();
    let sex = if rng.random::<f64>() < 0.55 { Sex::Male } else { Sex::Female };
    let quality = 0.2 + 0.8 * rng.random::<f64>();
    let recorded_grade = if rng.random::<f64>() < LABEL_NOISE {
        match true_grade {
            0 => 1,
            4 => 3,
            g if rng.random::<bool>() => g + 1,
            g => g - 1,
        }
    } else {
        true_grade
    };
    let metadata = case_metadata(age, sex, quality, "A");
    Case { true_grade, recorded_grade, metadata, quality }
}

/// A point uniformly inside the retina disc (radius 0.42 around the centre), away from the rim.
fn point_in_disc<R: Rng>(rng: &mut R) -> (f64, f64) {
    let r = 0.38 * rng.random::<f64>().sqrt();
    let t = rng.random::<f64>() * std::f64::consts::TAU;
    (0.5 + r * t.cos(), 0.5 + r * t.sin())
}

/// Renders the image of a drawn case.
pub fn render<R: Rng>(case: &Case, size: usize, rng: &mut R) -> ImageU8 {
    let s = size as f64;
    let px = 1.0 / s;
    let g = case.true_grade;
    let pigment = if case.metadata.sex == Some(Sex::Male) { 0.92 } else { 1.0 };
    let mut canvas = Canvas::filled(size, &[0.0, 0.0, 0.0]);
    let retina = [0.78 * pigment, 0.36 * pigment, 0.16 * pigment];
    canvas.blend(&retina, |u, v| {
        let r = ((u - 0.5).powi(2) + (v - 0.5).powi(2)).sqrt();
        soft_inside(r - 0.44, 0.006)
    });
    // Vignetting: darker towards the rim.
    canvas.add(|u, v| {
        let r = ((u - 0.5).powi(2) + (v - 0.5).powi(2)).sqrt();
        if r < 0.44 { -0.35 * (r / 0.44).powi(2) * 0.5 } else { 0.0 }
    });
    let side = if rng.random::<bool>() { 1.0 } else { -1.0 };
    let (ox, oy) = (0.5 + side * 0.2, 0.5 + 0.03 * (rng.random::<f64>() - 0.5));
    // Vessels: arcs leaving the optic disc.
    let vessels: Vec<(f64, f64, f64)> = (0..6)
        .map(|i| {
            let base = (i as f64 / 6.0) * std::f64::consts::TAU + 0.3 * rng.random::<f64>();
            (base, 0.15 + 0.25 * rng.random::<f64>(), 0.004 + 0.004 * rng.random::<f64>())
        })
        .collect();
    canvas.blend(&[0.45 * pigment, 0.08, 0.06], |u, v| {
        let (du, dv) = (u - ox, v - oy);
        let r = (du * du + dv * dv).sqrt();
        let t = dv.atan2(du);
        let mut a: f64 = 0.0;
        for &(base, curl, width) in &vessels {
            // Polar arc: angle drifts with radius by `curl`.
            let mut dt = (t - base - curl * r * 4.0).rem_euclid(std::f64::consts::TAU);
            if dt > std::f64::consts::PI {
                dt -= std::f64::consts::TAU;
            }
            let dist = (dt * r).abs();
            if r < 0.5 {
                a = a.max(0.8 * soft_inside(dist - width.max(0.6 * px), 0.5 * px));
            }
        }
        a
    });
    canvas.blend(&[0.98, 0.92, 0.65], |u, v| {
        let r = ((u - ox).powi(2) + (v - oy).powi(2)).sqrt();
        soft_inside(r - 0.06, 0.01)
    });
    // Lesions.
    let jitter = |rng: &mut R, x: f64| (x * (0.7 + 0.6 * rng.random::<f64>())).round() as usize;
    let spots = |rng: &mut R, count: usize, radius: f64| -> Vec<(f64, f64, f64)> {
        (0..count)
            .map(|_| {
                let (u, v) = point_in_disc(rng);
                (u, v, (radius * (0.7 + 0.6 * rng.random::<f64>())).max(0.6 * px))
            })
            .collect()
    };
    let lesion_scale = 1.0 + 0.25 * g as f64;
    let n_micro = jitter(rng, MICROANEURYSMS[g]);
    let micro = spots(rng, n_micro, 0.007 * lesion_scale);
    let n_exudates = if g >= 2 { jitter(rng, 3.0 * (g - 1) as f64) } else { 0 };
    let exudates = spots(rng, n_exudates, 0.009 * lesion_scale);
    let n_blots = if g >= 3 { jitter(rng, 2.0 * (g - 2) as f64) } else { 0 };
    let blots = spots(rng, n_blots, 0.02 * lesion_scale);
    let draw_spots = |canvas: &mut Canvas, list: &[(f64, f64, f64)], color: [f64; 3]| {
        canvas.blend(&color, |u, v| {
            list.iter()
                .map(|&(x, y, r)| soft_inside(((u - x).powi(2) + (v - y).powi(2)).sqrt() - r, 0.4 * px))
                .fold(0.0, f64::max)
        });
    };
    draw_spots(&mut canvas, &micro, [0.35, 0.02, 0.03]);
    draw_spots(&mut canvas, &exudates, [0.95, 0.85, 0.35]);
    draw_spots(&mut canvas, &blots, [0.30, 0.03, 0.03]);
    if g == 4 {
        let loops: Vec<(f64, f64)> =
            (0..4).map(|_| (0.03 + 0.04 * rng.random::<f64>(), rng.random::<f64>() * 6.3)).collect();
        canvas.blend(&[0.55, 0.06, 0.08], |u, v| {
            loops
                .iter()
                .map(|&(rad, ph)| {
                    let (cx, cy) = (ox + 0.08 * ph.cos(), oy + 0.08 * ph.sin());
                    let r = ((u - cx).powi(2) + (v - cy).powi(2)).sqrt();
                    0.9 * soft_inside((r - rad).abs() - 0.6 * px, 0.4 * px)
                })
                .fold(0.0, f64::max)
        });
    }
    // Acquisition quality.
    let q = case.quality;
    let tilt = rng.random::<f64>() * std::f64::consts::TAU;
    canvas.add(|u, v| 0.25 * (1.0 - q) * ((u - 0.5) * tilt.cos() + (v - 0.5) * tilt.sin()));
    canvas.blur(1.2 * (1.0 - q) * s / 64.0);
    canvas.noise(rng, 0.05 * (1.0 - q));
    // Keep the surround black.
    let mut image = canvas.to_image();
    for y in 0..size {
        for x in 0..size {
            let r = (((x as f64 + 0.5) / s - 0.5).powi(2) + ((y as f64 + 0.5) / s - 0.5).powi(2)).sqrt();
            if r > 0.46 {
                image.data[(y * size + x) * 3..(y * size + x) * 3 + 3].fill(0);
            }
        }
    }
    image
}
