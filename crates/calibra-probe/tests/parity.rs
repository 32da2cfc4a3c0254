//! Parity with the Python peers on the committed golden vectors (scripts/golden/probes.py):
//! sklearn 1.9.1 `StandardScaler`, `LogisticRegression(C=1, lbfgs)`, `KNeighborsClassifier(5)`, and a
//! torch float64 MLP trained with Adam from the same initial weights.

use calibra_probe::{
    Features, KnnOptions, LogisticModel, LogisticOptions, LogisticRegression, MlpOptions, MlpParams,
    MlpProbe, Probe, Standardizer, Targets,
};
use serde_json::Value;

fn golden(name: &str) -> Value {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().expect("array").iter().map(|x| x.as_u64().expect("integer") as usize).collect()
}

fn options_labels(v: &Value) -> Vec<Option<bool>> {
    v.as_array().expect("array").iter().map(|x| x.as_bool()).collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

fn tight() -> LogisticOptions {
    LogisticOptions { tolerance: 1e-10, max_iterations: 10_000, ..LogisticOptions::default() }
}

/// Standardised train and test features of a golden case, checking the scaler against sklearn's.
fn standardised(case: &Value, d: usize) -> (Vec<f64>, Vec<f64>) {
    let xtr = f64s(&case["x_train"]);
    let xte = f64s(&case["x_test"]);
    let s = Standardizer::fit(Features::new(&xtr, d).unwrap());
    let (mean, scale) = (f64s(&case["scaler_mean"]), f64s(&case["scaler_scale"]));
    for j in 0..d {
        assert!((s.mean[j] - mean[j]).abs() <= 1e-12 * mean[j].abs().max(1.0), "mean {j}");
        assert!((s.scale[j] - scale[j]).abs() <= 1e-12 * scale[j].abs(), "scale {j}");
    }
    (
        s.transform(Features::new(&xtr, d).unwrap()).unwrap(),
        s.transform(Features::new(&xte, d).unwrap()).unwrap(),
    )
}

#[test]
fn logistic_multinomial_and_binary_match_sklearn() {
    let g = golden("logistic.json");
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let (d, k) = (case["d"].as_u64().unwrap() as usize, case["k"].as_u64().unwrap() as usize);
        let (str_, ste) = standardised(case, d);
        let y = usizes(&case["y_train"]);
        let targets = Targets::Classes { labels: &y, n_classes: k };
        let xtr = Features::new(&str_, d).unwrap();
        let xte = Features::new(&ste, d).unwrap();

        // Tight tolerance on both sides: the same optimum.
        let m = LogisticRegression::fit(xtr, targets, &tight()).unwrap();
        assert!(m.diagnostics[0].converged, "{name}: {:?}", m.diagnostics);
        let p = m.predict_proba(xte).unwrap();
        let diff = max_abs_diff(&p, &f64s(&case["tight"]["proba_test"]));
        eprintln!("{name} tight: max |Δp| = {diff:e}");
        assert!(diff < 1e-6, "{name} tight: max |Δp| = {diff:e}");
        // Our objective is no worse than sklearn's (evaluated with the same formula in Python).
        let sk_obj = case["tight"]["objective"].as_f64().unwrap();
        assert!(m.diagnostics[0].objective <= sk_obj + 1e-12, "{name}: {:?} vs {sk_obj}", m.diagnostics);
        // Weights are identifiable (penalised): compare them; intercepts up to a common shift.
        let (w, b) = match &m.model {
            LogisticModel::Multinomial(h) | LogisticModel::Binary(h) => (h.weights.clone(), h.bias.clone()),
            LogisticModel::OneVsRest(_) => unreachable!(),
        };
        let dw = max_abs_diff(&w, &f64s(&case["tight"]["coef"]));
        eprintln!("{name}: max |ΔW| = {dw:e}");
        assert!(dw < 1e-5, "{name}: max |ΔW| = {dw:e}");
        let sk_b = f64s(&case["tight"]["intercept"]);
        let centre = |v: &[f64]| -> Vec<f64> {
            let m = if v.len() > 1 { v.iter().sum::<f64>() / v.len() as f64 } else { 0.0 };
            v.iter().map(|x| x - m).collect()
        };
        let db = max_abs_diff(&centre(&b), &centre(&sk_b));
        assert!(db < 1e-5, "{name}: max |Δb| = {db:e}");

        // Our default stopping rule (tol 1e-6) against sklearn's converged fit: the 1e-3.
        let m = LogisticRegression::fit(xtr, targets, &LogisticOptions::default()).unwrap();
        let diff = max_abs_diff(&m.predict_proba(xte).unwrap(), &f64s(&case["tight"]["proba_test"]));
        eprintln!("{name} default (tol 1e-6) vs sklearn tol 1e-10: max |Δp| = {diff:e}");
        assert!(diff < 1e-3, "{name} default: max |Δp| = {diff:e}");
    }
}

#[test]
fn logistic_one_vs_rest_matches_sklearn_per_label() {
    let g = golden("logistic.json");
    let case = &g["multilabel"];
    let (d, l) = (case["d"].as_u64().unwrap() as usize, case["n_labels"].as_u64().unwrap() as usize);
    let (str_, ste) = standardised(case, d);
    let labels = options_labels(&case["labels_train"]);
    let targets = Targets::Labels { labels: &labels, n_labels: l };
    let (xtr, xte) = (Features::new(&str_, d).unwrap(), Features::new(&ste, d).unwrap());
    let m = LogisticRegression::fit(xtr, targets, &tight()).unwrap();
    assert!(m.diagnostics.iter().all(|d| d.converged), "{:?}", m.diagnostics);
    let diff = max_abs_diff(&m.predict_proba(xte).unwrap(), &f64s(&case["tight"]["proba_test"]));
    eprintln!("OvR tight: max |Δp| = {diff:e}");
    assert!(diff < 1e-6, "OvR tight: max |Δp| = {diff:e}");
    let LogisticModel::OneVsRest(heads) = &m.model else { panic!("expected one-vs-rest") };
    let w: Vec<f64> = heads.iter().flat_map(|h| h.weights.clone()).collect();
    let dw = max_abs_diff(&w, &f64s(&case["tight"]["coef"]));
    assert!(dw < 1e-5, "OvR: max |ΔW| = {dw:e}");
    let m = LogisticRegression::fit(xtr, targets, &LogisticOptions::default()).unwrap();
    let diff = max_abs_diff(&m.predict_proba(xte).unwrap(), &f64s(&case["tight"]["proba_test"]));
    eprintln!("OvR default (tol 1e-6) vs sklearn tol 1e-10: max |Δp| = {diff:e}");
    assert!(diff < 1e-3, "OvR default: max |Δp| = {diff:e}");
}

#[test]
fn probe_front_end_standardises_like_sklearn() {
    // Probe::fit = StandardScaler on the training features + LogisticRegression.
    let g = golden("logistic.json");
    let case = &g["cases"][0];
    let (d, k) = (case["d"].as_u64().unwrap() as usize, case["k"].as_u64().unwrap() as usize);
    let (xtr, xte, y) = (f64s(&case["x_train"]), f64s(&case["x_test"]), usizes(&case["y_train"]));
    let probe = Probe::Logistic(tight());
    let fitted = probe.fit_classes(Features::new(&xtr, d).unwrap(), &y, k).unwrap();
    let p = fitted.predict_proba(Features::new(&xte, d).unwrap()).unwrap();
    let diff = max_abs_diff(&p, &f64s(&case["tight"]["proba_test"]));
    assert!(diff < 1e-6, "max |Δp| = {diff:e}");
}

#[test]
fn knn_matches_sklearn() {
    let g = golden("knn.json");
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let (d, k) = (case["d"].as_u64().unwrap() as usize, case["k"].as_u64().unwrap() as usize);
        let (xtr, xte, y) = (f64s(&case["x_train"]), f64s(&case["x_test"]), usizes(&case["y_train"]));
        let fitted =
            Probe::Knn(KnnOptions::default()).fit_classes(Features::new(&xtr, d).unwrap(), &y, k).unwrap();
        let p = fitted.predict_proba(Features::new(&xte, d).unwrap()).unwrap();
        // Our documented tie rule, computed independently by numpy (stable argsort).
        let diff = max_abs_diff(&p, &f64s(&case["proba_lowest_index_ties"]));
        assert!(diff < 1e-12, "{name}: vs the lowest-index reference, max |Δp| = {diff:e}");
        if case["sklearn_equals_lowest_index_ties"].as_bool().unwrap() {
            let diff = max_abs_diff(&p, &f64s(&case["proba_sklearn"]));
            assert!(diff < 1e-12, "{name}: vs sklearn, max |Δp| = {diff:e}");
        }
    }
    // Multilabel: one sklearn classifier per label on its observed rows (continuous data, no ties).
    let case = &g["multilabel"];
    let (d, l) = (case["d"].as_u64().unwrap() as usize, case["n_labels"].as_u64().unwrap() as usize);
    let (xtr, xte) = (f64s(&case["x_train"]), f64s(&case["x_test"]));
    let labels = options_labels(&case["labels_train"]);
    let fitted = Probe::Knn(KnnOptions::default())
        .fit(Features::new(&xtr, d).unwrap(), Targets::Labels { labels: &labels, n_labels: l })
        .unwrap();
    let p = fitted.predict_proba(Features::new(&xte, d).unwrap()).unwrap();
    let diff = max_abs_diff(&p, &f64s(&case["proba_sklearn"]));
    assert!(diff < 1e-12, "multilabel: vs sklearn, max |Δp| = {diff:e}");
    // The continuous case has no ties: sklearn parity there is required.
    assert!(g["cases"][0]["sklearn_equals_lowest_index_ties"].as_bool().unwrap());
}

#[test]
fn mlp_matches_torch_adam_from_the_same_init() {
    let g = golden("mlp.json");
    for case in g["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let u = |k: &str| case[k].as_u64().unwrap() as usize;
        let (n, d, h, k, steps) = (u("n"), u("d"), u("hidden"), u("outputs"), u("steps"));
        let x = f64s(&case["x"]);
        let s = Standardizer::fit(Features::new(&x, d).unwrap());
        let xs = s.transform(Features::new(&x, d).unwrap()).unwrap();
        let xs = Features::new(&xs, d).unwrap();
        let init = &case["init"];
        let params = MlpParams {
            inputs: d,
            hidden: h,
            outputs: k,
            w1: f64s(&init[0]),
            b1: f64s(&init[1]),
            w2: f64s(&init[2]),
            b2: f64s(&init[3]),
        };
        let options = MlpOptions {
            hidden: h,
            learning_rate: case["lr"].as_f64().unwrap(),
            weight_decay: case["weight_decay"].as_f64().unwrap(),
            epochs: steps,
            batch_size: None,
            ..MlpOptions::default()
        };
        let y;
        let labels;
        let targets = if case.get("y").is_some() {
            y = usizes(&case["y"]);
            Targets::Classes { labels: &y, n_classes: k }
        } else {
            labels = options_labels(&case["labels"]);
            Targets::Labels { labels: &labels, n_labels: k }
        };
        let m = MlpProbe::fit_from(xs, targets, &options, params).unwrap();
        assert_eq!(m.steps, steps);
        let p = m.predict_proba(xs).unwrap();
        assert_eq!(p.len(), n * k);
        let diff = max_abs_diff(&p, &f64s(&case["proba"]));
        eprintln!("mlp {name}: max |Δp| = {diff:e}");
        assert!(diff < 1e-9, "{name}: max |Δp| = {diff:e}");
        let fin = &case["final"];
        let theta: Vec<f64> = [&m.params.w1[..], &m.params.b1, &m.params.w2, &m.params.b2].concat();
        let sk: Vec<f64> = (0..4).flat_map(|i| f64s(&fin[i])).collect();
        let dt = max_abs_diff(&theta, &sk);
        eprintln!("mlp {name}: max |Δθ| = {dt:e}");
        assert!(dt < 1e-9, "{name}: max |Δθ| = {dt:e}");
        let dl = (m.final_loss - case["final_loss"].as_f64().unwrap()).abs();
        assert!(dl < 1e-9, "{name}: final loss differs by {dl:e}");
    }
}
