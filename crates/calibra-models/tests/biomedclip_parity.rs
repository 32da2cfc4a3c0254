//! BiomedCLIP-style OpenCLIP checkpoints (timm ViT trunk + Hugging Face BERT text tower + BERT
//! WordPiece tokenizer) against open_clip_torch 3.3.0 / transformers 5.24 on the tiny random model
//! written by scripts/golden/encoders_biomedclip.py (tests/fixtures/biomedclip/): image features, text
//! features and zero-shot logits within 1e-4 absolute, for BiomedCLIP's options (`model/`) and the
//! other implemented ones (`avg_linear/`); token ids equal to `BertTokenizerFast` and to open_clip's
//! `HFTokenizer`.
//!
//! The fixture's trunk is timm's `vit_base_patch16_224` entrypoint with reduced sizes
//! (`trunk_model_args.json`, the arguments the script gave timm); its BERT `config.json` is in a
//! Hugging Face hub cache under the BiomedBERT name (`hub/`), where open_clip also read it.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::clip::open_clip::{OpenClipTimmBert, TimmBertSources};
use calibra_models::clip::{OpenClipBertTokenizer, ZeroShotClassifier};
use calibra_models::tokenizer::wordpiece::WordPieceTokenizer;
use serde_json::Value;

mod common;
use common::{assert_within, flat};

const TOL: f32 = 1e-4;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/biomedclip")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<Vec<u32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect())
        .collect()
}

fn max_diff(name: &str, got: Tensor<2>, want: &Value) -> f32 {
    assert_within(name, got, want, TOL)
}

fn trunk_args() -> serde_json::Map<String, Value> {
    read_json(&fixtures().join("trunk_model_args.json")).as_object().unwrap().clone()
}

fn load(
    dir: &Path,
) -> Result<(OpenClipTimmBert, calibra_models::clip::open_clip::TimmBertConfig, WordPieceTokenizer), String> {
    let hub = fixtures().join("hub");
    let sources = TimmBertSources { hub_cache: Some(&hub), trunk_model_args: trunk_args() };
    OpenClipTimmBert::load_with(dir, &sources, &Device::flex()).map_err(|e| e.to_string())
}

/// Trunk, image and text features, logits and the zero-shot head of the fixture `name` against
/// open_clip.
fn check_fixture(name: &str) {
    let device = Device::flex();
    let dir = fixtures().join(name);
    let g = read_json(&dir.join("golden.json"));
    let (model, config, tokenizer) = load(&dir).unwrap();
    assert_eq!(config.context_length, 20);
    assert!((model.logit_scale - g["logit_scale"].as_f64().unwrap() as f32).abs() < 1e-6);
    // open_clip's token ids for the prompts.
    let prompts: Vec<&str> = g["prompts"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    let ours: Vec<Vec<u32>> =
        prompts.iter().map(|p| tokenizer.encode_open_clip(p, config.context_length).unwrap()).collect();
    assert_eq!(ours, ids(&g["ids"]), "{name}");
    let (data, shape) = flat(&g["images"]);
    let images =
        Tensor::<4>::from_data(TensorData::new(data, [shape[0], shape[1], shape[2], shape[3]]), &device);
    let trunk = model.trunk.forward(images.clone(), false).unwrap().cls;
    max_diff(&format!("{name} trunk features"), trunk, &g["trunk_features"]);
    let img = model.image_features(images).unwrap();
    let txt = model.text_features(&ours, &device).unwrap();
    max_diff(&format!("{name} image features"), img.clone(), &g["image_features"]);
    max_diff(&format!("{name} text features"), txt.clone(), &g["text_features"]);
    max_diff(&format!("{name} logits"), model.logits(img.clone(), txt), &g["logits"]);
    // The zero-shot head: class names x templates, normalise, average, renormalise.
    let z = &g["zero_shot"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
    };
    let tokenizer = OpenClipBertTokenizer { wordpiece: tokenizer, context_length: config.context_length };
    let head = ZeroShotClassifier::for_prompt_tower(
        &model,
        &tokenizer,
        &strings(&z["classnames"]),
        &strings(&z["templates"]),
        &device,
    )
    .unwrap();
    max_diff(
        &format!("{name} zero-shot class embeddings"),
        head.class_embeddings.clone(),
        &z["class_embeddings"],
    );
    max_diff(&format!("{name} zero-shot logits"), head.logits_from_features(img), &z["logits"]);
}

#[test]
fn biomedclip_options_match_open_clip() {
    // timm_pool "", timm_proj "linear" without bias, hf_proj_type "mlp".
    check_fixture("model");
}

#[test]
fn avg_pool_biased_head_and_linear_text_projection_match_open_clip() {
    // timm_pool "avg" (pooling reset after the trunk was built), timm_proj_bias, hf_proj_type "linear".
    check_fixture("avg_linear");
}

#[test]
fn wordpiece_ids_match_bert_tokenizer_fast_and_hf_tokenizer() {
    let t = read_json(&fixtures().join("tokenizer.json"));
    let n = t["context_length"].as_u64().unwrap() as usize;
    let model_dir = fixtures().join("model");
    // tokenizer.json, and vocab.txt + tokenizer_config.json alone, give the same ids.
    let from_json = WordPieceTokenizer::from_dir(&model_dir).unwrap();
    let from_vocab = WordPieceTokenizer::from_vocab_txt(
        model_dir.join("vocab.txt"),
        model_dir.join("tokenizer_config.json"),
    )
    .unwrap();
    for case in t["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> =
            case["bert_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
        let padded: Vec<u32> =
            case["open_clip_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
        for tok in [&from_json, &from_vocab] {
            assert_eq!(tok.encode(text), want, "BertTokenizerFast ids of {text:?}");
            assert_eq!(tok.encode_open_clip(text, n).unwrap(), padded, "HFTokenizer ids of {text:?}");
        }
    }
}

#[test]
fn missing_bert_config_and_tokenizer_are_named() {
    // No hub cache: the error names hf_model_name and what to download.
    let dir = fixtures().join("model");
    let sources = TimmBertSources { hub_cache: None, trunk_model_args: trunk_args() };
    let err = OpenClipTimmBert::load_with(&dir, &sources, &Device::flex()).unwrap_err().to_string();
    assert!(
        err.contains("microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract") && err.contains("config.json"),
        "{err}"
    );
    // No tokenizer files next to the config.
    let tmp = tempfile::tempdir().unwrap();
    for f in ["open_clip_config.json", "open_clip_model.safetensors"] {
        std::fs::copy(dir.join(f), tmp.path().join(f)).unwrap();
    }
    let err = load(tmp.path()).err().unwrap();
    assert!(err.contains("vocab.txt") && err.contains("tokenizer.json"), "{err}");
}

#[test]
fn shipped_trunk_sizes_do_not_fit_the_reduced_fixture() {
    // Without the fixture's reduced sizes the trunk is timm's vit_base_patch16_224 (768 wide): the
    // file is refused as too small for it, not loaded approximately.
    let hub = fixtures().join("hub");
    let sources = TimmBertSources { hub_cache: Some(&hub), ..Default::default() };
    let err = OpenClipTimmBert::load_with(&fixtures().join("model"), &sources, &Device::flex()).unwrap_err();
    assert!(err.to_string().contains("open_clip_model.safetensors holds only"), "{err}");
}

#[test]
fn leftover_tensors_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("model");
    for f in ["open_clip_config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let bytes = std::fs::read(src.join("open_clip_model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut views: Vec<(String, safetensors::tensor::TensorView<'_>)> = st.tensors().into_iter().collect();
    // An old transformers' persistent `position_ids` buffer is ignored, as transformers ignores it.
    let positions: Vec<u8> = (0i64..32).flat_map(|i| i.to_le_bytes()).collect();
    let position_ids =
        safetensors::tensor::TensorView::new(safetensors::Dtype::I64, vec![1, 32], &positions).unwrap();
    views.push(("text.transformer.embeddings.position_ids".to_string(), position_ids));
    let out = dir.path().join("open_clip_model.safetensors");
    safetensors::serialize_to_file(views.clone(), None, &out).unwrap();
    load(dir.path()).unwrap();
    let extra = st.tensor("logit_scale").unwrap();
    views.push(("logit_bias".to_string(), extra));
    safetensors::serialize_to_file(views, None, &out).unwrap();
    let err = load(dir.path()).err().unwrap();
    assert!(err.contains("logit_bias"), "{err}");
}

#[test]
fn the_encoder_loads_the_trunk_with_timms_sizes_for_its_name() {
    // `calibra features` (Encoder::load) takes the trunk (`OpenClipTimmBert::load_trunk`, checked in
    // `check_fixture`) with timm's own sizes for its name, as open_clip does: vit_base_patch16_224
    // (768 wide), which the reduced fixture file cannot hold.
    let dir = fixtures().join("model");
    let err = calibra_models::Encoder::load(dir.to_str().unwrap(), &Device::flex()).unwrap_err().to_string();
    assert!(err.contains("open_clip_model.safetensors holds only"), "{err}");
}
