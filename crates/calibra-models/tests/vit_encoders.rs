//! Parity of the ViT / DeiT / DINOv2 encoders with Hugging Face transformers 5.24.0, and the
//! checkpoint-loading guarantees of issue #6.
//!
//! Fixtures and reference outputs come from `scripts/golden/encoders.py` (tiny random models,
//! float32, eager attention). Tolerance: 1e-4 absolute on every element (f32).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn::store::{IdentityAdapter, KeyRemapper, ModuleSnapshot, SafetensorsStore};
use calibra_models::encoder::{Encoder, EncoderModel};
use calibra_models::error::ModelError;

mod common;
use common::{assert_close_to, max_abs_diff, read_tensors};

const TOL: f32 = 1e-4;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join(rel)
}

struct Golden(HashMap<String, (Vec<usize>, Vec<f32>)>);

impl Golden {
    fn load(family: &str) -> Self {
        Self(read_tensors(&fixture(family).join("golden.safetensors")))
    }

    fn images(&self, name: &str, device: &Device) -> Tensor<4> {
        let (shape, values) = &self.0[name];
        let shape: [usize; 4] = shape.as_slice().try_into().unwrap();
        Tensor::from_data(TensorData::new(values.clone(), shape), device)
    }

    fn get(&self, name: &str) -> &(Vec<usize>, Vec<f32>) {
        self.0.get(name).unwrap_or_else(|| panic!("golden has no '{name}'"))
    }
}

fn assert_close<const D: usize>(what: &str, got: &Tensor<D>, expected: &(Vec<usize>, Vec<f32>)) {
    assert_close_to(what, got, expected, TOL);
}

/// Checks last hidden state, pooled output, block-2 output and (when present) the
/// other-resolution output against the golden file.
fn check_parity(dir: &Path, family: &str, expect_pooler: bool) {
    let device = Device::flex();
    let golden = Golden::load(family);
    let enc = Encoder::load_dir(dir, &device).unwrap_or_else(|e| panic!("{e}"));
    let out = enc.forward(golden.images("pixel_values", &device), true).unwrap();
    assert_close("last_hidden_state", &out.last_hidden_state, golden.get("last_hidden_state"));
    assert_close("hidden_states[2]", &out.hidden_states[2], golden.get("hidden_states.2"));
    assert_eq!(out.hidden_states.len(), enc.num_layers() + 1);
    if expect_pooler {
        let pooled = out.pooler_output.as_ref().expect("checkpoint has a pooler");
        assert_close("pooler_output", pooled, golden.get("pooler_output"));
    } else {
        assert!(out.pooler_output.is_none());
        assert_close("pooler_output (CLS)", &out.cls, golden.get("pooler_output"));
    }
    if golden.0.contains_key("pixel_values_interp") {
        let out_i = enc.forward(golden.images("pixel_values_interp", &device), false).unwrap();
        assert_close(
            "last_hidden_state at 42x36",
            &out_i.last_hidden_state,
            golden.get("last_hidden_state_interp"),
        );
    }
}

#[test]
fn vit_matches_transformers() {
    check_parity(&fixture("vit"), "vit", true);
}

#[test]
fn vit_loads_transformers_5_in_memory_names_with_task_prefix() {
    check_parity(&fixture("vit/v5"), "vit", true);
}

/// ViT-MAE (`ViTMAEModel`, scripts/golden/encoders_mae.py): whole images, as transformers with
/// `mask_ratio = 0` and the patches in image order; the feature is the CLS token (no pooler).
#[test]
fn vit_mae_matches_transformers_without_masking() {
    check_parity(&fixture("vit_mae"), "vit_mae", false);
}

/// A `ViTMAEForPreTraining` checkpoint (what `facebook/vit-mae-*` ship: the encoder under `vit.` plus
/// the pre-training decoder) loads the encoder alone, to the same numbers.
#[test]
fn vit_mae_pretraining_checkpoint_loads_its_encoder() {
    check_parity(&fixture("vit_mae/pretraining"), "vit_mae", false);
}

#[test]
fn deit_matches_transformers() {
    check_parity(&fixture("deit"), "deit", true);
}

#[test]
fn deit_loads_transformers_5_names() {
    check_parity(&fixture("deit/v5"), "deit", true);
}

#[test]
fn dinov2_matches_transformers() {
    check_parity(&fixture("dinov2"), "dinov2", false);
}

#[test]
fn dinov2_loads_transformers_5_names() {
    check_parity(&fixture("dinov2/v5"), "dinov2", false);
}

#[test]
fn dinov2_with_registers_matches_transformers_at_native_size() {
    check_parity(&fixture("dinov2/registers"), "dinov2/registers", false);
    check_parity(&fixture("dinov2/registers/v5"), "dinov2/registers", false);
}

#[test]
fn dinov2_with_registers_refuses_antialiased_interpolation() {
    let device = Device::flex();
    let enc = Encoder::load_dir(&fixture("dinov2/registers"), &device).unwrap();
    let err = enc.embed(Tensor::zeros([1, 3, 36, 36], &device)).unwrap_err().to_string();
    assert!(err.contains("antialias"), "{err}");
}

#[test]
fn embed_is_cls_and_depth_one_equals_embed() {
    let device = Device::flex();
    let golden = Golden::load("vit");
    let enc = Encoder::load_dir(&fixture("vit"), &device).unwrap();
    let images = golden.images("pixel_values", &device);
    let emb = enc.embed(images.clone()).unwrap();
    let depths = enc.embed_at_depths(images, &[0.34, 1.0]).unwrap();
    let emb_v = emb.to_data().try_to_vec::<f32>().unwrap();
    // Identity by construction: depth 1.0 is block L's output with the final LayerNorm, i.e. the
    // same computation as `embed`.
    assert_eq!(depths[1].to_data().try_to_vec::<f32>().unwrap(), emb_v);
    assert_eq!(emb.dims(), [2, 48]);
    assert_eq!(enc.layer_for_fraction(0.34), 1);
}

/// Rewrites `src` into `dst` with `edit` applied to the (name -> tensor) map.
fn rewrite_safetensors(src: &Path, dst: &Path, edit: impl FnOnce(&mut Vec<(String, Vec<usize>, Vec<f32>)>)) {
    let mut tensors: Vec<(String, Vec<usize>, Vec<f32>)> =
        read_tensors(src).into_iter().map(|(k, (s, v))| (k, s, v)).collect();
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    edit(&mut tensors);
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .into_iter()
        .map(|(k, s, v)| (k, s, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = bytes
        .iter()
        .map(|(k, s, b)| {
            (k.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b).unwrap())
        })
        .collect();
    safetensors::tensor::serialize_to_file(views, None, dst).unwrap();
}

fn copy_fixture(family: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(family).join("config.json"), tmp.path().join("config.json")).unwrap();
    tmp
}

#[test]
fn renamed_key_gives_readable_error_naming_both_sides() {
    let tmp = copy_fixture("vit");
    rewrite_safetensors(
        &fixture("vit").join("model.safetensors"),
        &tmp.path().join("model.safetensors"),
        |t| {
            for entry in t.iter_mut() {
                if entry.0 == "encoder.layer.1.attention.attention.key.weight" {
                    entry.0 = "encoder.layer.1.attention.attention.kee.weight".into();
                }
            }
        },
    );
    let err = Encoder::load_dir(tmp.path(), &Device::flex()).unwrap_err();
    assert!(matches!(err, ModelError::KeyMismatch { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("missing (1;"), "{msg}");
    assert!(msg.contains("blocks.1.attn.k_proj.base.weight"), "{msg}");
    assert!(msg.contains("expected file key 'encoder.layer.1.attention.attention.key.weight'"), "{msg}");
    assert!(msg.contains("unused (1;"), "{msg}");
    assert!(msg.contains("encoder.layer.1.attention.attention.kee.weight"), "{msg}");
    assert!(msg.contains("model.safetensors"), "{msg}");
}

#[test]
fn removed_key_is_reported_missing() {
    let tmp = copy_fixture("dinov2");
    rewrite_safetensors(
        &fixture("dinov2").join("model.safetensors"),
        &tmp.path().join("model.safetensors"),
        |t| {
            t.retain(|e| e.0 != "encoder.layer.2.layer_scale2.lambda1");
        },
    );
    let msg = Encoder::load_dir(tmp.path(), &Device::flex()).unwrap_err().to_string();
    assert!(msg.contains("blocks.2.layer_scale2.lambda1"), "{msg}");
    assert!(msg.contains("encoder.layer.2.layer_scale2.lambda1"), "{msg}");
}

#[test]
fn wrong_config_gives_mis_shaped_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = std::fs::read_to_string(fixture("vit").join("config.json")).unwrap();
    let cfg = cfg.replace("\"intermediate_size\": 80", "\"intermediate_size\": 96");
    assert!(cfg.contains("96"));
    std::fs::write(tmp.path().join("config.json"), cfg).unwrap();
    std::fs::copy(fixture("vit").join("model.safetensors"), tmp.path().join("model.safetensors")).unwrap();
    let msg = Encoder::load_dir(tmp.path(), &Device::flex()).unwrap_err().to_string();
    assert!(msg.contains("mis-shaped"), "{msg}");
    assert!(msg.contains("blocks.0.mlp.fc1.base.weight"), "{msg}");
    assert!(msg.contains("encoder.layer.0.intermediate.dense.weight"), "{msg}");
}

#[test]
fn unsupported_model_type_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.json"), r#"{"model_type": "swin"}"#).unwrap();
    let msg = Encoder::load_dir(tmp.path(), &Device::flex()).unwrap_err().to_string();
    assert!(msg.contains("swin") && msg.contains("config.json"), "{msg}");
}

/// burn 0.22 loads a square PyTorch Linear weight without the adapter silently (no shape
/// error): this test overlays block 0's q_proj weight untransposed, shows that the load
/// succeeds, and that the parity check then fails. It guards the parity test itself: if the
/// adapter were dropped, the parity tests above would catch it.
#[test]
fn square_weight_loaded_without_adapter_is_caught_by_parity() {
    let device = Device::flex();
    let golden = Golden::load("vit");
    let mut enc = Encoder::load_dir(&fixture("vit"), &device).unwrap();
    let images = golden.images("pixel_values", &device);
    let before = enc.forward(images.clone(), false).unwrap().last_hidden_state;
    assert!(max_abs_diff(&before, golden.get("last_hidden_state")) <= TOL);

    let vit = match &mut enc.model {
        EncoderModel::Vit(v) => v,
        _ => unreachable!("vit fixture"),
    };
    let remap = KeyRemapper::new()
        .add_pattern(
            r"^encoder\.layer\.0\.attention\.attention\.query\.weight$",
            "blocks.0.attn.q_proj.base.weight",
        )
        .unwrap();
    let mut store = SafetensorsStore::from_file(fixture("vit").join("model.safetensors"))
        .remap(remap)
        .with_regex(r"^blocks\.0\.attn\.q_proj\.base\.weight$")
        .with_from_adapter(IdentityAdapter)
        .allow_partial(true);
    let result = vit.load_from(&mut store).expect("burn accepts the square weight without complaint");
    assert_eq!(result.applied, vec!["blocks.0.attn.q_proj.base.weight".to_string()]);
    assert!(result.errors.is_empty());

    let after = enc.forward(images, false).unwrap().last_hidden_state;
    let diff = max_abs_diff(&after, golden.get("last_hidden_state"));
    eprintln!("untransposed q_proj: max |Δ| = {diff:e}");
    assert!(diff > 100.0 * TOL, "untransposed q_proj must break parity, max |Δ| = {diff:e}");
}

#[test]
fn save_pretrained_round_trips_in_hf_layout() {
    let device = Device::flex();
    let enc = Encoder::load_dir(&fixture("dinov2"), &device).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    enc.save_pretrained(tmp.path()).unwrap();
    let original = read_tensors(&fixture("dinov2").join("model.safetensors"));
    let saved = read_tensors(&tmp.path().join("model.safetensors"));
    let mut expected_keys: Vec<&String> = original.keys().filter(|k| *k != "embeddings.mask_token").collect();
    let mut saved_keys: Vec<&String> = saved.keys().collect();
    expected_keys.sort();
    saved_keys.sort();
    assert_eq!(saved_keys, expected_keys);
    for (k, v) in &saved {
        assert_eq!(v, &original[k], "{k} differs after save");
    }
    // And the saved directory loads back to the same outputs.
    check_parity(tmp.path(), "dinov2", false);

    let vit = Encoder::load_dir(&fixture("vit/v5"), &device).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    vit.save_pretrained(tmp.path()).unwrap();
    let saved = read_tensors(&tmp.path().join("model.safetensors"));
    let original = read_tensors(&fixture("vit").join("model.safetensors"));
    // 5.x names in, 4.x (`save_pretrained`) names out, identical values.
    assert_eq!(saved, original);
}
