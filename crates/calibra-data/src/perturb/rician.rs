//! Rician noise (Gudbjartsson & Patz 1995): on intensities x ∈ [0, 1],
//! `x̃ = sqrt((x + n_r)² + n_i²)` with `n_r, n_i ~ N(0, σ²)` independent per pixel and channel, drawn
//! in row-major pixel order, channel order; then `round(255 · clamp(x̃, 0, 1))`. `x̃` is the magnitude
//! of the complex Gaussian `x + n_r + i n_i`, Rice-distributed with `ν = x` and scale `σ`.
//!
//! # The definition, to the byte ("rician v2")
//!
//! Each value takes two `u64` words `a, b` of the stream (16 bytes) and uses BOTH outputs of one
//! Box–Muller transform ([`crate::rng::standard_normal_pair`]): `u1 = 1 − (a >> 11) · 2⁻⁵³`,
//! `u2 = (b >> 11) · 2⁻⁵³`, `r = sqrt(−2 ln u1)`, `θ = 2π u2`, `n_r = σ (r cos θ)`,
//! `n_i = σ (r sin θ)`, with the platform's `ln`, `cos` and `sin`. `scripts/golden/perturb.py`
//! recomputes this in pure Python (its own ChaCha20, libm `log`/`cos`/`sin`), and the golden images
//! it writes pin the bytes; it also checks the distribution against `scipy.stats.rice`.
//!
//! v1 (until 2026-11-30) drew two independent Box–Muller normals per value, each from its own two
//! words and keeping only the cosine half: twice the stream and twice the `ln` and `sqrt`. Both have
//! the same distribution; v2 gives different bytes and is what every encoder now sees.
//!
//! # How it is computed fast with the same bytes
//!
//! The words are pulled in chunks, and each value is first computed with branch-free `ln` and
//! `cos`/`sin(2π u)` kernels ([`super::fast_math`]), which the compiler can vectorise; they differ
//! from libm by an ulp or so, which moves the level `v = 255 · x̃` by less than 10⁻¹⁰. The 8-bit
//! result `round(clamp(v, 0, 255))` can only depend on such a difference when `v` lies within that
//! distance of a rounding boundary `n + ½`; every value within [`FALLBACK_MARGIN`] of one is
//! recomputed exactly as the definition says (about 2 values in 10⁶). The output is therefore
//! identical, byte for byte, to the direct computation ([`rician_noise_reference`]); the tests check
//! that on millions of values and against the golden vectors.

use super::fast_math::{cos_sin_two_pi, ln_positive_normal, nearest_integer, u53_to_f64};
use crate::pixels::{ImageU8, to_u8};
use crate::rng::standard_normal_pair;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// Values whose fast level lies within this distance of `n + ½` are recomputed with libm. The fast
/// kernels' error on the level is below 10⁻¹⁰ (tested), so this leaves four orders of magnitude of
/// room while sending only ~2·10⁻⁶ of the values to the slow path.
const FALLBACK_MARGIN: f64 = 1e-6;

/// Values per chunk: 2 words (16 bytes) each, so the word buffer is 8 KiB and stays in L1.
const CHUNK: usize = 512;

/// Values per parallel block (a multiple of [`CHUNK`]). Each block seeks its own copy of the stream
/// to the block's first word, so the bytes do not depend on how blocks are spread over threads.
const BLOCK: usize = 32 * CHUNK;

/// 32-bit stream words per value (two `u64` draws).
const WORDS_PER_VALUE: u128 = 4;

/// Stream bytes per value.
const BYTES_PER_VALUE: usize = 16;

const TWO_POW_M53: f64 = 1.0 / (1u64 << 53) as f64;

/// `v / 255` for every 8-bit `v`, the intensity `x` of the definition (constant evaluation rounds
/// `f64` division exactly as the processor does), so the fast path needs no division for it.
static INTENSITY: [f64; 256] = {
    let mut t = [0.0; 256];
    let mut v = 0;
    while v < 256 {
        t[v] = v as f64 / 255.0;
        v += 1;
    }
    t
};

/// Adds Rician noise of scale `sigma` (on the [0, 1] scale) drawing from `rng`: the bytes of the
/// definition above, computed on the fast path where that provably cannot change them.
///
/// Blocks of [`BLOCK`] values run in parallel on the rayon pool (each seeks a copy of the stream
/// with `set_word_pos`), so the output is the same for every thread count. Afterwards `rng` stands
/// just past the words the image used, as if they had been drawn one by one.
pub fn rician_noise(image: &ImageU8, sigma: f64, rng: &mut ChaCha20Rng) -> ImageU8 {
    let start = rng.get_word_pos();
    let mut data = vec![0u8; image.data.len()];
    let blocks = image.data.chunks(BLOCK).zip(data.chunks_mut(BLOCK)).enumerate();
    let run = |(b, (src, dst)): (usize, (&[u8], &mut [u8]))| {
        let mut stream = rng.clone();
        stream.set_word_pos(start + WORDS_PER_VALUE * (b * BLOCK) as u128);
        noise_block(src, dst, sigma, &mut stream);
    };
    if image.data.len() > BLOCK {
        blocks.collect::<Vec<_>>().into_par_iter().for_each(run);
    } else {
        blocks.for_each(run);
    }
    rng.set_word_pos(start + WORDS_PER_VALUE * image.data.len() as u128);
    ImageU8 { width: image.width, height: image.height, channels: image.channels, data }
}

/// Noise for consecutive values `src` → `dst`, drawing their words from `stream` in order.
fn noise_block(src: &[u8], dst: &mut [u8], sigma: f64, stream: &mut ChaCha20Rng) {
    let mut bytes = [0u8; BYTES_PER_VALUE * CHUNK];
    let mut levels = [0f64; CHUNK];
    for (src, dst) in src.chunks(CHUNK).zip(dst.chunks_mut(CHUNK)) {
        // ChaCha20Rng is a block RNG over 32-bit words: its `fill_bytes` gives the words in order,
        // little-endian, so each 8 bytes are exactly the `next_u64` the definition draws.
        let bytes = &mut bytes[..BYTES_PER_VALUE * src.len()];
        stream.fill_bytes(bytes);
        // Pass 1: the level of each value from its 16 bytes.
        let levels = &mut levels[..src.len()];
        for ((level, &v), w) in levels.iter_mut().zip(src).zip(bytes.chunks_exact(BYTES_PER_VALUE)) {
            *level = fast_level(INTENSITY[usize::from(v)], [word(&w[..8]), word(&w[8..])], sigma);
        }
        // Pass 2: the byte, or the exact computation near a rounding boundary.
        for (i, (out, &level)) in dst.iter_mut().zip(levels.iter()).enumerate() {
            let (nearest, distance) = nearest_integer(level);
            *out = if distance < 0.5 - FALLBACK_MARGIN {
                // round(clamp(level, 0, 255)) = min(nearest, 255): level ≥ 0, and it is not within
                // the margin of a tie, so the rounding rule does not matter. (NaN fails the test.)
                nearest.min(255) as u8
            } else {
                let w = &bytes[BYTES_PER_VALUE * i..BYTES_PER_VALUE * (i + 1)];
                exact_value(f64::from(src[i]) / 255.0, [word(&w[..8]), word(&w[8..])], sigma)
            };
        }
    }
}

/// The little-endian `u64` in 8 bytes.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// `255 · x̃` for intensity `x` and the value's two words with the fast kernels, not clamped or
/// rounded: `r = sqrt(−2 ln u1)`, `n_r = σ (r cos 2πu2)`, `n_i = σ (r sin 2πu2)`,
/// `255 · sqrt((x + n_r)² + n_i²)`.
#[inline(always)]
fn fast_level(x: f64, w: [u64; 2], sigma: f64) -> f64 {
    let u1 = 1.0 - u53_to_f64(w[0] >> 11) * TWO_POW_M53;
    let u2 = u53_to_f64(w[1] >> 11) * TWO_POW_M53;
    let r = (-2.0 * ln_positive_normal(u1)).sqrt();
    let (cos, sin) = cos_sin_two_pi(u2);
    let re = x + sigma * (r * cos);
    let im = sigma * (r * sin);
    (re * re + im * im).sqrt() * 255.0
}

/// The 8-bit value exactly as the definition computes it (libm `ln`, `cos` and `sin`).
fn exact_value(x: f64, w: [u64; 2], sigma: f64) -> u8 {
    let mut words = WordReplay { words: w, next: 0 };
    let (z1, z2) = standard_normal_pair(&mut words);
    let (nr, ni) = (sigma * z1, sigma * z2);
    let y = ((x + nr).powi(2) + ni * ni).sqrt();
    to_u8(y.clamp(0.0, 1.0) * 255.0)
}

/// The definition computed directly, one value at a time (the reference the fast path must match).
pub fn rician_noise_reference<R: Rng>(image: &ImageU8, sigma: f64, rng: &mut R) -> ImageU8 {
    let data = image
        .data
        .iter()
        .map(|&v| {
            let x = f64::from(v) / 255.0;
            let (z1, z2) = standard_normal_pair(rng);
            let (nr, ni) = (sigma * z1, sigma * z2);
            let y = ((x + nr).powi(2) + ni * ni).sqrt();
            to_u8(y.clamp(0.0, 1.0) * 255.0)
        })
        .collect();
    ImageU8 { width: image.width, height: image.height, channels: image.channels, data }
}

/// Replays two already-drawn words as an RNG, so that the slow path reuses
/// [`standard_normal_pair`] itself rather than a copy of it.
struct WordReplay {
    words: [u64; 2],
    next: usize,
}

impl RngCore for WordReplay {
    fn next_u32(&mut self) -> u32 {
        unreachable!("standard_normal_pair draws u64 words only")
    }

    fn next_u64(&mut self) -> u64 {
        let w = self.words[self.next];
        self.next += 1;
        w
    }

    fn fill_bytes(&mut self, _dst: &mut [u8]) {
        unreachable!("standard_normal_pair draws u64 words only")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from_parts;

    fn image(n: usize, seed: &str) -> ImageU8 {
        let mut rng = rng_from_parts(&[seed]);
        let data = (0..n).map(|i| if i % 7 == 0 { (i % 256) as u8 } else { rng.random() }).collect();
        ImageU8::new(n as u32 / 3, 1, 3, data).unwrap()
    }

    #[test]
    fn fast_path_matches_the_definition_byte_for_byte() {
        // 3 million values over the three severities and a large σ; plus every intensity level.
        for (k, sigma) in [0.03, 0.06, 0.12, 0.5].into_iter().enumerate() {
            let img = image(750_000, &format!("img{k}"));
            let fast = rician_noise(&img, sigma, &mut rng_from_parts(&["rician", &k.to_string()]));
            let slow = rician_noise_reference(&img, sigma, &mut rng_from_parts(&["rician", &k.to_string()]));
            assert_eq!(fast, slow, "sigma {sigma}");
        }
    }

    #[test]
    fn same_bytes_and_stream_position_on_any_thread_count() {
        let img = image(3 * BLOCK + 1233, "threads");
        let reference = {
            let mut rng = rng_from_parts(&["t"]);
            let out = rician_noise_reference(&img, 0.12, &mut rng);
            (out, rng.next_u64())
        };
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut rng = rng_from_parts(&["t"]);
            let out = pool.install(|| rician_noise(&img, 0.12, &mut rng));
            assert_eq!((out, rng.next_u64()), reference, "{threads} threads");
        }
    }

    #[test]
    fn magnitudes_follow_scipys_rice_distribution() {
        // Mean and variance of scipy.stats.rice(ν/σ, scale=σ) from scripts/golden/perturb.py; the
        // unclamped fast-path magnitudes must match them within 5 standard errors.
        let golden: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/golden/perturb/perturb.json"
        )))
        .unwrap();
        let cases = golden["rician_moments"].as_array().unwrap();
        assert_eq!(cases.len(), 5);
        let n = 200_000;
        for (k, case) in cases.iter().enumerate() {
            let get = |key: &str| case[key].as_f64().unwrap();
            let (nu, sigma) = (get("nu"), get("sigma"));
            let mut rng = rng_from_parts(&["rice-moments", &k.to_string()]);
            let ys: Vec<f64> = (0..n).map(|_| fast_level(nu, rng.random(), sigma) / 255.0).collect();
            let mean = ys.iter().sum::<f64>() / n as f64;
            let var = ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64;
            let se_mean = (get("var") / n as f64).sqrt();
            let se_var = ((get("fourth_central_moment") - get("var").powi(2)) / n as f64).sqrt();
            assert!((mean - get("mean")).abs() < 5.0 * se_mean, "ν {nu} σ {sigma}: mean {mean}");
            assert!((var - get("var")).abs() < 5.0 * se_var, "ν {nu} σ {sigma}: variance {var}");
        }
    }

    #[test]
    fn fast_level_error_is_far_below_the_margin() {
        let mut rng = rng_from_parts(&["level-error"]);
        let mut worst = 0f64;
        for i in 0..400_000u32 {
            let x = f64::from(i % 256) / 255.0;
            let w: [u64; 2] = rng.random();
            let sigma = [0.03, 0.06, 0.12, 0.5][i as usize % 4];
            let mut replay = WordReplay { words: w, next: 0 };
            let (z1, z2) = standard_normal_pair(&mut replay);
            let (nr, ni) = (sigma * z1, sigma * z2);
            let exact = ((x + nr).powi(2) + ni * ni).sqrt() * 255.0;
            worst = worst.max((fast_level(x, w, sigma) - exact).abs());
        }
        assert!(worst < 1e-10, "worst level error {worst:e}");
        assert!(worst < FALLBACK_MARGIN / 1e4);
    }
}
