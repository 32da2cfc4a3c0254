//! `export_imagefolder` round trip: a generated set written as PNG reads back through `imagefolder:`
//! with the same classes, per-class counts and pixels; a second run writes nothing; JPEG files decode
//! to images of the same size; a multilabel set, and classes that would share a folder, are refused.

use std::collections::BTreeMap;

use calibra_data::export_imagefolder::{ExportFormat, export_imagefolder};
use calibra_data::{BadImagePolicy, Dataset, DatasetSpec, LoadOptions, Target, load_dataset};

fn load(spec: &str) -> Dataset {
    load_dataset(&DatasetSpec::parse(spec).unwrap(), &LoadOptions::default()).unwrap()
}

fn class_counts(ds: &Dataset) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for s in &ds.samples {
        let Target::Class(c) = s.target else { panic!("single-label") };
        *out.entry(ds.labels.names[c].clone()).or_default() += 1;
    }
    out
}

#[test]
fn a_png_export_reads_back_with_the_same_classes_and_pixels_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let source = load("synth:derm?n=30&size=28");
    let out = tmp.path().join("derm");
    let summary =
        export_imagefolder(&source, &out, ExportFormat::Png, BadImagePolicy::Fail, &|_| {}).unwrap();
    assert_eq!((summary.written, summary.existing), (30, 0));
    let back = load(&format!("imagefolder:{}", out.display()));
    assert_eq!(back.len(), 30);
    assert_eq!(class_counts(&back), class_counts(&source));
    for s in &source.samples {
        let Target::Class(c) = s.target else { unreachable!() };
        let id = format!(
            "{}/{}.png",
            source.labels.names[c],
            s.id.replace(|ch: char| !ch.is_ascii_alphanumeric() && !"._-".contains(ch), "_")
        );
        let twin = back.samples.iter().find(|b| b.id == id).unwrap_or_else(|| panic!("{id} not read back"));
        assert_eq!(twin.image.load().unwrap().data, s.image.load().unwrap().data, "{id}: PNG is lossless");
    }
    let again = export_imagefolder(&source, &out, ExportFormat::Png, BadImagePolicy::Fail, &|_| {}).unwrap();
    assert_eq!((again.written, again.existing), (0, 30), "a second run writes only what is missing");
}

#[test]
fn a_jpeg_export_decodes_and_a_multilabel_set_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let source = load("synth:derm?n=12&size=28");
    let out = tmp.path().join("jpeg");
    let done = std::sync::atomic::AtomicUsize::new(0);
    let progress = |n: usize| {
        done.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
    };
    export_imagefolder(&source, &out, ExportFormat::Jpeg(90), BadImagePolicy::Fail, &progress).unwrap();
    assert_eq!(done.into_inner(), 12, "progress counts every sample");
    let back = load(&format!("imagefolder:{}", out.display()));
    assert_eq!(back.len(), 12);
    for s in &back.samples {
        assert!(s.id.ends_with(".jpg"), "{}", s.id);
        let image = s.image.load().unwrap();
        assert_eq!((image.width, image.height), (28, 28));
    }
    let chest = load("synth:chest?n=12&size=28");
    let err = export_imagefolder(
        &chest,
        &tmp.path().join("chest"),
        ExportFormat::Png,
        BadImagePolicy::Fail,
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("multilabel"), "{err}");
    assert!(!tmp.path().join("chest").exists(), "nothing written for a refused set");

    // Two classes whose names are the same once made file-safe would merge into one folder.
    let mut clash = load("synth:derm?n=12&size=28");
    clash.labels.names[0] = "a/b".into();
    clash.labels.names[1] = "a:b".into();
    let err = export_imagefolder(
        &clash,
        &tmp.path().join("clash"),
        ExportFormat::Png,
        BadImagePolicy::Fail,
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`a/b` and `a:b`") && err.contains("share the folder"), "{err}");
    assert!(!tmp.path().join("clash").exists(), "nothing written for a refused set");
}
