//! Seeded random streams: ChaCha20 keyed by a SHA-256 digest, and a portable standard normal.

use crate::hashing::sha256_parts;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A ChaCha20 stream whose 32-byte seed is SHA-256 of the parts (see [`sha256_parts`]). The same
/// parts give the same stream on every machine, in any order and on any thread.
pub fn rng_from_parts(parts: &[&str]) -> ChaCha20Rng {
    ChaCha20Rng::from_seed(sha256_parts(parts))
}

/// The portable N(0, 1) draws (Box–Muller), kept in calibra-core for every crate.
pub use calibra_core::{standard_normal, standard_normal_pair};

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

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
    fn pair_draws_are_uncorrelated_standard_normals() {
        let mut rng = rng_from_parts(&["pair-moments"]);
        let n = 20_000;
        let pairs: Vec<(f64, f64)> = (0..n).map(|_| standard_normal_pair(&mut rng)).collect();
        let mean = |f: &dyn Fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n as f64;
        // Standard errors: means and the cross moment 1/sqrt(n) ≈ 0.007, second moments
        // sqrt(2/n) ≈ 0.01; allow 5 SE.
        assert!(mean(&|p| p.0).abs() < 0.035 && mean(&|p| p.1).abs() < 0.035);
        assert!((mean(&|p| p.0 * p.0) - 1.0).abs() < 0.05);
        assert!((mean(&|p| p.1 * p.1) - 1.0).abs() < 0.05);
        assert!(mean(&|p| p.0 * p.1).abs() < 0.035);
        // Both halves come from the same two words: the pair's squared radius is −2 ln u1.
        let mut a = rng_from_parts(&["radius"]);
        let mut b = rng_from_parts(&["radius"]);
        let (z1, z2) = standard_normal_pair(&mut a);
        let u1 = 1.0 - b.random::<f64>();
        assert!((z1 * z1 + z2 * z2 + 2.0 * u1.ln()).abs() < 1e-12);
        let _: f64 = b.random();
        assert_eq!(a.random::<u64>(), b.random::<u64>(), "two words per pair");
    }

    #[test]
    fn same_parts_same_stream() {
        let a: Vec<u64> = (0..4).map(|_| rng_from_parts(&["a", "b"]).random()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let b: u64 = rng_from_parts(&["a", "c"]).random();
        assert_ne!(a[0], b);
    }
}
