//! OpenAI CLIP `.pt` state dicts (CheXzero's release format) converted by
//! `calibra_models::clip::open_clip::convert_openai_clip` into OpenCLIP directories, against
//! open_clip_torch 3.3.0's own loader for such files (`load_openai_model`, fp32) on the tiny random
//! CLIP of scripts/golden/encoders_openai_clip.py (tests/fixtures/openai_clip/): the plain ZIP save
//! and the same weights nested as a DDP training script saves them, in the legacy container. Image
//! and text features and zero-shot logits within 1e-4 absolute (f32).

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::clip::ClipModel;
use calibra_models::clip::open_clip::{Preprocess, convert_openai_clip};
use calibra_testkit::sorted_names;
use serde_json::Value;

mod common;
use common::{assert_within, flat};

const TOL: f32 = 1e-4;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openai_clip")
}

fn golden() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("golden.json")).unwrap()).unwrap()
}

fn max_diff(name: &str, got: Tensor<2>, want: &Value) -> f32 {
    assert_within(name, got, want, TOL)
}

/// No staging directory of a conversion is left in `dir`.
fn assert_no_staging_left(dir: &Path) {
    let left: Vec<String> = sorted_names(dir).into_iter().filter(|n| n.starts_with('.')).collect();
    assert!(left.is_empty(), "staging directories left behind: {left:?}");
}

fn check(file: &str, golden_key: &str) -> calibra_models::clip::open_clip::ConvertedOpenAiClip {
    let g = golden();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("converted");
    let converted = convert_openai_clip(&fixtures().join(file), &out, None, &Preprocess::openai()).unwrap();
    assert_eq!(converted.model_cfg, g["config"], "{file}: inferred config");
    assert!(out.join("open_clip_config.json").is_file() && out.join("open_clip_model.safetensors").is_file());
    assert_no_staging_left(tmp.path());

    // Float types as stored: OpenAI's partial float16 cast is kept.
    let dtypes = g["dtypes"].as_object().unwrap();
    let count = |t: &str| dtypes.values().filter(|v| v.as_str() == Some(t)).count();
    assert_eq!(
        converted.dtypes.get("F16").copied().unwrap_or(0),
        count("float16"),
        "{file}: float16 tensors"
    );
    assert_eq!(
        converted.dtypes.get("F32").copied().unwrap_or(0),
        count("float32"),
        "{file}: float32 tensors"
    );

    let device = Device::flex();
    let (model, _) = ClipModel::load(out.to_str().unwrap(), &device).unwrap();
    let want = &g[golden_key];
    assert!((model.logit_scale - want["logit_scale"].as_f64().unwrap() as f32).abs() < 1e-6);
    let (images, shape) = flat(&g["images"]);
    let images =
        Tensor::from_data(TensorData::new(images, [shape[0], shape[1], shape[2], shape[3]]), &device);
    let ids: Vec<Vec<u32>> = g["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect())
        .collect();
    let img = model.image_features(images).unwrap();
    let txt = model.text_features(&ids, &device).unwrap();
    max_diff(&format!("{file} image features"), img.clone(), &want["image_features"]);
    max_diff(&format!("{file} text features"), txt.clone(), &want["text_features"]);
    max_diff(&format!("{file} zero-shot logits"), model.logits(img, txt), &want["logits"]);
    converted
}

#[test]
fn a_state_dict_converts_to_what_open_clip_loads() {
    let c = check("state_dict.pt", "state_dict");
    assert_eq!((c.source.entry, c.source.stripped_prefix), (None, None));
    assert!(c.dropped.is_empty());
    assert_eq!(c.source.sha256.len(), 64);
}

#[test]
fn a_nested_ddp_save_in_the_legacy_container_converts_alike() {
    let c = check("legacy_nested.pt", "legacy_nested");
    assert_eq!(c.source.entry.as_deref(), Some("state_dict"));
    assert_eq!(c.source.stripped_prefix.as_deref(), Some("module."));
    assert_eq!(c.dropped, ["context_length", "input_resolution", "vocab_size"]);
}

#[test]
fn the_preprocess_cfg_is_written_as_given() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("chexzero-like");
    convert_openai_clip(&fixtures().join("state_dict.pt"), &out, None, &Preprocess::chexzero()).unwrap();
    let cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("open_clip_config.json")).unwrap()).unwrap();
    let mean = cfg["preprocess_cfg"]["mean"][0].as_f64().unwrap();
    assert!((mean * 255.0 - 101.48761).abs() < 1e-9, "{cfg}");
    assert_eq!(cfg["preprocess_cfg"]["interpolation"], "bicubic");
}

#[test]
fn bad_sources_and_targets_are_refused_without_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let source = fixtures().join("state_dict.pt");

    // An existing target is never overwritten.
    let existing = tmp.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    let e = convert_openai_clip(&source, &existing, None, &Preprocess::openai()).unwrap_err().to_string();
    assert!(e.contains("already exists"), "{e}");

    // Not a checkpoint at all.
    let text = tmp.path().join("notes.pt");
    std::fs::write(&text, "not a checkpoint").unwrap();
    let e = convert_openai_clip(&text, &tmp.path().join("a"), None, &Preprocess::openai())
        .unwrap_err()
        .to_string();
    assert!(e.contains("notes.pt") && e.contains("not a readable PyTorch checkpoint"), "{e}");

    // A TorchScript archive (the layout of OpenAI's own released .pt files).
    let jit = tmp.path().join("ViT-B-32.pt");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&jit).unwrap());
        let options =
            zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, body) in [
            ("ViT-B-32/data.pkl", &b"\x80\x02c__torch__.CLIP\n"[..]),
            ("ViT-B-32/code/__torch__.py", b"class CLIP: pass"),
            ("ViT-B-32/constants.pkl", b"\x80\x02)."),
        ] {
            zip.start_file(name, options).unwrap();
            std::io::Write::write_all(&mut zip, body).unwrap();
        }
        zip.finish().unwrap();
    }
    let e = convert_openai_clip(&jit, &tmp.path().join("b"), None, &Preprocess::openai())
        .unwrap_err()
        .to_string();
    assert!(e.contains("TorchScript") && e.contains("state_dict()"), "{e}");

    // A key that is not there.
    let e = convert_openai_clip(&source, &tmp.path().join("c"), Some("model"), &Preprocess::openai())
        .unwrap_err()
        .to_string();
    assert!(e.contains("'model'"), "{e}");

    for name in ["a", "b", "c"] {
        assert!(!tmp.path().join(name).exists(), "{name} was created");
    }
    assert_no_staging_left(tmp.path());
}
