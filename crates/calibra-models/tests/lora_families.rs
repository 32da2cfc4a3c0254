//! LoRA on every family calibra loads, both ways against peft 0.21.2 on transformers 5.24.0
//! (fixtures: scripts/golden/lora_peft_families.py → tests/fixtures/lora_families/).
//!
//! - peft → calibra: a peft-made adapter (random non-zero factors; rsLoRA, rank/alpha patterns,
//!   exclusions, regex targets and `layers_to_transform` among them) loads here and gives peft's
//!   outputs within 1e-4, and calibra's own walk of the config picks exactly the modules peft wrapped.
//! - calibra → peft: the adapter calibra extracts from the loaded model and writes has peft's tensor
//!   names, bytes and config, so `PeftModel.from_pretrained` loads it (checked once with peft by
//!   `lora_peft_families.py --check-rust DIR`; set `CALIBRA_LORA_WRITE_DIR=DIR` to keep the written
//!   adapters; result in tests/fixtures/lora_families/rust_written_check.json).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::Encoder;
use calibra_models::clip::ClipModel;
use calibra_models::lora::peft::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, PeftAdapter};
use calibra_models::lora::{LoraConfig, LoraModel, apply_lora, extract_adapter, load_adapter};
use safetensors::SafeTensors;

const TOL: f32 = 1e-4;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lora_families")
}

struct Golden(Vec<u8>);

impl Golden {
    fn read(family: &str) -> Self {
        Golden(std::fs::read(fixtures().join(family).join("golden.safetensors")).unwrap())
    }

    fn f32(&self, name: &str) -> (Vec<usize>, Vec<f32>) {
        let file = SafeTensors::deserialize(&self.0).unwrap();
        let t = file.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let v = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        (t.shape().to_vec(), v)
    }

    fn ids(&self, name: &str) -> Vec<Vec<u32>> {
        let file = SafeTensors::deserialize(&self.0).unwrap();
        let t = file.tensor(name).unwrap();
        let cols = t.shape()[1];
        let v: Vec<u32> =
            t.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as u32).collect();
        v.chunks(cols).map(|r| r.to_vec()).collect()
    }

    fn images(&self, device: &Device) -> Tensor<4> {
        let (s, data) = self.f32("pixel_values");
        Tensor::from_data(TensorData::new(data, [s[0], s[1], s[2], s[3]]), device)
    }

    /// Max |got − golden[name]|, shapes checked.
    fn diff<const D: usize>(&self, name: &str, got: Tensor<D>) -> f32 {
        let (shape, want) = self.f32(name);
        assert_eq!(got.dims().to_vec(), shape, "{name}: shape");
        let got = got.into_data().try_to_vec::<f32>().unwrap();
        got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
    }
}

fn check_encoder(encoder: &Encoder, golden: &Golden, prefix: &str, device: &Device) {
    let out = encoder.forward(golden.images(device), false).unwrap();
    let d = golden.diff(&format!("{prefix}last_hidden_state"), out.last_hidden_state);
    eprintln!("{prefix}last_hidden_state: max |diff| {d:e}");
    assert!(d < TOL, "{prefix}last_hidden_state: max |diff| {d:e}");
    let d = golden.diff(&format!("{prefix}pooled"), out.cls);
    eprintln!("{prefix}pooled: max |diff| {d:e}");
    assert!(d < TOL, "{prefix}pooled: max |diff| {d:e}");
}

/// The module names peft wrapped (`wrapped.json`, from peft's own model), for `key` if given.
fn peft_wrapped(family: &str, key: Option<&str>) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join(family).join("wrapped.json")).unwrap())
            .unwrap();
    let v = match key {
        Some(k) => v[k].clone(),
        None => v,
    };
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// calibra's PEFT rules choose, on its own walk of the model, exactly the modules peft wrapped.
fn check_selection<M: LoraModel>(model: &M, config: &LoraConfig, want: &[String]) {
    let mut fresh = model.clone();
    let mut got = apply_lora(&mut fresh, config, 0).unwrap();
    got.sort();
    assert_eq!(got, want, "modules wrapped by calibra vs peft");
}

/// calibra → peft: extract, write, and compare with peft's own files byte for byte.
fn check_written<M: LoraModel>(model: &M, adapter: &PeftAdapter, name: &str) {
    let back = extract_adapter(model, &adapter.config, adapter.saved.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = match std::env::var_os("CALIBRA_LORA_WRITE_DIR") {
        Some(d) => PathBuf::from(d).join(name),
        None => dir.path().to_path_buf(),
    };
    back.write(&out).unwrap();
    let theirs_dir = fixtures().join(name);
    let (ours, theirs) = (
        std::fs::read(out.join(ADAPTER_WEIGHTS)).unwrap(),
        std::fs::read(theirs_dir.join(ADAPTER_WEIGHTS)).unwrap(),
    );
    let (ours, theirs) =
        (SafeTensors::deserialize(&ours).unwrap(), SafeTensors::deserialize(&theirs).unwrap());
    let (mut on, mut tn) = (ours.names(), theirs.names());
    on.sort_unstable();
    tn.sort_unstable();
    assert_eq!(on, tn, "{name}: tensor names");
    for n in tn {
        let (o, t) = (ours.tensor(n).unwrap(), theirs.tensor(n).unwrap());
        assert_eq!((o.dtype(), o.shape(), o.data()), (t.dtype(), t.shape(), t.data()), "{name}: {n}");
    }
    let json = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p.join(ADAPTER_CONFIG)).unwrap()).unwrap()
    };
    let (mut ours, theirs) = (json(&out), json(&theirs_dir));
    // Numbers are written as floats here (`8.0`); PEFT wrote ints (`8`): the same value for PEFT.
    assert_eq!(ours["lora_alpha"].as_f64(), theirs["lora_alpha"].as_f64(), "{name}: lora_alpha");
    ours["lora_alpha"] = theirs["lora_alpha"].clone();
    for (k, v) in theirs["alpha_pattern"].as_object().unwrap() {
        assert_eq!(ours["alpha_pattern"][k].as_f64(), v.as_f64(), "{name}: alpha_pattern.{k}");
        ours["alpha_pattern"][k] = v.clone();
    }
    assert_eq!(ours, theirs, "{name}: adapter_config.json");
    assert_eq!(PeftAdapter::read(&out).unwrap(), back);
}

#[test]
fn dinov2_with_registers_peft_adapter_both_ways() {
    let device = Device::flex();
    let golden = Golden::read("dinov2_registers");
    let base = Encoder::load_dir(&fixtures().join("dinov2_registers/base"), &device).unwrap();
    check_encoder(&base, &golden, "base_", &device);

    let adapter = PeftAdapter::read(&fixtures().join("dinov2_registers/adapter")).unwrap();
    assert!(adapter.config.use_rslora);
    check_selection(&base, &adapter.config, &peft_wrapped("dinov2_registers", None));
    let mut encoder = base.clone();
    let loaded = load_adapter(&mut encoder, &adapter, &device).unwrap();
    assert_eq!(loaded.len(), 11, "12 projections less the excluded layer.0.mlp.fc1");
    check_encoder(&encoder, &golden, "adapted_", &device);
    check_written(&encoder, &adapter, "dinov2_registers/adapter");

    // The same factors as PEFT names them on the standalone Dinov2WithRegistersModel.
    let standalone = PeftAdapter::read(&fixtures().join("dinov2_registers/adapter_standalone")).unwrap();
    assert!(standalone.factors.keys().all(|k| k.starts_with("encoder.layer.")));
    let mut encoder = base.clone();
    load_adapter(&mut encoder, &standalone, &device).unwrap();
    check_encoder(&encoder, &golden, "adapted_", &device);
    // Written back, the names are the classification model's.
    let back = extract_adapter(&encoder, &standalone.config, BTreeMap::new()).unwrap();
    assert_eq!(back.factors.keys().collect::<Vec<_>>(), adapter.factors.keys().collect::<Vec<_>>());
}

#[test]
fn clip_vision_peft_adapter_with_a_regex_target_both_ways() {
    let device = Device::flex();
    let golden = Golden::read("clip");
    let base = Encoder::load_dir(&fixtures().join("clip/base"), &device).unwrap();
    check_encoder(&base, &golden, "base_vision_", &device);

    let adapter = PeftAdapter::read(&fixtures().join("clip/adapter_vision")).unwrap();
    check_selection(&base, &adapter.config, &peft_wrapped("clip", Some("adapter_vision")));
    let mut encoder = base.clone();
    assert_eq!(load_adapter(&mut encoder, &adapter, &device).unwrap().len(), 6);
    check_encoder(&encoder, &golden, "vision_adapted_vision_", &device);
    check_written(&encoder, &adapter, "clip/adapter_vision");
}

#[test]
fn clip_text_and_vision_peft_adapter_with_layers_to_transform_both_ways() {
    let device = Device::flex();
    let golden = Golden::read("clip");
    let spec = fixtures().join("clip/base");
    let (base, _) = ClipModel::load(spec.to_str().unwrap(), &device).unwrap();
    let ids = golden.ids("input_ids");
    let check = |model: &ClipModel, prefix: &str| {
        let vision = model.vision_model.forward_full(golden.images(&device), false).unwrap();
        let text = model.text_model.forward_ids(&ids, &device, false).unwrap();
        for (name, d) in [
            (
                "vision_last_hidden_state",
                golden.diff(&format!("{prefix}vision_last_hidden_state"), vision.last_hidden_state),
            ),
            ("vision_pooled", golden.diff(&format!("{prefix}vision_pooled"), vision.pooled)),
            (
                "text_last_hidden_state",
                golden.diff(&format!("{prefix}text_last_hidden_state"), text.last_hidden_state),
            ),
            ("text_pooled", golden.diff(&format!("{prefix}text_pooled"), text.pooled)),
        ] {
            eprintln!("{prefix}{name}: max |diff| {d:e}");
            assert!(d < TOL, "{prefix}{name}: max |diff| {d:e}");
        }
    };
    check(&base, "base_");

    let adapter = PeftAdapter::read(&fixtures().join("clip/adapter_joint")).unwrap();
    assert!(adapter.config.use_rslora && adapter.config.layers_to_transform.is_some());
    check_selection(&base, &adapter.config, &peft_wrapped("clip", Some("adapter_joint")));
    let mut model = base.clone();
    assert_eq!(load_adapter(&mut model, &adapter, &device).unwrap().len(), 6);
    check(&model, "joint_adapted_");
    check_written(&model, &adapter, "clip/adapter_joint");
}

#[test]
fn siglip_vision_peft_adapter_reaching_the_pooling_head_mlp_both_ways() {
    let device = Device::flex();
    let golden = Golden::read("siglip");
    let base = Encoder::load_dir(&fixtures().join("siglip/base"), &device).unwrap();
    check_encoder(&base, &golden, "base_", &device);

    let adapter = PeftAdapter::read(&fixtures().join("siglip/adapter")).unwrap();
    let wrapped = peft_wrapped("siglip", None);
    assert!(wrapped.iter().any(|n| n == "vision_model.head.mlp.fc1"));
    check_selection(&base, &adapter.config, &wrapped);
    let mut encoder = base.clone();
    assert_eq!(load_adapter(&mut encoder, &adapter, &device).unwrap().len(), 10);
    check_encoder(&encoder, &golden, "adapted_", &device);
    check_written(&encoder, &adapter, "siglip/adapter");

    let standalone = PeftAdapter::read(&fixtures().join("siglip/adapter_standalone")).unwrap();
    assert!(standalone.factors.contains_key("head.mlp.fc2"));
    let mut encoder = base.clone();
    load_adapter(&mut encoder, &standalone, &device).unwrap();
    check_encoder(&encoder, &golden, "adapted_", &device);
}

#[test]
fn targets_reaching_the_siglip_head_attention_are_refused_with_the_working_targets() {
    let device = Device::flex();
    let base = Encoder::load_dir(&fixtures().join("siglip/base"), &device).unwrap();
    let config = |targets: &str| -> LoraConfig {
        serde_json::from_str(&format!(r#"{{"r": 2, "target_modules": {targets}}}"#)).unwrap()
    };
    // `out_proj` also names the out_proj inside the pooling head's nn.MultiheadAttention, which peft
    // wraps but never runs (tests/fixtures/lora_families/multihead_attention.json).
    let err = apply_lora(&mut base.clone(), &config(r#"["out_proj"]"#), 0).unwrap_err().to_string();
    assert!(err.contains("vision_model.head.attention.out_proj"), "{err}");
    assert!(err.contains("never calls its forward"), "{err}");
    assert!(err.contains("q_proj, k_proj, v_proj, out_proj, fc1, fc2"), "{err}");
    let err = apply_lora(&mut base.clone(), &config(r#"["attention"]"#), 0).unwrap_err().to_string();
    assert!(err.contains("`vision_model.head.attention`: SigLIP's pooling-head attention"), "{err}");
    // What works: the blocks' own out_proj, or out_proj with the head's excluded.
    let wrapped = apply_lora(&mut base.clone(), &config(r#"["self_attn.out_proj"]"#), 0).unwrap();
    assert_eq!(wrapped.len(), 2);
    let mut c = config(r#"["out_proj"]"#);
    c.exclude_modules =
        Some(calibra_models::lora::TargetModules::Names(vec!["head.attention.out_proj".into()]));
    assert_eq!(apply_lora(&mut base.clone(), &c, 0).unwrap().len(), 2);
    // A container is not a Linear: refused as peft refuses it.
    let err = apply_lora(&mut base.clone(), &config(r#"["mlp"]"#), 0).unwrap_err().to_string();
    assert!(err.contains("not a Linear"), "{err}");
}

#[test]
fn clip_projections_are_refused_and_adapters_for_the_other_tower_are_listed() {
    let device = Device::flex();
    let spec = fixtures().join("clip/base");
    let (mut model, _) = ClipModel::load(spec.to_str().unwrap(), &device).unwrap();
    let config: LoraConfig =
        serde_json::from_str(r#"{"target_modules": ["visual_projection", "q_proj"]}"#).unwrap();
    let err = apply_lora(&mut model, &config, 0).unwrap_err().to_string();
    assert!(err.contains("`visual_projection`: CLIP's projections"), "{err}");

    // The joint adapter names text-tower modules, which a vision encoder does not have.
    let mut encoder = Encoder::load_dir(&spec, &device).unwrap();
    let adapter = PeftAdapter::read(&fixtures().join("clip/adapter_joint")).unwrap();
    let err = load_adapter(&mut encoder, &adapter, &device).unwrap_err().to_string();
    assert!(
        err.contains("`text_model.encoder.layers.1.self_attn.q_proj`: no such LoRA-capable module"),
        "{err}"
    );
}

#[test]
fn peft_options_calibra_does_not_implement_are_accepted_only_at_their_default() {
    // Every option of PEFT 0.21.2's LoraConfig either is implemented or is in calibra's table of
    // options accepted at their default, and the table's defaults are PEFT's.
    let peft: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("peft_lora_config_defaults.json")).unwrap(),
    )
    .unwrap();
    let ours = serde_json::to_value(LoraConfig::default()).unwrap();
    for (key, default) in peft.as_object().unwrap() {
        if let Some((_, d)) = calibra_models::lora::PEFT_INERT_OPTIONS.iter().find(|(k, _)| k == key) {
            assert_eq!(&serde_json::from_str::<serde_json::Value>(d).unwrap(), default, "{key}");
        } else {
            assert!(
                ours.get(key).is_some() || calibra_models::lora::PEFT_METADATA_KEYS.contains(&key.as_str()),
                "PEFT option `{key}` is neither implemented nor listed"
            );
        }
    }
    let with = |key: &str, value: serde_json::Value| -> String {
        let mut cfg = peft.clone();
        cfg[key] = value;
        let c: LoraConfig = serde_json::from_value(cfg).unwrap();
        c.validate().map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    };
    assert_eq!(with("peft_version", serde_json::json!("0.99")), "");
    let err = with("use_qalora", serde_json::json!(true));
    assert!(err.contains("`use_qalora`") && err.contains("only its default false"), "{err}");
    let err = with("use_dora", serde_json::json!(true));
    assert!(err.contains("`use_dora`: DoRA is not supported"), "{err}");
    let err = with("some_future_option", serde_json::json!(3));
    assert!(err.contains("`some_future_option`: unknown option"), "{err}");
    assert_eq!(with("some_future_flag", serde_json::json!(false)), "");
    let err = with("target_modules", serde_json::json!("all-linear"));
    assert!(err.contains("all-linear"), "{err}");
    let err = with("layers_to_transform", serde_json::json!([0]));
    assert_eq!(err, "", "a list target with layers_to_transform is fine");
    let mut cfg = peft.clone();
    cfg["target_modules"] = serde_json::json!(".*q_proj");
    cfg["layers_to_transform"] = serde_json::json!([0]);
    let c: LoraConfig = serde_json::from_value(cfg).unwrap();
    assert!(c.validate().unwrap_err().to_string().contains("`layers_to_transform`"));
}

/// The config of the calibra-made adapters: rsLoRA with a rank pattern, on names every family has.
const CALIBRA_MADE: &str = r#"{"r": 3, "lora_alpha": 5, "target_modules": ["q_proj", "v_proj", "fc1"],
    "use_rslora": true, "rank_pattern": {"fc1": 2}}"#;

/// Give every branch a deterministic non-zero B (a fresh branch has B = 0 and would prove nothing).
fn set_nonzero_b<M: LoraModel>(model: &mut M) {
    for (position, (_, mut slot)) in model.lora_linears().unwrap().into_iter().enumerate() {
        let Some(branch) = slot.branch_mut() else { continue };
        let [rows, cols] = branch.b.val().dims();
        let device = branch.b.val().device();
        let data: Vec<f32> =
            (0..rows * cols).map(|k| 0.3 * ((1 + k * 7 + position * 13) as f32 * 0.37).sin()).collect();
        branch.b =
            burn::module::Param::from_tensor(Tensor::from_data(TensorData::new(data, [rows, cols]), &device));
    }
}

/// Write the adapter calibra made (to CALIBRA_LORA_WRITE_DIR/<case> when set, for peft to load) and
/// check it is the committed one, byte for byte: the committed `peft_outputs.safetensors` are what
/// peft computes with exactly this adapter.
/// `None` only while regenerating (CALIBRA_LORA_WRITE_DIR set and nothing committed yet).
fn check_calibra_made<M: LoraModel>(model: &M, case: &str) -> Option<Golden> {
    let config: LoraConfig = serde_json::from_str(CALIBRA_MADE).unwrap();
    let adapter = extract_adapter(model, &config, BTreeMap::new()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = match std::env::var_os("CALIBRA_LORA_WRITE_DIR") {
        Some(d) => PathBuf::from(d).join("calibra_made").join(case),
        None => dir.path().to_path_buf(),
    };
    adapter.write(&out).unwrap();
    let committed = fixtures().join("calibra_made").join(case);
    if std::env::var_os("CALIBRA_LORA_WRITE_DIR").is_some() && !committed.exists() {
        return None;
    }
    for file in [ADAPTER_WEIGHTS, ADAPTER_CONFIG] {
        let (ours, theirs) =
            (std::fs::read(out.join(file)).unwrap(), std::fs::read(committed.join(file)).unwrap());
        assert!(ours == theirs, "{case}/{file}: differs from the committed adapter peft was run on");
    }
    Some(Golden(std::fs::read(committed.join("peft_outputs.safetensors")).unwrap()))
}

/// calibra → peft with factors calibra chose: `apply_lora` (seeded A), a deterministic non-zero B,
/// `extract_adapter`, written; peft 0.21.2 loads that adapter onto the transformers model and its
/// outputs (committed, `lora_peft_families.py --calibra-made`) equal calibra's within 1e-4.
#[test]
fn adapters_made_here_give_the_same_outputs_in_peft() {
    let device = Device::flex();
    let config: LoraConfig = serde_json::from_str(CALIBRA_MADE).unwrap();
    for (family, case) in
        [("dinov2_registers", "dinov2_registers"), ("clip", "clip_vision"), ("siglip", "siglip")]
    {
        let golden = Golden::read(family);
        let mut encoder = Encoder::load_dir(&fixtures().join(family).join("base"), &device).unwrap();
        apply_lora(&mut encoder, &config, 7).unwrap();
        set_nonzero_b(&mut encoder);
        let Some(peft) = check_calibra_made(&encoder, case) else { continue };
        let out = encoder.forward(golden.images(&device), false).unwrap();
        let d = peft.diff("last_hidden_state", out.last_hidden_state);
        eprintln!("{case}: last_hidden_state vs peft: max |diff| {d:e}");
        assert!(d < TOL, "{case}: last_hidden_state: max |diff| {d:e}");
        let d = peft.diff("pooled", out.cls.clone());
        eprintln!("{case}: pooled vs peft: max |diff| {d:e}");
        assert!(d < TOL, "{case}: pooled: max |diff| {d:e}");
        assert!(
            golden
                .diff(&format!("{}pooled", if family == "clip" { "base_vision_" } else { "base_" }), out.cls)
                > 0.05
        );
    }

    let golden = Golden::read("clip");
    let spec = fixtures().join("clip/base");
    let (mut model, _) = ClipModel::load(spec.to_str().unwrap(), &device).unwrap();
    let wrapped = apply_lora(&mut model, &config, 7).unwrap();
    assert_eq!(wrapped.iter().filter(|n| n.starts_with("text_model.")).count(), 6);
    set_nonzero_b(&mut model);
    let Some(peft) = check_calibra_made(&model, "clip_joint") else { return };
    let vision = model.vision_model.forward_full(golden.images(&device), false).unwrap();
    let text = model.text_model.forward_ids(&golden.ids("input_ids"), &device, false).unwrap();
    for (name, got) in [("vision_pooled", vision.pooled), ("text_pooled", text.pooled)] {
        let d = peft.diff(name, got);
        eprintln!("clip_joint: {name} vs peft: max |diff| {d:e}");
        assert!(d < TOL, "clip_joint: {name}: max |diff| {d:e}");
    }
    for (name, got) in [
        ("vision_last_hidden_state", vision.last_hidden_state),
        ("text_last_hidden_state", text.last_hidden_state),
    ] {
        let d = peft.diff(name, got);
        eprintln!("clip_joint: {name} vs peft: max |diff| {d:e}");
        assert!(d < TOL, "clip_joint: {name}: max |diff| {d:e}");
    }
}

/// calibra's `LoraConfig::wraps` agrees with peft's `check_target_module_exists` on every case of
/// tests/fixtures/lora_families/matching_rules.json (configs chosen to separate PEFT's rules: whole-name
/// vs suffix entries, `modules_to_save`, `layers_to_transform` with and without `layers_pattern`,
/// string and list exclusions, regex targets).
#[test]
fn module_selection_agrees_with_peft_case_by_case() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("matching_rules.json")).unwrap())
            .unwrap();
    assert!(cases.len() > 20);
    for case in cases {
        let config: LoraConfig = serde_json::from_value(case["config"].clone()).unwrap();
        config.validate().unwrap();
        let module = case["module"].as_str().unwrap();
        let want = case["peft_wraps"].as_bool().unwrap();
        assert_eq!(config.wraps(module).unwrap(), want, "{module} under {}", case["config"]);
    }
}
