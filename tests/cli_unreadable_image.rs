//! Issue 16, "Bad input and faults", end to end: a training image that exists but cannot be decoded,
//! met mid-epoch by `calibra train --regime lora`. Under the spec option `on_bad_image=skip` the fit
//! completes and its progress names the file and counts it; without it the run fails naming the file.

mod common;

use std::path::Path;

use calibra_data::{DatasetSpec, ImageSource, LoadOptions, load_dataset, split_dataset};
use common::calibra;

fn train(ck: &Path, data: &str, out: &Path) -> std::process::Output {
    let args = [
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        data,
        "--regime",
        "lora",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        "--out",
        out.to_str().unwrap(),
    ];
    calibra(&args)
}

#[test]
fn a_corrupt_training_image_is_skipped_under_skip_and_named_under_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = common::tiny_vit_checkpoint(tmp.path());
    let folder = tmp.path().join("derm");
    let out = calibra(&[
        "data",
        "export",
        "synth:derm?n=60&size=32",
        "--out",
        folder.to_str().unwrap(),
        "--image-format",
        "png",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A sample of the train split (the recipe's default split), damaged after the export.
    let spec = format!("imagefolder:{}", folder.display());
    let dataset = load_dataset(&DatasetSpec::parse(&spec).unwrap(), &LoadOptions::default()).unwrap();
    let split = split_dataset(&dataset, &calibra_run::recipe::SplitSettings::default().config()).unwrap();
    let ImageSource::File(file) = &dataset.samples[split.train[3]].image else { panic!("a file") };
    std::fs::write(file, b"\x89PNG but the rest was lost").unwrap();
    let name = file.file_name().unwrap().to_string_lossy().to_string();

    let skipped = train(&ck, &format!("{spec}?on_bad_image=skip"), &tmp.path().join("skip"));
    let err = String::from_utf8_lossy(&skipped.stderr);
    assert!(skipped.status.success(), "{err}");
    assert!(err.contains("1 training image(s) could not be read"), "{err}");
    assert!(err.contains(&name), "{err}");
    let records = std::fs::read_to_string(tmp.path().join("skip/runs.jsonl")).unwrap();
    assert!(records.lines().count() >= 1);

    let failed = train(&ck, &spec, &tmp.path().join("fail"));
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "the default policy must stop the fit");
    assert!(err.contains(&name), "{err}");
}
