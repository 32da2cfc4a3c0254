//! Native OpenCLIP checkpoints against open_clip_torch 3.3.0 on the tiny random models written by
//! scripts/golden/encoders_open_clip.py (tests/fixtures/open_clip/): `gelu` (`open_clip.model.CLIP`,
//! nn.GELU, float16 weights, the real 49408-token vocabulary) and `quickgelu` (`CustomTextCLIP`,
//! QuickGELU, text weights under `text.`, float32). Features and zero-shot logits within 1e-4
//! absolute (f32); token ids of open_clip's `SimpleTokenizer` equal.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::clip::open_clip::{OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHTS, load_open_clip};
use calibra_models::clip::{ClipModel, ClipVisionTransformer, l2_normalize};
use calibra_models::hf::resolve_checkpoint;
use calibra_models::lora::{LoraConfig, apply_lora};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_models::{Encoder, EncoderModel};
use serde_json::Value;

mod common;
use common::{assert_within, flat};

const TOL: f32 = 1e-4;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/open_clip")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn tensor4(v: &Value, device: &Device) -> Tensor<4> {
    let (data, shape) = flat(v);
    Tensor::from_data(TensorData::new(data, [shape[0], shape[1], shape[2], shape[3]]), device)
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

/// Image features, text features and zero-shot logits of one fixture against open_clip.
fn check_fixture(name: &str) {
    let device = Device::flex();
    let dir = fixtures().join(name);
    let g = read_json(&dir.join("golden.json"));
    let (model, _) = ClipModel::load(dir.to_str().unwrap(), &device).unwrap();
    let rel = (model.logit_scale - g["logit_scale"].as_f64().unwrap() as f32).abs();
    assert!(rel < 1e-6, "{name}: logit_scale");
    let img = model.image_features(tensor4(&g["images"], &device)).unwrap();
    let txt = model.text_features(&ids(&g["ids"]), &device).unwrap();
    max_diff(&format!("{name} image features"), img.clone(), &g["image_features"]);
    max_diff(&format!("{name} text features"), txt.clone(), &g["text_features"]);
    max_diff(&format!("{name} zero-shot logits"), model.logits(img.clone(), txt.clone()), &g["logits"]);
    // The same logits as the product of the normalised features the zero-shot classifier uses.
    let manual = l2_normalize(img).matmul(l2_normalize(txt).transpose()) * model.logit_scale_exp();
    max_diff(&format!("{name} logits (normalised features)"), manual, &g["logits"]);
}

#[test]
fn gelu_fixture_matches_open_clip() {
    check_fixture("gelu");
}

#[test]
fn quickgelu_custom_text_fixture_matches_open_clip() {
    check_fixture("quickgelu");
}

/// The vision tower as a frozen encoder: `embed` is open_clip's pooled feature before `visual.proj`
/// (`ln_post` of the class token), so projecting it gives `encode_image`.
#[test]
fn the_vision_tower_loads_as_a_clip_encoder() {
    let device = Device::flex();
    let dir = fixtures().join("gelu");
    let g = read_json(&dir.join("golden.json"));
    let encoder = Encoder::load(dir.to_str().unwrap(), &device).unwrap();
    assert!(matches!(encoder.model, EncoderModel::ClipVision(_)));
    assert!(encoder.is_open_clip());
    let (model, _) = load_open_clip(&dir, &device).unwrap();
    let pooled = encoder.embed(tensor4(&g["images"], &device)).unwrap();
    max_diff(
        "gelu encoder embed → visual.proj",
        model.visual_projection.forward(pooled),
        &g["image_features"],
    );
    assert!(encoder.save_pretrained(&std::env::temp_dir().join("calibra-never-written-oc")).is_err());
    assert!(resolve_checkpoint(dir.to_str().unwrap()).unwrap().is_open_clip());
    let (tower, config) = ClipVisionTransformer::load(dir.to_str().unwrap(), &device).unwrap();
    assert_eq!(config.n_layers, 2);
    let pooled = tower.forward(tensor4(&g["images"], &device)).unwrap().pooled;
    max_diff(
        "gelu vision tower alone → visual.proj",
        model.visual_projection.forward(pooled),
        &g["image_features"],
    );
}

/// LoRA on an OpenCLIP encoder is refused, naming PEFT's OpenCLIP module names.
#[test]
fn lora_on_open_clip_is_refused() {
    let device = Device::flex();
    let mut encoder = Encoder::load(fixtures().join("gelu").to_str().unwrap(), &device).unwrap();
    let config: LoraConfig =
        serde_json::from_str(r#"{"r": 2, "target_modules": ["q_proj", "v_proj"]}"#).unwrap();
    let err = apply_lora(&mut encoder, &config, 0).unwrap_err().to_string();
    assert!(err.contains("OpenCLIP") && err.contains("nn.MultiheadAttention"), "{err}");
    assert!(err.contains("visual.transformer.resblocks.{i}.mlp.c_fc"), "{err}");
}

fn tokenizer_golden() -> Value {
    read_json(&fixtures().join("tokenizer.json"))
}

fn as_ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

/// Token ids equal `open_clip.get_tokenizer("local-dir:<gelu>")` (context 77, zero padding) and
/// `SimpleTokenizer.encode`, and the same at context length 16 (truncation keeps EOT last).
#[test]
fn simple_tokenizer_ids_match_open_clip() {
    let g = tokenizer_golden();
    let tok = ClipTokenizer::for_checkpoint(fixtures().join("gelu")).unwrap();
    assert!(tok.is_open_clip());
    assert_eq!(tok.context_length(), 77);
    assert_eq!(tok.bos_id() as u64, g["sot"].as_u64().unwrap());
    assert_eq!(tok.eos_id() as u64, g["eot"].as_u64().unwrap());
    assert_eq!(tok.vocab_size() as u64, g["vocab_size"].as_u64().unwrap());
    let tok16 = tok.clone().with_context_length(16);
    let mut failures = Vec::new();
    for case in g["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        for (what, got, want) in [
            ("content", tok.tokenize(text).unwrap(), as_ids(&case["content"])),
            ("ids_77", tok.encode_padded(text).unwrap(), as_ids(&case["ids_77"])),
            ("ids_16", tok16.encode_padded(text).unwrap(), as_ids(&case["ids_16"])),
        ] {
            if got != want {
                failures.push(format!("{text:?} {what}: got {got:?}, open_clip {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// The cleaning open_clip does and calibra does not reproduce (ftfy's mojibake repair, HTML5 named
/// entities beyond the basic six): these strings tokenise differently, as documented. If one of them
/// starts to match, the gap is closed: move it to the golden cases.
#[test]
fn known_cleaning_gaps_differ_from_open_clip() {
    let g = tokenizer_golden();
    let tok = ClipTokenizer::open_clip(77).unwrap();
    for case in g["known_gaps"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_ne!(
            tok.encode_padded(text).unwrap(),
            as_ids(&case["ids_77"]),
            "{text:?} now matches open_clip"
        );
    }
}

/// A copy of the gelu fixture with `edit` applied to its config.
fn edited_fixture(edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("gelu");
    let mut cfg = read_json(&src.join(OPEN_CLIP_CONFIG));
    edit(&mut cfg);
    std::fs::write(dir.path().join(OPEN_CLIP_CONFIG), serde_json::to_string(&cfg).unwrap()).unwrap();
    std::fs::copy(src.join(OPEN_CLIP_WEIGHTS), dir.path().join(OPEN_CLIP_WEIGHTS)).unwrap();
    dir
}

#[test]
fn unsupported_options_are_refused_naming_them() {
    let device = Device::flex();
    for (tower, key, value) in [
        ("vision_cfg", "timm_model_name", serde_json::json!("vit_base_patch16_224")),
        (
            "text_cfg",
            "hf_model_name",
            serde_json::json!("microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract"),
        ),
        ("vision_cfg", "ls_init_value", serde_json::json!(1e-5)),
        ("vision_cfg", "attentional_pool", serde_json::json!(true)),
        ("text_cfg", "no_causal_mask", serde_json::json!(true)),
    ] {
        let dir = edited_fixture(|c| c["model_cfg"][tower][key] = value);
        let err = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
        assert!(err.contains(key) && err.contains(OPEN_CLIP_CONFIG), "{key}: {err}");
        let err = Encoder::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
        assert!(err.contains(key), "{key} (encoder): {err}");
    }
    let dir = edited_fixture(|c| c["model_cfg"]["init_logit_bias"] = serde_json::json!(-10.0));
    let err = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
    assert!(err.contains("init_logit_bias"), "{err}");
}

/// Rewrites the gelu fixture's weights without `drop` (and with `extra` added).
fn weights_without(drop: &str, extra: Option<&str>) -> tempfile::TempDir {
    let dir = edited_fixture(|_| {});
    let path = dir.path().join(OPEN_CLIP_WEIGHTS);
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<(String, safetensors::tensor::TensorView<'_>)> =
        st.tensors().into_iter().filter(|(n, _)| n != drop).collect();
    if let Some(name) = extra {
        let scale = st.tensor("logit_scale").unwrap();
        tensors.push((name.to_string(), scale));
    }
    let out = safetensors::serialize(tensors, None).unwrap();
    std::fs::write(&path, out).unwrap();
    dir
}

#[test]
fn a_missing_or_extra_weight_is_named() {
    let device = Device::flex();
    let dir = weights_without("visual.transformer.resblocks.1.attn.in_proj_weight", None);
    let err = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
    assert!(err.contains("visual.transformer.resblocks.1.attn.in_proj_weight"), "{err}");
    let dir = weights_without("text_projection", None);
    let err = Encoder::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
    assert!(err.contains("'text_projection'"), "{err}");
    let dir = weights_without("", Some("logit_bias"));
    let err = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap_err().to_string();
    assert!(err.contains("logit_bias"), "{err}");
}

/// The fixture tells the activations apart: the gelu weights read with `quick_gelu: true` miss
/// open_clip's features by far more than the tolerance.
#[test]
fn the_fixture_is_sensitive_to_quick_gelu() {
    let device = Device::flex();
    let dir = edited_fixture(|c| c["model_cfg"]["quick_gelu"] = serde_json::json!(true));
    let g = read_json(&fixtures().join("gelu/golden.json"));
    let (model, _) = ClipModel::load(dir.path().to_str().unwrap(), &device).unwrap();
    let img = model.image_features(tensor4(&g["images"], &device)).unwrap();
    let (want, _) = flat(&g["image_features"]);
    let got: Vec<f32> = img.into_data().try_to_vec::<f32>().unwrap();
    let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(max > 100.0 * TOL, "quick_gelu changed the features by only {max:e}");
}
