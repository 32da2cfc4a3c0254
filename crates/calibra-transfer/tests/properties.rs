//! Invariants: every estimator is invariant to the order of the samples (bitwise up to summation
//! order, so to 1e-9 relative), GBC ≤ 0, and the participation ratio lies in [1, rank].

use calibra_transfer::gbc::{GaussianType, GbcOptions};
use calibra_transfer::{
    ClassStats, Covariance, Estimator, Features, ScoreOptions, Targets, gbc, participation_ratio, score,
};
use proptest::prelude::*;

fn data() -> impl Strategy<Value = (usize, usize, Vec<f64>, Vec<usize>, Vec<usize>)> {
    (12usize..40, 2usize..7, 2usize..4).prop_flat_map(|(n, d, c)| {
        (
            Just(n),
            Just(d),
            prop::collection::vec(-3.0f64..3.0, n * d),
            // every class gets at least 2 samples: labels are i % c shuffled by a permutation
            Just((0..n).map(|i| i % c).collect::<Vec<_>>()),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
        )
    })
}

fn rel_close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12),
        (None, None) => true,
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn sample_order_does_not_matter((n, d, x, y, perm) in data()) {
        let f = Features::new(x.clone(), n, d).unwrap();
        let mut px = Vec::with_capacity(n * d);
        for &i in &perm {
            px.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
        let py: Vec<usize> = perm.iter().map(|&i| y[i]).collect();
        let pf = Features::new(px, n, d).unwrap();
        let mut options = ScoreOptions::default();
        options.nleep.components_per_class = 1;
        let all: Vec<Estimator> = Estimator::ALL.iter().copied().filter(|e| *e != Estimator::KnnAgreement).collect();
        let a = score(&f, &Targets::Classes(y.clone()), &all, &options).unwrap();
        let b = score(&pf, &Targets::Classes(py), &all, &options).unwrap();
        for (k, v) in &a.scores {
            // NLEEP's k-means seeding picks rows by index, so it is order-dependent by construction.
            if k == "nleep" { continue; }
            prop_assert!(rel_close(*v, b.scores[k]), "{k}: {v:?} vs {:?}", b.scores[k]);
        }
    }

    #[test]
    fn gbc_is_never_positive((n, d, x, y, _p) in data()) {
        let f = Features::new(x, n, d).unwrap();
        let stats = ClassStats::new(&f, &y).unwrap();
        let cov = Covariance::new(&f, &stats, None).unwrap();
        for gaussian in [GaussianType::Spherical, GaussianType::Diagonal] {
            for pca in [None, Some(2)] {
                let g = gbc(&f, &stats, Some(&cov), GbcOptions { gaussian, pca });
                prop_assert!(g <= 0.0 && g.is_finite(), "{g}");
            }
        }
    }

    #[test]
    fn participation_ratio_is_between_one_and_rank((n, d, x, y, _p) in data(), rank in 1usize..4) {
        // Features of rank ≤ `rank`: x = a · b with a n×rank, b rank×d.
        let r = rank.min(d);
        let a = &x[..n * r.min(x.len() / n)];
        let b: Vec<f64> = (0..r * d).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect();
        let mut m = vec![0.0; n * d];
        for i in 0..n {
            for j in 0..d {
                m[i * d + j] = (0..r).map(|k| a[i * r + k] * b[k * d + j]).sum();
            }
        }
        let f = Features::new(m, n, d).unwrap();
        let stats = ClassStats::new(&f, &y).unwrap();
        let cov = Covariance::new(&f, &stats, None).unwrap();
        if let Some(pr) = participation_ratio(&cov) {
            prop_assert!(pr >= 1.0 - 1e-12 && pr <= r as f64 + 1e-9, "PR {pr} with rank ≤ {r}");
        }
    }
}
