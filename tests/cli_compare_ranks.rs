//! End-to-end tests of `calibra compare-ranks`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn calibra(args: &[&Path], extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra"))
        .arg("compare-ranks")
        .args(args)
        .args(extra)
        .output()
        .expect("run calibra")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The CRS-Bench paper's Table 2 aggregate AUROC and CRS (seed 000, line 37), in the table's order.
const AUROC: &str = "encoder,score\nPanDerm,0.871\nMedSigLIP,0.908\nMedGemma,0.909\nBiomedCLIP,0.873\nCheXzero,0.837\n\
ViT-B/16,0.853\nSigLIP,0.847\nCLIP,0.848\nDINOv2,0.857\nRAD-DINO,0.847\nLLaVA-Med,0.861\nRETFound,0.836\nMAE,0.819\n\
BioViL,0.795\nResNet-50,0.828\n";
/// The same encoders in another order (B's order does not matter except for ties within B).
const CRS: &str = "encoder,score\nResNet-50,0.072\nPanDerm,0.703\nMedSigLIP,0.701\nMedGemma,0.645\nBiomedCLIP,0.424\n\
CheXzero,0.398\nViT-B/16,0.320\nSigLIP,0.298\nCLIP,0.284\nDINOv2,0.266\nRAD-DINO,0.251\nLLaVA-Med,0.241\n\
RETFound,0.187\nMAE,0.184\nBioViL,0.125\n";

#[test]
fn json_output_has_every_key_and_the_paper_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "auroc.csv", AUROC);
    let b = write(dir.path(), "crs.csv", CRS);
    let out = calibra(&[&a, &b], &["--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "n",
        "kendall_tau",
        "spearman_rho",
        "kendall_tau_b_scores",
        "weighted_tau",
        "reversals",
        "pairs",
        "mean_abs_displacement",
        "top_k_overlap",
        "ties_a",
        "ties_b",
        "moves",
    ] {
        assert!(v.get(key).is_some(), "missing key {key} in {v}");
    }
    assert_eq!(v.as_object().unwrap().len(), 12);
    // Paper §5.4 (seed 000, line 37): 21/105 reversals, τ = 0.600, top-3/top-5 overlap 0.667/0.800.
    assert_eq!((v["reversals"].as_u64(), v["pairs"].as_u64()), (Some(21), Some(105)));
    assert!((v["kendall_tau"].as_f64().unwrap() - 0.600).abs() <= 0.0005);
    assert!((v["top_k_overlap"]["3"].as_f64().unwrap() - 0.667).abs() <= 0.0005);
    assert!((v["top_k_overlap"]["5"].as_f64().unwrap() - 0.800).abs() <= 0.0005);
    assert_eq!(v["ties_a"].as_u64(), Some(1));
    let moves = v["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 15);
    let chexzero = moves.iter().find(|m| m["encoder"] == "CheXzero").unwrap();
    assert_eq!((chexzero["rank_a"].as_u64(), chexzero["rank_b"].as_u64()), (Some(11), Some(5)));
}

#[test]
fn table_output_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "auroc.csv", AUROC);
    let b = write(dir.path(), "crs.csv", CRS);
    let out = calibra(&[&a, &b], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pairwise reversals           21 of 105"), "{text}");
    assert!(text.contains("CheXzero"), "{text}");
}

fn error_of(a: &str, b: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let pa = write(dir.path(), "a.csv", a);
    let pb = write(dir.path(), "b.csv", b);
    let out = calibra(&[&pa, &pb], &["--format", "json"]);
    assert!(!out.status.success(), "expected failure, got {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn mismatched_encoders_are_listed() {
    let err = error_of("encoder,score\nx,1\ny,2\nz,3\n", "encoder,score\nx,1\ny,2\nw,3\n");
    assert!(err.contains("only in") && err.contains("[z]") && err.contains("[w]"), "{err}");
    assert!(err.contains("a.csv") && err.contains("b.csv"), "{err}");
}

#[test]
fn bad_rows_name_the_file_and_line() {
    let good = "encoder,score\nx,1\ny,2\n";
    let err = error_of(good, "encoder,score\nx,1\ny,high\n");
    assert!(err.contains("b.csv: line 3") && err.contains("high"), "{err}");
    let err = error_of("encoder,score\nx,1\nx,2\n", good);
    assert!(err.contains("a.csv: line 3") && err.contains("already listed on line 2"), "{err}");
    let err = error_of("name,value\nx,1\ny,2\n", good);
    assert!(err.contains("a.csv: line 1") && err.contains("encoder,score"), "{err}");
    let err = error_of(good, "encoder,score\nx,1,extra\ny,2\n");
    assert!(err.contains("b.csv"), "{err}");
    let err = error_of(good, "encoder,score\nx,NaN\ny,2\n");
    assert!(err.contains("b.csv: line 2"), "{err}");
}
