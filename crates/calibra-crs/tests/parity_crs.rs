//! Parity of the CRS with the independent numpy oracle `scripts/golden/crs.py`
//! (golden vectors in `tests/golden/crs.json`): anchors, normalised values, D, S, W, CRS, ordinal ranks
//! and saturated axes, for the panel and for outside candidates, to 1e-12; and the deterministic
//! building blocks of the stability analyses (sub-panels, insertion trials, re-weighting: Kendall τ-b as
//! scipy.stats.kendalltau, top-3 overlap) on given perturbations.

use calibra_crs::{
    AXES, AxisEstimators, AxisWeights, ComponentWeights, CrsError, Profile, Reference, ReferenceConfig,
    ScoreWeights, ValueScale, insertion_trial, ordinal_ranks, subpanel_agreement, weight_agreement,
};
use serde_json::Value;

const TOL: f64 = 1e-12;

fn golden() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/crs.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read crs.json")).expect("parse crs.json")
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn rows(v: &Value) -> Vec<[f64; 4]> {
    v.as_array().unwrap().iter().map(|r| f64s(r).try_into().unwrap()).collect()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

fn profiles(group: &Value) -> Vec<Profile> {
    names(&group["encoders"])
        .into_iter()
        .zip(rows(&group["values"]))
        .map(|(n, v)| Profile::complete(n, v))
        .collect()
}

thread_local! {
    /// The largest |rust − numpy| seen, reported by the test.
    static MAX_DIFF: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
}

fn close(case: &str, what: &str, got: f64, want: f64) {
    let diff = (got - want).abs();
    assert!(diff <= TOL, "{case}: {what}: rust {got} vs numpy {want}");
    MAX_DIFF.with(|m| m.set(m.get().max(diff)));
}

fn check_block(case: &str, group: &str, scores: &[calibra_crs::CrsScore], want: &Value) {
    assert_eq!(scores.len(), want["crs"].as_array().unwrap().len(), "{case}: {group}: count");
    let crs: Vec<f64> = scores.iter().map(|s| s.components.crs).collect();
    for (i, s) in scores.iter().enumerate() {
        let at = |key: &str| want[key][i].as_f64().unwrap();
        let label = |key: &str| format!("{group}[{i}] {} {key}", s.encoder);
        close(case, &label("dominance"), s.components.dominance, at("dominance"));
        close(case, &label("ideal"), s.components.ideal, at("ideal"));
        close(case, &label("worst"), s.components.worst, at("worst"));
        close(case, &label("crs"), s.components.crs, at("crs"));
        for (a, w) in f64s(&want["normalized"][i]).into_iter().enumerate() {
            close(case, &label(&format!("normalized[{a}]")), s.normalized[a], w);
        }
        let saturated: Vec<usize> = s.saturated.iter().map(|a| a.index()).collect();
        let want_saturated: Vec<usize> =
            want["saturated"][i].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
        assert_eq!(saturated, want_saturated, "{case}: {}", label("saturated"));
    }
    let want_ranks: Vec<usize> =
        want["rank"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
    assert_eq!(ordinal_ranks(&crs), want_ranks, "{case}: {group}: ranks");
}

#[test]
fn crs_matches_the_numpy_oracle() {
    let doc = golden();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 8, "golden file has {} cases", cases.len());
    let mut compared = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let axis = AxisWeights::new(f64s(&case["axis_weights"]).try_into().unwrap()).unwrap();
        let c = f64s(&case["component_weights"]);
        let component = ComponentWeights::new(c[0], c[1], c[2]).unwrap();
        let scale = if case["unit_anchors"].as_bool().unwrap() {
            ValueScale::Normalized
        } else {
            ValueScale::Oriented
        };
        let config = ReferenceConfig {
            scale,
            estimators: AxisEstimators::default(),
            weights: ScoreWeights { axis, component },
            domain: None,
        };
        let reference = Reference::build(&profiles(&case["panel"]), config).unwrap();
        let want = &case["expected"];
        let (lower, upper) = (f64s(&want["anchors"]["lower"]), f64s(&want["anchors"]["upper"]));
        for axis in AXES {
            let a = reference.anchors().get(axis);
            close(name, &format!("{} lower anchor", axis.name()), a.lower, lower[axis.index()]);
            close(name, &format!("{} upper anchor", axis.name()), a.upper, upper[axis.index()]);
        }
        let panel = reference.panel_scores();
        check_block(name, "panel", &panel, &want["panel"]);
        let candidates = reference.score(&profiles(&case["candidates"])).unwrap();
        check_block(name, "candidates", &candidates, &want["candidates"]);
        compared += panel.len() + candidates.len();
    }
    assert!(compared > 80, "only {compared} scores compared");
    eprintln!("{compared} scores compared; max |rust − numpy| = {:e}", MAX_DIFF.with(|m| m.get()));
}

#[test]
fn the_inputs_the_oracle_rejects_are_rejected() {
    let doc = golden();
    for case in doc["rejected"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let panel: Vec<Profile> = names(&case["panel"]["encoders"])
            .into_iter()
            .zip(case["panel"]["values"].as_array().unwrap())
            .map(|(n, row)| {
                let values: Vec<Option<f64>> = row.as_array().unwrap().iter().map(Value::as_f64).collect();
                Profile::new(n, values.try_into().unwrap())
            })
            .collect();
        let err = Reference::build(&panel, ReferenceConfig::default()).unwrap_err();
        let ok = match case["error"].as_str().unwrap() {
            "degenerate_anchor" => matches!(err, CrsError::DegenerateAnchor { .. }),
            "missing_axis" => matches!(err, CrsError::MissingAxis { .. }),
            other => panic!("{name}: unknown expected error {other}"),
        };
        assert!(ok, "{name}: got {err}");
    }
}

fn indices(v: &Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
}

fn check_agreement(case: &str, what: &str, got: calibra_crs::RankAgreement, want: &Value) {
    close(case, &format!("{what} tau"), got.tau, want["tau"].as_f64().unwrap());
    close(case, &format!("{what} top-3 overlap"), got.top_k_overlap, want["top_k_overlap"].as_f64().unwrap());
    assert_eq!(got.top_k_unchanged, want["top_k_unchanged"].as_bool().unwrap(), "{case}: {what} top-3 set");
}

#[test]
fn stability_building_blocks_match_the_oracle() {
    let doc = golden();
    let config = ReferenceConfig::default();
    MAX_DIFF.with(|m| m.set(0.0));
    let mut compared = 0;
    for case in doc["stability"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let panel = profiles(&case["panel"]);
        let full = Reference::build(&panel, config.clone()).unwrap();
        let full_crs: Vec<f64> = full.panel_scores().iter().map(|s| s.components.crs).collect();
        for (got, want) in full_crs.iter().zip(f64s(&case["full_crs"])) {
            close(name, "full-panel CRS", *got, want);
        }
        for sub in case["subpanels"].as_array().unwrap() {
            let members = indices(&sub["members"]);
            let got = subpanel_agreement(&panel, &config, &full_crs, &members, 3).unwrap().unwrap();
            check_agreement(name, &format!("sub-panel {members:?}"), got, sub);
            compared += 1;
        }
        for ins in case["insertions"].as_array().unwrap() {
            let newcomers = indices(&ins["newcomers"]);
            let trial = insertion_trial(&panel, &config, &newcomers).unwrap().unwrap();
            assert_eq!(trial.base, indices(&ins["base"]), "{name}: base of {newcomers:?}");
            for (i, want) in f64s(&ins["before"]).into_iter().enumerate() {
                close(name, &format!("insertion {newcomers:?} before[{i}]"), trial.before[i], want);
                // The frozen reference: scoring newcomers leaves the base exactly where it was.
                assert_eq!(trial.fixed_after[i].to_bits(), trial.before[i].to_bits());
            }
            for (i, want) in f64s(&ins["cohort_after"]).into_iter().enumerate() {
                close(name, &format!("insertion {newcomers:?} cohort[{i}]"), trial.cohort_after[i], want);
            }
            compared += 1;
        }
        for rw in case["reweighted"].as_array().unwrap() {
            let axis = AxisWeights::new(f64s(&rw["axis_weights"]).try_into().unwrap()).unwrap();
            let c = f64s(&rw["component_weights"]);
            let component = ComponentWeights::new(c[0], c[1], c[2]).unwrap();
            let got = weight_agreement(&full, ScoreWeights { axis, component }, 3);
            check_agreement(name, "re-weighted", got, rw);
            compared += 1;
        }
    }
    assert!(compared >= 50, "only {compared} perturbations compared");
    eprintln!("{compared} perturbations compared; max |rust − oracle| = {:e}", MAX_DIFF.with(|m| m.get()));
}
