//! `selective_analyses` on the committed example examples/selective_runs/ against the values
//! scripts/golden/selective_eval.py derives independently (numpy port of torch-uncertainty's
//! risk–coverage formulas, MAPIE's quantile rule with numpy, sklearn's ROC AUC and ROC curve, and a
//! Python port of the conformal split).

use calibra_crs::focus_analyses::RunLabel;
use calibra_crs::selective_analyses::{SelectiveOptions, selective_analyses};
use calibra_crs::{Condition, RunRecordSet};
use serde_json::Value;
use std::path::PathBuf;

/// The formulas are the same; only summation order differs (numpy's trapezoid vs a running sum).
const TOL: f64 = 1e-12;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn close(what: &str, got: f64, want: &Value) {
    let want = want.as_f64().unwrap_or_else(|| panic!("{what}: not a number in the golden file"));
    assert!((got - want).abs() <= TOL, "{what}: {got} vs golden {want}");
}

fn is(run: &RunLabel, encoder: &str, seed: u64, cond: &Condition) -> bool {
    run.encoder == encoder && run.seed == seed && &run.condition == cond
}

fn condition(v: &Value) -> Condition {
    match v["kind"].as_str().unwrap() {
        "clean" => Condition::Clean,
        "perturbation" => Condition::Perturbation {
            perturbation: v["perturbation"].as_str().unwrap().into(),
            severity: v["severity"].as_u64().unwrap() as u32,
        },
        _ => Condition::Shift { target: v["target"].as_str().unwrap().into() },
    }
}

#[test]
fn selective_analyses_match_the_python_oracle() {
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("crates/calibra-crs/tests/golden/selective_eval.json")).unwrap(),
    )
    .unwrap();
    let set = RunRecordSet::from_path(&root().join("examples/selective_runs/runs.jsonl")).unwrap();
    assert_eq!(golden["method"], "lac");
    let options = SelectiveOptions {
        alpha: golden["alpha"].as_f64().unwrap(),
        seed: golden["eval_seed"].as_u64().unwrap(),
        ..SelectiveOptions::default()
    };
    let report = selective_analyses(&set, &options).unwrap();

    let runs = golden["runs"].as_array().unwrap();
    assert_eq!(report.runs.len(), runs.len());
    for g in runs {
        let (enc, seed, cond) =
            (g["encoder"].as_str().unwrap(), g["seed"].as_u64().unwrap(), condition(&g["condition"]));
        let r = report.runs.iter().find(|r| is(&r.run, enc, seed, &cond)).unwrap();
        let at = format!("{enc} seed {seed} {cond}");
        close(&format!("{at} aurc"), r.aurc.unwrap(), &g["aurc"]);
        close(&format!("{at} eaurc"), r.eaurc.unwrap(), &g["eaurc"]);
        close(&format!("{at} augrc"), r.augrc.unwrap(), &g["augrc"]);
        let curve = g["risk_coverage"].as_array().unwrap();
        assert_eq!(r.risk_coverage.len(), curve.len());
        for (p, want) in r.risk_coverage.iter().zip(curve) {
            close(&format!("{at} risk at {}", p.coverage), p.risk, want);
        }
    }

    let conformal = golden["conformal"].as_array().unwrap();
    assert_eq!(report.conformal.len(), conformal.len());
    for g in conformal {
        let (enc, seed, cond) =
            (g["encoder"].as_str().unwrap(), g["seed"].as_u64().unwrap(), condition(&g["condition"]));
        let c = report.conformal.iter().find(|c| is(&c.run, enc, seed, &cond)).unwrap();
        let at = format!("{enc} seed {seed} {cond} conformal");
        assert_eq!(c.calibration_samples as u64, g["calibration_samples"].as_u64().unwrap(), "{at}");
        assert_eq!(c.samples as u64, g["samples"].as_u64().unwrap(), "{at}");
        assert_eq!(c.excluded as u64, g["excluded"].as_u64().unwrap(), "{at}");
        // q̂ is an order statistic: the very calibration score.
        assert_eq!(c.quantiles, vec![g["quantile"].as_f64().unwrap()], "{at}");
        close(&format!("{at} coverage"), c.coverage, &g["coverage"]);
        close(&format!("{at} set size"), c.mean_set_size, &g["mean_set_size"]);
        close(&format!("{at} empty"), c.empty_fraction, &g["empty_fraction"]);
    }

    let shift = golden["shift_detection"].as_array().unwrap();
    assert_eq!(report.shift_detection.len(), shift.len());
    for g in shift {
        let (enc, seed) = (g["encoder"].as_str().unwrap(), g["seed"].as_u64().unwrap());
        let s = report.shift_detection.iter().find(|s| s.run.encoder == enc && s.run.seed == seed).unwrap();
        close(&format!("{enc} seed {seed} shift AUROC"), s.auroc.unwrap(), &g["auroc"]);
        close(&format!("{enc} seed {seed} FPR@95"), s.fpr_at_95_tpr.unwrap(), &g["fpr_at_95_tpr"]);
    }

    let cells = golden["cells"].as_array().unwrap();
    assert_eq!(report.cells.len(), cells.len());
    for g in cells {
        let (enc, cond) = (g["encoder"].as_str().unwrap(), condition(&g["condition"]));
        let c = report.cells.iter().find(|c| c.encoder == enc && c.condition == cond).unwrap();
        let at = format!("{enc} {cond} cell");
        assert_eq!((c.runs, c.conformal_runs), (2, 2), "{at}");
        close(&format!("{at} aurc"), c.aurc.unwrap(), &g["aurc"]);
        close(&format!("{at} augrc"), c.augrc.unwrap(), &g["augrc"]);
        close(&format!("{at} coverage"), c.coverage.unwrap(), &g["coverage"]);
        close(&format!("{at} set size"), c.mean_set_size.unwrap(), &g["mean_set_size"]);
        match g.get("shift_auroc") {
            Some(want) => close(&format!("{at} shift AUROC"), c.shift_auroc.unwrap(), want),
            None => assert!(c.shift_auroc.is_none(), "{at}"),
        }
    }
}
