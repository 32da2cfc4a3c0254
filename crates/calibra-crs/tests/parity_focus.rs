//! Parity of the FOCUS additions with the numpy/scipy/sklearn oracle of scripts/golden/focus.py
//! (golden file tests/golden/focus.json): per-group metrics and gaps, median/threshold splits, paired
//! bootstrap deltas on explicit draws, Benjamini–Hochberg, and the E4 correlations.

use calibra_crs::adaptation_deltas::paired_deltas_with_draws;
use calibra_crs::encoder_analyses::pearson_r;
use calibra_crs::group_columns::{GroupSplit, assign_groups};
use calibra_crs::multiple_testing::benjamini_hochberg;
use calibra_crs::sample_metrics::{SampleMetric, SampleTable, SampleTargets};
use calibra_crs::subgroup_gaps::metric_gaps;
use serde_json::Value;

/// Metric values: sklearn and numpy sum in other orders than calibra; AUROC is exact in both.
const TOL: f64 = 1e-12;

fn golden() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/focus.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn table(probs: &Value, labels: &Value, k: usize) -> SampleTable {
    let labels: Vec<usize> =
        labels.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
    let ids = (0..labels.len()).map(|i| format!("s{i}")).collect();
    SampleTable::new(ids, k, floats(probs), SampleTargets::Classes(labels))
}

fn close(actual: Option<f64>, expected: &Value, what: &str) {
    match (actual, expected.as_f64()) {
        (None, None) => {}
        (Some(a), Some(e)) => assert!((a - e).abs() <= TOL, "{what}: {a} vs {e}"),
        (a, _) => panic!("{what}: {a:?} vs {expected}"),
    }
}

#[test]
fn group_metrics_and_gaps_match_the_oracle() {
    let g = golden();
    for case in ["gaps_binary", "gaps_multiclass"] {
        let c = &g[case];
        let k = c["k"].as_u64().unwrap() as usize;
        let t = table(&c["probs"], &c["labels"], k);
        let min_size = c["min_group_size"].as_u64().unwrap() as usize;
        for (name, col) in c["columns"].as_object().unwrap() {
            let split = match col["split"].as_str().unwrap() {
                "categorical" => GroupSplit::Categorical,
                "median" => GroupSplit::Median,
                _ => GroupSplit::Thresholds(floats(&col["thresholds"])),
            };
            let values: Vec<(u64, Option<&str>)> = col["values"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, v)| (i as u64 + 2, Some(v.as_str().unwrap()).filter(|s| !s.is_empty())))
                .collect();
            let a = assign_groups(&values, &split, name, "golden").unwrap();
            let exp = &c["expected"][name];
            assert_eq!(a.cuts, floats(&exp["cuts"]), "{case}/{name}");
            let sizes: Vec<usize> = a.rows.iter().map(Vec::len).collect();
            let exp_sizes: Vec<usize> =
                exp["sizes"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
            assert_eq!(sizes, exp_sizes, "{case}/{name}");
            assert_eq!(a.missing as u64, exp["missing"].as_u64().unwrap());
            if let Some(groups) = exp["groups"].as_array() {
                let groups: Vec<&str> = groups.iter().map(|x| x.as_str().unwrap()).collect();
                assert_eq!(a.groups, groups);
            }
            let gaps = metric_gaps(&t, &a, &SampleMetric::ALL, min_size, 15);
            for m in gaps {
                let e = &exp["metrics"][m.metric.name()];
                for (i, gv) in m.groups.iter().enumerate() {
                    close(gv.value, &e["values"][i], &format!("{case}/{name}/{}/group {i}", m.metric));
                }
                close(m.gap, &e["gap"], &format!("{case}/{name}/{} gap", m.metric));
            }
        }
    }
}

#[test]
fn paired_bootstrap_on_explicit_draws_matches_the_oracle() {
    let g = golden();
    for case in ["deltas_binary", "deltas_multiclass"] {
        let c = &g[case];
        let k = c["k"].as_u64().unwrap() as usize;
        let base = table(&c["base"], &c["labels"], k);
        let adapted = table(&c["adapted"], &c["labels"], k);
        let draws: Vec<Vec<usize>> = c["draws"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect())
            .collect();
        let level = c["level"].as_f64().unwrap();
        for d in paired_deltas_with_draws(&base, &adapted, &SampleMetric::ALL, &draws, level, 15) {
            let e = &c["expected"][d.metric.name()];
            let what = format!("{case}/{}", d.metric);
            close(d.base, &e["base"], &what);
            close(d.adapted, &e["adapted"], &what);
            close(d.delta, &e["delta"], &what);
            close(d.lower, &e["lower"], &format!("{what} lower"));
            close(d.upper, &e["upper"], &format!("{what} upper"));
            // The p-value is a ratio of counts: exact.
            assert_eq!(d.p_value, e["p_value"].as_f64(), "{what} p");
            assert_eq!(d.replicates_defined as u64, e["replicates_defined"].as_u64().unwrap());
        }
    }
}

#[test]
fn benjamini_hochberg_matches_scipy() {
    for case in golden()["bh"].as_array().unwrap() {
        let q = benjamini_hochberg(&floats(&case["p"]));
        for (a, e) in q.iter().zip(floats(&case["adjusted"])) {
            assert!((a - e).abs() <= 1e-15, "{a} vs {e}");
        }
    }
}

#[test]
fn corruption_correlations_match_scipy() {
    let c = &golden()["correlation"];
    let (x, y) = (floats(&c["x"]), floats(&c["y"]));
    assert!((pearson_r(&x, &y) - c["pearson_r"].as_f64().unwrap()).abs() <= TOL);
    assert!((calibra_metrics::spearman_rho(&x, &y) - c["spearman_rho"].as_f64().unwrap()).abs() <= TOL);
}
