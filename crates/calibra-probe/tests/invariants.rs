//! Invariants of the probes: determinism across thread counts, probability simplex, exact small
//! cases, bad-input errors, serde round trips.

use calibra_probe::{
    Features, FittedProbe, KnnOptions, LogisticOptions, MlpOptions, Probe, ProbeError, Standardizer, Targets,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seeded Gaussian-ish classes (uniform noise around class-dependent means).
fn data(n: usize, d: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let means: Vec<f64> = (0..k * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y: Vec<usize> = (0..n).map(|i| if i < k { i } else { rng.random_range(0..k) }).collect();
    let x = (0..n * d).map(|i| means[y[i / d] * d + i % d] + rng.random_range(-1.5..1.5)).collect();
    (x, y)
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    // 1,300 rows: several 512-row chunks of the parallel loss.
    let (x, y) = data(1300, 6, 3, 1);
    let labels: Vec<Option<bool>> = (0..1300 * 2)
        .map(|i| if i % 7 == 0 { None } else { Some((x[i % x.len()] > 0.0) ^ (i % 2 == 0)) })
        .collect();
    let probes = [
        Probe::Logistic(LogisticOptions::default()),
        Probe::Mlp(MlpOptions { hidden: 8, epochs: 5, batch_size: Some(200), ..MlpOptions::default() }),
        Probe::Knn(KnnOptions::default()),
    ];
    for probe in probes {
        for targets in
            [Targets::Classes { labels: &y, n_classes: 3 }, Targets::Labels { labels: &labels, n_labels: 2 }]
        {
            let run = || {
                let f = probe.fit(Features::new(&x, 6).unwrap(), targets).unwrap();
                (f.to_json(), f.predict_proba(Features::new(&x[..600], 6).unwrap()).unwrap())
            };
            let one = in_pool(1, run);
            let four = in_pool(4, run);
            assert_eq!(one.0, four.0, "{}: fitted state differs", probe.name());
            assert!(one.1.iter().zip(&four.1).all(|(a, b)| a.to_bits() == b.to_bits()), "{}", probe.name());
        }
    }
}

#[test]
fn knn_with_k_equal_to_n_gives_the_class_frequencies() {
    // Exact by construction: every query sees all 10 rows; classes 0/1/2 have 5/3/2 rows.
    let x: Vec<f64> = (0..10).map(|i| i as f64).collect();
    let y = [0, 0, 0, 0, 0, 1, 1, 1, 2, 2];
    let f = Probe::Knn(KnnOptions { k: 10 }).fit_classes(Features::new(&x, 1).unwrap(), &y, 3).unwrap();
    let p = f.predict_proba(Features::new(&[3.5, -100.0], 1).unwrap()).unwrap();
    assert_eq!(p, vec![0.5, 0.3, 0.2, 0.5, 0.3, 0.2]);
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let e = Features::new(&[1.0, f64::NAN, 0.0, 1.0], 2).unwrap_err();
    assert!(e.to_string().contains("row 0, column 1 is NaN"), "{e}");
    let (x, _) = data(20, 2, 2, 3);
    let xf = Features::new(&x, 2).unwrap();
    let probe = Probe::Logistic(LogisticOptions::default());
    let mut y = vec![0usize; 20];
    y[3] = 5;
    assert!(probe.fit_classes(xf, &y, 3).unwrap_err().to_string().contains("row 3: label 5"));
    let y: Vec<usize> = (0..20).map(|i| 2 * (i % 2)).collect();
    assert!(probe.fit_classes(xf, &y, 3).unwrap_err().to_string().contains("class 1 has no training sample"));
    let y: Vec<usize> = (0..20).map(|i| i % 2).collect();
    let knn = Probe::Knn(KnnOptions { k: 21 });
    assert!(matches!(knn.fit_classes(xf, &y, 2), Err(ProbeError::InvalidOptions(_))));
    let fitted = probe.fit_classes(xf, &y, 2).unwrap();
    let e = fitted.predict_proba(Features::new(&[1.0, 2.0, 3.0], 3).unwrap()).unwrap_err();
    assert_eq!(e, ProbeError::DimensionMismatch { expected: 2, found: 3 });
    assert!(matches!(FittedProbe::from_json("{", "probe.json"), Err(ProbeError::BadFile { .. })));
}

#[test]
fn fitted_probes_round_trip_through_json() {
    let (x, y) = data(60, 3, 3, 4);
    let xf = Features::new(&x, 3).unwrap();
    for probe in [
        Probe::Logistic(LogisticOptions::default()),
        Probe::Mlp(MlpOptions { hidden: 4, epochs: 3, ..MlpOptions::default() }),
        Probe::Knn(KnnOptions::default()),
    ] {
        let f = probe.fit_classes(xf, &y, 3).unwrap();
        let back = FittedProbe::from_json(&f.to_json(), "memory").unwrap();
        assert_eq!(f.predict_proba(xf).unwrap(), back.predict_proba(xf).unwrap(), "{}", probe.name());
        assert_eq!(f.predict_logits(xf).unwrap(), back.predict_logits(xf).unwrap(), "{}", probe.name());
    }
}

#[test]
fn logits_reproduce_the_probabilities() {
    let (x, y) = data(80, 4, 2, 5);
    let xf = Features::new(&x, 4).unwrap();
    // Binary logistic: softmax([0, z]) = [1 − σ(z), σ(z)].
    let f = Probe::Logistic(LogisticOptions::default()).fit_classes(xf, &y, 2).unwrap();
    let (p, z) = (f.predict_proba(xf).unwrap(), f.predict_logits(xf).unwrap());
    for (pr, zr) in p.chunks_exact(2).zip(z.chunks_exact(2)) {
        let e = (zr[1] - zr[0]).exp();
        assert!((pr[1] - e / (1.0 + e)).abs() < 1e-12 && (pr[0] + pr[1] - 1.0).abs() < 1e-12);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn probabilities_lie_on_the_simplex(seed in 0u64..1000, k in 2usize..5, which in 0usize..3) {
        let (x, y) = data(40, 3, k, seed);
        let xf = Features::new(&x, 3).unwrap();
        let probe = [
            Probe::Logistic(LogisticOptions::default()),
            Probe::Mlp(MlpOptions { hidden: 5, epochs: 4, ..MlpOptions::default() }),
            Probe::Knn(KnnOptions::default()),
        ][which];
        let f = probe.fit_classes(xf, &y, k).unwrap();
        let p = f.predict_proba(xf).unwrap();
        for row in p.chunks_exact(k) {
            prop_assert!(row.iter().all(|v| (0.0..=1.0).contains(v)));
            prop_assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn standardised_training_columns_have_mean_0_and_std_1(seed in 0u64..1000) {
        let (x, _) = data(30, 4, 2, seed);
        let s = Standardizer::fit(Features::new(&x, 4).unwrap());
        let z = s.transform(Features::new(&x, 4).unwrap()).unwrap();
        for j in 0..4 {
            let col: Vec<f64> = z.iter().skip(j).step_by(4).copied().collect();
            let m = col.iter().sum::<f64>() / 30.0;
            let v = col.iter().map(|c| (c - m) * (c - m)).sum::<f64>() / 30.0;
            prop_assert!(m.abs() < 1e-12 && (v - 1.0).abs() < 1e-12);
        }
    }
}

#[test]
fn mlp_batches_as_large_as_the_data_are_the_full_batch() {
    // Identity: with batch_size ≥ n every step sees all rows in their original order.
    let (x, y) = data(50, 3, 3, 6);
    let xf = Features::new(&x, 3).unwrap();
    let full = MlpOptions { hidden: 6, epochs: 7, batch_size: None, ..MlpOptions::default() };
    let big = MlpOptions { batch_size: Some(50), ..full };
    let a = Probe::Mlp(full).fit_classes(xf, &y, 3).unwrap();
    let b = Probe::Mlp(big).fit_classes(xf, &y, 3).unwrap();
    assert_eq!(a.predict_proba(xf).unwrap(), b.predict_proba(xf).unwrap());
    // Mini-batches of 16: 4 steps per epoch, and a different (seeded) trajectory.
    let small = MlpOptions { batch_size: Some(16), ..full };
    let c = Probe::Mlp(small).fit_classes(xf, &y, 3).unwrap();
    let calibra_probe::ProbeModel::Mlp(m) = &c.model else { panic!("mlp") };
    assert_eq!(m.steps, 7 * 4);
    assert_ne!(a.predict_proba(xf).unwrap(), c.predict_proba(xf).unwrap());
}
