//! Parity of run records → metric rows → axes → profiles, the bootstrap's per-replicate pipeline and
//! the rank comparison statistics against the numpy/scipy oracle `scripts/golden/crs_records.py`
//! (golden file `tests/golden/crs_records.json`).

use calibra_crs::axes::{AxisConfig, AxisPlan, CellValues, RobustnessVariant};
use calibra_crs::bootstrap::replicate_crs;
use calibra_crs::metric_rows::SeedTable;
use calibra_crs::rank_compare::compare_rankings;
use calibra_crs::run_record::{Condition, GroupKey, LabelFraction, Regime, RunRecordSet};
use calibra_crs::score::ScoreWeights;
use serde_json::Value;

/// Both sides are f64 computations of the same formulas in different summation orders.
const TOL: f64 = 1e-12;

fn golden() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/crs_records.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("golden file")).expect("golden JSON")
}

fn record_set(g: &Value) -> RunRecordSet {
    let lines: Vec<&str> =
        g["records_jsonl"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    RunRecordSet::from_reader(lines.join("\n").as_bytes(), "golden.jsonl").expect("golden records parse")
}

fn close(actual: Option<f64>, expected: &Value, what: &str) {
    match (actual, expected.as_f64()) {
        (None, None) => assert!(expected.is_null(), "{what}: expected {expected}, got None"),
        (Some(a), Some(e)) => assert!((a - e).abs() <= TOL * e.abs().max(1.0), "{what}: {a} vs oracle {e}"),
        (a, _) => panic!("{what}: got {a:?}, oracle {expected}"),
    }
}

#[test]
fn metric_rows_match_the_oracle() {
    let g = golden();
    let set = record_set(&g);
    let table = SeedTable::from_records(&set);
    let seeds: Vec<u64> = g["seeds"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
    assert_eq!(table.seeds(), seeds);
    let rows = table.rows();
    let expected = g["metric_rows"].as_array().unwrap();
    assert_eq!(rows.len(), expected.len(), "row count");
    for row in expected {
        let key = GroupKey {
            encoder: row[0].as_str().unwrap().into(),
            dataset: row[1].as_str().unwrap().into(),
            regime: serde_json::from_value::<Regime>(row[2].clone()).unwrap(),
            probe: row[3].as_str().unwrap().into(),
            calibrator: row[4].as_str().unwrap().into(),
            condition: serde_json::from_value::<Condition>(row[5].clone()).unwrap(),
            label_fraction: LabelFraction::new(row[6].as_f64().unwrap()).unwrap(),
        };
        let metric = row[7].as_str().unwrap();
        let actual = rows.get(&key, metric).unwrap_or_else(|| panic!("missing row {key} {metric}"));
        let what = format!("{key} {metric}");
        close(Some(actual.mean), &row[8], &format!("{what} mean"));
        close(actual.std, &row[9], &format!("{what} std"));
        assert_eq!(actual.n_seeds as u64, row[10].as_u64().unwrap(), "{what} n");
    }
}

fn check_cell(values: &CellValues, expected: &Value, what: &str) {
    for (field, actual) in [
        ("discrimination", values.discrimination),
        ("calibration", values.calibration),
        ("label_efficiency", values.label_efficiency),
        ("aulc", values.aulc),
        ("robustness", values.robustness),
        ("robustness_corruption_only", values.robustness_corruption_only),
        ("delta_mean", values.delta_mean),
        ("delta_max", values.delta_max),
        ("delta_shift", values.delta_shift),
    ] {
        close(actual, &expected[field], &format!("{what} {field}"));
    }
}

#[test]
fn cell_axes_and_profiles_match_the_oracle() {
    let g = golden();
    let rows = SeedTable::from_records(&record_set(&g)).rows();
    let plan = AxisPlan::for_rows(&rows, &AxisConfig::default()).unwrap();
    let cells = plan.evaluate(rows.means());
    let expected = g["cells"].as_array().unwrap();
    assert_eq!(cells.len(), expected.len(), "cell count (the unobserved cell must stay absent)");
    for (cell, exp) in cells.iter().zip(expected) {
        assert_eq!(cell.encoder, exp["encoder"].as_str().unwrap());
        assert_eq!(cell.dataset, exp["dataset"].as_str().unwrap());
        check_cell(&cell.values, exp, &format!("{}/{}", cell.encoder, cell.dataset));
    }
    // The design exercises every branch: a missing LE, a retention above 1 kept, shift and no shift.
    assert!(cells.iter().any(|c| c.values.label_efficiency.is_none() && c.values.aulc.is_some()));
    assert!(cells.iter().any(|c| c.values.label_efficiency.is_some_and(|le| le > 1.0)));
    assert!(cells.iter().any(|c| c.values.delta_shift.is_some()));
    assert!(cells.iter().any(|c| c.values.delta_shift.is_none()));

    for (variant, key) in [
        (RobustnessVariant::WithShift, "profiles_with_shift"),
        (RobustnessVariant::CorruptionOnly, "profiles_corruption_only"),
    ] {
        let config = AxisConfig { robustness: variant, ..AxisConfig::default() };
        let plan = AxisPlan::for_rows(&rows, &config).unwrap();
        let profiles = plan.profiles(rows.means());
        let expected = g[key].as_object().unwrap();
        assert_eq!(profiles.len(), expected.len());
        for p in &profiles {
            let exp = expected[&p.encoder].as_array().unwrap();
            for (a, (actual, e)) in p.values.iter().zip(exp).enumerate() {
                close(*actual, e, &format!("{key} {} axis {a}", p.encoder));
            }
        }
    }
}

#[test]
fn replicate_pipeline_matches_the_oracle_for_fixed_seed_draws() {
    let g = golden();
    let table = SeedTable::from_records(&record_set(&g));
    let plan = AxisPlan::new(table.groups(), table.metrics(), &AxisConfig::default()).unwrap();
    let mut buffer = Vec::new();
    for rep in g["replicates"].as_array().unwrap() {
        let weights: Vec<u32> =
            rep["weights"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap() as u32).collect();
        let crs = replicate_crs(&table, &plan, &weights, &ScoreWeights::default(), &mut buffer)
            .expect("every golden replicate is scorable");
        for (encoder, score) in plan.encoders().iter().zip(&crs) {
            close(Some(*score), &rep["crs"][encoder], &format!("weights {weights:?} CRS {encoder}"));
        }
    }
}

#[test]
fn rank_comparisons_match_scipy() {
    let g = golden();
    let pairs = |v: &Value| -> Vec<(String, f64)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_f64().unwrap()))
            .collect()
    };
    for case in g["rank_comparisons"].as_array().unwrap() {
        let (a, b) = (pairs(&case["a"]), pairs(&case["b"]));
        let e = &case["expected"];
        let c = compare_rankings(&a, &b).unwrap();
        let what = format!("n={}", c.n);
        for (key, actual) in [
            ("n", c.n),
            ("reversals", c.reversals),
            ("pairs", c.pairs),
            ("ties_a", c.ties_a),
            ("ties_b", c.ties_b),
        ] {
            assert_eq!(actual as u64, e[key].as_u64().unwrap(), "{what} {key}");
        }
        for (key, actual) in [
            ("kendall_tau", c.kendall_tau),
            ("spearman_rho", c.spearman_rho),
            ("kendall_tau_b_scores", c.kendall_tau_b_scores),
            ("weighted_tau", c.weighted_tau),
            ("mean_abs_displacement", c.mean_abs_displacement),
        ] {
            close(Some(actual), &e[key], &format!("{what} {key}"));
        }
        let ours = serde_json::to_value(&c).unwrap();
        assert_eq!(ours["top_k_overlap"], e["top_k_overlap"], "{what} top-k");
        assert_eq!(ours["moves"], e["moves"], "{what} moves");
    }
}
