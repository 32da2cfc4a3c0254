//! Properties every calibrator must keep, checked on random inputs (proptest), plus the JSON round
//! trip and the bad-input errors of the library API.

use calibra_calibrate::*;
use calibra_predictions::{Predictions, ScoreKind, Targets};
use proptest::prelude::*;

fn table(scores: Vec<f64>, k: usize, kind: ScoreKind, labels: Vec<usize>) -> Predictions {
    let n = scores.len() / k;
    let names = (0..k).map(|c| format!("c{c}")).collect();
    let ids = (0..n).map(|i| format!("r{i}")).collect();
    Predictions::new(ids, names, kind, scores, Targets::Classes(labels)).unwrap()
}

fn argmax(row: &[f64]) -> usize {
    (0..row.len()).fold(0, |b, j| if row[j] > row[b] { j } else { b })
}

/// A row has a unique maximum (clear of ties by more than rounding).
fn clear_max(row: &[f64]) -> bool {
    let m = argmax(row);
    row.iter().enumerate().all(|(j, &v)| j == m || row[m] - v > 1e-9 * (1.0 + row[m].abs()))
}

fn assert_probability_rows(p: &[f64], k: usize) {
    for row in p.chunks_exact(k) {
        assert!(row.iter().all(|&v| (0.0..=1.0).contains(&v)), "{row:?}");
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{row:?}");
    }
}

fn logits_and_labels(k: usize) -> impl Strategy<Value = (Vec<f64>, Vec<usize>)> {
    (4usize..40).prop_flat_map(move |n| {
        (proptest::collection::vec(-8.0f64..8.0, n * k), proptest::collection::vec(0..k, n))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn temperature_keeps_the_argmax_and_outputs_probability_rows((z, y) in logits_and_labels(3)) {
        let cal = table(z.clone(), 3, ScoreKind::Logit, y);
        let fitted = TemperatureScaling::default().fit(&cal).unwrap();
        let out = fitted.apply(&cal).unwrap();
        assert_probability_rows(out.scores(), 3);
        for (before, after) in z.chunks_exact(3).zip(out.scores().chunks_exact(3)) {
            if clear_max(before) {
                prop_assert_eq!(argmax(before), argmax(after));
            }
        }
    }

    #[test]
    fn binary_isotonic_keeps_the_order_of_positive_scores((z, y) in logits_and_labels(2)) {
        let cal = table(z, 2, ScoreKind::Logit, y);
        let fitted = IsotonicCalibration.fit(&cal).unwrap();
        let out = fitted.apply(&cal).unwrap();
        assert_probability_rows(out.scores(), 2);
        let p = cal.probabilities();
        let n = cal.len();
        for i in 0..n {
            for j in 0..n {
                if p[2 * i + 1] <= p[2 * j + 1] {
                    // Monotone up to the rounding of the linear interpolation at segment ends.
                    prop_assert!(out.scores()[2 * i + 1] <= out.scores()[2 * j + 1] + 1e-12);
                }
            }
        }
    }

    #[test]
    fn every_method_outputs_probability_rows((z, y) in logits_and_labels(3)) {
        let cal = table(z, 3, ScoreKind::Logit, y);
        for method in [Method::Temperature, Method::Vector, Method::Matrix, Method::Isotonic, Method::Platt] {
            let fitted = calibrator_for(method, cal.task(), &CalibratorOptions::default()).unwrap().fit(&cal).unwrap();
            assert_probability_rows(fitted.apply(&cal).unwrap().scores(), 3);
        }
        let options = CalibratorOptions {
            regulariser: Some(Regulariser::Odir { lambda: 0.1, mu: 0.1, normalised: true }),
            ..CalibratorOptions::default()
        };
        let fitted = calibrator_for(Method::Dirichlet, cal.task(), &options).unwrap().fit(&cal).unwrap();
        assert_probability_rows(fitted.apply(&cal).unwrap().scores(), 3);
    }
}

/// A small fixed calibration set (three classes, all present).
fn small() -> Predictions {
    let z = vec![
        2.0, 0.1, -1.0, 0.3, 1.5, 0.2, -0.5, 0.0, 2.5, 1.0, 1.2, 0.0, 0.2, -0.3, 1.1, 2.2, 2.0, -1.0, 0.0,
        0.5, 0.4,
    ];
    table(z, 3, ScoreKind::Logit, vec![0, 1, 2, 1, 2, 0, 2])
}

#[test]
fn json_round_trip_is_exact_for_every_method() {
    let cal = small();
    let options = CalibratorOptions { folds: Some(3), ..CalibratorOptions::default() };
    for method in [
        Method::Temperature,
        Method::Vector,
        Method::Matrix,
        Method::Isotonic,
        Method::Dirichlet,
        Method::Platt,
    ] {
        let fitted = calibrator_for(method, cal.task(), &options).unwrap().fit(&cal).unwrap();
        let back = FittedCalibrator::from_json(&fitted.to_json(), "mem").unwrap();
        assert_eq!(back, fitted, "{method}");
        assert_eq!(back.apply(&cal).unwrap(), fitted.apply(&cal).unwrap(), "{method}");
        assert!(!matches!(fitted.params, FittedParams::Sals(_)));
    }
}

#[test]
fn saved_files_are_checked_on_load() {
    let cal = small();
    let fitted = TemperatureScaling::default().fit(&cal).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&fitted.to_json()).unwrap();
    json["format_version"] = 99.into();
    let err = FittedCalibrator::from_json(&json.to_string(), "t.json").unwrap_err().to_string();
    assert!(err.contains("t.json") && err.contains("version 99"), "{err}");
    json["format_version"] = 1.into();
    json["method"] = "isotonic".into();
    let err = FittedCalibrator::from_json(&json.to_string(), "t.json").unwrap_err().to_string();
    assert!(err.contains("do not belong to method `isotonic`"), "{err}");
}

#[test]
fn library_errors_name_the_problem() {
    let one = table(vec![1.0, 0.0], 2, ScoreKind::Logit, vec![0]);
    let err = TemperatureScaling::default().fit(&one).unwrap_err().to_string();
    assert!(err.contains("at least 2"), "{err}");
    let ml = Predictions::new(
        vec!["a".into(), "b".into()],
        vec!["x".into(), "y".into()],
        ScoreKind::Logit,
        vec![0.0, 1.0, 1.0, 0.0],
        Targets::Labels(vec![Some(true), None, Some(false), Some(true)]),
    )
    .unwrap();
    let err = calibrator_for(Method::Dirichlet, ml.task(), &CalibratorOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("per label"), "{err}");
    let fitted = TemperatureScaling::default().fit(&small()).unwrap();
    let other = table(vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0], 3, ScoreKind::Logit, vec![0, 1]);
    let renamed = Predictions::new(
        other.ids().to_vec(),
        vec!["c0".into(), "c2".into(), "c1".into()],
        ScoreKind::Logit,
        other.scores().to_vec(),
        other.targets().clone(),
    )
    .unwrap();
    let err = fitted.apply(&renamed).unwrap_err().to_string();
    assert!(err.contains("class mismatch"), "{err}");
}

#[test]
fn isotonic_gives_a_missing_class_zero_probability() {
    // Class 2 never occurs: its isotonic function is 0, so it gets probability 0 after renormalisation.
    let z = vec![2.0, 0.1, -1.0, 0.3, 1.5, 0.2, 1.0, 1.2, 0.0, 2.2, 2.0, -1.0];
    let cal = table(z, 3, ScoreKind::Logit, vec![0, 1, 1, 0]);
    let fitted = IsotonicCalibration.fit(&cal).unwrap();
    assert!(fitted.report.warnings.iter().any(|w| w.code == "class-missing"));
    let out = fitted.apply(&cal).unwrap();
    assert!(out.scores().chunks_exact(3).all(|r| r[2] == 0.0));
}

#[test]
fn per_label_flags_single_class_and_unobserved_labels() {
    let ml = Predictions::new(
        vec!["a".into(), "b".into(), "c".into()],
        vec!["x".into(), "y".into(), "z".into()],
        ScoreKind::Logit,
        vec![0.0, 1.0, 2.0, 1.0, 0.0, -1.0, 2.0, -2.0, 0.5],
        Targets::Labels(vec![
            Some(true),
            Some(true),
            None,
            Some(false),
            Some(true),
            None,
            Some(true),
            Some(true),
            None,
        ]),
    )
    .unwrap();
    for method in [Method::Platt, Method::Isotonic, Method::Temperature] {
        let fitted =
            calibrator_for(method, ml.task(), &CalibratorOptions::default()).unwrap().fit(&ml).unwrap();
        let codes: Vec<&str> = fitted.report.warnings.iter().map(|w| w.code.as_str()).collect();
        assert!(
            codes.contains(&"label-single-class") && codes.contains(&"label-unobserved"),
            "{method}: {codes:?}"
        );
        let out = fitted.apply(&ml).unwrap();
        // The unobserved label passes through: σ(z).
        for i in 0..3 {
            let z = ml.scores()[i * 3 + 2];
            assert!((out.scores()[i * 3 + 2] - 1.0 / (1.0 + (-z).exp())).abs() < 1e-15);
        }
    }
}
