//! Portable standard normal draws from any seeded `rand` stream, by the Box–Muller transform on two
//! uniform draws `u1 ∈ (0, 1]`, `u2 ∈ [0, 1)` (each `1 − random::<f64>()` / `random::<f64>()`):
//! `r = sqrt(−2 ln u1)`, `θ = 2π u2`. Written out (rather than `rand_distr`) so that every stream is
//! pinned by calibra, not by a dependency's sampling algorithm: LoRA and pretraining initialisations,
//! synthetic images, Rician noise and the evaluator's Dirichlet draws all use these two functions.

use rand::Rng;

/// One N(0, 1) draw: `r cos θ` (two uniform draws consumed).
pub fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Both outputs of one transform, `(r cos θ, r sin θ)`: two independent N(0, 1) draws from the same
/// two uniform draws. The pair is the two coordinates of a point whose squared radius `r²` is
/// exponential with mean 2 and whose angle is uniform, so the two values are independent standard
/// normals; the first equals [`standard_normal`] on the same stream.
pub fn standard_normal_pair<R: Rng + ?Sized>(rng: &mut R) -> (f64, f64) {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    let r = (-2.0 * u1.ln()).sqrt();
    let theta = std::f64::consts::TAU * u2;
    (r * theta.cos(), r * theta.sin())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn the_pair_starts_with_the_single_draw_and_both_consume_two_uniforms() {
        let (mut a, mut b) = (StdRng::seed_from_u64(7), StdRng::seed_from_u64(7));
        let z = standard_normal(&mut a);
        let (x, _) = standard_normal_pair(&mut b);
        assert_eq!(z.to_bits(), x.to_bits());
        assert_eq!(a.random::<u64>(), b.random::<u64>(), "the streams stay in step");
    }

    #[test]
    fn draws_have_the_moments_of_a_standard_normal() {
        let mut rng = StdRng::seed_from_u64(1);
        let n = 200_000;
        let draws: Vec<f64> =
            (0..n / 2).flat_map(|_| <[f64; 2]>::from(standard_normal_pair(&mut rng))).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / n as f64;
        // 5 standard errors: sd(mean) = 1/sqrt(n) ≈ 0.0022, sd(var) = sqrt(2/n) ≈ 0.0032.
        assert!(mean.abs() < 0.012, "mean {mean}");
        assert!((var - 1.0).abs() < 0.016, "variance {var}");
        assert!(draws.iter().all(|z| z.is_finite()));
    }
}
