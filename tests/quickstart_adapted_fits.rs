//! The quickstart's adapted fits learn (issue 22): LoRA with the `[regimes.lora]` settings of
//! `recipes/quickstart.toml`, on a miniature of its derm task with two shipped encoders, must end
//! well away from chance — on the calibration split (the record's training curve), on the test split
//! (the record's `macro_auroc`), and in `calibra eval`'s convergence check. A regression to the
//! near-chance fits of the issue (an untrained head after a few steps) fails here.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `[regimes.lora]` table of the shipped quickstart, scoped to `encoders`.
fn quickstart_lora(encoders: &str) -> String {
    let text = std::fs::read_to_string(root().join("recipes/quickstart.toml")).unwrap();
    let start = text.find("[regimes.lora]").expect("the quickstart has a LoRA regime");
    let rest = &text[start..];
    let end = rest[1..].find("\n[").map_or(rest.len(), |i| i + 1);
    let table: Vec<String> =
        rest[..end].lines().filter(|l| !l.trim_start().starts_with("encoders")).map(str::to_string).collect();
    format!("{}\nencoders = {encoders}\n", table.join("\n"))
}

#[test]
fn quickstart_lora_fits_are_not_near_chance() {
    let recipe = format!(
        r#"seeds = [0]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
source = "checkpoints/derm-specialist"

[[encoders]]
source = "checkpoints/generalist"

[[datasets]]
name = "derm"
spec = "synth:derm?n=160&size=32&seed=7"

[regimes.frozen]
probes = ["logistic"]

{}
[[losses]]
name = "ce"
regimes = ["lora"]
"#,
        quickstart_lora(r#"["derm-specialist", "generalist"]"#)
    );
    let tmp = tempfile::tempdir().unwrap();
    let recipe_path = tmp.path().join("mini.toml");
    std::fs::write(&recipe_path, recipe).unwrap();
    let store = tmp.path().join("store");
    let run = |args: &[&str]| {
        let out =
            Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).current_dir(root()).output().unwrap();
        assert!(out.status.success(), "calibra {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let log = run(&["run", recipe_path.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    // Progress says how each epoch went on the calibration split, as it trains.
    assert!(
        log.contains("lora: epoch 1 done: train loss")
            && log.contains("calibration loss")
            && log.contains("AUROC 0.")
            && log.contains(", accuracy 0."),
        "{log}"
    );
    let records: Vec<serde_json::Value> = std::fs::read_to_string(store.join("runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lora: Vec<&serde_json::Value> = records.iter().filter(|r| r["regime"] == "lora").collect();
    assert_eq!(lora.len(), 2, "one clean record per encoder");
    for r in &lora {
        let t = &r["training"];
        let epochs = t["epochs"].as_array().expect("every adapted record carries its training curve");
        assert!(epochs.len() >= 2 && epochs[0]["epoch"] == 0, "{t}");
        let selected = epochs.iter().find(|e| e["epoch"] == t["selected_epoch"]).expect("selected epoch");
        let cal_auroc = selected["calibration_auroc"].as_f64().unwrap();
        let test_auroc = r["metrics"]["macro_auroc"].as_f64().unwrap();
        assert!(cal_auroc > 0.6, "{}: calibration AUROC {cal_auroc} near chance: {t}", r["encoder"]);
        assert!(test_auroc >= 0.65, "{}: test AUROC {test_auroc} below 0.65: {t}", r["encoder"]);
        // LP-FT starts at the fitted probe: the loss must fall below it at some epoch.
        let lowest =
            epochs[1..].iter().map(|e| e["train_loss"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
        assert!(
            lowest < epochs[0]["train_loss"].as_f64().unwrap(),
            "{}: the training loss never fell below the probe start: {t}",
            r["encoder"]
        );
    }
    let eval = tmp.path().join("eval");
    let _ = run(&["eval", store.join("runs.jsonl").to_str().unwrap(), "--out", eval.to_str().unwrap()]);
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(eval.join("evaluation.json")).unwrap()).unwrap();
    assert_eq!(e["convergence"]["fits_with_curves"], 2, "{}", e["convergence"]);
    assert_eq!(e["convergence"]["not_converged"], serde_json::json!([]), "{}", e["convergence"]);
}
