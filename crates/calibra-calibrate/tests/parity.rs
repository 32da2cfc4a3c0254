//! Parity of every calibrator with its Python peer, on golden vectors produced by
//! `scripts/golden/calibrate.py` (sklearn 1.9.1 / scipy 1.17.1) and `scripts/golden/calibrate_dirichlet.py`
//! (dirichletcal 0.5.3). Tolerances: spec §H. Each test prints the largest deviation it measured.

use calibra_calibrate::affine::{
    AffineForm, AffineInput, AffineModel, Regulariser, default_affine_options, fit_affine,
};
use calibra_calibrate::isotonic::IsotonicFunction;
use calibra_calibrate::platt::fit_sigmoid;
use calibra_calibrate::temperature::{LOG_BETA_BOUNDS, fit_temperature};
use calibra_calibrate::*;
use calibra_predictions::{Predictions, ScoreKind, Targets};
use serde_json::Value;

fn golden(name: &str) -> Value {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

fn indices(v: &Value) -> Vec<usize> {
    v.as_array().expect("array").iter().map(|x| x.as_u64().expect("index") as usize).collect()
}

fn table(scores: Vec<f64>, k: usize, kind: ScoreKind, labels: Vec<usize>) -> Predictions {
    let n = scores.len() / k;
    let names = (0..k).map(|c| format!("c{c}")).collect();
    let ids = (0..n).map(|i| format!("r{i}")).collect();
    Predictions::new(ids, names, kind, scores, Targets::Classes(labels)).unwrap()
}

/// Test rows carry dummy labels (unused by `apply`).
fn test_table(scores: Vec<f64>, k: usize, kind: ScoreKind) -> Predictions {
    let n = scores.len() / k;
    table(scores, k, kind, vec![0; n])
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[test]
fn temperature_matches_sklearn_temperature_scaling() {
    let g = golden("temperature.json");
    let mut worst_t: f64 = 0.0;
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["k"].as_u64().unwrap() as usize;
        let kind = if case["kind"] == "probability" { ScoreKind::Probability } else { ScoreKind::Logit };
        let cal = table(floats(&case["scores"]), k, kind, indices(&case["labels"]));
        let fitted = TemperatureScaling::default().fit(&cal).unwrap();
        let FittedParams::Temperature(t) = fitted.params else { panic!("{name}: not a temperature") };
        let beta = case["beta"].as_f64().unwrap();
        let rel = (t.inverse_temperature - beta).abs() / beta;
        worst_t = worst_t.max(rel);
        assert!(rel <= 1e-6, "{name}: β {} vs sklearn {beta} (rel {rel:e})", t.inverse_temperature);
        let nll = fitted.report.nll_after.unwrap();
        assert!((nll - case["nll_after"].as_f64().unwrap()).abs() <= 1e-9, "{name}: NLL {nll}");
        let test = test_table(floats(&case["test_scores"]), k, kind);
        let out = fitted.apply(&test).unwrap();
        let d = max_abs_diff(out.scores(), &floats(&case["test_probabilities"]));
        assert!(d <= 1e-6, "{name}: probabilities differ by {d:e}");
        let expect_bound = name.contains("bound");
        assert_eq!(t.at_bound, expect_bound, "{name}: at_bound");
        assert_eq!(
            fitted.report.warnings.iter().any(|w| w.code == "temperature-at-bound"),
            expect_bound,
            "{name}: warnings {:?}",
            fitted.report.warnings
        );
    }
    eprintln!("temperature: max relative error on 1/T vs sklearn = {worst_t:e}");
}

#[test]
fn isotonic_binary_matches_sklearn_isotonic_regression() {
    let g = golden("isotonic.json");
    let mut worst: f64 = 0.0;
    for case in g["binary"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let f = IsotonicFunction::fit(&floats(&case["scores"]), &floats(&case["targets"]));
        assert_eq!(f.x, floats(&case["x_thresholds"]), "{name}: thresholds");
        let dy = max_abs_diff(&f.y, &floats(&case["y_thresholds"]));
        let pred: Vec<f64> = floats(&case["query"]).iter().map(|&s| f.predict(s)).collect();
        let dp = max_abs_diff(&pred, &floats(&case["predictions"]));
        worst = worst.max(dy).max(dp);
        assert!(dy <= 1e-12 && dp <= 1e-12, "{name}: thresholds {dy:e}, predictions {dp:e}");
    }
    eprintln!("isotonic binary: max abs error vs sklearn = {worst:e}");
}

#[test]
fn isotonic_one_vs_rest_matches_calibrated_classifier_cv() {
    let g = golden("isotonic.json");
    let mut worst: f64 = 0.0;
    for case in g["one_vs_rest"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["k"].as_u64().unwrap() as usize;
        let cal = table(floats(&case["probabilities"]), k, ScoreKind::Probability, indices(&case["labels"]));
        let fitted = IsotonicCalibration.fit(&cal).unwrap();
        let test = test_table(floats(&case["test_probabilities"]), k, ScoreKind::Probability);
        let d1 = max_abs_diff(fitted.apply(&test).unwrap().scores(), &floats(&case["calibrated_test"]));
        let d2 = max_abs_diff(fitted.apply(&cal).unwrap().scores(), &floats(&case["calibrated_train"]));
        worst = worst.max(d1).max(d2);
        assert!(d1 <= 1e-12 && d2 <= 1e-12, "{name}: {d1:e} {d2:e}");
    }
    eprintln!("isotonic one-vs-rest: max abs error vs CalibratedClassifierCV = {worst:e}");
}

#[test]
fn platt_matches_sklearn_sigmoid_calibration() {
    let g = golden("platt.json");
    let (mut worst_ab, mut worst_exact, mut worst_p): (f64, f64, f64) = (0.0, 0.0, 0.0);
    for case in g["binary"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let y: Vec<bool> = indices(&case["labels"]).iter().map(|&v| v == 1).collect();
        let fit = fit_sigmoid(&floats(&case["scores"]), &y);
        assert!(fit.converged, "{name}");
        let s = fit.sigmoid;
        let (a, b) = (case["a"].as_f64().unwrap(), case["b"].as_f64().unwrap());
        let d = (s.a - a).abs().max((s.b - b).abs());
        let de = (s.a - case["exact_a"].as_f64().unwrap())
            .abs()
            .max((s.b - case["exact_b"].as_f64().unwrap()).abs());
        let pred: Vec<f64> = floats(&case["query"]).iter().map(|&f| s.predict(f)).collect();
        let dp = max_abs_diff(&pred, &floats(&case["predictions"]));
        worst_ab = worst_ab.max(d);
        worst_exact = worst_exact.max(de);
        worst_p = worst_p.max(dp);
        assert!(d <= 1e-6, "{name}: (A, B) = ({}, {}) vs sklearn ({a}, {b})", s.a, s.b);
        assert!(de <= 1e-8, "{name}: vs the exact minimiser {de:e}");
        assert!(dp <= 1e-6, "{name}: predictions {dp:e}");
    }
    for case in g["one_vs_rest"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["k"].as_u64().unwrap() as usize;
        let (kind, score) = if case["score_kind"] == "logit" {
            (ScoreKind::Logit, PlattScore::Logit)
        } else {
            (ScoreKind::Probability, PlattScore::Probability)
        };
        let cal = table(floats(&case["scores"]), k, kind, indices(&case["labels"]));
        let fitted = PlattScaling { score }.fit(&cal).unwrap();
        let FittedParams::Platt(params) = &fitted.params else { panic!("{name}") };
        for (s, (a, b)) in params.per_class.iter().zip(floats(&case["a"]).into_iter().zip(floats(&case["b"])))
        {
            let d = (s.a - a).abs().max((s.b - b).abs());
            worst_ab = worst_ab.max(d);
            assert!(d <= 1e-6, "{name}: ({}, {}) vs sklearn ({a}, {b})", s.a, s.b);
        }
        let test = test_table(floats(&case["test_scores"]), k, kind);
        let dp = max_abs_diff(fitted.apply(&test).unwrap().scores(), &floats(&case["calibrated_test"]));
        worst_p = worst_p.max(dp);
        assert!(dp <= 1e-6, "{name}: probabilities {dp:e}");
    }
    eprintln!(
        "platt: max |ΔA|,|ΔB| vs sklearn = {worst_ab:e}; vs exact minimiser = {worst_exact:e}; \
         max |Δp| = {worst_p:e}"
    );
}

#[test]
fn vector_and_matrix_scaling_match_the_scipy_lbfgs_oracle() {
    let g = golden("affine.json");
    let mut worst: f64 = 0.0;
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["k"].as_u64().unwrap() as usize;
        let cal = table(floats(&case["logits"]), k, ScoreKind::Logit, indices(&case["labels"]));
        let fitted = if case["form"] == "diagonal" {
            VectorScaling.fit(&cal).unwrap()
        } else {
            let regulariser = match &case["regulariser"] {
                Value::Null => Regulariser::None,
                r => Regulariser::Odir {
                    lambda: r["lambda"].as_f64().unwrap(),
                    mu: r["mu"].as_f64().unwrap(),
                    normalised: true,
                },
            };
            MatrixScaling { regulariser }.fit(&cal).unwrap()
        };
        assert_eq!(fitted.report.converged, Some(true), "{name}: {:?}", fitted.report);
        let test = test_table(floats(&case["test_logits"]), k, ScoreKind::Logit);
        let d = max_abs_diff(fitted.apply(&test).unwrap().scores(), &floats(&case["test_probabilities"]));
        worst = worst.max(d);
        assert!(d <= 1e-6, "{name}: probabilities differ by {d:e}");
        // The direct entry point reaches the same objective value as the oracle.
        let form = if case["form"] == "diagonal" { AffineForm::Diagonal } else { AffineForm::Full };
        let reg = match fitted.params {
            FittedParams::Vector(ref a) | FittedParams::Matrix(ref a) => a.regulariser,
            _ => unreachable!(),
        };
        let model = AffineModel { form, input: AffineInput::Logits, ref_row: true, regulariser: reg };
        let fit = fit_affine(
            &floats(&case["logits"]),
            k,
            &indices(&case["labels"]),
            &model,
            &default_affine_options(),
        );
        assert!((fit.objective - case["objective"].as_f64().unwrap()).abs() <= 1e-10, "{name}: objective");
    }
    eprintln!("vector/matrix: max abs error on probabilities vs scipy L-BFGS oracle = {worst:e}");
}

#[test]
fn per_label_calibrators_match_the_binary_peers() {
    let g = golden("per_label.json");
    let l = g["labels"].as_u64().unwrap() as usize;
    let logits = floats(&g["logits"]);
    let n = logits.len() / l;
    let targets: Vec<Option<bool>> = g["targets"].as_array().unwrap().iter().map(|v| v.as_bool()).collect();
    let names: Vec<String> = (0..l).map(|c| format!("finding{c}")).collect();
    let ids = |n: usize| (0..n).map(|i| format!("r{i}")).collect::<Vec<_>>();
    let cal =
        Predictions::new(ids(n), names.clone(), ScoreKind::Logit, logits, Targets::Labels(targets)).unwrap();
    let test_logits = floats(&g["test_logits"]);
    let m = test_logits.len() / l;
    let test =
        Predictions::new(ids(m), names, ScoreKind::Logit, test_logits, Targets::Labels(vec![None; m * l]))
            .unwrap();
    let mut worst: f64 = 0.0;
    for (method, key, tol) in [
        (LabelMethod::Platt, "platt", 1e-6),
        (LabelMethod::Isotonic, "isotonic", 1e-12),
        (LabelMethod::Temperature, "temperature", 1e-6),
    ] {
        let fitted =
            PerLabelCalibration { label_method: method, platt_score: PlattScore::Logit }.fit(&cal).unwrap();
        let out = fitted.apply(&test).unwrap();
        for (c, expected) in g[key].as_array().unwrap().iter().enumerate() {
            let got: Vec<f64> = (0..m).map(|i| out.scores()[i * l + c]).collect();
            let d = max_abs_diff(&got, &floats(&expected["test"]));
            worst = worst.max(d);
            assert!(d <= tol, "{key} label {c}: {d:e}");
        }
    }
    eprintln!("per-label: max abs error vs sklearn binary peers = {worst:e}");
}

#[test]
fn temperature_entry_point_agrees_with_the_calibrator() {
    // fit_temperature on the raw arrays gives the calibrator's parameters (same code path).
    let g = golden("temperature.json");
    let case = &g["cases"][0];
    let k = case["k"].as_u64().unwrap() as usize;
    let fit = fit_temperature(&floats(&case["scores"]), k, &indices(&case["labels"]), LOG_BETA_BOUNDS);
    assert!((fit.params.inverse_temperature - case["beta"].as_f64().unwrap()).abs() < 1e-6);
}

#[test]
fn dirichlet_matches_dirichletcal_full_dirichlet_calibrator() {
    let g = golden("dirichlet.json");
    let (mut worst_lib, mut worst_oracle): (f64, f64) = (0.0, 0.0);
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["k"].as_u64().unwrap() as usize;
        let regulariser = match &case["regulariser"] {
            Value::Null => Regulariser::None,
            r if r["type"] == "odir" => Regulariser::Odir {
                lambda: r["lambda"].as_f64().unwrap(),
                mu: r["mu"].as_f64().unwrap(),
                normalised: true,
            },
            r => Regulariser::L2 { lambda: r["lambda"].as_f64().unwrap(), normalised: true },
        };
        let cal = table(floats(&case["probabilities"]), k, ScoreKind::Probability, indices(&case["labels"]));
        let calibrator =
            DirichletCalibration { selection: DirichletSelection::Fixed(regulariser), ref_row: true };
        let fitted = calibrator.fit(&cal).unwrap();
        assert_eq!(fitted.report.converged, Some(true), "{name}: {:?}", fitted.report);
        let test = test_table(floats(&case["test_probabilities"]), k, ScoreKind::Probability);
        let out = fitted.apply(&test).unwrap();
        let d_lib = max_abs_diff(out.scores(), &floats(&case["dirichletcal_test"]));
        let d_oracle = max_abs_diff(out.scores(), &floats(&case["oracle_test"]));
        worst_lib = worst_lib.max(d_lib);
        worst_oracle = worst_oracle.max(d_oracle);
        assert!(d_lib <= 1e-6, "{name}: vs dirichletcal {d_lib:e}");
        assert!(d_oracle <= 1e-6, "{name}: vs scipy oracle {d_oracle:e}");
    }
    eprintln!(
        "dirichlet: max |Δq| vs dirichletcal 0.5.3 = {worst_lib:e}, vs scipy oracle = {worst_oracle:e}"
    );
}

/// Split conformal sets (LAC, APS with each `include_last_label`, RAPS with fixed λ and k_reg) against
/// MAPIE 1.6 (`scripts/golden/conformal.py`): the quantile within 1e-12, every set exactly, and the
/// coverage / mean set size of MAPIE's metric functions.
#[test]
fn conformal_sets_match_mapie() {
    let g = golden("conformal.json");
    let tol = g["tolerance"]["quantile"].as_f64().unwrap();
    let cases = g["cases"].as_array().unwrap();
    let mut mismatches = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let data = &g["data"][case["data"].as_str().unwrap()];
        let k = data["k"].as_u64().unwrap() as usize;
        let last: LastLabel = case["last_label"].as_str().unwrap().parse().unwrap();
        let method = ConformalMethod::parse_name(
            case["method"].as_str().unwrap(),
            last,
            case["lambda"].as_f64().unwrap(),
            case["k_reg"].as_u64().unwrap() as usize,
        )
        .unwrap();
        let alpha = case["alpha"].as_f64().unwrap();
        let fitted = ConformalPredictor::fit(
            method,
            &floats(&data["cal_probs"]),
            k,
            &indices(&data["cal_labels"]),
            alpha,
            &floats(&data["cal_draws"]),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let q = case["quantile"].as_f64().unwrap();
        if (fitted.quantile - q).abs() > tol {
            mismatches.push(format!("{name}: quantile {} vs MAPIE {q}", fitted.quantile));
        }
        let sets = fitted.predict(&floats(&data["test_probs"]), k, &floats(&data["test_draws"])).unwrap();
        let want: Vec<Vec<usize>> = case["sets"].as_array().unwrap().iter().map(indices).collect();
        for (i, (got, want)) in sets.iter().zip(&want).enumerate() {
            if got != want {
                mismatches.push(format!("{name}: row {i}: set {got:?} vs MAPIE {want:?}"));
            }
        }
        let cov = set_coverage(&sets, &indices(&data["test_labels"]), k);
        for (what, got, want) in [
            ("coverage", cov.coverage, case["coverage"].as_f64().unwrap()),
            ("mean set size", cov.mean_set_size, case["mean_set_size"].as_f64().unwrap()),
        ] {
            if (got - want).abs() > 1e-12 {
                mismatches.push(format!("{name}: {what} {got} vs MAPIE {want}"));
            }
        }
    }
    assert!(cases.len() >= 50, "only {} conformal cases", cases.len());
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es) with MAPIE:\n  {}",
        mismatches.len(),
        mismatches.join("\n  ")
    );
}

/// Histogram binning against netcal 1.4 `HistogramBinning` (`scripts/golden/calibrate_histogram.py`),
/// including probabilities exactly on bin edges.
#[test]
fn histogram_binning_matches_netcal() {
    let g = golden("histogram.json");
    let tol = g["tolerance"].as_f64().unwrap();
    let mut worst: f64 = 0.0;
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["k"].as_u64().unwrap() as usize;
        let bins = case["bins"].as_u64().unwrap() as usize;
        let cal = table(floats(&case["cal_probs"]), k, ScoreKind::Probability, indices(&case["cal_labels"]));
        let fitted = HistogramBinning { bins }.fit(&cal).unwrap_or_else(|e| panic!("{name}: {e}"));
        let test = test_table(floats(&case["test_probs"]), k, ScoreKind::Probability);
        let got = fitted.apply(&test).unwrap().probabilities();
        let d = max_abs_diff(&got, &floats(&case["expected"]));
        worst = worst.max(d);
        assert!(d <= tol, "{name}: max |Δ| {d:e} vs netcal");
    }
    eprintln!("histogram binning: worst |Δ| vs netcal {worst:e}");
}
