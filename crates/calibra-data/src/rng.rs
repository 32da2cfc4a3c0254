//! Seeded random streams: ChaCha20 keyed by a SHA-256 digest, and a portable standard normal.

use crate::hashing::sha256_parts;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A ChaCha20 stream whose 32-byte seed is SHA-256 of the parts (see [`sha256_parts`]). The same
/// parts give the same stream on every machine, in any order and on any thread.
pub fn rng_from_parts(parts: &[&str]) -> ChaCha20Rng {
    ChaCha20Rng::from_seed(sha256_parts(parts))
}

/// One N(0, 1) draw by the Box–Muller transform on two uniform draws `u1 ∈ (0, 1]`, `u2 ∈ [0, 1)`:
/// `sqrt(-2 ln u1) · cos(2π u2)`. Written out (rather than `rand_distr`) so that the stream is pinned
/// by this crate, not by a dependency's sampling algorithm.
pub fn standard_normal<R: Rng>(rng: &mut R) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_draws_have_unit_moments() {
        let mut rng = rng_from_parts(&["moments"]);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| standard_normal(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // Standard errors: mean 1/sqrt(n) ≈ 0.007, variance sqrt(2/n) ≈ 0.01; allow 5 SE.
        assert!(mean.abs() < 0.035, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }

    #[test]
    fn same_parts_same_stream() {
        let a: Vec<u64> = (0..4).map(|_| rng_from_parts(&["a", "b"]).random()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let b: u64 = rng_from_parts(&["a", "c"]).random();
        assert_ne!(a[0], b);
    }
}
