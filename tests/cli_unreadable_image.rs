//! Issue 16, "Bad input and faults", end to end: a training image that exists but cannot be decoded,
//! met mid-epoch by `calibra train` (LoRA, and MaPLe, which reads its training images per batch too).
//! Under the spec option `on_bad_image=skip` the fit completes and its progress names the file and
//! counts it; without it the run fails naming the file.

mod common;

use std::path::{Path, PathBuf};

use calibra_data::{DatasetSpec, ImageSource, LoadOptions, load_dataset, split_dataset};
use common::calibra;

/// `synth:SUITE` exported as a PNG ImageFolder under `dir`, with one train-split image (under the
/// recipe's default split) overwritten by bytes that do not decode. Returns the spec and the file name.
fn damaged_folder(dir: &Path, suite: &str) -> (String, String) {
    let folder = dir.join(suite);
    let synth = format!("synth:{suite}?n=60&size=32");
    let out =
        calibra(&["data", "export", &synth, "--out", folder.to_str().unwrap(), "--image-format", "png"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spec = format!("imagefolder:{}", folder.display());
    let dataset = load_dataset(&DatasetSpec::parse(&spec).unwrap(), &LoadOptions::default()).unwrap();
    let split = split_dataset(&dataset, &calibra_run::recipe::SplitSettings::default().config()).unwrap();
    let ImageSource::File(file) = &dataset.samples[split.train[3]].image else { panic!("a file") };
    std::fs::write(file, b"\x89PNG but the rest was lost").unwrap();
    (spec, file.file_name().unwrap().to_string_lossy().to_string())
}

fn train(encoder: &Path, data: &str, out: &Path, regime: &[&str]) -> std::process::Output {
    let mut args = vec!["train", "--encoder", encoder.to_str().unwrap(), "--data", data];
    args.extend_from_slice(regime);
    args.extend_from_slice(&["--epochs", "1", "--out", out.to_str().unwrap()]);
    calibra(&args)
}

/// Skipped and reported under `skip` (the store gets its records); the fit fails naming the file
/// under the default `fail`.
fn check_both_ways(encoder: &Path, suite: &str, regime: &[&str], tag: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, name) = damaged_folder(tmp.path(), suite);

    let skipped = train(encoder, &format!("{spec}?on_bad_image=skip"), &tmp.path().join("skip"), regime);
    let err = String::from_utf8_lossy(&skipped.stderr);
    assert!(skipped.status.success(), "{err}");
    assert!(err.contains(&format!("{tag}: 1 training image(s) could not be read")), "{err}");
    assert!(err.contains(&name), "{err}");
    let records = std::fs::read_to_string(tmp.path().join("skip/runs.jsonl")).unwrap();
    assert!(records.lines().count() >= 1);

    let failed = train(encoder, &spec, &tmp.path().join("fail"), regime);
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "the default policy must stop the fit");
    assert!(err.contains(&name), "{err}");
}

#[test]
fn lora_skips_a_corrupt_training_image_under_skip_and_names_it_under_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = common::tiny_vit_checkpoint(tmp.path());
    check_both_ways(&ck, "derm", &["--regime", "lora", "--batch-size", "8"], "lora");
}

#[test]
fn maple_skips_a_corrupt_training_image_under_skip_and_names_it_under_fail() {
    let clip: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let maple = ["--regime", "coop", "--method", "maple", "--maple-depth", "3"];
    check_both_ways(&clip, "fundus", &maple, "maple");
}
