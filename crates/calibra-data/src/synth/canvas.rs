//! A small f64 drawing surface for the procedural generators: soft shapes, smooth noise, blur.

use crate::filters::gaussian_blur;
use crate::pixels::{ImageU8, to_u8};
use rand::Rng;

/// A `size × size` image with 1 or 3 channels, intensities in [0, 1] (clamped on export).
pub struct Canvas {
    pub size: usize,
    pub channels: usize,
    pub data: Vec<f64>,
}

/// A smooth random field on [0, 1]², values in [0, 1]: bilinear interpolation of a `cells × cells`
/// grid of uniform draws (value noise).
pub struct ValueNoise {
    cells: usize,
    grid: Vec<f64>,
}

impl ValueNoise {
    /// A field with `cells` cells per side drawn from `rng`.
    pub fn new<R: Rng>(rng: &mut R, cells: usize) -> Self {
        let cells = cells.max(1);
        let grid = (0..(cells + 1) * (cells + 1)).map(|_| rng.random::<f64>()).collect();
        Self { cells, grid }
    }

    /// The field at `(u, v)` ∈ [0, 1]² (clamped).
    pub fn at(&self, u: f64, v: f64) -> f64 {
        let n = self.cells as f64;
        let x = (u.clamp(0.0, 1.0) * n).min(n - 1e-9);
        let y = (v.clamp(0.0, 1.0) * n).min(n - 1e-9);
        let (xi, yi) = (x.floor() as usize, y.floor() as usize);
        let (fx, fy) = (x - xi as f64, y - yi as f64);
        let (fx, fy) = (fx * fx * (3.0 - 2.0 * fx), fy * fy * (3.0 - 2.0 * fy));
        let w = self.cells + 1;
        let g = |i: usize, j: usize| self.grid[j * w + i];
        let top = g(xi, yi) * (1.0 - fx) + g(xi + 1, yi) * fx;
        let bottom = g(xi, yi + 1) * (1.0 - fx) + g(xi + 1, yi + 1) * fx;
        top * (1.0 - fy) + bottom * fy
    }
}

/// A logistic edge: 1 inside (`d < 0`), 0 outside, with a transition `softness` wide (in the same
/// units as `d`).
pub fn soft_inside(d: f64, softness: f64) -> f64 {
    1.0 / (1.0 + (d / softness.max(1e-9)).exp())
}

impl Canvas {
    /// A canvas filled with `color` (its length gives the channel count: 1 or 3).
    pub fn filled(size: usize, color: &[f64]) -> Self {
        let channels = color.len();
        let data = (0..size * size).flat_map(|_| color.iter().copied()).collect();
        Self { size, channels, data }
    }

    /// For every pixel, with `(u, v)` its centre in [0, 1]² (u right, v down): blends `color` with
    /// weight `alpha(u, v)` ∈ [0, 1]: `x ← (1 − α) x + α color`.
    pub fn blend(&mut self, color: &[f64], alpha: impl Fn(f64, f64) -> f64) {
        let s = self.size as f64;
        for y in 0..self.size {
            for x in 0..self.size {
                let a = alpha((x as f64 + 0.5) / s, (y as f64 + 0.5) / s).clamp(0.0, 1.0);
                if a == 0.0 {
                    continue;
                }
                let p = (y * self.size + x) * self.channels;
                for c in 0..self.channels {
                    self.data[p + c] = (1.0 - a) * self.data[p + c] + a * color[c % color.len()];
                }
            }
        }
    }

    /// For every pixel adds `delta(u, v)` to every channel.
    pub fn add(&mut self, delta: impl Fn(f64, f64) -> f64) {
        let s = self.size as f64;
        for y in 0..self.size {
            for x in 0..self.size {
                let d = delta((x as f64 + 0.5) / s, (y as f64 + 0.5) / s);
                let p = (y * self.size + x) * self.channels;
                for c in 0..self.channels {
                    self.data[p + c] += d;
                }
            }
        }
    }

    /// Applies `f` to every intensity.
    pub fn map(&mut self, f: impl Fn(f64) -> f64) {
        self.data.iter_mut().for_each(|v| *v = f(*v));
    }

    /// Adds independent N(0, sigma²) noise to every intensity.
    pub fn noise<R: Rng>(&mut self, rng: &mut R, sigma: f64) {
        if sigma > 0.0 {
            for v in &mut self.data {
                *v += sigma * crate::rng::standard_normal(rng);
            }
        }
    }

    /// Gaussian blur with `sigma` in pixels.
    pub fn blur(&mut self, sigma: f64) {
        gaussian_blur(&mut self.data, self.size, self.size, self.channels, sigma);
    }

    /// Scales the central `fraction` of the field of view back up to the full canvas (a zoom-in,
    /// nearest-sample on the continuous canvas coordinates).
    pub fn zoom(&mut self, fraction: f64) {
        let s = self.size;
        let old = self.data.clone();
        for y in 0..s {
            for x in 0..s {
                let u = 0.5 + ((x as f64 + 0.5) / s as f64 - 0.5) * fraction;
                let v = 0.5 + ((y as f64 + 0.5) / s as f64 - 0.5) * fraction;
                let (sx, sy) = (((u * s as f64) as usize).min(s - 1), ((v * s as f64) as usize).min(s - 1));
                for c in 0..self.channels {
                    self.data[(y * s + x) * self.channels + c] = old[(sy * s + sx) * self.channels + c];
                }
            }
        }
    }

    /// Exports to 8-bit: `round(255 · clamp(x, 0, 1))`.
    pub fn to_image(&self) -> ImageU8 {
        let data = self.data.iter().map(|v| to_u8(v.clamp(0.0, 1.0) * 255.0)).collect();
        ImageU8::new(self.size as u32, self.size as u32, self.channels as u8, data)
            .expect("canvas is non-empty")
    }
}
