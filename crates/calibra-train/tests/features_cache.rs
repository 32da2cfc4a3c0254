//! The frozen-feature pass end to end: a tiny ViT checkpoint (the transformers-made parity fixture of
//! calibra-models) over a synthetic dataset, cached by fingerprint.

use std::fs;
use std::path::{Path, PathBuf};

use burn::tensor::{Device, Tensor, TensorData};
use calibra_data::{
    DatasetSpec, LoadOptions, PreprocessConfig, Split, SplitConfig, load_dataset, split_dataset,
};
use calibra_models::Encoder;
use calibra_train::features::{
    FeatureCondition, FeatureRequest, FeatureSet, FeatureSource, PreparedPass, SplitSelection,
};

const DATA: &str = "synth:derm?n=40&size=32";

/// A checkpoint directory: the ViT fixture plus an image-processor config (30×30, mean/std 0.5).
fn checkpoint(dir: &Path) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/vit");
    let ck = dir.join("tiny-vit");
    fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        fs::copy(fixture.join(f), ck.join(f)).unwrap();
    }
    fs::write(
        ck.join("preprocessor_config.json"),
        r#"{"do_resize": true, "size": {"height": 30, "width": 30}, "resample": 2,
            "do_rescale": true, "rescale_factor": 0.00392156862745098,
            "do_normalize": true, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#,
    )
    .unwrap();
    ck
}

fn request(ck: &Path, condition: &str) -> FeatureRequest {
    FeatureRequest {
        encoder: ck.display().to_string(),
        data: DATA.into(),
        split: Split::Test.into(),
        split_config: SplitConfig::default(),
        condition: FeatureCondition::parse(condition).unwrap(),
        layers: vec![0.5, 1.0],
        batch_size: 3,
    }
}

#[test]
fn features_equal_a_direct_encoder_call_and_are_cached_by_fingerprint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let device = Device::flex();
    let out = tmp.path().join("features/test.safetensors");

    let pass = PreparedPass::new(request(&ck, "clean")).unwrap();
    let mut calls = 0;
    let (set, source) = pass.cached(&out, &device, &mut |_, _| calls += 1).unwrap();
    assert_eq!(source, FeatureSource::Computed);
    assert!(calls >= 2, "progress is reported per batch");
    assert_eq!(set.dim, 48);
    assert_eq!(set.layers.len(), 2);

    // The same rows computed by hand: load the split, preprocess, one encoder call on all images.
    let dataset = load_dataset(&DatasetSpec::parse(DATA).unwrap(), &LoadOptions::default()).unwrap();
    let test = split_dataset(&dataset, &SplitConfig::default()).unwrap().test;
    assert_eq!(set.ids, test.iter().map(|&i| dataset.samples[i].id.clone()).collect::<Vec<_>>());
    let pre = PreprocessConfig::from_hf_file(&ck.join("preprocessor_config.json")).unwrap();
    let mut pixels = Vec::new();
    for &i in &test {
        pixels.extend(pre.apply(&dataset.samples[i].image.load().unwrap()).data);
    }
    let images = Tensor::<4>::from_data(TensorData::new(pixels, [test.len(), 3, 30, 30]), &device);
    let encoder = Encoder::load_dir(&ck, &device).unwrap();
    let direct = encoder.embed(images).unwrap().into_data().try_to_vec::<f32>().unwrap();
    let cached = set.layer(1.0).unwrap();
    let worst = direct.iter().zip(cached).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "batched pass vs one call: max |diff| {worst}");

    // Written file round-trips; a second pass with the same fingerprint is a cache hit.
    assert_eq!(FeatureSet::read(&out).unwrap(), set);
    let (again, source) =
        PreparedPass::new(request(&ck, "clean")).unwrap().cached(&out, &device, &mut |_, _| {}).unwrap();
    assert_eq!(source, FeatureSource::Cache);
    assert_eq!(again, set);

    // Another condition has another fingerprint (and different pixels, hence features).
    let noisy = PreparedPass::new(request(&ck, "rician-noise:3")).unwrap();
    assert_ne!(noisy.fingerprint, pass.fingerprint);
    let (noisy_set, source) = noisy.cached(&out, &device, &mut |_, _| {}).unwrap();
    assert_eq!(source, FeatureSource::Computed);
    assert_ne!(noisy_set.layer(1.0), set.layer(1.0));
}

#[test]
fn bad_requests_name_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    fs::remove_file(ck.join("preprocessor_config.json")).unwrap();
    let err = PreparedPass::new(request(&ck, "clean")).err().unwrap().to_string();
    assert!(err.contains("preprocessor_config.json") && err.contains("missing"), "{err}");
    assert!(FeatureCondition::parse("blur").is_err());
    assert!(FeatureCondition::parse("nonsense:2").unwrap_err().to_string().contains("unknown perturbation"));
    let mut r = request(&checkpoint(tmp.path()), "clean");
    r.layers = vec![1.5];
    assert!(PreparedPass::new(r).err().unwrap().to_string().contains("not in (0, 1]"));
}

#[test]
fn a_pass_over_every_split_records_each_rows_split_and_holds_each_single_split_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let device = Device::flex();
    let mut all = request(&ck, "clean");
    all.split = SplitSelection::All;
    let pass = PreparedPass::new(all).unwrap();
    let out = tmp.path().join("all.safetensors");
    let (set, _) = pass.cached(&out, &device, &mut |_, _| {}).unwrap();

    let dataset = load_dataset(&DatasetSpec::parse(DATA).unwrap(), &LoadOptions::default()).unwrap();
    let assignment = split_dataset(&dataset, &SplitConfig::default()).unwrap();
    let splits = set.splits.clone().expect("a pass over every split records the split per row");
    assert_eq!(set.ids.len(), dataset.samples.len());
    let mut expected_ids = Vec::new();
    let mut expected_splits = Vec::new();
    for s in Split::ALL {
        for &i in assignment.get(s) {
            expected_ids.push(dataset.samples[i].id.clone());
            expected_splits.push(s);
        }
    }
    assert_eq!(set.ids, expected_ids);
    assert_eq!(splits, expected_splits);
    assert_eq!(FeatureSet::read(&out).unwrap(), set, "the per-row splits round-trip through the file");

    // Each split's rows equal that split's own pass (same encoder, same pixels, same batches of rows
    // up to batch boundaries: compare within float tolerance).
    for s in Split::ALL {
        let mut one = request(&ck, "clean");
        one.split = s.into();
        let single = PreparedPass::new(one).unwrap().compute(&device, &mut |_, _| {}).unwrap();
        assert!(single.splits.is_none(), "a one-split pass records no per-row split");
        let picked = set.only(s).unwrap();
        assert_eq!(picked.ids, single.ids, "{}", s.name());
        assert_eq!(picked.targets, single.targets, "{}", s.name());
        for f in [0.5, 1.0] {
            let worst = picked
                .layer(f)
                .unwrap()
                .iter()
                .zip(single.layer(f).unwrap())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{} at depth {f}: max |diff| {worst}", s.name());
        }
        assert!(single.only(s).is_none(), "a one-split set cannot be cut by split");
    }
    assert_ne!(PreparedPass::new(request(&ck, "clean")).unwrap().fingerprint, pass.fingerprint);
}
