//! `synth:shapes` — a non-medical multiclass task: one coloured geometric shape on a textured
//! background. It is what the `generalist` encoder of the shipped panel is pretrained on (a stand-in
//! for a natural-image pretraining corpus: it teaches edges, colour contrast and shape, nothing clinical).
//!
//! Generative rules (per sample, in stream order):
//! 1. Class uniform over [`CLASS_NAMES`] (no label noise): circle, square, triangle, ring, cross, bar.
//! 2. Metadata: quality ~ U(0.3, 1), site `A` (no age or sex: these are not patients).
//! 3. Background: a random colour, dark (each channel U(0, 0.45)) or light (U(0.55, 1)) with
//!    probability ½, modulated by two value-noise textures (a coarse one of 3 cells, amplitude 0.25 and a
//!    fine one of 10 cells, amplitude 0.15) and diagonal stripes of random angle, period and amplitude
//!    up to 0.12.
//! 4. Shape: its colour is on the other side of the brightness split from the background (so it is
//!    always visible); size r ~ U(0.16, 0.30) of the side, centre within ±0.12 of the middle, rotation
//!    U(0, 2π); a signed-distance outline with a logistic edge 0.01 wide. Colour carries no class
//!    information; only the geometry does.
//! 5. Quality q: Gaussian blur σ = (1 − q) · size/64 pixels and noise σ = 0.05 (1 − q).

use super::canvas::{Canvas, ValueNoise, soft_inside};
use crate::label_space::{LabelSpace, TaskKind};
use crate::metadata::Metadata;
use crate::pixels::ImageU8;
use rand::Rng;

/// Class names, in index order.
pub const CLASS_NAMES: [&str; 6] = ["circle", "square", "triangle", "ring", "cross", "bar"];

/// The label space of `synth:shapes`.
pub fn label_space() -> LabelSpace {
    LabelSpace { kind: TaskKind::Multiclass, names: CLASS_NAMES.iter().map(|s| s.to_string()).collect() }
}

/// The latent description of one sample.
pub struct Case {
    pub class: usize,
    pub metadata: Metadata,
    quality: f64,
}

/// Draws the label and metadata (the first part of a sample's stream).
pub fn draw<R: Rng>(rng: &mut R) -> Case {
    let class = rng.random_range(0..CLASS_NAMES.len());
    let quality = 0.3 + 0.7 * rng.random::<f64>();
    let metadata = Metadata {
        quality: Some((quality * 1000.0).round() / 1000.0),
        site: Some("A".into()),
        ..Metadata::default()
    };
    Case { class, metadata, quality }
}

/// Signed distance (negative inside) of the point `(x, y)` (shape frame: centred, unrotated) to the
/// outline of `class` with size `r`.
fn signed_distance(class: usize, x: f64, y: f64, r: f64) -> f64 {
    match class {
        0 => (x * x + y * y).sqrt() - r,
        1 => x.abs().max(y.abs()) - 0.85 * r,
        2 => {
            (0..3)
                .map(|k| {
                    let t = std::f64::consts::FRAC_PI_2 + k as f64 * std::f64::consts::TAU / 3.0;
                    x * t.cos() + y * t.sin()
                })
                .fold(f64::NEG_INFINITY, f64::max)
                - 0.5 * r
        }
        3 => ((x * x + y * y).sqrt() - 0.8 * r).abs() - 0.22 * r,
        4 => (x.abs() - r).max(y.abs() - 0.3 * r).min((x.abs() - 0.3 * r).max(y.abs() - r)),
        _ => (x.abs() - 1.1 * r).max(y.abs() - 0.28 * r),
    }
}

/// Renders the image of a drawn case (the rest of the stream).
pub fn render<R: Rng>(case: &Case, size: usize, rng: &mut R) -> ImageU8 {
    let dark_background = rng.random::<f64>() < 0.5;
    let mut side = |dark: bool| -> [f64; 3] {
        let mut c = [0.0; 3];
        for v in &mut c {
            let u = rng.random::<f64>() * 0.45;
            *v = if dark { u } else { 0.55 + u };
        }
        c
    };
    let background = side(dark_background);
    let foreground = side(!dark_background);
    let mut canvas = Canvas::filled(size, &background);
    let coarse = ValueNoise::new(rng, 3);
    let fine = ValueNoise::new(rng, 10);
    let stripe_angle = rng.random::<f64>() * std::f64::consts::PI;
    let stripe_period = 0.08 + 0.17 * rng.random::<f64>();
    let stripe_amp = 0.12 * rng.random::<f64>();
    let (sa, ca) = stripe_angle.sin_cos();
    canvas.add(|u, v| {
        0.25 * (coarse.at(u, v) - 0.5)
            + 0.15 * (fine.at(u, v) - 0.5)
            + stripe_amp * ((u * ca + v * sa) * std::f64::consts::TAU / stripe_period).sin()
    });

    let r = 0.16 + 0.14 * rng.random::<f64>();
    let cx = 0.5 + 0.24 * (rng.random::<f64>() - 0.5);
    let cy = 0.5 + 0.24 * (rng.random::<f64>() - 0.5);
    let (sin, cos) = (rng.random::<f64>() * std::f64::consts::TAU).sin_cos();
    let class = case.class;
    canvas.blend(&foreground, |u, v| {
        let (du, dv) = (u - cx, v - cy);
        let (x, y) = (du * cos + dv * sin, -du * sin + dv * cos);
        soft_inside(signed_distance(class, x, y, r), 0.01)
    });
    canvas.blur((1.0 - case.quality) * size as f64 / 64.0);
    canvas.noise(rng, 0.05 * (1.0 - case.quality));
    canvas.to_image()
}

#[cfg(test)]
mod tests {
    use super::signed_distance;

    /// The centre is inside every shape except the ring (whose hole is the centre), and a far point
    /// is outside all of them.
    #[test]
    fn centre_inside_far_point_outside() {
        for class in 0..6 {
            let centre = signed_distance(class, 0.0, 0.0, 0.2);
            if class == 3 {
                assert!(centre > 0.0);
                assert!(signed_distance(class, 0.16, 0.0, 0.2) < 0.0);
            } else {
                assert!(centre < 0.0, "class {class}");
            }
            assert!(signed_distance(class, 0.5, 0.5, 0.2) > 0.0, "class {class}");
        }
    }
}
