//! `calibra run` with the zero-shot regime on the transformers-made tiny CLIP fixture of calibra-models
//! over a small synthetic dermatology set: one fit per template × seed with probe `zero-shot:<ID>`, the
//! image tower run once per (split, condition) for all of them, records equal to `calibra zero-shot`'s
//! on the same split and condition, `--resume` running nothing, and `calibra report` listing the
//! templates in its calibration-stability section.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use calibra_predictions::read_predictions;
use common::calibra;

const DATA: &str = "synth:derm?n=120&size=32";
/// A shift target with the same labels: another draw of the synthetic dermatology task.
const SHIFT: &str = "synth:derm?n=60&size=32&seed=7";

fn recipe_text(encoder: &Path, templates: &str) -> String {
    format!(
        r#"name = "zero-shot"
seeds = [0, 1]
label_fractions = [1.0]
calibrators = ["none", "temperature"]

[[encoders]]
name = "tiny-clip"
source = "{}"

[[datasets]]
name = "derm"
spec = "{DATA}"
shift = [{{ name = "derm-b", spec = "{SHIFT}" }}]

[perturbations]
names = ["contrast"]
severities = [2]

[regimes.zero-shot]
templates = {templates}

[evaluator]
bootstrap = 0
"#,
        encoder.display()
    )
}

fn records(store: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn metrics(r: &serde_json::Value) -> BTreeMap<String, f64> {
    serde_json::from_value(r["metrics"].clone()).unwrap()
}

/// The record of `probe` / seed / condition / calibrator.
fn find<'a>(
    records: &'a [serde_json::Value],
    probe: &str,
    seed: u64,
    condition: &str,
    calibrator: &str,
) -> &'a serde_json::Value {
    records
        .iter()
        .find(|r| {
            let c = &r["condition"];
            let name = match c["kind"].as_str().unwrap() {
                "clean" => "clean".to_string(),
                "shift" => format!("shift:{}", c["target"].as_str().unwrap()),
                _ => format!("{}:{}", c["perturbation"].as_str().unwrap(), c["severity"]),
            };
            r["probe"] == probe && r["seed"] == seed && name == condition && r["calibrator"] == calibrator
        })
        .unwrap_or_else(|| panic!("no record {probe} seed {seed} {condition} {calibrator}"))
}

/// `calibra zero-shot` with template P1 on the test split (split seed 0) under `condition`.
fn zero_shot_p1(ck: &Path, out: &Path, condition: &str) -> PathBuf {
    let run = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "P1",
        "--split",
        "test",
        "--split-seed",
        "0",
        "--condition",
        condition,
        "--encoder-name",
        "tiny-clip",
        "--dataset-name",
        "derm",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    out.to_path_buf()
}

#[test]
fn zero_shot_fits_run_per_template_share_image_passes_and_equal_calibra_zero_shot() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = common::tiny_clip_checkpoint(tmp.path());
    let recipe = tmp.path().join("zs.toml");
    fs::write(&recipe, recipe_text(&ck, r#"["P1", "P2", "a dermoscopy image of {}."]"#)).unwrap();
    let store = tmp.path().join("store");
    let (recipe_s, store_s) = (recipe.to_str().unwrap(), store.to_str().unwrap());

    let dry = calibra(&["run", recipe_s, "--dry-run"]);
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let table = String::from_utf8_lossy(&dry.stdout);
    // 3 templates × 2 seeds fits; × (clean + contrast:2 + shift:derm-b) × 2 calibrators records.
    assert!(
        table.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["zero-shot", "6", "36", "0.0"]),
        "{table}"
    );

    let out = calibra(&["run", recipe_s, "--out", store_s]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let records = records(&store);
    assert_eq!(records.len(), 36);
    let probes: std::collections::BTreeSet<&str> =
        records.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["zero-shot:C1", "zero-shot:P1", "zero-shot:P2"].into_iter().collect());
    for r in &records {
        assert_eq!(r["regime"], "zero-shot");
        assert_eq!(r["label_fraction"], 1.0);
        let m = metrics(r);
        for key in ["accuracy", "ece", "mce", "adaptive_ece", "nll", "brier"] {
            assert!(m.contains_key(key), "{}: no {key}", r["probe"]);
        }
    }

    // One image-tower pass per (split, condition), shared by the 6 fits: calibration + clean test +
    // contrast test + shift test; every later fit reads them from the cache.
    let log = String::from_utf8_lossy(&out.stderr);
    let computed = log.lines().filter(|l| l.contains("image features") && !l.contains("(cached)")).count();
    let cached = log.lines().filter(|l| l.contains("image features") && l.contains("(cached)")).count();
    assert_eq!((computed, cached), (4, 5 * 4), "{log}");
    let passes: Vec<PathBuf> = fs::read_dir(store.join("features"))
        .unwrap()
        .flat_map(|d| fs::read_dir(d.unwrap().path()).unwrap().map(|f| f.unwrap().path()))
        .collect();
    assert_eq!(passes.len(), 4, "{passes:?}");
    assert!(passes.iter().all(|p| p.to_string_lossy().ends_with("@clip-image.safetensors")));

    // Nothing is trained: the seeds of a template give the same records (identity).
    for probe in ["zero-shot:P1", "zero-shot:P2", "zero-shot:C1"] {
        for condition in ["clean", "contrast:2", "shift:derm-b"] {
            for calibrator in ["none", "temperature"] {
                let a = find(&records, probe, 0, condition, calibrator);
                let b = find(&records, probe, 1, condition, calibrator);
                assert_eq!(metrics(a), metrics(b), "{probe} {condition} {calibrator}");
            }
        }
    }
    // Templates differ (different class embeddings), so the template axis has something to measure.
    assert_ne!(
        metrics(find(&records, "zero-shot:P1", 0, "clean", "none"))["nll"],
        metrics(find(&records, "zero-shot:C1", 0, "clean", "none"))["nll"]
    );

    // The uncalibrated P1 records are `calibra zero-shot`'s P1 records on the same split: the same
    // metrics and the same logits (one shared code path; exact equality).
    for condition in ["clean", "contrast:2"] {
        let zs =
            zero_shot_p1(&ck, &tmp.path().join(format!("zs-{}", condition.replace(':', "-"))), condition);
        let theirs: serde_json::Value =
            serde_json::from_str(fs::read_to_string(zs.join("runs.jsonl")).unwrap().lines().next().unwrap())
                .unwrap();
        let ours = find(&records, "zero-shot:P1", 0, condition, "none");
        assert_eq!(metrics(ours), metrics(&theirs), "{condition}");
        for field in
            ["encoder", "dataset", "regime", "probe", "calibrator", "label_fraction", "seed", "condition"]
        {
            assert_eq!(ours[field], theirs[field], "{condition}: {field}");
        }
        let a = read_predictions(&store.join(ours["paths"]["predictions"].as_str().unwrap())).unwrap();
        let b = read_predictions(&zs.join(theirs["paths"]["predictions"].as_str().unwrap())).unwrap();
        assert_eq!(a.ids(), b.ids(), "{condition}");
        assert_eq!(a.scores(), b.scores(), "{condition}");
    }

    // Resuming a finished grid runs nothing and changes nothing.
    let before = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let again = calibra(&["run", recipe_s, "--out", store_s, "--resume"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(fs::read_to_string(store.join("runs.jsonl")).unwrap(), before);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("image features"), "a resumed finished grid runs no fit: {stderr}");

    // `calibra report` on the store: exit 0, a calibration-stability section with the templates.
    let report = calibra(&["report", store_s]);
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let md = fs::read_to_string(store.join("report/report.md")).unwrap();
    assert!(md.contains("## Calibration stability"), "{md}");
    let section = &md[md.find("## Calibration stability").unwrap()..];
    assert!(section.contains("P1, P2, C1") || section.contains("C1, P1, P2"), "{section}");
}

#[test]
fn zero_shot_on_a_checkpoint_without_a_text_tower_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let vit = common::tiny_vit_checkpoint(tmp.path());
    let recipe = tmp.path().join("zs.toml");
    fs::write(&recipe, recipe_text(&vit, r#"["P1"]"#)).unwrap();
    let store = tmp.path().join("store");
    let out = calibra(&["run", recipe.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a CLIP or SigLIP checkpoint") && err.contains("model_type `vit`"), "{err}");
    assert!(!store.exists(), "nothing is created for a grid that cannot run");
}
