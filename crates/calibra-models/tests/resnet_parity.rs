//! ResNets (issue #17 item 5, the ResNet part): transformers `ResNetModel` /
//! `ResNetForImageClassification` and timm `resnet18` / `resnet50` checkpoints, loaded as frozen
//! encoders, against transformers 5.24 and timm 1.0.31.
//!
//! Fixtures and reference outputs come from `scripts/golden/encoders_resnet.py` (tiny random models
//! with random BatchNorm running statistics, float32, re-created by their library from the fixture
//! directory). Tolerance: 1e-4 absolute per element.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::encoder::{Encoder, EncoderModel};
use calibra_models::error::ModelError;

mod common;
use common::{copy_with_config, load_err, max_abs_diff, read_tensors};

const TOL: f32 = 1e-4;
const VARIANTS: &[&str] =
    &["hf_bottleneck", "hf_basic", "hf_cls_ds_bottleneck", "timm_resnet50", "timm_resnet18"];

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/resnet").join(rel)
}

type Golden = HashMap<String, (Vec<usize>, Vec<f32>)>;

fn images(g: &Golden, device: &Device) -> Tensor<4> {
    named_images(g, "pixel_values", device)
}

fn named_images(g: &Golden, name: &str, device: &Device) -> Tensor<4> {
    let (shape, values) = &g[name];
    let shape: [usize; 4] = shape.as_slice().try_into().unwrap();
    Tensor::from_data(TensorData::new(values.clone(), shape), device)
}

fn resnet(encoder: &Encoder) -> &calibra_models::resnet::ResNet {
    match &encoder.model {
        EncoderModel::ResNet(m) => m,
        _ => panic!("not loaded as a ResNet"),
    }
}

/// `embed` / `classification_feature` equal `pooler_output` (timm: the pre-logits feature), the last
/// stage's map equals `last_hidden_state` (timm `forward_features`), every hidden state pooled equals
/// the reference's, and the depth fractions pick the stage outputs, for every variant.
#[test]
fn resnet_features_match_reference() {
    let device = Device::flex();
    let mut worst = 0.0f32;
    for variant in VARIANTS {
        let dir = fixture(variant);
        let encoder = Encoder::load_dir(&dir, &device).unwrap_or_else(|e| panic!("{variant}: {e}"));
        let g = read_tensors(&dir.join("golden.safetensors"));
        let x = images(&g, &device);
        let features = encoder.embed(x.clone()).unwrap();
        let d_pool = max_abs_diff(&features, &g["pooler"]);
        let d_cls = max_abs_diff(&encoder.classification_feature(x.clone()).unwrap(), &g["pooler"]);
        assert_eq!(encoder.classification_dim(), g["pooler"].0[1], "{variant}");
        let maps = resnet(&encoder).forward_maps(x.clone(), true).unwrap();
        let d_last = max_abs_diff(&maps.last, &g["last"]);
        let hidden = encoder.hidden_states(x.clone()).unwrap();
        assert_eq!(hidden.len(), 5, "{variant}");
        assert_eq!(encoder.num_layers(), 4, "{variant}");
        let mut d_hidden = 0.0f32;
        for (k, h) in hidden.into_iter().enumerate() {
            let [b, _, c] = h.dims();
            d_hidden = d_hidden.max(max_abs_diff(&h.mean_dim(1).reshape([b, c]), &g[&format!("hidden{k}")]));
        }
        let depths = encoder.embed_at_depths(x.clone(), &[0.25, 0.5, 0.75, 1.0]).unwrap();
        let mut d_depth = 0.0f32;
        for (k, f) in depths.iter().enumerate() {
            d_depth = d_depth.max(max_abs_diff(f, &g[&format!("hidden{}", k + 1)]));
        }
        // last_hidden_state is the last map as [b, h·w, C].
        let last_tokens = encoder.forward(x, false).unwrap().last_hidden_state;
        let [b, c, h, w] = maps.last.dims();
        let d_tokens = (last_tokens - maps.last.reshape([b, c, h * w]).swap_dims(1, 2))
            .abs()
            .max()
            .into_data()
            .as_slice::<f32>()
            .unwrap()[0];
        println!(
            "{variant}: pooler {d_pool:.2e}, classification_feature {d_cls:.2e}, last map {d_last:.2e}, \
             hidden states {d_hidden:.2e}, depths {d_depth:.2e}"
        );
        for (what, d) in
            [("pooler", d_pool), ("cls", d_cls), ("last", d_last), ("hidden", d_hidden), ("depth", d_depth)]
        {
            assert!(d < TOL, "{variant}: {what} max |diff| {d}");
            worst = worst.max(d);
        }
        assert_eq!(d_tokens, 0.0, "{variant}");
    }
    println!("worst max |diff| over every variant and output: {worst:.2e}");
}

/// On the autodiff device with the training flag set (full fine-tuning), BatchNorm normalises with
/// the batch's statistics, as torch's `model.train()` does; a frozen copy (`freeze`, as the `head`
/// regime makes it) runs on the running ones.
#[test]
fn resnet_training_mode_uses_batch_statistics() {
    let autodiff = Device::flex().autodiff();
    for variant in VARIANTS {
        let dir = fixture(variant);
        let g = read_tensors(&dir.join("golden.safetensors"));
        let encoder = Encoder::load_dir(&dir, &autodiff).unwrap();
        let x = named_images(&g, "pixel_values_train", &autodiff);
        let train = encoder.embed(x.clone()).unwrap();
        let d_train = max_abs_diff(&train, &g["pooler_train"]);
        println!("{variant}: train-mode pooler {d_train:.2e}");
        assert!(d_train < TOL, "{variant}: train-mode pooler max |diff| {d_train}");
        let frozen = encoder.clone().freeze();
        let eval = frozen.embed(x.clone()).unwrap();
        let apart = (eval - train).abs().max().into_data().as_slice::<f32>().unwrap()[0];
        assert!(apart > 1e-2, "{variant}: train mode must differ from eval ({apart})");
        let x = images(&g, &autodiff);
        let d_frozen = max_abs_diff(&frozen.embed(x).unwrap(), &g["pooler"]);
        assert!(d_frozen < TOL, "{variant}: frozen (eval) pooler max |diff| {d_frozen}");
    }
}

fn tensors_of(path: &Path) -> BTreeMap<String, (safetensors::Dtype, Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensors().into_iter().map(|(n, v)| (n, (v.dtype(), v.shape().to_vec(), v.data().to_vec()))).collect()
}

/// `save_pretrained` writes the loaded tensors back under their own names, byte for byte (BatchNorm
/// running statistics and `num_batches_tracked` included; the classifier and the `resnet.` prefix of a
/// `ResNetForImageClassification` are dropped), and the saved directory reloads to the same features.
#[test]
fn resnet_save_pretrained_round_trips() {
    let device = Device::flex();
    for variant in VARIANTS {
        let dir = fixture(variant);
        let encoder = Encoder::load_dir(&dir, &device).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        encoder.save_pretrained(tmp.path()).unwrap();
        let original: BTreeMap<_, _> = tensors_of(&dir.join("model.safetensors"))
            .into_iter()
            .filter(|(n, _)| !n.starts_with("classifier.") && !n.starts_with("fc."))
            .map(|(n, t)| (n.strip_prefix("resnet.").map(str::to_string).unwrap_or(n), t))
            .collect();
        let saved = tensors_of(&tmp.path().join("model.safetensors"));
        assert_eq!(saved.keys().collect::<Vec<_>>(), original.keys().collect::<Vec<_>>(), "{variant}");
        for (name, t) in &original {
            assert!(saved[name] == *t, "{variant}: tensor {name} differs after the round trip");
        }
        let reloaded = Encoder::load_dir(tmp.path(), &device).unwrap();
        let g = read_tensors(&dir.join("golden.safetensors"));
        let x = images(&g, &device);
        let d = max_abs_diff(&reloaded.embed(x).unwrap(), &g["pooler"]);
        assert!(d < TOL, "{variant}: reloaded pooler max |diff| {d}");
    }
}

/// Options calibra does not implement are refused by name, in both layouts, never loaded
/// approximately; a config that does not match the weights names the tensors.
#[test]
fn resnet_unsupported_options_are_refused_by_name() {
    for (key, value, words) in [
        ("layer_type", serde_json::json!("preactivation"), "only 'basic' and 'bottleneck'"),
        ("hidden_act", serde_json::json!("gelu"), "only 'relu'"),
    ] {
        let tmp = copy_with_config(&fixture("hf_bottleneck"), |c| c[key] = value.clone());
        let err = load_err(tmp.path());
        assert!(err.contains(key) && err.contains(words) && err.contains("config.json"), "{key}: {err}");
    }
    for (key, value, words) in [
        ("stem_type", serde_json::json!("deep"), "7x7"),
        ("avg_down", serde_json::json!(true), "1x1 projection"),
        ("aa_layer", serde_json::json!("blurpool"), "plain ResNet block"),
        ("global_pool", serde_json::json!("avgmax"), "'avg'"),
        ("output_stride", serde_json::json!(16), "dilated"),
        ("cardinality", serde_json::json!(32), "ResNeXt"),
        ("use_frobnication", serde_json::json!(true), "does not implement this option"),
    ] {
        let tmp = copy_with_config(&fixture("timm_resnet50"), |c| c["model_args"][key] = value.clone());
        let err = load_err(tmp.path());
        assert!(err.contains(&format!("option '{key}'")) && err.contains(words), "{key}: {err}");
    }
    let tmp = copy_with_config(&fixture("timm_resnet50"), |c| c["architecture"] = "resnet50d".into());
    let err = load_err(tmp.path());
    assert!(err.contains("timm architecture 'resnet50d'") && err.contains("resnet152"), "{err}");
    // A bottleneck config on basic-block weights: the missing third convolutions are named.
    let tmp = copy_with_config(&fixture("hf_basic"), |c| c["layer_type"] = "bottleneck".into());
    let err = load_err(tmp.path());
    assert!(err.contains("encoder.stages.0.layers.0.layer.2.convolution.weight"), "{err}");
    // More weights than the file holds: refused before anything is allocated.
    let tmp = copy_with_config(&fixture("hf_bottleneck"), |c| c["layer_type"] = "basic".into());
    let err = load_err(tmp.path());
    assert!(err.contains("describes a model of at least"), "{err}");
}

/// Wrong inputs are errors; LoRA on a ResNet is refused with what to use instead.
#[test]
fn resnet_bad_inputs_and_lora_are_refused() {
    let device = Device::flex();
    let encoder = Encoder::load_dir(&fixture("hf_bottleneck"), &device).unwrap();
    let err = encoder.embed(Tensor::zeros([1, 1, 32, 32], &device)).unwrap_err();
    assert!(matches!(err, ModelError::Input(_)) && err.to_string().contains("channels"), "{err}");
    // Any size works (every convolution pads kernel / 2): 1x1 and an odd size.
    assert_eq!(encoder.embed(Tensor::zeros([1, 3, 1, 1], &device)).unwrap().dims(), [1, 32]);
    assert_eq!(encoder.embed(Tensor::zeros([2, 3, 37, 23], &device)).unwrap().dims(), [2, 32]);
    for variant in ["hf_bottleneck", "timm_resnet50"] {
        let mut target = Encoder::load_dir(&fixture(variant), &device).unwrap();
        let lora: calibra_models::lora::LoraConfig =
            serde_json::from_str(r#"{"r": 2, "target_modules": ["convolution"]}"#).unwrap();
        let err = calibra_models::lora::apply_lora(&mut target, &lora, 0).unwrap_err().to_string();
        assert!(err.contains("LoRA on a ResNet is not implemented"), "{variant}: {err}");
        assert!(err.contains("`full`"), "{variant}: {err}");
    }
}
