//! Identities and invariants of the losses (no golden numbers): reductions to cross-entropy, the
//! two label-smoothing forms' equivalence, MCM's law-of-total-variance identity, finiteness for
//! extreme logits, masking, and the registry's error messages.

use burn::tensor::{DType, Device, Tensor, TensorData};
use calibra_train::TrainError;
use calibra_train::losses::{
    Flsd53, Loss, LossBatch, LossSpec, Mcm, McmTerms, VarianceMode, build_loss, registry,
};
use proptest::prelude::*;

fn logits(values: &[f64], n: usize, k: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), [n, k]), (device, DType::F64))
}

/// (value, gradient w.r.t. the logits) in float64.
fn eval(
    loss: &dyn Loss,
    values: &[f64],
    n: usize,
    k: usize,
    targets: &[usize],
    zs: Option<&[f64]>,
) -> (f64, Vec<f64>) {
    let device = Device::flex().autodiff();
    let z = logits(values, n, k, &device).require_grad();
    let mut batch = LossBatch::classes(z.clone(), targets).unwrap();
    if let Some(zs) = zs {
        batch = batch.with_zero_shot(logits(zs, n, k, &device)).unwrap();
    }
    let value = loss.forward(&batch).unwrap();
    let v = value.to_data().iter::<f64>().next().unwrap();
    let grads = value.backward();
    (v, z.grad(&grads).unwrap().to_data().iter::<f64>().collect())
}

fn loss(spec: &str, args: &[&str]) -> Box<dyn Loss> {
    build_loss(spec, args).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn assert_same(a: &(f64, Vec<f64>), b: &(f64, Vec<f64>), tol: f64, what: &str) {
    assert!((a.0 - b.0).abs() <= tol * b.0.abs().max(1.0), "{what}: value {} vs {}", a.0, b.0);
    for (i, (x, y)) in a.1.iter().zip(&b.1).enumerate() {
        assert!((x - y).abs() <= tol * y.abs().max(1.0), "{what}: grad[{i}] {x} vs {y}");
    }
}

fn batch_strategy() -> impl Strategy<Value = (usize, usize, Vec<f64>, Vec<usize>, Vec<f64>)> {
    (1usize..7, 2usize..7).prop_flat_map(|(n, k)| {
        (
            Just(n),
            Just(k),
            proptest::collection::vec(-8.0f64..8.0, n * k),
            proptest::collection::vec(0..k, n),
            proptest::collection::vec(-5.0f64..5.0, n * k),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn smoothing_zero_and_gamma_zero_are_cross_entropy((n, k, z, y, zs) in batch_strategy()) {
        let ce = eval(loss("ce", &[]).as_ref(), &z, n, k, &y, None);
        assert_same(&eval(loss("ls", &["eps=0"]).as_ref(), &z, n, k, &y, None), &ce, 1e-12, "ls eps=0");
        assert_same(&eval(loss("ls_offtarget", &["alpha=0"]).as_ref(), &z, n, k, &y, None), &ce, 1e-12, "ls_offtarget alpha=0");
        assert_same(&eval(loss("focal", &["gamma=0"]).as_ref(), &z, n, k, &y, None), &ce, 1e-12, "focal gamma=0");
        // γ → 0 along the general (powf) path.
        assert_same(&eval(loss("focal", &["gamma=1e-9"]).as_ref(), &z, n, k, &y, None), &ce, 1e-6, "focal gamma=1e-9");
        assert_same(&eval(loss("mcm", &["alpha=0", "beta=0"]).as_ref(), &z, n, k, &y, None), &ce, 1e-12, "mcm 0,0");
        // Margin larger than any logit spread: the MbLS penalty vanishes.
        assert_same(&eval(loss("mbls", &["margin=100"]).as_ref(), &z, n, k, &y, None), &ce, 1e-12, "mbls m=100");
        assert_same(&eval(loss("range_penalty", &["lambda=0"]).as_ref(), &z, n, k, &y, Some(&zs)), &ce, 1e-12, "penalty 0");
        assert_same(&eval(loss("ce+mdca", &["beta=0"]).as_ref(), &z, n, k, &y, None), &ce, 1e-12, "mdca beta=0");
    }

    #[test]
    fn off_target_alpha_is_torch_eps_times_k_over_k_minus_one((n, k, z, y, _zs) in batch_strategy(), alpha in 0.0f64..0.9) {
        let eps = alpha * k as f64 / (k as f64 - 1.0);
        prop_assume!(eps <= 1.0);
        let off = eval(loss("ls_offtarget", &[&format!("alpha={alpha}")]).as_ref(), &z, n, k, &y, None);
        let torch = eval(loss("ls", &[&format!("eps={eps}")]).as_ref(), &z, n, k, &y, None);
        assert_same(&off, &torch, 1e-12, "LS forms");
    }

    #[test]
    fn mcm_all_pairs_is_per_sample_plus_mean_within_sample_variance((n, k, z, y, _zs) in batch_strategy()) {
        let device = Device::flex();
        let batch = LossBatch::classes(logits(&z, n, k, &device), &y).unwrap();
        let reg = |mode| {
            let m = Mcm::new(0.0, 1.0, mode, McmTerms::VarianceOnly).unwrap();
            m.regulariser(&batch).unwrap().to_data().iter::<f64>().next().unwrap()
        };
        let within = within_sample_variance(&z, n, k, &y);
        let (all, per) = (reg(VarianceMode::AllPairs), reg(VarianceMode::PerSample));
        prop_assert!((all - (per + within)).abs() <= 1e-10 * all.abs().max(1.0), "{all} vs {per} + {within}");
    }

    #[test]
    fn every_loss_is_finite_for_extreme_logits(
        (n, k, z, y, zs) in batch_strategy(),
        spikes in proptest::collection::vec((0usize..36, prop_oneof![Just(-1e4), Just(1e4), Just(-300.0), Just(700.0)]), 0..4),
    ) {
        let mut z = z;
        for (pos, value) in spikes {
            let idx = pos % z.len();
            z[idx] = value;
        }
        for info in registry() {
            if info.name == "bce_masked" {
                continue;
            }
            let (v, g) = eval(loss(info.name, &[]).as_ref(), &z, n, k, &y, Some(&zs));
            prop_assert!(v.is_finite(), "{}: value {v}", info.name);
            prop_assert!(g.iter().all(|x| x.is_finite()), "{}: grad {g:?}", info.name);
        }
        // Masked BCE on the same logits with every label observed.
        let raw: Vec<Option<f64>> = (0..n * k).map(|i| Some((i % 2) as f64)).collect();
        let device = Device::flex().autodiff();
        let zt = logits(&z, n, k, &device).require_grad();
        let value = loss("bce_masked", &[]).forward(&LossBatch::multilabel(zt.clone(), &raw).unwrap()).unwrap();
        prop_assert!(value.to_data().iter::<f64>().all(|v: f64| v.is_finite()));
        let grad = zt.grad(&value.backward()).unwrap();
        prop_assert!(grad.to_data().iter::<f64>().all(|v: f64| v.is_finite()));
    }
}

/// mean_i Var_k≠y_i (z_y − z_k), population variance, on the host.
fn within_sample_variance(z: &[f64], n: usize, k: usize, y: &[usize]) -> f64 {
    let mut total = 0.0;
    for (row, &label) in z.chunks(k).zip(y).take(n) {
        let m: Vec<f64> = (0..k).filter(|&c| c != label).map(|c| row[label] - row[c]).collect();
        let mean = m.iter().sum::<f64>() / m.len() as f64;
        total += m.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / m.len() as f64;
    }
    total / n as f64
}

#[test]
fn mcm_hand_case() {
    // z = [[3,1,0],[0,2,2]], y = [0,1]: margins {2,3} and {2,0}; m̄ = (2.5, 1), μ = 1.75,
    // per_sample Var = 0.5625, all_pairs Var = 17/4 − 1.75² = 1.1875, within-sample mean Var = 0.625.
    // All are dyadic rationals, so float64 arithmetic is exact.
    let device = Device::flex();
    let batch = LossBatch::classes(logits(&[3.0, 1.0, 0.0, 0.0, 2.0, 2.0], 2, 3, &device), &[0, 1]).unwrap();
    let reg = |alpha, beta, mode| {
        Mcm::new(alpha, beta, mode, McmTerms::Both).unwrap().regulariser(&batch).unwrap().into_scalar::<f64>()
    };
    assert_eq!(reg(1.0, 0.0, VarianceMode::AllPairs), -1.75);
    assert_eq!(reg(0.0, 1.0, VarianceMode::PerSample), 0.5625);
    assert_eq!(reg(0.0, 1.0, VarianceMode::AllPairs), 1.1875);
    assert_eq!(1.1875, 0.5625 + within_sample_variance(&[3.0, 1.0, 0.0, 0.0, 2.0, 2.0], 2, 3, &[0, 1]));
    // Defaults α = 0.1, β = 0.01, all_pairs: −0.175 + 0.011875.
    let m = build_loss::<&str>("mcm", &[]).unwrap();
    let ce = build_loss::<&str>("ce", &[]).unwrap();
    let diff =
        m.forward(&batch).unwrap().into_scalar::<f64>() - ce.forward(&batch).unwrap().into_scalar::<f64>();
    assert!((diff - (-0.175 + 0.011875)).abs() < 1e-15, "{diff}");
    // B = 1: the per-sample variance is 0.
    let one = LossBatch::classes(logits(&[3.0, 1.0, 0.0], 1, 3, &device), &[2]).unwrap();
    let per = Mcm::new(0.0, 1.0, VarianceMode::PerSample, McmTerms::VarianceOnly).unwrap();
    assert_eq!(per.regulariser(&one).unwrap().into_scalar::<f64>(), 0.0);
}

#[test]
fn mdca_is_zero_when_mean_confidence_matches_class_frequency() {
    // Equal logits give p = 1/2 per class; targets [0, 1] have frequency 1/2 each: exactly 0.
    let (v, g) = eval(loss("mdca", &[]).as_ref(), &[0.0; 4], 2, 2, &[0, 1], None);
    assert_eq!(v, 0.0);
    assert!(g.iter().all(|x| *x == 0.0), "{g:?}");
}

#[test]
fn range_penalty_inside_the_zero_shot_range_is_cross_entropy() {
    let z = [0.5, -0.2, 0.1, 1.0, 0.0, 0.3];
    let zs = [2.0, -1.0, 0.0, 3.0, -2.0, 0.0];
    let ce = eval(loss("ce", &[]).as_ref(), &z, 2, 3, &[1, 2], None);
    assert_same(
        &eval(loss("range_penalty", &[]).as_ref(), &z, 2, 3, &[1, 2], Some(&zs)),
        &ce,
        1e-15,
        "penalty",
    );
    // ZS-Norm with zero-shot logits equal to the logits maps the logits onto themselves (up to
    // ε = 1e-12), so the value is CE's; the gradient is not (it flows through the row min/max).
    let zs_norm = eval(loss("zs_norm", &[]).as_ref(), &z, 2, 3, &[1, 2], Some(&z));
    assert!((zs_norm.0 - ce.0).abs() <= 1e-11, "{} vs {}", zs_norm.0, ce.0);
    // Shifting a row's logits by a constant leaves ẑ unchanged (min-max normalisation).
    let shifted: Vec<f64> =
        z.iter().enumerate().map(|(i, v)| if i < 3 { v + 5.0 } else { v - 2.0 }).collect();
    let again = eval(loss("zs_norm", &[]).as_ref(), &shifted, 2, 3, &[1, 2], Some(&z));
    assert!((again.0 - zs_norm.0).abs() <= 1e-12, "{} vs {}", again.0, zs_norm.0);
}

#[test]
fn masked_bce_ignores_masked_entries() {
    let device = Device::flex();
    let raw = [Some(1.0), None, Some(-1.0), Some(0.0), Some(f64::NAN), Some(1.0)];
    let value = |z: &[f64]| {
        let batch = LossBatch::multilabel(logits(z, 2, 3, &device), &raw).unwrap();
        loss("bce_masked", &[]).forward(&batch).unwrap().into_scalar::<f64>()
    };
    let a = value(&[0.3, -2.0, 4.0, -0.7, 9.0, 1.2]);
    let b = value(&[0.3, 50.0, -50.0, -0.7, -3.0, 1.2]);
    assert_eq!(a, b);
    // Nothing observed: 0.
    let none = LossBatch::multilabel(logits(&[1.0, 2.0], 1, 2, &device), &[None, Some(-1.0)]).unwrap();
    assert_eq!(loss("bce_masked", &[]).forward(&none).unwrap().into_scalar::<f64>(), 0.0);
    // Bad code.
    let err = LossBatch::multilabel(logits(&[1.0, 2.0], 1, 2, &device), &[Some(2.0), None]).unwrap_err();
    assert_eq!(err, TrainError::BadMultilabelCode { row: 0, col: 0, value: 2.0 });
}

#[test]
fn flsd53_gamma_thresholds() {
    assert_eq!(Flsd53::gamma_for(0.0), 5.0);
    assert_eq!(Flsd53::gamma_for(0.1999), 5.0);
    assert_eq!(Flsd53::gamma_for(0.2), 3.0);
    assert_eq!(Flsd53::gamma_for(0.49), 3.0);
    assert_eq!(Flsd53::gamma_for(0.99), 3.0);
}

#[test]
fn registry_errors_are_specific() {
    let err = |spec: &str, args: &[&str]| build_loss(spec, args).unwrap_err();
    assert!(matches!(err("cce", &[]), TrainError::UnknownLoss { name, .. } if name == "cce"));
    assert!(matches!(err("", &[]), TrainError::MalformedSpec { .. }));
    assert!(matches!(err("ce++mdca", &[]), TrainError::MalformedSpec { .. }));
    assert!(matches!(err("x*ce", &[]), TrainError::MalformedSpec { .. }));
    assert!(matches!(err("ce+ce", &[]), TrainError::MalformedSpec { .. }));
    assert!(matches!(err("focal", &["gama=2"]), TrainError::UnknownArg { key, .. } if key == "gama"));
    assert!(matches!(err("focal", &["gamma"]), TrainError::MalformedArg { .. }));
    assert!(matches!(err("focal", &["gamma=abc"]), TrainError::BadValue { key, .. } if key == "gamma"));
    assert!(matches!(err("focal", &["gamma=-1"]), TrainError::BadValue { key, .. } if key == "gamma"));
    assert!(matches!(err("ls", &["eps=1.5"]), TrainError::BadValue { key, .. } if key == "eps"));
    assert!(
        matches!(err("mcm", &["variance=within"]), TrainError::BadValue { key, .. } if key == "variance")
    );
    assert!(matches!(err("focal", &["gamma=1", "gamma=2"]), TrainError::DuplicateArg { .. }));
    assert!(
        matches!(err("ls_offtarget+mcm", &["alpha=0.1"]), TrainError::AmbiguousArg { key, .. } if key == "alpha")
    );
    assert!(matches!(err("ce+mdca", &["focal.gamma=1"]), TrainError::UnknownArg { .. }));
    assert!(matches!(err("ce+bce_masked", &[]), TrainError::IncompatibleTerms { .. }));
    let msg = err("focal", &["gama=2"]).to_string();
    assert!(msg.contains("gama") && msg.contains("focal.gamma"), "{msg}");

    // Qualified keys route to the right term.
    let spec = LossSpec::parse("ls_offtarget+mcm", &["ls_offtarget.alpha=0.2", "mcm.alpha=0.3", "beta=0.5"])
        .unwrap();
    assert_eq!(spec.terms[0].args["alpha"], "0.2");
    assert_eq!(spec.terms[1].args["alpha"], "0.3");
    assert_eq!(spec.terms[1].args["beta"], "0.5");
    assert_eq!(build_loss::<&str>("0.5*ce+2*mdca", &[]).unwrap().name(), "0.5*ce+2*mdca");
}

#[test]
fn batch_and_loss_errors() {
    let device = Device::flex();
    let z = logits(&[1.0, 2.0, 3.0, 4.0], 2, 2, &device);
    assert_eq!(
        LossBatch::classes(z.clone(), &[0, 2]).unwrap_err(),
        TrainError::TargetOutOfRange { row: 1, label: 2, k: 2 }
    );
    assert!(matches!(LossBatch::classes(z.clone(), &[0]).unwrap_err(), TrainError::Shape { .. }));
    let batch = LossBatch::classes(z.clone(), &[0, 1]).unwrap();
    assert!(matches!(loss("zs_norm", &[]).forward(&batch).unwrap_err(), TrainError::MissingZeroShot { .. }));
    assert!(matches!(loss("bce_masked", &[]).forward(&batch).unwrap_err(), TrainError::WrongTargets { .. }));
    assert!(matches!(
        batch.clone().with_zero_shot(logits(&[1.0, 2.0], 1, 2, &device)).unwrap_err(),
        TrainError::Shape { .. }
    ));
    let one_class = LossBatch::classes(logits(&[1.0, 2.0], 2, 1, &device), &[0, 0]).unwrap();
    for name in ["ls_offtarget", "mcm", "mcm_var", "mcm_mean"] {
        assert!(
            matches!(
                loss(name, &[]).forward(&one_class).unwrap_err(),
                TrainError::TooFewClasses { min: 2, .. }
            ),
            "{name}"
        );
    }
    let multilabel = LossBatch::multilabel(z, &[Some(1.0); 4]).unwrap();
    assert!(matches!(loss("ce", &[]).forward(&multilabel).unwrap_err(), TrainError::WrongTargets { .. }));
}
