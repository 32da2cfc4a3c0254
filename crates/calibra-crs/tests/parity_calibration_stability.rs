//! Parity of the calibration-stability table (accuracy, ECE, MCE, ACE across seeds and across prompt
//! templates) with the numpy oracle `scripts/golden/calibration_stability.py`: the same records fixture
//! (`tests/golden/calibration_stability_records.jsonl`, written by that script, shuffled) and its expected
//! table (`tests/golden/calibration_stability.json`): same rows in the same order, same members, same
//! counts, means and sample stds within 1e-12.

use calibra_crs::{Condition, RunRecordSet, StabilityAxis, calibration_stability};
use serde_json::Value;

/// numpy's mean and `std(ddof=1)` vs ours (first-member shift, see the module docs): the same formulas in
/// a different rounding order.
const TOL: f64 = 1e-12;

fn golden_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn the_table_matches_the_numpy_oracle() {
    let set = RunRecordSet::from_path(&golden_dir().join("calibration_stability_records.jsonl"))
        .expect("fixture records parse");
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(golden_dir().join("calibration_stability.json")).expect("golden file"),
    )
    .expect("golden JSON");
    let table = calibration_stability(&set);
    let expected = golden["rows"].as_array().unwrap();
    assert_eq!(table.rows.len(), expected.len(), "row count");
    assert_eq!(
        table.metrics,
        golden["metrics"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect::<Vec<_>>()
    );
    for (i, (row, want)) in table.rows.iter().zip(expected).enumerate() {
        let what = format!("row {i} ({want})");
        let axis = match want["axis"].as_str().unwrap() {
            "seeds" => StabilityAxis::Seeds,
            "templates" => StabilityAxis::Templates,
            other => panic!("{what}: axis {other}"),
        };
        assert_eq!(row.axis, axis, "{what}");
        assert_eq!(row.encoder, want["encoder"].as_str().unwrap(), "{what}");
        assert_eq!(row.dataset, want["dataset"].as_str().unwrap(), "{what}");
        assert_eq!(row.regime.name(), want["regime"].as_str().unwrap(), "{what}");
        assert_eq!(row.method, want["method"].as_str().unwrap(), "{what}");
        assert_eq!(row.calibrator, want["calibrator"].as_str().unwrap(), "{what}");
        assert_eq!(row.label_fraction, want["label_fraction"].as_f64().unwrap(), "{what}");
        let condition: Condition = serde_json::from_value(want["condition"].clone()).unwrap();
        assert_eq!(row.condition, condition, "{what}");
        assert_eq!(row.template.as_deref(), want["template"].as_str(), "{what}");
        assert_eq!(row.seed, want["seed"].as_u64(), "{what}");
        let members: Vec<&str> =
            want["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(row.members, members, "{what}");
        let metrics = want["metrics"].as_object().unwrap();
        assert_eq!(row.metrics.len(), metrics.len(), "{what}: metric count");
        for spread in &row.metrics {
            let w = &metrics[spread.metric];
            assert_eq!(spread.n as u64, w["n"].as_u64().unwrap(), "{what} {} n", spread.metric);
            let mean = w["mean"].as_f64().unwrap();
            assert!(
                (spread.mean - mean).abs() <= TOL,
                "{what} {} mean {} vs {mean}",
                spread.metric,
                spread.mean
            );
            match (spread.std, w["std"].as_f64()) {
                (None, None) => assert!(w["std"].is_null()),
                (Some(a), Some(e)) => {
                    assert!((a - e).abs() <= TOL, "{what} {} std {a} vs {e}", spread.metric)
                }
                (a, _) => panic!("{what} {}: std {a:?} vs oracle {}", spread.metric, w["std"]),
            }
        }
    }
    // The fixture exercises what the table is for (guards against a regenerated fixture that does not).
    let templates: Vec<_> = table.axis(StabilityAxis::Templates).collect();
    assert!(templates.iter().any(|r| r.regime.name() == "zero-shot" && r.members.len() >= 7));
    assert!(templates.iter().any(|r| r.regime.name() == "coop"));
    assert!(templates.iter().any(|r| r.members.last().map(String::as_str) == Some("P10")));
    assert!(table.rows.iter().any(|r| r.metrics.iter().any(|m| m.std.is_none())));
    assert!(table.rows.iter().any(|r| r.method == "tag:x1"));
}
