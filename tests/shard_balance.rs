//! `calibra run --dry-run --shard I/N` shows every shard's estimated cost: the balance of the
//! cost-based assignment is visible before N jobs are submitted.
mod common;

use common::calibra;

/// Frozen probes plus LoRA fits whose cost grows with the label fraction (42 fits).
const SKEWED: &str = r#"seeds = [0, 1, 2]
label_fractions = [0.1, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
source = "hf:org/alpha"

[[encoders]]
source = "hf:org/beta"

[[datasets]]
spec = "synth:derm?n=40"

[perturbations]
names = ["jpeg"]
severities = [1, 3]

[regimes.frozen]
probes = ["logistic", "prior"]

[regimes.lora]
r = 4
alpha = 8.0
dropout = 0.0
lr = 1e-4
epochs = 2
targets = ["query", "value"]
label_fractions = [0.1, 0.25, 1.0]

[[losses]]
name = "ce"
"#;

#[test]
fn a_sharded_dry_run_prints_every_shards_cost_and_they_are_balanced() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("skewed.toml");
    std::fs::write(&recipe, SKEWED).unwrap();
    let recipe = recipe.display().to_string();
    let out = calibra(&["run", &recipe, "--dry-run", "--no-check-paths", "--shard", "1/4"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("(shard 1/4)") && stdout.contains("shards (fits assigned by estimated cost"),
        "{stdout}"
    );
    for i in 0..4 {
        assert!(stdout.lines().any(|l| l.starts_with(&format!("{i}/4 "))), "shard {i}/4 missing: {stdout}");
    }
    let json = common::json_of(&[
        "run",
        &recipe,
        "--dry-run",
        "--no-check-paths",
        "--shard",
        "1/4",
        "--format",
        "json",
    ]);
    let loads = json["shards"]["loads"].as_array().unwrap();
    assert_eq!((json["shards"]["count"].as_u64(), loads.len()), (Some(4), 4));
    let costs: Vec<f64> = loads.iter().map(|l| l["passes"].as_f64().unwrap()).collect();
    let (max, min) =
        (costs.iter().copied().fold(0.0, f64::max), costs.iter().copied().fold(f64::INFINITY, f64::min));
    assert!(max / min < 1.5, "max/min estimated shard cost {}: {costs:?}", max / min);
    // The summary above the table is shard 1's alone: its cost is shard 1's line.
    assert!((json["total_passes"].as_f64().unwrap() - costs[1]).abs() < 1e-9);
    let fits: u64 = loads.iter().map(|l| l["fits"].as_u64().unwrap()).sum();
    assert_eq!(fits, 42, "the shards partition the grid");
    // Without --shard nothing about shards is printed.
    let plain = common::json_of(&["run", &recipe, "--dry-run", "--no-check-paths", "--format", "json"]);
    assert!(plain.get("shards").is_none());
}
