//! Bad input is an error naming the row; undefined estimators are `None` with a note saying why.

use calibra_transfer::{Estimator, Features, ScoreOptions, Targets, TransferError, score};

fn grid(n: usize, d: usize) -> Vec<f64> {
    (0..n * d).map(|i| ((i * 37 + 11) % 17) as f64 / 4.0 + (i / d) as f64 * 0.01).collect()
}

#[test]
fn nan_and_inf_name_their_row() {
    let mut x = grid(6, 3);
    x[4 * 3 + 1] = f64::NAN;
    let err = Features::new(x, 6, 3).unwrap_err();
    assert!(matches!(err, TransferError::NonFiniteFeature { row: 4, col: 1, .. }), "{err}");
    assert!(err.to_string().contains("row 4"), "{err}");
    let mut x = grid(6, 3);
    x[2 * 3] = f64::INFINITY;
    assert!(Features::new(x, 6, 3).unwrap_err().to_string().contains("row 2"));
}

#[test]
fn label_count_must_match_rows() {
    let f = Features::new(grid(6, 3), 6, 3).unwrap();
    let err = score(&f, &Targets::Classes(vec![0, 1, 0, 1, 0]), &Estimator::ALL, &ScoreOptions::default())
        .unwrap_err();
    assert!(matches!(err, TransferError::LengthMismatch { labels: 5, rows: 6 }), "{err}");
    assert!(err.to_string().contains("5 label rows for 6 feature rows"), "{err}");
}

#[test]
fn singleton_class_makes_gbc_null_and_says_so() {
    let f = Features::new(grid(9, 3), 9, 3).unwrap();
    let y = vec![0, 1, 0, 1, 0, 1, 0, 1, 2];
    let mut options = ScoreOptions::default();
    options.nleep.components_per_class = 1;
    let r = score(&f, &Targets::Classes(y), &Estimator::ALL, &options).unwrap();
    assert_eq!(r.scores["gbc"], None);
    assert!(r.notes.iter().any(|n| n.contains("gbc: class 2 has 1 sample")), "{:?}", r.notes);
    for k in [
        "logme",
        "hscore",
        "hscore_shrinkage",
        "transrate",
        "effective_dimensionality",
        "knn_agreement",
        "nleep",
    ] {
        assert!(r.scores[k].is_some(), "{k} should stay defined: {:?}", r.notes);
    }
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["scores"]["gbc"].is_null());
}

#[test]
fn constant_features_have_no_effective_dimensionality() {
    let f = Features::new(vec![0.1; 8 * 4], 8, 4).unwrap();
    let r = score(
        &f,
        &Targets::Classes(vec![0, 1, 0, 1, 0, 1, 0, 1]),
        &[Estimator::EffectiveDimensionality],
        &ScoreOptions::default(),
    )
    .unwrap();
    assert_eq!(r.scores["effective_dimensionality"], None);
    assert!(r.notes[0].contains("constant"), "{:?}", r.notes);
}

#[test]
fn absent_class_makes_transrate_null_and_one_class_nulls_class_estimators() {
    let f = Features::new(grid(8, 3), 8, 3).unwrap();
    let r = score(
        &f,
        &Targets::Classes(vec![0, 2, 0, 2, 0, 2, 0, 2]),
        &[Estimator::Transrate],
        &ScoreOptions::default(),
    )
    .unwrap();
    assert_eq!(r.scores["transrate"], None);
    assert!(r.notes[0].contains("class 1 has no sample"), "{:?}", r.notes);
    let r = score(
        &f,
        &Targets::Classes(vec![0; 8]),
        &[Estimator::Hscore, Estimator::Logme],
        &ScoreOptions::default(),
    )
    .unwrap();
    assert_eq!(r.scores["hscore"], None);
    assert!(r.scores["logme"].is_some());
}

#[test]
fn continuous_targets_must_be_finite() {
    let f = Features::new(grid(4, 2), 4, 2).unwrap();
    let err = score(
        &f,
        &Targets::Continuous(vec![1.0, 2.0, f64::NAN, 3.0]),
        &[Estimator::Logme],
        &ScoreOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("labels row 2"), "{err}");
}
