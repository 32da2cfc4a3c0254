//! End-to-end tests of `calibra crs`: the CRS-Bench example, the JSON contract, frozen references
//! (save, load, candidates never move the panel), weights, and bad input.

use std::path::{Path, PathBuf};

mod common;
use common::{calibra, example, json_of};

fn failure(args: &[&str]) -> String {
    let out = calibra(args);
    assert!(
        !out.status.success(),
        "calibra {args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn by_encoder(rows: &serde_json::Value) -> std::collections::BTreeMap<String, serde_json::Value> {
    rows.as_array().unwrap().iter().map(|r| (r["encoder"].as_str().unwrap().to_string(), r.clone())).collect()
}

const HEADER: &str = "encoder,discrimination,calibration,label_efficiency,robustness\n";
/// Raw profiles: AUROC, ECE (lower is better), retention, robustness.
const RAW: &str =
    "A,0.90,0.05,0.95,0.80\nB,0.85,0.10,0.90,0.70\nC,0.95,0.02,0.97,0.60\nD,0.80,0.15,1.01,0.90\n";

#[test]
fn crsbench_example_gives_the_contract_keys_in_rank_order() {
    let rows = json_of(&["crs", &example("profiles_crsbench.csv"), "--normalized", "--format", "json"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 15);
    for (i, row) in rows.iter().enumerate() {
        let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["crs", "dominance", "encoder", "ideal", "rank", "worst"]);
        assert_eq!(row["rank"].as_u64().unwrap() as usize, i + 1);
        let crs = row["crs"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&crs));
    }
    // The example lists the encoders in the paper's CRS order (Figure 2 / Table 2).
    assert_eq!(rows[0]["encoder"], "PanDerm");
    assert_eq!(rows[14]["encoder"], "ResNet-50");
    // Exact by construction: BioViL's profile (0, 1, 1, 0) dominates nobody, S = 1 − (1 + 1)/4, W = 0.
    let biovil = &by_encoder(&serde_json::Value::Array(rows.clone()))["BioViL"];
    assert_eq!(biovil["dominance"], 0.0);
    assert_eq!(biovil["ideal"], 0.5);
    assert_eq!(biovil["crs"], 0.125);
}

#[test]
fn table_format_is_readable() {
    let out = calibra(&["crs", &example("profiles_crsbench.csv"), "--normalized"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("reference built from these 15 profiles"), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("1  PanDerm")), "{text}");
}

#[test]
fn a_saved_reference_scores_candidates_without_moving_the_panel() {
    let dir = tempfile::tempdir().unwrap();
    let panel = write(dir.path(), "panel.csv", &format!("{HEADER}{RAW}"));
    let reference = dir.path().join("ref.json");
    let (panel_s, reference_s) = (panel.display().to_string(), reference.display().to_string());
    let built = json_of(&["crs", &panel_s, "--save-reference", &reference_s, "--format", "json"]);
    assert!(reference.exists());
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&reference).unwrap()).unwrap();
    assert_eq!(saved["format"], "calibra-crs-reference");
    assert_eq!(saved["version"], 1);

    // Re-scoring the panel against its saved reference reproduces the built scores exactly.
    let again = json_of(&["crs", &panel_s, "--reference", &reference_s, "--format", "json"]);
    assert_eq!(by_encoder(&built), by_encoder(&again));

    // New candidates, one far outside the anchors, scored together with the panel: the panel's scores
    // are unchanged; the candidates are ranked among all rows.
    let mixed = write(
        dir.path(),
        "mixed.csv",
        &format!("{HEADER}{RAW}E,0.99,0.001,1.05,0.99\nF,0.50,0.40,0.50,0.10\n"),
    );
    let out =
        calibra(&["crs", &mixed.display().to_string(), "--reference", &reference_s, "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`E` lies outside the reference anchors"), "{stderr}");
    let mixed_rows = by_encoder(&serde_json::from_slice(&out.stdout).unwrap());
    for (name, row) in by_encoder(&built) {
        for key in ["dominance", "ideal", "worst", "crs"] {
            assert_eq!(mixed_rows[&name][key], row[key], "{name} {key} moved");
        }
    }
    // Exact by construction: E is at or above the anchors on every axis (clipped to 1) and strictly
    // above all 4 peers, so D = 1, S = 1, W = 1; F is below everything: D = 0, S = 0, W = 0.
    assert_eq!(mixed_rows["E"]["crs"], 1.0);
    assert_eq!(mixed_rows["E"]["rank"], 1);
    assert_eq!(mixed_rows["F"]["crs"], 0.0);
    assert_eq!(mixed_rows["F"]["rank"], 6);
}

#[test]
fn weights_are_configurable_and_validated() {
    let dir = tempfile::tempdir().unwrap();
    let panel = write(dir.path(), "panel.csv", &format!("{HEADER}{RAW}")).display().to_string();
    // Only the worst axis: CRS = W.
    let rows = json_of(&["crs", &panel, "--weights", "0,0,1", "--format", "json"]);
    for row in rows.as_array().unwrap() {
        assert_eq!(row["crs"], row["worst"]);
    }
    // Only dominance and only discrimination in S: CRS = S = 1 − (1 − s̃_disc)², C has the best AUROC.
    let rows =
        json_of(&["crs", &panel, "--weights", "0,1,0", "--axis-weights", "1,0,0,0", "--format", "json"]);
    assert_eq!(by_encoder(&rows)["C"]["crs"], 1.0);
    assert_eq!(by_encoder(&rows)["D"]["crs"], 0.0);
    let err = failure(&["crs", &panel, "--weights", "0.5,0.5,0.5"]);
    assert!(err.contains("must sum to 1"), "{err}");
    let err = failure(&["crs", &panel, "--axis-weights", "0.5,0.5,0.5"]);
    assert!(err.contains("expected 4 comma-separated numbers"), "{err}");
    let err = failure(&["crs", &panel, "--weights", "1.2,-0.1,-0.1"]);
    assert!(err.contains("≥ 0"), "{err}");
}

#[test]
fn a_frozen_reference_refuses_other_weights_scales_and_changed_members() {
    let dir = tempfile::tempdir().unwrap();
    let panel = write(dir.path(), "panel.csv", &format!("{HEADER}{RAW}")).display().to_string();
    let reference = dir.path().join("ref.json").display().to_string();
    json_of(&["crs", &panel, "--save-reference", &reference, "--format", "json"]);
    let err = failure(&["crs", &panel, "--reference", &reference, "--weights", "0.5,0.25,0.25"]);
    assert!(err.contains("freezes its weights"), "{err}");
    let normalized =
        write(dir.path(), "n.csv", &format!("{HEADER}A,0.5,0.5,0.5,0.5\n")).display().to_string();
    let err = failure(&["crs", &normalized, "--normalized", "--reference", &reference]);
    assert!(err.contains("built from oriented profiles") && err.contains("drop --normalized"), "{err}");
    let changed = write(dir.path(), "changed.csv", &format!("{HEADER}A,0.91,0.05,0.95,0.80\n"));
    let err = failure(&["crs", &changed.display().to_string(), "--reference", &reference]);
    assert!(err.contains("`A` is in the reference panel with different discrimination"), "{err}");
}

#[test]
fn bad_files_are_reported_with_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.csv", &format!("{HEADER}A,0.9,0.05,0.9,0.8\nB,0.9,,0.9,0.8\n"));
    let err = failure(&["crs", &bad.display().to_string()]);
    assert!(err.contains("bad.csv: line 3, column `calibration`: missing value"), "{err}");
    let flat = write(dir.path(), "flat.csv", &format!("{HEADER}A,0.9,0.05,0.9,0.8\nB,0.8,0.05,0.8,0.7\n"));
    let err = failure(&["crs", &flat.display().to_string()]);
    assert!(err.contains("calibration anchors") && err.contains("degenerate"), "{err}");
    let err = failure(&["crs", &dir.path().join("absent.csv").display().to_string()]);
    assert!(err.contains("absent.csv"), "{err}");
    let not_json = write(dir.path(), "ref.json", "{\"format\": \"calibra-crs-reference\", \"version\": 99}");
    let panel = write(dir.path(), "panel.csv", &format!("{HEADER}{RAW}"));
    let err = failure(&["crs", &panel.display().to_string(), "--reference", &not_json.display().to_string()]);
    assert!(err.contains("ref.json: reference format version 99 is not supported"), "{err}");
}
