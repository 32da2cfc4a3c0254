//! The optional fifth CRS axis "selective" (−AUGRC, issue 24): it goes through the same machinery as the
//! other four (cells, encoder means, reference, bootstrap, estimator substitutions, correlations,
//! per-domain CRS, stability), and a request that cannot be served is a clear error.
//!
//! No expected number here is typed in: the selective axis's values are recomputed in the test from the
//! records (or from the selective analyses, whose numbers `selective_golden.rs` checks against the Python
//! oracle), and the rest are invariants.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use calibra_crs::bootstrap::BootstrapConfig;
use calibra_crs::selective_analyses::{SelectiveOptions, selective_analyses};
use calibra_crs::{
    AxisConfig, AxisEstimators, AxisWeights, ComponentWeights, Condition, CrsError, Evaluation,
    EvaluationOptions, Profile, Reference, ReferenceConfig, Regime, RunRecord, RunRecordSet,
    SELECTIVE_METRIC, ScoreWeights, with_selective_metrics,
};
use proptest::prelude::*;

const FRACTIONS: [f64; 5] = [0.01, 0.05, 0.1, 0.25, 1.0];

fn record(
    encoder: usize,
    seed: u64,
    fraction: f64,
    condition: Condition,
    metrics: &[(&str, f64)],
) -> RunRecord {
    RunRecord {
        encoder: format!("E{encoder}"),
        dataset: "D".into(),
        regime: Regime::Frozen,
        probe: "linear".into(),
        calibrator: "none".into(),
        label_fraction: fraction,
        seed,
        condition,
        metrics: metrics.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        paths: BTreeMap::new(),
        timings: BTreeMap::new(),
        versions: BTreeMap::new(),
        training: None,
    }
}

/// A synthetic run set: `augrc[e][s]` is encoder e's clean full-label AUGRC at seed s (AURC is a
/// different, monotone function of it, for the substitution). The other metrics only need spread.
fn run_set(augrc: &[Vec<f64>]) -> RunRecordSet {
    let mut records = Vec::new();
    for (e, seeds) in augrc.iter().enumerate() {
        let base = 0.70 + 0.037 * e as f64;
        for (s, &a) in seeds.iter().enumerate() {
            let s_u = s as u64;
            let jitter = 0.003 * s as f64;
            for &f in &FRACTIONS {
                let auroc = base * (0.8 + 0.2 * f) + jitter;
                let mut metrics =
                    vec![("macro_auroc", auroc), ("ece", 0.02 + 0.011 * ((e * 7 + s) % 5) as f64)];
                if f == 1.0 {
                    metrics.extend([(SELECTIVE_METRIC, a), ("aurc", a.sqrt())]);
                }
                records.push(record(e, s_u, f, Condition::Clean, &metrics));
            }
            let perturbed = base * (0.9 - 0.013 * ((e * 3) % 4) as f64) + jitter;
            records.push(record(
                e,
                s_u,
                1.0,
                Condition::Perturbation { perturbation: "blur".into(), severity: 1 },
                &[("macro_auroc", perturbed), ("ece", 0.05)],
            ));
        }
    }
    RunRecordSet::from_records(records, "synthetic").unwrap()
}

fn augrc_table() -> Vec<Vec<f64>> {
    (0..5)
        .map(|e| (0..3).map(|s| 0.02 + 0.013 * ((e * 5 + s * 3) % 7) as f64 + 0.001 * e as f64).collect())
        .collect()
}

fn options(weights: AxisWeights, selective: bool) -> EvaluationOptions {
    EvaluationOptions {
        axes: AxisConfig {
            selective_metric: selective.then(|| SELECTIVE_METRIC.to_string()),
            ..AxisConfig::default()
        },
        weights: ScoreWeights { axis: weights, ..ScoreWeights::default() },
        bootstrap: Some(BootstrapConfig { replicates: 50, ..BootstrapConfig::default() }),
        ..EvaluationOptions::default()
    }
}

fn five() -> AxisWeights {
    AxisWeights::from_slice(&[0.2; 5]).unwrap()
}

#[test]
fn the_fifth_axis_goes_through_every_analysis() {
    let table = augrc_table();
    let set = run_set(&table);
    let four = Evaluation::build(&set, &options(AxisWeights::default(), false)).unwrap();
    let e = Evaluation::build(&set, &options(five(), true)).unwrap();
    assert!(e.crs_not_computed.is_none(), "{:?}", e.crs_not_computed);
    assert_eq!(e.axis_weights, vec![0.2; 5]);
    assert_eq!(e.estimators.selective.as_deref(), Some(AxisEstimators::AUGRC_MSP));
    assert_eq!(four.estimators.selective, None);

    // Profiles: the first four axes are those of the four-axis evaluation; the fifth is −(mean over
    // seeds of the clean full-label AUGRC) (one dataset: the cell is the encoder).
    for (p, p4) in e.profiles.iter().zip(&four.profiles) {
        assert_eq!(p.encoder, p4.encoder);
        assert_eq!(&p.oriented[..4], &p4.oriented[..]);
        let e_index: usize = p.encoder[1..].parse().unwrap();
        let seeds = &table[e_index];
        let mean = seeds.iter().sum::<f64>() / seeds.len() as f64;
        let got = p.oriented[4].unwrap();
        assert!((got + mean).abs() <= 1e-12, "{}: {got} vs −{mean}", p.encoder);
        assert_eq!(p.selective_error, Some(-got));
        assert_eq!(four.profiles.iter().find(|q| q.encoder == p.encoder).unwrap().selective_error, None);
    }
    for c in &e.cells {
        assert!(c.values.selective.is_some());
    }

    // CRS: five normalised values, and the same scores as a reference built directly on the profiles.
    let profiles: Vec<Profile> =
        e.profiles.iter().map(|p| Profile::with_values(p.encoder.clone(), p.oriented.clone())).collect();
    let config = ReferenceConfig {
        weights: ScoreWeights { axis: five(), ..ScoreWeights::default() },
        estimators: e.estimators.clone(),
        ..ReferenceConfig::default()
    };
    let direct = Reference::build(&profiles, config).unwrap();
    for (c, s) in e.crs.iter().zip(direct.panel_scores()) {
        assert_eq!(c.normalized.len(), 5);
        assert_eq!(c.crs, s.components.crs);
    }

    // The saved reference names the fifth axis, round-trips, and refuses four-axis estimators.
    let saved = e.reference_used.as_ref().unwrap();
    let json = saved.to_json();
    assert!(json.contains("\"selective\""));
    let back = Reference::from_json(&json, Path::new("five.json")).unwrap();
    assert_eq!(&back, saved);
    let four_ref = four.reference_used.as_ref().unwrap();
    assert!(!four_ref.to_json().contains("selective"));
    assert!(matches!(
        saved.check_compatible(&four.estimators, calibra_crs::ValueScale::Oriented),
        Err(CrsError::AxisCountMismatch { reference: 5, candidate: 4 })
    ));

    // A five-axis file must have the fifth entry in every axis table.
    let mut edited: serde_json::Value = serde_json::from_str(&json).unwrap();
    edited["anchors"].as_object_mut().unwrap().remove("selective");
    let err = Reference::from_json(&edited.to_string(), Path::new("edited.json")).unwrap_err().to_string();
    assert!(err.contains("`anchors` has 4 axes but the estimators describe 5"), "{err}");

    // Bootstrap over the five-axis panel.
    let boot = e.bootstrap.as_ref().unwrap();
    assert_eq!(boot.encoders.len(), 5);
    for (b, c) in boot.encoders.iter().zip(&e.crs) {
        assert_eq!(b.crs, c.crs);
    }

    // Substitutions: the four-axis ones plus the selective estimator's.
    let names: Vec<&str> = e.substitutions.iter().map(|s| s.estimator.as_str()).collect();
    let names4: Vec<&str> = four.substitutions.iter().map(|s| s.estimator.as_str()).collect();
    assert_eq!(&names[..names4.len()], &names4[..]);
    let sub = e.substitutions.iter().find(|s| s.estimator == "selective=aurc").expect("selective=aurc");
    assert!(sub.comparison.is_some(), "{:?}", sub.skipped);
    assert!(!names4.iter().any(|n| n.starts_with("selective")));

    // Correlations: every pair of the five axes at both levels (plus the two LE/AULC contrasts).
    assert_eq!(e.correlations.len(), 10 * 2 + 2);
    assert_eq!(four.correlations.len(), 6 * 2 + 2);
    assert!(e.correlations.iter().any(|c| c.a == "discrimination" && c.b == "selective"));

    // Per-domain CRS and the stability analyses run on the five-axis profiles.
    assert_eq!(e.per_domain.len(), 1);
    let stability = e.stability.as_ref().expect("stability on 5 encoders");
    assert_eq!(stability.axis_weights.trials + stability.axis_weights.skipped_degenerate, 500);
    assert_eq!(stability.full_panel.len(), 5);
    for ((name, crs), c) in stability.full_panel.iter().zip(&e.crs) {
        assert_eq!((name, *crs), (&c.encoder, c.crs));
    }
    // The four-axis stability differs (another CRS), so the fifth axis was really in play.
    assert_ne!(stability.full_panel, four.stability.as_ref().unwrap().full_panel);
}

#[test]
fn requests_that_cannot_be_served_are_clear_errors() {
    let set = run_set(&augrc_table());
    // Five weights, but no selective metric configured (no selective analyses).
    let err = Evaluation::build(&set, &options(five(), false)).unwrap_err();
    assert!(matches!(err, CrsError::SelectiveAxisInput { .. }), "{err}");
    assert!(err.to_string().contains("--selective"), "{err}");
    // The selective metric configured but four weights.
    let err = Evaluation::build(&set, &options(AxisWeights::default(), true)).unwrap_err();
    assert!(err.to_string().contains("give 5"), "{err}");
    // The selective axis requested on records without the metric.
    let bare: Vec<RunRecord> = set
        .records()
        .iter()
        .map(|r| {
            let mut r = r.record.clone();
            r.metrics.remove(SELECTIVE_METRIC);
            r
        })
        .collect();
    let bare = RunRecordSet::from_records(bare, "bare").unwrap();
    let err = Evaluation::build(&bare, &options(five(), true)).unwrap_err();
    assert!(matches!(err, CrsError::SelectiveAxisInput { .. }), "{err}");
    assert!(err.to_string().contains("selective axis needs"), "{err}");

    // A saved four-axis reference with a five-axis request, and the reverse.
    let four = Evaluation::build(&set, &options(AxisWeights::default(), false)).unwrap();
    let five_e = Evaluation::build(&set, &options(five(), true)).unwrap();
    let with_reference = |reference: &Reference, selective: bool| EvaluationOptions {
        reference: Some(reference.clone()),
        ..options(reference.weights().axis, selective)
    };
    let err =
        Evaluation::build(&set, &with_reference(four.reference_used.as_ref().unwrap(), true)).unwrap_err();
    assert!(matches!(err, CrsError::AxisCountMismatch { reference: 4, candidate: 5 }), "{err}");
    assert!(err.to_string().contains("four-axis reference"), "{err}");
    let err =
        Evaluation::build(&set, &with_reference(five_e.reference_used.as_ref().unwrap(), false)).unwrap_err();
    assert!(matches!(err, CrsError::AxisCountMismatch { reference: 5, candidate: 4 }), "{err}");
}

/// examples/selective_runs as a run set with the four default axes too.
fn selective_example(dir: &Path) -> PathBuf {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/selective_runs");
    calibra_testkit::five_axis_runs(&example, dir)
}

#[test]
fn the_selective_analyses_feed_the_axis_from_the_predictions_files() {
    let dir = tempfile::tempdir().unwrap();
    let set = RunRecordSet::from_path(&selective_example(dir.path())).unwrap();
    let report = selective_analyses(&set, &SelectiveOptions::default()).unwrap();
    let with = with_selective_metrics(&set, &report).unwrap();
    assert_eq!(with.len(), set.len());
    // Every run with a predictions file now carries its AUGRC, AURC and E-AURC; the others nothing.
    for (before, after) in set.records().iter().zip(with.records()) {
        let run = report.runs.iter().find(|r| r.run.record == before.location.to_string());
        for (name, value) in [
            ("augrc", run.and_then(|r| r.augrc)),
            ("aurc", run.and_then(|r| r.aurc)),
            ("eaurc", run.and_then(|r| r.eaurc)),
        ] {
            assert_eq!(after.record.metrics.get(name).copied(), value, "{name} of {}", before.location);
        }
    }
    // A record that already has one of these metrics is refused (it would be silently replaced).
    let err = with_selective_metrics(&with, &report).unwrap_err();
    assert!(matches!(err, CrsError::SelectiveAxisInput { .. }), "{err}");

    let e = Evaluation::build(&with, &options(five(), true)).unwrap().with_selective(report.clone());
    assert!(e.crs_not_computed.is_none(), "{:?}", e.crs_not_computed);
    for p in &e.profiles {
        // The clean full-label runs of the encoder (one dataset, one probe, calibrator none).
        let clean: Vec<f64> = report
            .runs
            .iter()
            .filter(|r| r.run.encoder == p.encoder && r.run.condition == Condition::Clean)
            .map(|r| r.augrc.unwrap())
            .collect();
        assert_eq!(clean.len(), 2);
        let mean = clean.iter().sum::<f64>() / clean.len() as f64;
        assert!((p.oriented[4].unwrap() + mean).abs() <= 1e-12, "{}", p.encoder);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// With all axis weight on the selective axis and all component weight on the ideal-point term,
    /// CRS = 1 − (1 − s̃_sel)², so the CRS ranking is the ranking by mean AUGRC (lower is better).
    #[test]
    fn only_the_selective_axis_ranks_by_augrc(
        raw in prop::collection::vec(prop::collection::vec(0.01f64..0.4, 3), 4..7)
    ) {
        let means: Vec<f64> = raw.iter().map(|s| s.iter().sum::<f64>() / 3.0).collect();
        let mut sorted = means.clone();
        sorted.sort_by(f64::total_cmp);
        prop_assume!(sorted.windows(2).all(|w| w[1] - w[0] > 1e-9));
        let set = run_set(&raw);
        let options = EvaluationOptions {
            weights: ScoreWeights {
                axis: AxisWeights::from_slice(&[0.0, 0.0, 0.0, 0.0, 1.0]).unwrap(),
                component: ComponentWeights::new(0.0, 1.0, 0.0).unwrap(),
            },
            bootstrap: None,
            stability_seed: None,
            ..options(five(), true)
        };
        let e = Evaluation::build(&set, &options).unwrap();
        for a in &e.crs {
            for b in &e.crs {
                let (ea, eb): (usize, usize) = (a.encoder[1..].parse().unwrap(), b.encoder[1..].parse().unwrap());
                if means[ea] < means[eb] {
                    prop_assert!(a.rank < b.rank, "{} (AUGRC {}) vs {} (AUGRC {})", a.encoder, means[ea], b.encoder, means[eb]);
                }
            }
        }
    }
}
