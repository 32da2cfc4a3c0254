//! A multimodal checkpoint's vision tower (MedGemma's layout: `Gemma3ForConditionalGeneration` with a
//! head-less SigLIP tower) extracted by `calibra_models::hf::vision_tower::extract_vision_tower`,
//! against transformers 5.24 on the tiny random model of scripts/golden/encoders_vision_towers.py
//! (tests/fixtures/vision_towers/): transformers 5's sharded save (`vision_tower.…`) and transformers 4.x's
//! single file (`vision_tower.vision_model.…`, the MedGemma release). The tower's
//! `last_hidden_state` and the encoder's feature (its token mean) within 1e-4 absolute.

use std::path::PathBuf;

use burn::prelude::*;
use calibra_models::hf::vision_tower::{PreprocessorNote, extract_vision_tower};
use calibra_models::{Encoder, EncoderModel};
use serde_json::Value;

mod common;
use common::{assert_within, flat};

const TOL: f32 = 1e-4;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vision_towers")
}

fn max_diff<const D: usize>(name: &str, got: Tensor<D>, want: &Value) {
    assert_within(name, got, want, TOL);
}

fn check(layout: &str, prefix: &str, files_read: usize) {
    let g: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("gemma3_golden.json")).unwrap())
            .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("tower");
    let done = extract_vision_tower(&fixtures().join(layout), &out, false).unwrap();
    assert_eq!(done.source_model_type, "gemma3");
    assert_eq!(done.tower_model_type, "siglip_vision_model");
    assert_eq!(done.prefix, prefix);
    assert_eq!(done.files_read, files_read, "{layout}: only the shards holding the tower are read");
    assert_eq!(done.preprocessor, PreprocessorNote::Copied);
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config, g["vision_config"]);

    let device = Device::flex();
    let encoder = Encoder::load_dir(&out, &device).unwrap();
    let EncoderModel::SiglipVision(tower) = &encoder.model else { panic!("not a SigLIP tower") };
    let (images, shape) = flat(&g["images"]);
    let images =
        Tensor::from_data(TensorData::new(images, [shape[0], shape[1], shape[2], shape[3]]), &device);
    let last = tower.forward(images.clone()).unwrap().last_hidden_state;
    max_diff(&format!("{layout} last_hidden_state"), last, &g["last_hidden_state"]);
    max_diff(&format!("{layout} encoder feature"), encoder.embed(images).unwrap(), &g["mean_tokens"]);
}

#[test]
fn the_tower_of_a_sharded_transformers_5_save_matches_transformers() {
    // 6 shards; the tower's tensors sit in some of them.
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("gemma3-sharded/model.safetensors.index.json")).unwrap(),
    )
    .unwrap();
    let map = index["weight_map"].as_object().unwrap();
    let mut tower_shards: Vec<&str> = map
        .iter()
        .filter(|(k, _)| k.starts_with("vision_tower."))
        .map(|(_, v)| v.as_str().unwrap())
        .collect();
    tower_shards.sort();
    tower_shards.dedup();
    check("gemma3-sharded", "vision_tower.", tower_shards.len());
}

#[test]
fn the_tower_of_a_transformers_4_single_file_matches_transformers() {
    check("gemma3-legacy", "vision_tower.vision_model.", 1);
}

#[test]
fn what_is_not_a_multimodal_checkpoint_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let vit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vit");
    let e = extract_vision_tower(&vit, &tmp.path().join("a"), false).unwrap_err().to_string();
    assert!(e.contains("vision_config"), "{e}");

    // A multimodal config whose tower calibra does not load.
    let odd = tmp.path().join("odd");
    std::fs::create_dir(&odd).unwrap();
    std::fs::write(
        odd.join("config.json"),
        r#"{"model_type": "idefics3", "vision_config": {"model_type": "idefics3_vision"}}"#,
    )
    .unwrap();
    let e = extract_vision_tower(&odd, &tmp.path().join("b"), false).unwrap_err().to_string();
    assert!(e.contains("idefics3_vision") && e.contains("siglip_vision_model"), "{e}");

    // No weights at all.
    std::fs::write(
        odd.join("config.json"),
        r#"{"model_type": "gemma3", "vision_config": {"model_type": "siglip_vision_model"}}"#,
    )
    .unwrap();
    let e = extract_vision_tower(&odd, &tmp.path().join("c"), false).unwrap_err().to_string();
    assert!(e.contains("model.safetensors.index.json"), "{e}");
    for name in ["a", "b", "c"] {
        assert!(!tmp.path().join(name).exists());
    }
}

#[test]
fn loading_the_multimodal_directory_directly_says_how_to_extract() {
    let e = Encoder::load_dir(&fixtures().join("gemma3-legacy"), &Device::flex()).err().unwrap().to_string();
    assert!(e.contains("gemma3") && e.contains("calibra convert vision-tower"), "{e}");
}

#[test]
fn the_clip_tower_of_transformers_llava_matches_transformers() {
    let g: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("gemma3_golden.json")).unwrap())
            .unwrap();
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("llava_golden.json")).unwrap())
            .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("tower");
    let done = extract_vision_tower(&fixtures().join("llava"), &out, false).unwrap();
    assert_eq!(
        (done.source_model_type.as_str(), done.tower_model_type.as_str()),
        ("llava", "clip_vision_model")
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config, want["vision_config"]);

    let device = Device::flex();
    let encoder = Encoder::load_dir(&out, &device).unwrap();
    let EncoderModel::ClipVision(tower) = &encoder.model else { panic!("not a CLIP vision tower") };
    let (images, shape) = flat(&g["images"]);
    let images =
        Tensor::from_data(TensorData::new(images, [shape[0], shape[1], shape[2], shape[3]]), &device);
    let full = tower.forward_full(images.clone(), false).unwrap();
    max_diff("llava last_hidden_state", full.last_hidden_state, &want["last_hidden_state"]);
    max_diff("llava encoder feature", encoder.embed(images).unwrap(), &want["pooler_output"]);
}

/// With the projector (MedGemma's vision stack up to its decoder's input, what CRS-Bench probes):
/// the feature is the mean of the projected tokens, within 1e-4 of transformers'
/// `get_image_features(pixel_values).pooler_output` averaged over tokens, from both layouts; a
/// LLaVA checkpoint is refused (only Gemma 3's projector is implemented), and so is fine-tuning the
/// projected stack.
#[test]
fn medgemmas_projector_gives_transformers_projected_image_features() {
    let g: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("gemma3_golden.json")).unwrap())
            .unwrap();
    let device = Device::flex();
    let (images, shape) = flat(&g["images"]);
    let images =
        Tensor::from_data(TensorData::new(images, [shape[0], shape[1], shape[2], shape[3]]), &device);
    for layout in ["gemma3-sharded", "gemma3-legacy"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("stack");
        let done = extract_vision_tower(&fixtures().join(layout), &out, true).unwrap();
        let projector = done.projector.expect("the projector is kept");
        assert_eq!((projector.mm_tokens_per_image, projector.text_hidden_size), (4, 16));
        let encoder = Encoder::load_dir(&out, &device).unwrap();
        let EncoderModel::SiglipVision(tower) = &encoder.model else { panic!("not a SigLIP tower") };
        let projector = tower.projector.as_ref().expect("the projector is loaded");
        let last = tower.last_hidden_state(images.clone()).unwrap();
        max_diff(&format!("{layout} projected tokens"), projector.forward(last), &g["projected"]);
        max_diff(
            &format!("{layout} projected feature"),
            encoder.embed(images.clone()).unwrap(),
            &g["projected_mean"],
        );
        let e = encoder.classification_feature(images.clone()).unwrap_err().to_string();
        assert!(e.contains("without --projector"), "{e}");
        // Another input size would change the patch grid the projector pools.
        let small = Tensor::zeros([1, 3, 8, 8], &device);
        let e = encoder.embed(small).unwrap_err().to_string();
        assert!(e.contains("native 4x4 grid"), "{e}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let e =
        extract_vision_tower(&fixtures().join("llava"), &tmp.path().join("x"), true).unwrap_err().to_string();
    assert!(e.contains("only Gemma 3's multi_modal_projector"), "{e}");
    assert!(!tmp.path().join("x").exists());
}
