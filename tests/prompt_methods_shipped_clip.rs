//! Every prompt-learning method on the shipped tiny CLIP (`checkpoints/tiny-clip`), issue #25's check:
//! on the quickstart's synthetic fundus task (seed 0, full labels), CoOp, KgCoOp, ProGrad, MaPLe,
//! PromptSRC and HiCroPL (depth 3: the tiny CLIP's towers have 3 blocks; HiCroPL's cross layer 2)
//! each reach at least zero-shot P1's accuracy minus 0.02 on the same test split. The ECE of each is
//! printed, not asserted (the issue asks to record it).
//!
//! Measured with a debug build (2026-12-03, this recipe, 60 test images): zero-shot P1 accuracy 0.550
//! (ECE 0.149); CoOp 0.567 (0.100), KgCoOp 0.600 (0.168), ProGrad 0.583 (0.172), MaPLe 0.600 (0.094),
//! PromptSRC 0.567 (0.099); HiCroPL (2026-12-04) 0.567 (0.088).
mod common;

const RECIPE: &str = r#"seeds = [0]
label_fractions = [1.0]
calibrators = ["none"]

[[encoders]]
source = "checkpoints/tiny-clip"

[[datasets]]
name = "fundus"
spec = "synth:fundus?n=400&size=32&seed=11"

[regimes.zero-shot]
templates = ["P1"]

[regimes.coop]
n_ctx = 4
ctx_init = "a photo of a"
epochs = 10
lr = 2e-3
methods = ["coop", "kgcoop", "prograd", "maple", "promptsrc", "hicropl"]
maple_depth = 3
promptsrc_depth = 3
hicropl_depth = 3
hicropl_cross_layer = 2
hicropl_n_ctx = 4

[[losses]]
name = "ce"
regimes = ["coop"]
"#;

/// How far below zero-shot P1 a trained method may land (issue #25).
const SLACK: f64 = 0.02;

#[test]
fn every_prompt_method_reaches_zero_shot_accuracy_on_the_shipped_tiny_clip() {
    let records = common::run_recipe_records(RECIPE);
    let metric = |probe: &str, name: &str| common::probe_metric(&records, probe, name);
    let zero_shot = metric("zero-shot:P1", "accuracy");
    eprintln!("zero-shot P1: accuracy {zero_shot:.4}, ECE {:.4}", metric("zero-shot:P1", "ece"));
    for probe in ["ce", "kgcoop+ce", "prograd+ce", "maple+ce", "promptsrc+ce", "hicropl+ce"] {
        let (accuracy, ece) = (metric(probe, "accuracy"), metric(probe, "ece"));
        eprintln!("{probe}: accuracy {accuracy:.4}, ECE {ece:.4}");
        assert!(
            accuracy >= zero_shot - SLACK,
            "{probe}: accuracy {accuracy:.4} is more than {SLACK} below zero-shot P1's {zero_shot:.4}"
        );
    }
}
