//! Parity of every calibra-metrics function with its Python peer (sklearn, scipy, netcal, torchmetrics,
//! torch, and numpy ports of the reference repositories), on the golden vectors in
//! `tests/golden/metrics.json` produced by `scripts/golden/metrics.py`. The file names the peer of each
//! metric (`peers`) and the tolerances of spec §H (`tolerance`): 1e-12 absolute for float64 peers,
//! 1e-6 for torchmetrics' float32 multiclass path. NaN must meet NaN; `"inf"` encodes +infinity.
//!
//! One test per metric family; each collects every mismatch (case and metric named) before failing,
//! so one run lists all of them.

use std::sync::OnceLock;

use calibra_metrics::input::top_label;
use calibra_metrics::{
    Binning, UndefinedPolicy, accuracy, adaptive_calibration_error, adaptive_ece, average_precision,
    average_ranks, binary_auroc, binary_nll, brier_binary, brier_multiclass, classwise_ece,
    ece_binary_positive, ece_top_label, kendall_tau_a, kendall_tau_b, macro_auroc_ovr,
    macro_average_precision_ovr, macro_f1, mce_top_label, multilabel_macro_auroc,
    multilabel_macro_average_precision, nll_from_logits, nll_from_probabilities, ordinal_mae,
    quadratic_weighted_kappa, reliability_bins, sensitivity_at_specificity,
    sensitivity_at_specificity_interp, spearman_rho, weighted_tau,
};
use serde_json::Value;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/metrics.json");

fn golden() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text = std::fs::read_to_string(GOLDEN).unwrap_or_else(|e| {
            panic!("cannot read {GOLDEN}: {e} (regenerate with scripts/golden/metrics.py)")
        });
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{GOLDEN} is not valid JSON: {e}"))
    })
}

/// Absolute tolerance for float64 peers (spec §H).
fn tol_f64() -> f64 {
    num(&golden()["tolerance"]["f64"], "tolerance.f64")
}

/// Absolute tolerance against torchmetrics' float32 multiclass path (spec §H).
fn tol_f32() -> f64 {
    num(&golden()["tolerance"]["torchmetrics_f32"], "tolerance.torchmetrics_f32")
}

fn section(name: &str) -> &'static [Value] {
    golden()[name].as_array().unwrap_or_else(|| panic!("{GOLDEN}: key {name:?} is not an array"))
}

// ------------------------------------------------------------------------------------------------
// JSON accessors: null = NaN, "inf"/"-inf" = infinities; every failure names the key.

fn num(v: &Value, what: &str) -> f64 {
    match v {
        Value::Null => f64::NAN,
        Value::Number(x) => x.as_f64().unwrap_or_else(|| panic!("{GOLDEN}: {what}: {x} is not an f64")),
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => panic!("{GOLDEN}: {what}: expected a number, null or \"inf\", found {other}"),
    }
}

fn field<'a>(case: &'a Value, key: &str) -> &'a Value {
    let v = &case[key];
    if v.is_null() && case.get(key).is_none() {
        panic!("{GOLDEN}: case {}: missing key {key:?}", name(case));
    }
    v
}

fn name(case: &Value) -> &str {
    case["name"].as_str().unwrap_or("<unnamed>")
}

fn f(case: &Value, key: &str) -> f64 {
    num(field(case, key), &format!("{}.{key}", name(case)))
}

fn floats(v: &Value, what: &str) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("{GOLDEN}: {what}: expected an array"))
        .iter()
        .enumerate()
        .map(|(i, x)| num(x, &format!("{what}[{i}]")))
        .collect()
}

fn usizes(v: &Value, what: &str) -> Vec<usize> {
    v.as_array()
        .unwrap_or_else(|| panic!("{GOLDEN}: {what}: expected an array"))
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_u64().unwrap_or_else(|| panic!("{GOLDEN}: {what}[{i}]: expected an unsigned integer"))
                as usize
        })
        .collect()
}

fn bools(v: &Value, what: &str) -> Vec<bool> {
    v.as_array()
        .unwrap_or_else(|| panic!("{GOLDEN}: {what}: expected an array"))
        .iter()
        .enumerate()
        .map(|(i, x)| x.as_bool().unwrap_or_else(|| panic!("{GOLDEN}: {what}[{i}]: expected a boolean")))
        .collect()
}

fn optional_bools(v: &Value, what: &str) -> Vec<Option<bool>> {
    v.as_array()
        .unwrap_or_else(|| panic!("{GOLDEN}: {what}: expected an array"))
        .iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            other => panic!("{GOLDEN}: {what}[{i}]: expected a boolean or null, found {other}"),
        })
        .collect()
}

fn size(case: &Value, key: &str) -> usize {
    field(case, key)
        .as_u64()
        .unwrap_or_else(|| panic!("{GOLDEN}: case {}: {key} is not an unsigned integer", name(case)))
        as usize
}

fn binning(convention: &str) -> Binning {
    convention.parse().unwrap_or_else(|e| panic!("{GOLDEN}: unknown binning {convention:?}: {e}"))
}

const CONVENTIONS: [&str; 3] = ["right-closed", "left-closed", "torchmetrics"];

// ------------------------------------------------------------------------------------------------
// mismatch collection

#[derive(Default)]
struct Mismatches(Vec<String>);

impl Mismatches {
    /// Records a mismatch unless `got` and `want` agree within `tol` (NaN only matches NaN,
    /// an infinity only the same infinity).
    fn close(&mut self, case: &Value, metric: &str, got: f64, want: f64, tol: f64) {
        let ok = if want.is_nan() || got.is_nan() {
            want.is_nan() && got.is_nan()
        } else if want.is_infinite() || got.is_infinite() {
            want == got
        } else {
            (got - want).abs() <= tol
        };
        if !ok {
            self.0.push(format!(
                "case {:?}, {metric}: got {got:?}, peer {want:?} (|diff| = {:e}, tol {tol:e})",
                name(case),
                (got - want).abs()
            ));
        }
    }

    fn all_close(&mut self, case: &Value, metric: &str, got: &[f64], want: &[f64], tol: f64) {
        if got.len() != want.len() {
            self.0.push(format!(
                "case {:?}, {metric}: got {} values, peer has {}",
                name(case),
                got.len(),
                want.len()
            ));
            return;
        }
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            self.close(case, &format!("{metric}[{i}]"), g, w, tol);
        }
    }

    fn equal<T: PartialEq + std::fmt::Debug>(&mut self, case: &Value, metric: &str, got: T, want: T) {
        if got != want {
            self.0.push(format!("case {:?}, {metric}: got {got:?}, peer {want:?}", name(case)));
        }
    }

    fn error(&mut self, case: &Value, metric: &str, err: impl std::fmt::Display) {
        self.0.push(format!("case {:?}, {metric}: returned an error: {err}", name(case)));
    }

    fn finish(self, family: &str, checked: usize) {
        assert!(checked > 0, "{family}: the golden file holds no case for this family");
        assert!(
            self.0.is_empty(),
            "{family}: {} mismatch(es) with the Python peers ({GOLDEN}):\n  {}",
            self.0.len(),
            self.0.join("\n  ")
        );
    }
}

/// Unwraps a `Result` metric, recording an error as a mismatch (NaN then fails any comparison
/// with a finite peer value, so the error is reported once).
fn ok<E: std::fmt::Display>(m: &mut Mismatches, case: &Value, metric: &str, r: Result<f64, E>) -> f64 {
    r.unwrap_or_else(|e| {
        m.error(case, metric, e);
        f64::NAN
    })
}

/// Classification case inputs: (probs, k, labels, n_bins).
fn classification_inputs(case: &Value) -> (Vec<f64>, usize, Vec<usize>, usize) {
    let n = name(case);
    (
        floats(field(case, "probs"), &format!("{n}.probs")),
        size(case, "k"),
        usizes(field(case, "labels"), &format!("{n}.labels")),
        size(case, "n_bins"),
    )
}

/// Binary case inputs: (scores, targets, n_bins).
fn binary_inputs(case: &Value) -> (Vec<f64>, Vec<bool>, usize) {
    let n = name(case);
    (
        floats(field(case, "scores"), &format!("{n}.scores")),
        bools(field(case, "targets"), &format!("{n}.targets")),
        size(case, "n_bins"),
    )
}

// ------------------------------------------------------------------------------------------------
// calibration family

/// What a reliability diagram bins: a confidence and an outcome per sample.
struct BinInput<'a> {
    /// "top-label" or "positive-class", for messages.
    label: &'a str,
    conf: &'a [f64],
    outcome: &'a [f64],
    n_bins: usize,
}

/// Compares Rust reliability bins with the stored numpy bins of one convention (count exact, means
/// within 1e-12, edges equal to numpy.linspace(0, 1, B + 1) bit for bit, torchmetrics' extra [1, 1]).
fn check_reliability(m: &mut Mismatches, case: &Value, input: &BinInput, convention: &str, want: &Value) {
    let BinInput { label, conf, outcome, n_bins } = *input;
    let tol = tol_f64();
    let what = format!("{}.reliability.{convention}", name(case));
    let bins = reliability_bins(conf, outcome, n_bins, binning(convention));
    let want_count = usizes(&want["count"], &format!("{what}.count"));
    let got_count: Vec<usize> = bins.iter().map(|b| b.count).collect();
    m.equal(case, &format!("{label} {convention} counts"), got_count, want_count);
    let got_conf: Vec<f64> = bins.iter().map(|b| b.confidence).collect();
    let got_acc: Vec<f64> = bins.iter().map(|b| b.accuracy).collect();
    m.all_close(
        case,
        &format!("{label} {convention} mean confidence"),
        &got_conf,
        &floats(&want["confidence"], &format!("{what}.confidence")),
        tol,
    );
    m.all_close(
        case,
        &format!("{label} {convention} mean outcome"),
        &got_acc,
        &floats(&want["accuracy"], &format!("{what}.accuracy")),
        tol,
    );
    // Edges are compared bit for bit with numpy.linspace(0, 1, B + 1) (stored as u64 bit patterns).
    let edges: Vec<f64> =
        usizes(&golden()["edges_bits"][n_bins.to_string()], &format!("edges_bits.{n_bins}"))
            .into_iter()
            .map(|bits| f64::from_bits(bits as u64))
            .collect();
    let mut lower: Vec<f64> = edges[..n_bins].to_vec();
    let mut upper: Vec<f64> = edges[1..].to_vec();
    if convention == "torchmetrics" {
        lower.push(1.0);
        upper.push(1.0);
    }
    let got_lower: Vec<f64> = bins.iter().map(|b| b.lower).collect();
    let got_upper: Vec<f64> = bins.iter().map(|b| b.upper).collect();
    m.all_close(case, &format!("{label} {convention} lower edges"), &got_lower, &lower, 0.0);
    m.all_close(case, &format!("{label} {convention} upper edges"), &got_upper, &upper, 0.0);
}

#[test]
fn reliability_bins_match_numpy_for_every_convention() {
    let mut m = Mismatches::default();
    let mut checked = 0;
    for case in section("classification") {
        let Some(rel) = case.get("reliability") else { continue };
        let (probs, k, labels, n_bins) = classification_inputs(case);
        let (conf, pred) = top_label(&probs, k);
        let correct: Vec<f64> = pred.iter().zip(&labels).map(|(p, y)| f64::from(u8::from(p == y))).collect();
        for convention in CONVENTIONS {
            let input = BinInput { label: "top-label", conf: &conf, outcome: &correct, n_bins };
            check_reliability(&mut m, case, &input, convention, &rel[convention]);
        }
        checked += 1;
    }
    for case in section("binary") {
        let Some(rel) = case.get("reliability") else { continue };
        let (scores, targets, n_bins) = binary_inputs(case);
        let outcome: Vec<f64> = targets.iter().map(|&t| f64::from(u8::from(t))).collect();
        for convention in CONVENTIONS {
            let input = BinInput { label: "positive-class", conf: &scores, outcome: &outcome, n_bins };
            check_reliability(&mut m, case, &input, convention, &rel[convention]);
        }
        checked += 1;
    }
    m.finish("reliability bins", checked);
}

#[test]
fn top_label_ece_and_mce_match_numpy_netcal_and_torchmetrics() {
    let (tol, tol32) = (tol_f64(), tol_f32());
    let mut m = Mismatches::default();
    let cases = section("classification");
    for case in cases {
        let (probs, k, labels, n_bins) = classification_inputs(case);
        for convention in CONVENTIONS {
            let b = binning(convention);
            let ece = ok(&mut m, case, "ece", ece_top_label(&probs, k, &labels, n_bins, b));
            let mce = ok(&mut m, case, "mce", mce_top_label(&probs, k, &labels, n_bins, b));
            m.close(case, &format!("ece {convention}"), ece, num(&case["ece"][convention], "ece"), tol);
            m.close(case, &format!("mce {convention}"), mce, num(&case["mce"][convention], "mce"), tol);
            if convention == "torchmetrics" {
                // The library itself, float32 inside; skipped only where the script proved that its
                // float32 cast moves an edge-valued confidence into another bin.
                let lib = &case["torchmetrics_lib"];
                if lib["f32_binning_differs"].as_bool() != Some(true) {
                    m.close(
                        case,
                        "ece torchmetrics (library, float32)",
                        ece,
                        num(&lib["ece"], "tm ece"),
                        tol32,
                    );
                    m.close(
                        case,
                        "mce torchmetrics (library, float32)",
                        mce,
                        num(&lib["mce"], "tm mce"),
                        tol32,
                    );
                }
            }
        }
    }
    m.finish("top-label ECE/MCE", cases.len());
}

#[test]
fn positive_class_ece_matches_netcal_and_torchmetrics() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("binary");
    for case in cases {
        let (scores, targets, n_bins) = binary_inputs(case);
        for convention in CONVENTIONS {
            let got = ece_binary_positive(&scores, &targets, n_bins, binning(convention));
            let want = num(&case["ece_positive"][convention], "ece_positive");
            m.close(case, &format!("positive-class ece {convention}"), got, want, tol);
            if convention == "torchmetrics" {
                // torchmetrics' binary path keeps float64, but builds its edges with torch.linspace;
                // skipped only where the script proved those edges bin an edge value differently.
                let lib = &case["torchmetrics_lib"];
                if lib["torch_linspace_binning_differs"].as_bool() != Some(true) {
                    m.close(
                        case,
                        "positive-class ece torchmetrics (library)",
                        got,
                        num(&lib["ece"], "tm"),
                        tol,
                    );
                }
            }
        }
    }
    m.finish("positive-class ECE", cases.len());
}

#[test]
fn classwise_ece_matches_numpy() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("classification");
    for case in cases {
        let (probs, k, labels, n_bins) = classification_inputs(case);
        for convention in CONVENTIONS {
            let got = ok(
                &mut m,
                case,
                "classwise_ece",
                classwise_ece(&probs, k, &labels, n_bins, binning(convention)),
            );
            let want = num(&case["classwise_ece"][convention], "classwise_ece");
            m.close(case, &format!("classwise ece {convention}"), got, want, tol);
        }
    }
    m.finish("class-wise ECE", cases.len());
}

#[test]
fn adaptive_ece_matches_focal_calibration_port() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("classification");
    for case in cases {
        let (probs, k, labels, n_bins) = classification_inputs(case);
        let got = ok(&mut m, case, "adaptive_ece", adaptive_ece(&probs, k, &labels, n_bins));
        m.close(case, "adaptive ece (Mukhoti)", got, f(case, "adaptive_ece"), tol);
    }
    m.finish("AdaECE", cases.len());
}

#[test]
fn nixon_ace_matches_uncertainty_metrics_port() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("classification");
    for case in cases {
        let (probs, k, labels, _) = classification_inputs(case);
        for config in field(case, "ace").as_array().expect("ace is an array") {
            let ranges = size(config, "n_ranges");
            let threshold = f(config, "threshold");
            let metric = format!("ACE (R = {ranges}, threshold = {threshold})");
            let got =
                ok(&mut m, case, &metric, adaptive_calibration_error(&probs, k, &labels, ranges, threshold));
            m.close(case, &metric, got, f(config, "value"), tol);
        }
    }
    m.finish("Nixon ACE", cases.len());
}

// ------------------------------------------------------------------------------------------------
// proper scores and label metrics

#[test]
fn brier_matches_sklearn() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let (classification, binary) = (section("classification"), section("binary"));
    for case in classification {
        let (probs, k, labels, _) = classification_inputs(case);
        let got = ok(&mut m, case, "brier", brier_multiclass(&probs, k, &labels));
        m.close(case, "brier (multiclass sum form)", got, f(case, "brier"), tol);
    }
    for case in binary {
        let (scores, targets, _) = binary_inputs(case);
        m.close(case, "brier (binary)", brier_binary(&scores, &targets), f(case, "brier"), tol);
    }
    m.finish("Brier", classification.len() + binary.len());
}

#[test]
fn nll_matches_sklearn_log_loss_and_torch_cross_entropy() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let (classification, binary) = (section("classification"), section("binary"));
    let mut logit_cases = 0;
    for case in classification {
        let (probs, k, labels, _) = classification_inputs(case);
        let got = ok(&mut m, case, "nll_probs", nll_from_probabilities(&probs, k, &labels));
        m.close(case, "nll from probabilities", got, f(case, "nll_probs"), tol);
        if let Some(logits) = case.get("logits") {
            let logits = floats(logits, &format!("{}.logits", name(case)));
            let got = ok(&mut m, case, "nll_logits", nll_from_logits(&logits, k, &labels));
            m.close(case, "nll from logits", got, f(case, "nll_logits"), tol);
            logit_cases += 1;
        }
    }
    assert!(logit_cases > 0, "the golden file holds no logit case");
    for case in binary {
        let (scores, targets, _) = binary_inputs(case);
        m.close(case, "binary nll", binary_nll(&scores, &targets), f(case, "nll"), tol);
    }
    m.finish("NLL", classification.len() + binary.len());
}

#[test]
fn accuracy_f1_kappa_and_mae_match_sklearn() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("classification");
    for case in cases {
        let (probs, k, labels, _) = classification_inputs(case);
        let preds = usizes(field(case, "preds"), &format!("{}.preds", name(case)));
        let (_, argmax) = top_label(&probs, k);
        m.equal(case, "argmax (ties -> lowest index)", &argmax, &preds);
        let acc = ok(&mut m, case, "accuracy", accuracy(&probs, k, &labels));
        m.close(case, "accuracy", acc, f(case, "accuracy"), tol);
        m.close(case, "macro F1", macro_f1(&labels, &preds, k), f(case, "macro_f1"), tol);
        m.close(
            case,
            "quadratic weighted kappa",
            quadratic_weighted_kappa(&labels, &preds, k),
            f(case, "qwk"),
            tol,
        );
        m.close(case, "ordinal MAE", ordinal_mae(&labels, &preds), f(case, "ordinal_mae"), tol);
    }
    m.finish("accuracy / macro F1 / QWK / ordinal MAE", cases.len());
}

// ------------------------------------------------------------------------------------------------
// ranking family

/// Compares a Rust macro average with the stored `{per_class, strict, skip, defined}` of one metric.
fn check_macro(
    m: &mut Mismatches,
    case: &Value,
    metric: &str,
    want: &Value,
    strict: &calibra_metrics::MacroAverage,
    skip: &calibra_metrics::MacroAverage,
) {
    let tol = tol_f64();
    let what = format!("{}.{metric}", name(case));
    let per = floats(&want["per_class"], &format!("{what}.per_class"));
    m.all_close(case, &format!("{metric} per class (strict)"), &strict.per_class, &per, tol);
    m.all_close(case, &format!("{metric} per class (skip)"), &skip.per_class, &per, tol);
    m.close(case, &format!("{metric} strict mean"), strict.mean, num(&want["strict"], &what), tol);
    m.close(case, &format!("{metric} skip-undefined mean"), skip.mean, num(&want["skip"], &what), tol);
    let defined = want["defined"].as_u64().unwrap_or_else(|| panic!("{what}.defined")) as usize;
    m.equal(case, &format!("{metric} defined count (strict)"), strict.defined, defined);
    m.equal(case, &format!("{metric} defined count (skip)"), skip.defined, defined);
}

#[test]
fn auroc_matches_sklearn() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let (classification, binary, multilabel) =
        (section("classification"), section("binary"), section("multilabel"));
    for case in classification {
        let (probs, k, labels, _) = classification_inputs(case);
        match (
            macro_auroc_ovr(&probs, k, &labels, UndefinedPolicy::Strict),
            macro_auroc_ovr(&probs, k, &labels, UndefinedPolicy::SkipUndefined),
        ) {
            (Ok(strict), Ok(skip)) => {
                check_macro(&mut m, case, "macro AUROC", &case["auroc"], &strict, &skip)
            }
            (Err(e), _) | (_, Err(e)) => m.error(case, "macro AUROC", e),
        }
    }
    for case in binary {
        let (scores, targets, _) = binary_inputs(case);
        m.close(case, "binary AUROC", binary_auroc(&scores, &targets), f(case, "auroc"), tol);
    }
    for case in multilabel {
        let l = size(case, "l");
        let scores = floats(field(case, "scores"), &format!("{}.scores", name(case)));
        let targets = optional_bools(field(case, "targets"), &format!("{}.targets", name(case)));
        let strict = multilabel_macro_auroc(&scores, l, &targets, UndefinedPolicy::Strict);
        let skip = multilabel_macro_auroc(&scores, l, &targets, UndefinedPolicy::SkipUndefined);
        check_macro(&mut m, case, "multilabel AUROC", &case["auroc"], &strict, &skip);
    }
    m.finish("AUROC", classification.len() + binary.len() + multilabel.len());
}

#[test]
fn average_precision_matches_sklearn() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let (classification, binary, multilabel) =
        (section("classification"), section("binary"), section("multilabel"));
    for case in classification {
        let (probs, k, labels, _) = classification_inputs(case);
        match (
            macro_average_precision_ovr(&probs, k, &labels, UndefinedPolicy::Strict),
            macro_average_precision_ovr(&probs, k, &labels, UndefinedPolicy::SkipUndefined),
        ) {
            (Ok(strict), Ok(skip)) => {
                check_macro(&mut m, case, "macro AP", &case["average_precision"], &strict, &skip)
            }
            (Err(e), _) | (_, Err(e)) => m.error(case, "macro AP", e),
        }
    }
    for case in binary {
        let (scores, targets, _) = binary_inputs(case);
        let got = average_precision(&scores, &targets);
        m.close(case, "average precision", got, f(case, "average_precision"), tol);
    }
    for case in multilabel {
        let l = size(case, "l");
        let scores = floats(field(case, "scores"), &format!("{}.scores", name(case)));
        let targets = optional_bools(field(case, "targets"), &format!("{}.targets", name(case)));
        let strict = multilabel_macro_average_precision(&scores, l, &targets, UndefinedPolicy::Strict);
        let skip = multilabel_macro_average_precision(&scores, l, &targets, UndefinedPolicy::SkipUndefined);
        check_macro(&mut m, case, "multilabel AP", &case["average_precision"], &strict, &skip);
    }
    m.finish("average precision", classification.len() + binary.len() + multilabel.len());
}

#[test]
fn sensitivity_at_specificity_matches_roc_curve_oracle() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("binary");
    for case in cases {
        let (scores, targets, _) = binary_inputs(case);
        for point in field(case, "sensitivity_at_specificity").as_array().expect("an array") {
            let spec = f(point, "min_specificity");
            let got = sensitivity_at_specificity(&scores, &targets, spec);
            m.close(
                case,
                &format!("sensitivity at specificity >= {spec}"),
                got.sensitivity,
                f(point, "sensitivity"),
                tol,
            );
            m.close(
                case,
                &format!("threshold at specificity >= {spec}"),
                got.threshold,
                f(point, "threshold"),
                tol,
            );
            let interp = sensitivity_at_specificity_interp(&scores, &targets, spec);
            m.close(
                case,
                &format!("interpolated sensitivity at specificity {spec}"),
                interp,
                f(point, "interp"),
                tol,
            );
        }
    }
    m.finish("sensitivity at specificity", cases.len());
}

#[test]
fn rank_statistics_match_scipy() {
    let tol = tol_f64();
    let mut m = Mismatches::default();
    let cases = section("rank");
    for case in cases {
        let x = floats(field(case, "x"), &format!("{}.x", name(case)));
        let y = floats(field(case, "y"), &format!("{}.y", name(case)));
        if let Some(ranks) = case.get("ranks_x") {
            let want = floats(ranks, "ranks_x");
            m.all_close(case, "average ranks of x", &average_ranks(&x), &want, tol);
            let want = floats(field(case, "ranks_y"), "ranks_y");
            m.all_close(case, "average ranks of y", &average_ranks(&y), &want, tol);
        }
        m.close(case, "Kendall tau-b", kendall_tau_b(&x, &y), f(case, "kendall_tau_b"), tol);
        m.close(case, "Kendall tau-a", kendall_tau_a(&x, &y), f(case, "kendall_tau_a"), tol);
        m.close(case, "Spearman rho", spearman_rho(&x, &y), f(case, "spearman_rho"), tol);
        // Absent for NaN input: scipy.weightedtau does not propagate NaN (the framework returns NaN).
        if let Some(want) = case.get("weighted_tau") {
            m.close(case, "weighted tau", weighted_tau(&x, &y), num(want, "weighted_tau"), tol);
        }
    }
    m.finish("rank statistics", cases.len());
}

// ------------------------------------------------------------------------------------------------
// Selective prediction, confidence scores, smooth and debiased ECE, shift detection: the golden
// vectors in `tests/golden/selective.json` from `scripts/golden/selective.py` (torch-uncertainty 0.13,
// relplot 1.0.3, uncertainty-calibration 0.1.4, sklearn; numpy ports where the script says so).

const SELECTIVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/selective.json");

fn selective_golden() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text = std::fs::read_to_string(SELECTIVE).unwrap_or_else(|e| {
            panic!("cannot read {SELECTIVE}: {e} (regenerate with scripts/golden/selective.py)")
        });
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{SELECTIVE} is not valid JSON: {e}"))
    })
}

fn selective_tol(key: &str) -> f64 {
    num(&selective_golden()["tolerance"][key], &format!("tolerance.{key}"))
}

fn selective_cases(key: &str) -> &'static [Value] {
    selective_golden()[key].as_array().unwrap_or_else(|| panic!("{SELECTIVE}: key {key:?} is not an array"))
}

struct SelectiveInput {
    probs: Vec<f64>,
    logits: Vec<f64>,
    k: usize,
    labels: Vec<usize>,
}

fn selective_input(case: &Value) -> SelectiveInput {
    SelectiveInput {
        probs: floats(field(case, "probs"), "probs"),
        logits: floats(field(case, "logits"), "logits"),
        k: size(case, "k"),
        labels: usizes(field(case, "labels"), "labels"),
    }
}

#[test]
fn selective_areas_match_torch_uncertainty_and_the_stable_numpy_port() {
    use calibra_metrics::{
        augrc, aurc, coverage_at_risk, eaurc, optimal_aurc, risk_at_coverage, selective_areas,
        selective_risks, top_label_errors,
    };
    let (f64_tol, tu_tol) = (selective_tol("f64"), selective_tol("tu"));
    let mut m = Mismatches::default();
    let mut tu_checked = 0;
    let cases = selective_cases("cases");
    for case in cases {
        let input = selective_input(case);
        let (conf, err) = top_label_errors(&input.probs, input.k, &input.labels);
        let want = field(case, "expected");
        let got = match selective_areas(&conf, &err) {
            Ok(a) => a,
            Err(e) => {
                m.error(case, "selective_areas", e);
                continue;
            }
        };
        m.close(case, "aurc", got.aurc, f(want, "aurc"), f64_tol);
        m.close(case, "eaurc", got.eaurc, f(want, "eaurc"), f64_tol);
        m.close(case, "augrc", got.augrc, f(want, "augrc"), f64_tol);
        m.close(
            case,
            "risk_at_80_coverage",
            got.risk_at_80_coverage,
            f(want, "risk_at_80_coverage"),
            f64_tol,
        );
        m.close(case, "coverage_at_5_risk", got.coverage_at_5_risk, f(want, "coverage_at_5_risk"), f64_tol);
        let v = ok(&mut m, case, "aurc", aurc(&conf, &err));
        m.close(case, "aurc()", v, got.aurc, 0.0);
        let v = ok(&mut m, case, "augrc", augrc(&conf, &err));
        m.close(case, "augrc()", v, got.augrc, 0.0);
        let v = ok(&mut m, case, "eaurc", eaurc(&conf, &err));
        m.close(case, "eaurc()", v, got.eaurc, 0.0);
        let v = ok(&mut m, case, "optimal", optimal_aurc(&err));
        m.close(case, "optimal_aurc", v, f(want, "optimal_aurc"), f64_tol);
        let r80 = ok(&mut m, case, "risk_at_coverage", risk_at_coverage(&conf, &err, 0.8));
        m.close(case, "risk_at_coverage(0.8)", r80, got.risk_at_80_coverage, 0.0);
        let c5 = ok(&mut m, case, "coverage_at_risk", coverage_at_risk(&conf, &err, 0.05));
        m.close(case, "coverage_at_risk(0.05)", c5, got.coverage_at_5_risk, 0.0);
        match selective_risks(&conf, &err) {
            Ok(r) => m.all_close(case, "risks", &r, &floats(field(want, "risks"), "risks"), f64_tol),
            Err(e) => m.error(case, "risks", e),
        }
        // The library itself, where its unstable argsort cannot reorder ties.
        if let Some(tu) = case.get("tu") {
            tu_checked += 1;
            for key in ["aurc", "augrc", "risk_at_80_coverage", "coverage_at_5_risk"] {
                let value = match key {
                    "aurc" => got.aurc,
                    "augrc" => got.augrc,
                    "risk_at_80_coverage" => got.risk_at_80_coverage,
                    _ => got.coverage_at_5_risk,
                };
                m.close(case, &format!("torch-uncertainty {key}"), value, f(tu, key), tu_tol);
            }
        }
    }
    assert!(tu_checked >= 4, "only {tu_checked} cases compared with torch-uncertainty itself");
    m.finish("selective areas", cases.len());
}

#[test]
fn confidence_scores_and_their_areas_match_numpy() {
    use calibra_metrics::{ConfidenceScore, selective_areas, top_label_errors};
    let tol = selective_tol("f64");
    let mut m = Mismatches::default();
    let cases = selective_cases("cases");
    for case in cases {
        let input = selective_input(case);
        let (_, err) = top_label_errors(&input.probs, input.k, &input.labels);
        for score in ConfidenceScore::ALL {
            let s = match score.scores(&input.probs, Some(&input.logits), input.k) {
                Ok(s) => s,
                Err(e) => {
                    m.error(case, score.name(), e);
                    continue;
                }
            };
            if let Some(want) = case["scores"].get(score.name()) {
                m.all_close(case, score.name(), &s, &floats(want, score.name()), tol);
            }
            let want = &case["by_score"][score.name()];
            match selective_areas(&s, &err) {
                Ok(a) => {
                    m.close(case, &format!("{score} aurc"), a.aurc, f(want, "aurc"), tol);
                    m.close(case, &format!("{score} eaurc"), a.eaurc, f(want, "eaurc"), tol);
                    m.close(case, &format!("{score} augrc"), a.augrc, f(want, "augrc"), tol);
                }
                Err(e) => m.error(case, score.name(), e),
            }
        }
    }
    m.finish("confidence scores", cases.len());
}

#[test]
fn smooth_ece_matches_relplot_and_debiased_ece_matches_uncertainty_calibration() {
    use calibra_metrics::{
        debiased_ece_top_label, smooth_ece_sigma, smooth_ece_top_label, smooth_ece_with_bandwidth,
        top_label_errors,
    };
    let (tol, smooth_tol) = (selective_tol("f64"), selective_tol("smooth_ece"));
    let mut m = Mismatches::default();
    let cases = selective_cases("cases");
    for case in cases {
        let input = selective_input(case);
        let (conf, err) = top_label_errors(&input.probs, input.k, &input.labels);
        let correct: Vec<f64> = err.iter().map(|&e| if e { 0.0 } else { 1.0 }).collect();
        match smooth_ece_with_bandwidth(&conf, &correct) {
            Ok((v, width)) => {
                m.close(case, "smooth_ece", v, f(case, "smooth_ece"), smooth_tol);
                m.close(case, "smooth_ece bandwidth", width, f(case, "smooth_ece_bandwidth"), 0.0);
            }
            Err(e) => m.error(case, "smooth_ece", e),
        }
        let top = ok(
            &mut m,
            case,
            "smooth_ece_top_label",
            smooth_ece_top_label(&input.probs, input.k, &input.labels),
        );
        m.close(case, "smooth_ece_top_label", top, f(case, "smooth_ece"), smooth_tol);
        let fixed = ok(&mut m, case, "smooth_ece_sigma", smooth_ece_sigma(&conf, &correct, 0.05));
        m.close(case, "smooth_ece_sigma(0.05)", fixed, f(case, "smooth_ece_sigma_0_05"), smooth_tol);
        let d = ok(
            &mut m,
            case,
            "debiased_ece",
            debiased_ece_top_label(&input.probs, input.k, &input.labels, 15),
        );
        m.close(case, "debiased_ece", d, f(case, "debiased_ece"), tol);
    }
    m.finish("smooth / debiased ECE", cases.len());
}

#[test]
fn shift_detection_matches_sklearn_and_torch_uncertainty() {
    use calibra_metrics::shift_detection;
    let mut m = Mismatches::default();
    let cases = selective_cases("shift");
    for case in cases {
        let clean = floats(field(case, "clean"), "clean");
        let shifted = floats(field(case, "shifted"), "shifted");
        match shift_detection(&clean, &shifted) {
            Ok(d) => {
                m.close(case, "auroc", d.auroc, f(case, "auroc"), selective_tol("f64"));
                // torch-uncertainty returns the FPR as a float32 tensor.
                m.close(
                    case,
                    "fpr_at_95_tpr",
                    d.fpr_at_95_tpr,
                    f(case, "fpr_at_95_tpr"),
                    selective_tol("tu"),
                );
            }
            Err(e) => m.error(case, "shift_detection", e),
        }
    }
    m.finish("shift detection", cases.len());
}
