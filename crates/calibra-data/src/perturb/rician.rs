//! Rician noise (Gudbjartsson & Patz 1995): on intensities x ∈ [0, 1],
//! `x̃ = sqrt((x + n_r)² + n_i²)` with `n_r, n_i ~ N(0, σ²)` independent per pixel and channel, drawn
//! in row-major pixel order, channel order, `n_r` before `n_i`; then `round(255 · clamp(x̃, 0, 1))`.
//!
//! # The definition, to the byte
//!
//! Each normal is [`crate::rng::standard_normal`]: two `u64` words `a, b` of the stream,
//! `u1 = 1 − (a >> 11) · 2⁻⁵³`, `u2 = (b >> 11) · 2⁻⁵³`, `sqrt(−2 ln u1) · cos(2π u2)` with the
//! platform's `ln` and `cos`; one value takes four words (`n_r` from the first two, `n_i` from the
//! next two). `scripts/golden/perturb.py` recomputes this in pure Python (its own ChaCha20, libm
//! `log`/`cos`), and the golden images it writes pin the bytes ("rician v1").
//!
//! # How it is computed fast with the same bytes
//!
//! The words are pulled in chunks, and each value is first computed with branch-free `ln` and
//! `cos(2π u)` kernels ([`super::fast_math`]), which the compiler can vectorise; they differ from
//! libm by an ulp or so, which moves the level `v = 255 · x̃` by less than 10⁻¹⁰. The 8-bit
//! result `round(clamp(v, 0, 255))` can only depend on such a difference when `v` lies within that
//! distance of a rounding boundary `n + ½`; every value within [`FALLBACK_MARGIN`] of one is
//! recomputed exactly as the definition says (about 2 values in 10⁶). The output is therefore
//! identical, byte for byte, to the direct computation ([`rician_noise_reference`]); the tests check
//! that on millions of values and against the golden vectors.

use super::fast_math::{cos_two_pi, ln_positive_normal, nearest_integer, u53_to_f64};
use crate::pixels::{ImageU8, to_u8};
use crate::rng::standard_normal;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// Values whose fast level lies within this distance of `n + ½` are recomputed with libm. The fast
/// kernels' error on the level is below 10⁻¹⁰ (tested), so this leaves four orders of magnitude of
/// room while sending only ~2·10⁻⁶ of the values to the slow path.
const FALLBACK_MARGIN: f64 = 1e-6;

/// Values per chunk: 4 words each, so the word buffer is 8 KiB and stays in L1.
const CHUNK: usize = 256;

/// Values per parallel block (a multiple of [`CHUNK`]). Each block seeks its own copy of the stream
/// to the block's first word, so the bytes do not depend on how blocks are spread over threads.
const BLOCK: usize = 64 * CHUNK;

/// 32-bit stream words per value (four `u64` draws).
const WORDS_PER_VALUE: u128 = 8;

const TWO_POW_M53: f64 = 1.0 / (1u64 << 53) as f64;

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
    let mut bytes = [0u8; 32 * CHUNK];
    let mut normals = [0f64; 2 * CHUNK];
    let mut levels = [0f64; CHUNK];
    for (src, dst) in src.chunks(CHUNK).zip(dst.chunks_mut(CHUNK)) {
        // ChaCha20Rng is a block RNG over 32-bit words: its `fill_bytes` gives the words in order,
        // little-endian, so each 8 bytes are exactly the `next_u64` the definition draws.
        let bytes = &mut bytes[..32 * src.len()];
        stream.fill_bytes(bytes);
        // Pass 1: one normal per 16 bytes (n_r, n_i, n_r, n_i, ...).
        let normals = &mut normals[..2 * src.len()];
        for (n, pair) in normals.iter_mut().zip(bytes.chunks_exact(16)) {
            *n = fast_normal(word(&pair[..8]), word(&pair[8..]));
        }
        // Pass 2: the level of each value.
        let levels = &mut levels[..src.len()];
        for ((level, &v), n) in levels.iter_mut().zip(src).zip(normals.chunks_exact(2)) {
            *level = level_of(f64::from(v) / 255.0, sigma * n[0], sigma * n[1]);
        }
        // Pass 3: the byte, or the exact computation near a rounding boundary.
        for (i, (out, &level)) in dst.iter_mut().zip(levels.iter()).enumerate() {
            let (nearest, distance) = nearest_integer(level);
            *out = if distance < 0.5 - FALLBACK_MARGIN {
                // round(clamp(level, 0, 255)) = min(nearest, 255): level ≥ 0, and it is not within
                // the margin of a tie, so the rounding rule does not matter. (NaN fails the test.)
                nearest.min(255) as u8
            } else {
                let w: [u64; 4] = std::array::from_fn(|k| word(&bytes[32 * i + 8 * k..32 * i + 8 * k + 8]));
                exact_value(f64::from(src[i]) / 255.0, w, sigma)
            };
        }
    }
}

/// The little-endian `u64` in 8 bytes.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// One standard normal from two words with the fast kernels:
/// `sqrt(−2 ln u1) · cos(2π u2)`, `u1 = 1 − (a >> 11) 2⁻⁵³`, `u2 = (b >> 11) 2⁻⁵³`.
#[inline(always)]
fn fast_normal(a: u64, b: u64) -> f64 {
    let u1 = 1.0 - u53_to_f64(a >> 11) * TWO_POW_M53;
    let u2 = u53_to_f64(b >> 11) * TWO_POW_M53;
    (-2.0 * ln_positive_normal(u1)).sqrt() * cos_two_pi(u2)
}

/// `255 · sqrt((x + n_r)² + n_i²)`, not clamped or rounded.
#[inline(always)]
fn level_of(x: f64, nr: f64, ni: f64) -> f64 {
    let re = x + nr;
    (re * re + ni * ni).sqrt() * 255.0
}

/// `255 · x̃` for intensity `x` and the value's four words with the fast kernels (what the passes of
/// [`noise_block`] compute, in one function for the tests).
#[cfg(test)]
fn fast_level(x: f64, w: [u64; 4], sigma: f64) -> f64 {
    level_of(x, sigma * fast_normal(w[0], w[1]), sigma * fast_normal(w[2], w[3]))
}

/// The 8-bit value exactly as the definition computes it (libm `ln` and `cos`).
fn exact_value(x: f64, w: [u64; 4], sigma: f64) -> u8 {
    let mut words = WordReplay { words: w, next: 0 };
    let nr = sigma * standard_normal(&mut words);
    let ni = sigma * standard_normal(&mut words);
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
            let nr = sigma * standard_normal(rng);
            let ni = sigma * standard_normal(rng);
            let y = ((x + nr).powi(2) + ni * ni).sqrt();
            to_u8(y.clamp(0.0, 1.0) * 255.0)
        })
        .collect();
    ImageU8 { width: image.width, height: image.height, channels: image.channels, data }
}

/// Replays four already-drawn words as an RNG, so that the slow path reuses
/// [`standard_normal`] itself rather than a copy of it.
struct WordReplay {
    words: [u64; 4],
    next: usize,
}

impl RngCore for WordReplay {
    fn next_u32(&mut self) -> u32 {
        unreachable!("standard_normal draws u64 words only")
    }

    fn next_u64(&mut self) -> u64 {
        let w = self.words[self.next];
        self.next += 1;
        w
    }

    fn fill_bytes(&mut self, _dst: &mut [u8]) {
        unreachable!("standard_normal draws u64 words only")
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
    fn fast_level_error_is_far_below_the_margin() {
        let mut rng = rng_from_parts(&["level-error"]);
        let mut worst = 0f64;
        for i in 0..400_000u32 {
            let x = f64::from(i % 256) / 255.0;
            let w: [u64; 4] = rng.random();
            let sigma = [0.03, 0.06, 0.12, 0.5][i as usize % 4];
            let mut replay = WordReplay { words: w, next: 0 };
            let nr = sigma * standard_normal(&mut replay);
            let ni = sigma * standard_normal(&mut replay);
            let exact = ((x + nr).powi(2) + ni * ni).sqrt() * 255.0;
            worst = worst.max((fast_level(x, w, sigma) - exact).abs());
        }
        assert!(worst < 1e-10, "worst level error {worst:e}");
        assert!(worst < FALLBACK_MARGIN / 1e4);
    }
}
