//! SigLIP text tower, tokenizer and sigmoid zero-shot logits against transformers 5.24.0
//! `SiglipModel` / `SiglipTokenizer` on the tiny random checkpoint written by
//! scripts/golden/siglip_text.py (tests/fixtures/siglip_model/). Tolerance: 1e-4 absolute (f32);
//! token ids exactly.

use std::path::PathBuf;

use burn::prelude::*;
use calibra_models::siglip_model::{SiglipModel, SiglipZeroShot};
use calibra_models::siglip_tokenizer::SiglipTokenizer;
use serde_json::Value;

mod common;
use common::flat;

const TOL: f32 = 1e-4;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/siglip_model")
}

fn golden() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture().join("golden.json")).unwrap()).unwrap()
}

fn max_diff(name: &str, got: Tensor<2>, want: &Value) -> f32 {
    let (want, shape) = flat(want);
    assert_eq!(got.dims().to_vec(), shape, "{name}: shape");
    let got: Vec<f32> = got.into_data().try_to_vec::<f32>().unwrap();
    let d = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    eprintln!("{name}: max |diff| {d:e}");
    d
}

fn ids(v: &Value) -> Vec<Vec<u32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect())
        .collect()
}

fn images(g: &Value, device: &Device) -> Tensor<4> {
    let (data, s) = flat(&g["pixel_values"]);
    Tensor::from_data(TensorData::new(data, [s[0], s[1], s[2], s[3]]), device)
}

#[test]
fn tokenizer_ids_equal_transformers() {
    let g = golden();
    let tok = SiglipTokenizer::from_dir(fixture()).unwrap();
    assert_eq!(tok.context_length(), g["max_length"].as_u64().unwrap() as usize);
    let strings: Vec<&str> = g["strings"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    for ((s, want), want_padded) in strings.iter().zip(ids(&g["ids"])).zip(ids(&g["padded_ids"])) {
        assert_eq!(tok.encode(s), want, "unpadded {s:?}");
        assert_eq!(tok.encode_padded(s).unwrap(), want_padded, "padded {s:?}");
    }
}

#[test]
fn text_and_image_features_and_sigmoid_logits_match_transformers() {
    let g = golden();
    let device = Device::flex();
    let (model, config) = SiglipModel::load(fixture().to_str().unwrap(), &device).unwrap();
    assert_eq!(config.text.n_layers, 2);
    let text = model.text_features(&ids(&g["padded_ids"]), &device).unwrap();
    assert!(max_diff("text_features", text, &g["text_features"]) < TOL);
    let image = model.image_features(images(&g, &device)).unwrap();
    assert!(max_diff("image_features", image.clone(), &g["image_features"]) < TOL);

    // Zero-shot with the golden template: the classifier's logits are SiglipModel's logits_per_image.
    let tok = SiglipTokenizer::from_dir(fixture()).unwrap();
    let classnames: Vec<String> =
        g["classnames"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    let template = g["template"].as_str().unwrap().to_string();
    for (name, want) in classnames.iter().zip(ids(&g["prompt_ids"])) {
        assert_eq!(tok.encode_padded(&template.replace("{}", name)).unwrap(), want, "{name}");
    }
    let zs = SiglipZeroShot::new(&model, &tok, &classnames, &[template], &device).unwrap();
    assert!(
        max_diff(
            "zero-shot logits_per_image",
            zs.logits_from_features(image.clone()),
            &g["logits_per_image"]
        ) < TOL
    );
    let direct = model.logits(image.clone(), model.text_features(&ids(&g["prompt_ids"]), &device).unwrap());
    assert!(max_diff("SiglipModel::logits", direct, &g["logits_per_image"]) < TOL);
    let (logits, _) = flat(&g["logits_per_image"]);
    for (p, z) in zs.sigmoid_rows(image).iter().zip(logits) {
        assert!((p - 1.0 / (1.0 + (-f64::from(z)).exp())).abs() < 1e-4);
    }
}

#[test]
fn missing_tokenizer_file_and_unsupported_options_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), "{}").unwrap();
    let err = SiglipTokenizer::from_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("spiece.model") && err.contains("tokenizer.json"), "{err}");

    std::fs::copy(fixture().join("spiece.model"), dir.path().join("spiece.model")).unwrap();
    std::fs::write(dir.path().join("tokenizer_config.json"), r#"{"pad_token": "<nope>"}"#).unwrap();
    let err = SiglipTokenizer::from_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("pad_token") && err.contains("<nope>"), "{err}");

    std::fs::write(dir.path().join("spiece.model"), b"\x0b\x00").unwrap();
    std::fs::remove_file(dir.path().join("tokenizer_config.json")).unwrap();
    let err = SiglipTokenizer::from_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("spiece.model") && err.contains("wire type"), "{err}");

    // A vision-only SigLIP checkpoint is not a SiglipModel.
    let device = Device::flex();
    let vision_only = fixture().with_file_name("siglip");
    let err = SiglipModel::load(vision_only.to_str().unwrap(), &device).unwrap_err().to_string();
    assert!(err.contains("siglip_vision_model"), "{err}");
}

#[test]
fn any_text_gives_context_length_ids_in_the_vocabulary() {
    let tok = SiglipTokenizer::from_dir(fixture()).unwrap();
    let n = tok.context_length();
    let long = "lesion ".repeat(200);
    for s in
        ["", " ", "\u{0}\u{7}\u{200b}", "\u{301}a\u{301}", "▁▁▁", "<unk></s><pad>", "ǅ ß İ", long.as_str()]
    {
        let ids = tok.encode_padded(s).unwrap();
        assert_eq!(ids.len(), n, "{s:?}");
        assert!(ids.contains(&tok.eos_id()), "{s:?}: no </s>");
        assert!(ids.iter().all(|&i| i < 80), "{s:?}: {ids:?}");
    }
}
