//! The paired-seed bootstrap: determinism (seed and thread count), and statistical properties on
//! synthetic run-record designs.

use std::collections::BTreeMap;

use calibra_crs::axes::AxisConfig;
use calibra_crs::bootstrap::{BootstrapConfig, BootstrapResult, paired_seed_bootstrap, panel_crs};
use calibra_crs::error::CrsError;
use calibra_crs::metric_rows::SeedTable;
use calibra_crs::run_record::{Condition, Regime, RunRecord, RunRecordSet};
use calibra_crs::score::ScoreWeights;
use calibra_crs::{Reference, ReferenceConfig};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const FRACTIONS: [f64; 5] = [0.01, 0.05, 0.10, 0.25, 1.0];

/// Encoder traits: (base AUROC, ECE, label-scarcity loss, corruption drop per severity).
const ENCODERS: [(&str, f64, f64, f64, f64); 5] = [
    ("Alpha", 0.92, 0.03, 0.10, 0.010),
    ("Beta", 0.90, 0.06, 0.05, 0.020),
    ("Gamma", 0.86, 0.04, 0.20, 0.005),
    ("Delta", 0.84, 0.10, 0.25, 0.040),
    ("Epsilon", 0.80, 0.12, 0.30, 0.050),
];

fn run(
    encoder: &str,
    dataset: &str,
    fraction: f64,
    seed: u64,
    condition: Condition,
    auroc: f64,
    ece: f64,
) -> RunRecord {
    RunRecord {
        encoder: encoder.into(),
        dataset: dataset.into(),
        regime: Regime::Frozen,
        probe: "linear".into(),
        calibrator: "none".into(),
        label_fraction: fraction,
        seed,
        condition,
        metrics: BTreeMap::from([("macro_auroc".to_string(), auroc), ("ece".to_string(), ece)]),
        paths: BTreeMap::new(),
        timings: BTreeMap::new(),
        versions: BTreeMap::new(),
        training: None,
    }
}

/// 5 encoders × 2 datasets × `seeds` seeds, seed noise of standard deviation ≈ `noise`.
fn design(seeds: u64, noise: f64, rng_seed: u64) -> SeedTable {
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let mut jitter = move || noise * (rng.random::<f64>() - 0.5) * 3.46; // uniform, sd = noise
    let mut records = Vec::new();
    for (name, base, ece, scarcity, drop) in ENCODERS {
        for (d, dataset) in ["chexpert", "isic"].into_iter().enumerate() {
            let a_cell = base - 0.02 * d as f64;
            for seed in 0..seeds {
                let a0 = a_cell + jitter();
                for fraction in FRACTIONS {
                    let a = if fraction == 1.0 {
                        a0
                    } else {
                        a0 * (1.0 - scarcity * (1.0 - fraction)) + jitter()
                    };
                    records.push(run(
                        name,
                        dataset,
                        fraction,
                        seed,
                        Condition::Clean,
                        a,
                        ece + jitter().abs(),
                    ));
                }
                for severity in 1..=2u32 {
                    let condition = Condition::Perturbation { perturbation: "blur".into(), severity };
                    records.push(run(
                        name,
                        dataset,
                        1.0,
                        seed,
                        condition,
                        a0 - drop * f64::from(severity) + jitter(),
                        ece,
                    ));
                }
                if dataset == "chexpert" {
                    let condition = Condition::Shift { target: "mimic".into() };
                    records.push(run(name, dataset, 1.0, seed, condition, a0 - 2.0 * drop + jitter(), ece));
                }
            }
        }
    }
    SeedTable::from_records(&RunRecordSet::from_records(records, "synthetic").unwrap())
}

fn bootstrap_on(threads: usize, table: &SeedTable, config: &BootstrapConfig) -> BootstrapResult {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| paired_seed_bootstrap(table, &AxisConfig::default(), config).unwrap())
}

#[test]
fn same_seed_gives_identical_output_at_one_and_four_threads() {
    let table = design(5, 0.01, 1);
    let config = BootstrapConfig { replicates: 2_000, seed: 42, ..BootstrapConfig::default() };
    let one = bootstrap_on(1, &table, &config);
    let four = bootstrap_on(4, &table, &config);
    assert_eq!(one, four);
    // Bit-identical, not just equal within a tolerance.
    for (a, b) in one.encoders.iter().zip(&four.encoders) {
        assert_eq!((a.lower.to_bits(), a.upper.to_bits()), (b.lower.to_bits(), b.upper.to_bits()));
    }
    // A different seed draws different replicates.
    let other = bootstrap_on(4, &table, &BootstrapConfig { seed: 43, ..config });
    assert_ne!(one.encoders, other.encoders);
}

#[test]
fn default_run_is_stable_and_well_formed() {
    let table = design(5, 0.002, 2);
    let result = bootstrap_on(2, &table, &BootstrapConfig::default());
    assert_eq!(result.replicates, 10_000);
    assert_eq!(result.dropped_replicates, 0);
    let p1: f64 = result.encoders.iter().map(|e| e.p_rank1).sum();
    let p3: f64 = result.encoders.iter().map(|e| e.p_top3).sum();
    assert!((p1 - 1.0).abs() < 1e-12, "P(rank 1) sums to {p1}");
    assert!((p3 - 3.0).abs() < 1e-12, "P(top 3) sums to {p3}");
    for e in &result.encoders {
        assert!(
            e.lower <= e.crs && e.crs <= e.upper,
            "{}: {} outside [{}, {}]",
            e.encoder,
            e.crs,
            e.lower,
            e.upper
        );
        assert!((0.0..=1.0).contains(&e.p_rank1) && e.p_rank1 <= e.p_top3);
    }
    // With tiny seed noise the dominant encoder of the design leads in essentially every replicate.
    let alpha = result.encoders.iter().find(|e| e.encoder == "Alpha").unwrap();
    assert!(alpha.p_rank1 > 0.99, "Alpha P(rank 1) = {}", alpha.p_rank1);
}

#[test]
fn without_seed_noise_every_replicate_equals_the_point_estimate() {
    // Exact by construction: identical seeds make every resample's means equal the point means.
    let table = design(4, 0.0, 3);
    let result = bootstrap_on(2, &table, &BootstrapConfig { replicates: 300, ..BootstrapConfig::default() });
    for e in &result.encoders {
        assert_eq!((e.lower, e.upper), (e.crs, e.crs), "{}", e.encoder);
    }
    let leader = result.encoders.iter().max_by(|a, b| a.crs.total_cmp(&b.crs)).unwrap();
    assert_eq!(leader.p_rank1, 1.0);
}

#[test]
fn point_crs_is_the_reference_panel_crs_of_the_full_data_profiles() {
    let table = design(3, 0.01, 4);
    let rows = table.rows();
    let plan = calibra_crs::axes::AxisPlan::for_rows(&rows, &AxisConfig::default()).unwrap();
    let profiles = plan.profiles(rows.means());
    // The panel's own scores of a reference built from the full-data profiles (crs-core's path).
    let reference = Reference::build(&profiles, ReferenceConfig::default()).unwrap();
    let expected: Vec<f64> = reference.panel_scores().iter().map(|s| s.components.crs).collect();
    let values: Vec<Vec<f64>> = profiles.iter().map(|p| p.require_complete().unwrap()).collect();
    assert_eq!(panel_crs(&values, &ScoreWeights::default()).unwrap(), expected);
    let result = bootstrap_on(1, &table, &BootstrapConfig { replicates: 10, ..BootstrapConfig::default() });
    let point: Vec<f64> = result.encoders.iter().map(|e| e.crs).collect();
    assert_eq!(point, expected);
}

#[test]
fn replicates_that_lose_an_axis_are_dropped_and_counted() {
    // Robustness of one encoder observed under seed 0 only: a replicate that does not draw seed 0
    // leaves that encoder without robustness, so it cannot be scored.
    let full = design(3, 0.01, 6);
    let m = |name: &str| full.metrics().iter().position(|x| x == name).unwrap();
    let mut records: Vec<RunRecord> = Vec::new();
    for (gi, g) in full.groups().iter().enumerate() {
        for (s, &seed) in full.seeds().iter().enumerate() {
            if g.encoder == "Gamma" && g.condition != Condition::Clean && seed != 0 {
                continue;
            }
            let (auroc, ece) = (full.value(gi, m("macro_auroc"), s), full.value(gi, m("ece"), s));
            let fraction = g.label_fraction.get();
            records.push(run(&g.encoder, &g.dataset, fraction, seed, g.condition.clone(), auroc, ece));
        }
    }
    let table = SeedTable::from_records(&RunRecordSet::from_records(records, "holes").unwrap());
    let result =
        bootstrap_on(2, &table, &BootstrapConfig { replicates: 1_000, ..BootstrapConfig::default() });
    // P(seed 0 never drawn in 3 draws) = (2/3)³ ≈ 0.30.
    assert!(
        result.dropped_replicates > 200 && result.dropped_replicates < 400,
        "{}",
        result.dropped_replicates
    );
    let p1: f64 = result.encoders.iter().map(|e| e.p_rank1).sum();
    assert!((p1 - 1.0).abs() < 1e-12);
}

#[test]
fn bad_settings_and_incomplete_profiles_are_errors() {
    let table = design(3, 0.01, 5);
    let zero = BootstrapConfig { replicates: 0, ..BootstrapConfig::default() };
    assert!(paired_seed_bootstrap(&table, &AxisConfig::default(), &zero).is_err());
    // Asking for label-efficiency fractions that were never run leaves every encoder without LE.
    let axes = AxisConfig { le_fractions: vec![0.5], ..AxisConfig::default() };
    let err = paired_seed_bootstrap(
        &table,
        &axes,
        &BootstrapConfig { replicates: 5, ..BootstrapConfig::default() },
    )
    .unwrap_err();
    assert!(matches!(err, CrsError::MissingAxis { .. }), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn probabilities_and_intervals_are_well_formed(
        noise in 0.0f64..0.05, rng_seed in any::<u64>(), seed in any::<u64>(), seeds in 2u64..6,
    ) {
        let table = design(seeds, noise, rng_seed);
        let result = bootstrap_on(2, &table, &BootstrapConfig { replicates: 200, seed, ..BootstrapConfig::default() });
        let scored = (result.replicates - result.dropped_replicates) as f64;
        prop_assert!(scored > 0.0);
        let p1: f64 = result.encoders.iter().map(|e| e.p_rank1).sum();
        let p3: f64 = result.encoders.iter().map(|e| e.p_top3).sum();
        prop_assert!((p1 - 1.0).abs() < 1e-9);
        prop_assert!((p3 - 3.0).abs() < 1e-9);
        for e in &result.encoders {
            prop_assert!(e.lower <= e.upper);
            prop_assert!(e.lower >= -1e-12 && e.upper <= 1.0 + 1e-12);
            // Probabilities are counts over the scored replicates.
            prop_assert!(((e.p_rank1 * scored).round() - e.p_rank1 * scored).abs() < 1e-6);
        }
    }
}
