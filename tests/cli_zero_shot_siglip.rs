//! `calibra zero-shot` end to end on the transformers-made tiny SigLIP fixture of calibra-models
//! (scripts/golden/siglip_text.py: a random `SiglipModel` with its SentencePiece tokenizer) over a
//! small synthetic dermatology set: one predictions file and run record per template, logits that
//! are SigLIP's sigmoid logits (scale·cos + bias, negative for a random model), and the missing
//! tokenizer named.

mod common;

use std::fs;

use calibra_crs::RunRecordSet;
use calibra_predictions::read_predictions;
use common::{calibra, tiny_siglip_checkpoint};

const DATA: &str = "synth:derm?n=40&size=32";

#[test]
fn zero_shot_runs_on_a_siglip_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tiny_siglip_checkpoint(tmp.path(), true);
    let out = tmp.path().join("zs");
    let run = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "P1,P2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let set = RunRecordSet::from_path(&out.join("runs.jsonl")).unwrap();
    assert_eq!(set.len(), 2);
    for (located, id) in set.records().iter().zip(["P1", "P2"]) {
        let r = &located.record;
        assert_eq!(r.probe, format!("zero-shot:{id}"));
        for m in ["accuracy", "ece", "nll"] {
            assert!(r.metrics.get(m).is_some_and(|v| v.is_finite()), "{id}: {m}");
        }
        let p = read_predictions(&out.join(&r.paths["predictions"])).unwrap();
        assert!(p.scores().iter().all(|s| s.is_finite()), "{id}: non-finite logits");
    }
}

#[test]
fn a_siglip_checkpoint_without_spiece_model_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tiny_siglip_checkpoint(tmp.path(), false);
    let out = tmp.path().join("zs");
    let run = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "P1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("spiece.model") && err.contains("SigLIP tokenizer"), "{err}");
}

/// `calibra run` with `[regimes.zero-shot]` on the SigLIP checkpoint: the recipe is accepted, and the
/// uncalibrated clean P1 record equals `calibra zero-shot`'s on the same split (one code path).
#[test]
fn a_recipe_runs_zero_shot_on_a_siglip_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tiny_siglip_checkpoint(tmp.path(), true);
    let recipe = tmp.path().join("zs.toml");
    fs::write(
        &recipe,
        format!(
            "seeds = [0]\nlabel_fractions = [1.0]\ncalibrators = [\"none\"]\n[[encoders]]\nname = \
             \"tiny-siglip\"\nsource = \"{}\"\n[[datasets]]\nname = \"derm\"\nspec = \"{DATA}\"\n\
             [regimes.zero-shot]\ntemplates = [\"P1\"]\n[evaluator]\nbootstrap = 0\n",
            ck.display()
        ),
    )
    .unwrap();
    let store = tmp.path().join("store");
    let run = calibra(&["run", recipe.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let set = RunRecordSet::from_path(&store.join("runs.jsonl")).unwrap();
    let record = set
        .records()
        .iter()
        .map(|l| &l.record)
        .find(|r| {
            r.probe == "zero-shot:P1"
                && matches!(r.condition, calibra_crs::Condition::Clean)
                && r.calibrator == "none"
        })
        .expect("a clean uncalibrated P1 record");

    let out = tmp.path().join("zs");
    let direct = calibra(&[
        "zero-shot",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--templates",
        "P1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(direct.status.success(), "{}", String::from_utf8_lossy(&direct.stderr));
    let zs = RunRecordSet::from_path(&out.join("runs.jsonl")).unwrap();
    assert_eq!(zs.records()[0].record.metrics, record.metrics);
}
