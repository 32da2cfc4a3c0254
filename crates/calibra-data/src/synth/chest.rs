//! `synth:chest` and `synth:chest-site-b` — a chest-radiograph-like multilabel task with the 14
//! CheXpert observations, and its institutional-shift twin.
//!
//! Generative rules (per sample, in stream order):
//! 1. Metadata: age ~ N(58, 16²) clamped to [18, 95] at site A, N(66, 14²) at site B (an older
//!    population); sex male with probability 0.55; quality ~ U(0.2, 1).
//! 2. Findings: each of the 12 pathologies is positive with probability `p · m(age)` where `p` is its
//!    base prevalence ([`BASE_PREVALENCE`]) and `m = 0.6 + 0.8 · (age − 18)/77` (older → more findings).
//!    Dependencies: pneumonia makes consolidation positive with probability 0.6; any of
//!    lung lesion, edema, consolidation, pneumonia, atelectasis makes lung opacity positive with
//!    probability 0.8. Support devices have prevalence 0.3 (0.4 at site B). No finding is positive iff
//!    none of the 12 pathologies is (support devices may co-occur, as in CheXpert).
//! 3. Image (grayscale): dark surround, a bright thorax, two dark lung fields with rib bands and lung
//!    markings, a spine and a heart silhouette. Each finding is a localised structure:
//!    enlarged cardiomediastinum widens the upper mediastinum; cardiomegaly enlarges the heart;
//!    lung opacity is a hazy patch; lung lesion a small dense nodule; edema a bilateral perihilar
//!    haze; consolidation a dense lower-zone patch; pneumonia a mottled patch; atelectasis a basal
//!    linear band; pneumothorax an apical region without lung markings bounded by a pleural line;
//!    pleural effusion a basal meniscus; pleural other a lateral pleural thickening; fracture a rib
//!    step with a bright callus line; support devices a tube and a device box.
//! 4. Acquisition: quality q adds noise σ = 0.05 (1 − q) and blur σ = 1.0 (1 − q) · size/64.
//!    Site B then applies its own acquisition chain: intensity curve x ↦ x^0.7 · 0.9 + 0.05,
//!    extra noise σ = 0.035, blur σ = 0.8 · size/64 and a field of view zoomed to the central 88 %.
//!    The labelling rules are the same at both sites, so a drop from A to B is a shift effect.

use super::canvas::{Canvas, ValueNoise, soft_inside};
use super::draw::{case_metadata, normal_clamped};
use crate::label_space::{LabelSpace, TaskKind};
use crate::metadata::{Metadata, Sex};
use crate::pixels::ImageU8;
use rand::Rng;

/// The 14 CheXpert observations, in the CheXpert CSV column order.
pub const LABEL_NAMES: [&str; 14] = [
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
];

/// Base prevalence of labels 1..=12 (the pathologies), before the age multiplier and dependencies.
pub const BASE_PREVALENCE: [f64; 12] =
    [0.06, 0.14, 0.18, 0.06, 0.15, 0.07, 0.05, 0.15, 0.08, 0.25, 0.04, 0.05];

/// The label space (14 labels, multilabel).
pub fn label_space() -> LabelSpace {
    LabelSpace { kind: TaskKind::Multilabel, names: LABEL_NAMES.iter().map(|s| s.to_string()).collect() }
}

/// The latent description of one sample.
pub struct Case {
    pub findings: [bool; 14],
    pub metadata: Metadata,
    quality: f64,
}

/// Draws labels and metadata.
pub fn draw<R: Rng>(rng: &mut R, site_b: bool) -> Case {
    let age = if site_b {
        normal_clamped(rng, 66.0, 14.0, 18.0, 95.0)
    } else {
        normal_clamped(rng, 58.0, 16.0, 18.0, 95.0)
    }
    .round();
    let sex = if rng.random::<f64>() < 0.55 { Sex::Male } else { Sex::Female };
    let quality = 0.2 + 0.8 * rng.random::<f64>();
    let m = 0.6 + 0.8 * (age - 18.0) / 77.0;
    let mut f = [false; 14];
    for (j, p) in BASE_PREVALENCE.iter().enumerate() {
        f[j + 1] = rng.random::<f64>() < p * m;
    }
    if f[7] && rng.random::<f64>() < 0.6 {
        f[6] = true;
    }
    if (f[4] || f[5] || f[6] || f[7] || f[8]) && rng.random::<f64>() < 0.8 {
        f[3] = true;
    }
    f[13] = rng.random::<f64>() < if site_b { 0.4 } else { 0.3 };
    f[0] = !f[1..13].iter().any(|&x| x);
    let metadata = case_metadata(age, sex, quality, if site_b { "B" } else { "A" });
    Case { findings: f, metadata, quality }
}

fn gauss(u: f64, v: f64, cx: f64, cy: f64, sx: f64, sy: f64) -> f64 {
    (-0.5 * (((u - cx) / sx).powi(2) + ((v - cy) / sy).powi(2))).exp()
}

/// Renders the image of a drawn case.
pub fn render<R: Rng>(case: &Case, size: usize, site_b: bool, rng: &mut R) -> ImageU8 {
    let s = size as f64;
    let px = 1.0 / s;
    let f = &case.findings;
    let mut c = Canvas::filled(size, &[0.06]);
    // Thorax.
    c.blend(&[0.62], |u, v| soft_inside(((u - 0.5) / 0.42).powi(2) + ((v - 0.55) / 0.5).powi(2) - 1.0, 0.08));
    // Lung fields: (centre u, half-width, top, bottom).
    let lungs = [(0.33, 0.14, 0.18, 0.80), (0.67, 0.14, 0.18, 0.80)];
    let in_lung = |u: f64, v: f64, l: usize| {
        let (cx, hw, top, bottom) = lungs[l];
        let cy = (top + bottom) / 2.0;
        let hh = (bottom - top) / 2.0;
        ((u - cx) / hw).powi(2) + ((v - cy) / hh).powi(2) - 1.0
    };
    let markings = ValueNoise::new(rng, 14);
    let pneumothorax_side = if rng.random::<bool>() { 0 } else { 1 };
    c.blend(&[0.16], |u, v| (0..2).map(|l| soft_inside(in_lung(u, v, l), 0.06)).fold(0.0, f64::max));
    // Lung markings, absent in the apical part of a pneumothorax.
    c.add(|u, v| {
        let inside = (0..2).map(|l| soft_inside(in_lung(u, v, l), 0.06)).fold(0.0, f64::max);
        let ptx = f[9] && (u < 0.5) == (pneumothorax_side == 0) && v < 0.45;
        if ptx { -0.05 * inside } else { 0.10 * inside * (markings.at(u, v) - 0.4) }
    });
    // Ribs: bright bands across the lungs.
    let rib_phase = rng.random::<f64>();
    c.add(|u, v| {
        let inside = (0..2).map(|l| soft_inside(in_lung(u, v, l), 0.06)).fold(0.0, f64::max);
        let t = (v * 9.0 + 1.2 * (u - 0.5).abs() + rib_phase).fract();
        inside * 0.10 * soft_inside((t - 0.5).abs() - 0.12, 0.04)
    });
    // Spine and mediastinum.
    let mediastinum = if f[1] { 0.11 } else { 0.07 };
    c.blend(&[0.70], |u, v| soft_inside((u - 0.5).abs() - mediastinum, 0.015) * soft_inside(0.12 - v, 0.02));
    // Heart.
    let heart = if f[2] { 0.17 } else { 0.12 } * (1.0 + 0.08 * (rng.random::<f64>() - 0.5));
    c.blend(&[0.72], |u, v| {
        soft_inside(((u - 0.46) / (heart * 1.25)).powi(2) + ((v - 0.66) / heart).powi(2) - 1.0, 0.1)
    });
    let lung_point = |rng: &mut R, lower: bool| -> (f64, f64) {
        let l = rng.random_range(0..2usize);
        let (cx, hw, top, bottom) = lungs[l];
        let v = if lower {
            top + (bottom - top) * (0.6 + 0.3 * rng.random::<f64>())
        } else {
            top + (bottom - top) * (0.15 + 0.7 * rng.random::<f64>())
        };
        (cx + hw * 0.8 * (2.0 * rng.random::<f64>() - 1.0), v)
    };
    if f[3] {
        let (x, y) = lung_point(rng, false);
        c.add(|u, v| 0.16 * gauss(u, v, x, y, 0.07, 0.06));
    }
    if f[4] {
        let (x, y) = lung_point(rng, false);
        let r = 0.018 + 0.012 * rng.random::<f64>();
        c.add(|u, v| 0.35 * soft_inside(((u - x).powi(2) + (v - y).powi(2)).sqrt() - r.max(px), 0.5 * px));
    }
    if f[5] {
        c.add(|u, v| 0.14 * (gauss(u, v, 0.36, 0.5, 0.08, 0.1) + gauss(u, v, 0.64, 0.5, 0.08, 0.1)));
    }
    if f[6] {
        let (x, y) = lung_point(rng, true);
        c.add(|u, v| 0.30 * gauss(u, v, x, y, 0.06, 0.05));
    }
    if f[7] {
        let (x, y) = lung_point(rng, false);
        let mottle = ValueNoise::new(rng, 20);
        c.add(|u, v| 0.28 * gauss(u, v, x, y, 0.06, 0.06) * (0.5 + mottle.at(u, v)));
    }
    if f[8] {
        let (x, y) = lung_point(rng, true);
        c.add(|u, v| {
            0.22 * soft_inside((v - y).abs() - 1.2 * px.max(0.008), 0.5 * px) * gauss(u, v, x, y, 0.07, 1.0)
        });
    }
    if f[9] {
        let (cx, hw, top, _) = lungs[pneumothorax_side];
        let x_line = cx + if pneumothorax_side == 0 { -0.4 } else { 0.4 } * hw;
        c.add(|u, v| {
            0.18 * soft_inside((u - x_line).abs() - 0.6 * px, 0.4 * px)
                * soft_inside(v - 0.45, 0.01)
                * soft_inside(top - v, 0.01)
        });
    }
    if f[10] {
        let l = rng.random_range(0..2usize);
        let (cx, hw, _, bottom) = lungs[l];
        let level = bottom - 0.12 - 0.08 * rng.random::<f64>();
        c.blend(&[0.62], |u, v| {
            let meniscus = level - 0.06 * ((u - cx) / hw).powi(2);
            soft_inside(in_lung(u, v, l), 0.03) * soft_inside(meniscus - v, 0.015)
        });
    }
    if f[11] {
        let l = rng.random_range(0..2usize);
        let (cx, hw, _, _) = lungs[l];
        let edge = cx + if l == 0 { -hw } else { hw };
        c.add(|u, v| {
            0.25 * soft_inside((u - edge).abs() - 0.012, 0.4 * px) * gauss(u, v, edge, 0.45, 1.0, 0.12)
        });
    }
    if f[12] {
        let (x, y) = lung_point(rng, false);
        c.add(|u, v| {
            let along = (u - x) * 0.8 + (v - y) * 0.6;
            let across = -(u - x) * 0.6 + (v - y) * 0.8;
            0.35 * soft_inside(across.abs() - 0.7 * px, 0.4 * px) * soft_inside(along.abs() - 0.05, 0.01)
        });
    }
    if f[13] {
        let tube_x = 0.5 + 0.03 * (rng.random::<f64>() - 0.5);
        let tube_end = 0.45 + 0.1 * rng.random::<f64>();
        c.add(|u, v| {
            0.4 * soft_inside((u - tube_x).abs() - 0.7 * px, 0.3 * px) * soft_inside(v - tube_end, 0.005)
        });
        c.blend(&[0.98], |u, v| soft_inside((u - 0.2).abs().max((v - 0.14).abs()) - 0.035, 0.3 * px));
    }
    let q = case.quality;
    c.blur(1.0 * (1.0 - q) * s / 64.0);
    c.noise(rng, 0.05 * (1.0 - q));
    if site_b {
        c.map(|x| x.clamp(0.0, 1.0).powf(0.7) * 0.9 + 0.05);
        c.blur(0.8 * s / 64.0);
        c.noise(rng, 0.035);
        c.zoom(0.88);
    }
    c.to_image()
}
