//! Issue 20, fuzzing without nightly: `proptest` over arbitrary and mutated bytes for the checkpoint
//! loaders (`model.safetensors` + `config.json`, every family), the PEFT adapter reader
//! (`adapter_config.json` + `adapter_model.safetensors`) and the two conversions (OpenAI CLIP `.pt`
//! state dicts, a multimodal checkpoint's vision tower). No input may panic, abort or hang: each
//! case either loads or returns an error (and a model that loads runs a forward pass without
//! panicking). The seed corpus is the committed fixtures; the case counts are CI-sized (a few
//! seconds each in a debug build). `PROPTEST_CASES=N`, or `CALIBRA_FUZZ_SCALE=K` (K × the default; the
//! fuzz step of `.ci/run`), runs more.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::clip::ClipModel;
use calibra_models::clip::open_clip::{Preprocess, convert_openai_clip};
use calibra_models::encoder::Encoder;
use calibra_models::hf::vision_tower::extract_vision_tower;
use calibra_models::lora::peft::PeftAdapter;
use calibra_models::resnet::biovil::convert_biovil;
use calibra_models::timm::panderm::convert_panderm;
use calibra_models::timm::retfound::{RetfoundPool, convert_retfound};
use calibra_testkit::sorted_names;
use proptest::prelude::*;
use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

const FAMILIES: [&str; 7] =
    ["vit", "deit", "dinov2", "clip", "siglip", "resnet/hf_bottleneck", "resnet/timm_resnet50"];

/// Loads the checkpoint directory `dir` as `family` would be used (CLIP: the joint model, else the
/// image encoder) and, when it loads, runs one forward pass. Returns whether it loaded.
fn load_and_run(family: &str, dir: &Path) -> bool {
    let device = Device::flex();
    let images = Tensor::<4>::zeros([1, 3, 30, 30], &device) + 0.25;
    if family == "clip" {
        match ClipModel::load(dir.to_str().unwrap(), &device) {
            Ok((model, _)) => {
                let _ = model.forward(images, &[vec![739, 5, 740]], false);
                true
            }
            Err(_) => false,
        }
    } else {
        match Encoder::load_dir(dir, &device) {
            Ok(encoder) => {
                let _ = encoder.embed_at_depths(images, &[0.5, 1.0]);
                true
            }
            Err(_) => false,
        }
    }
}

/// A checkpoint directory holding `config` and `weights`.
fn checkpoint(config: &[u8], weights: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    std::fs::write(dir.path().join("model.safetensors"), weights).unwrap();
    dir
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixture(rel)).unwrap()
}

/// Byte-level mutations of a seed: overwrite bytes, truncate, or insert bytes.
#[derive(Debug, Clone)]
enum Mutation {
    Set { at: usize, byte: u8 },
    Truncate { keep: usize },
    Insert { at: usize, bytes: Vec<u8> },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        1 => any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
    ]
}

/// Applies `mutations` to `seed`; positions are taken modulo `focus` (the safetensors header, where
/// a flipped byte changes the structure) or the whole length.
fn mutate(seed: &[u8], mutations: &[Mutation], focus: usize) -> Vec<u8> {
    let mut out = seed.to_vec();
    for m in mutations {
        let len = out.len().max(1);
        let span = focus.clamp(1, len);
        match m {
            Mutation::Set { at, byte } => {
                if !out.is_empty() {
                    let i = at % span;
                    out[i] = *byte;
                }
            }
            Mutation::Truncate { keep } => out.truncate(keep % len),
            Mutation::Insert { at, bytes } => {
                let i = (at % span).min(out.len());
                out.splice(i..i, bytes.iter().copied());
            }
        }
    }
    out
}

/// The header span of a safetensors file: its 8-byte length prefix plus the JSON header.
fn header_span(bytes: &[u8]) -> usize {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    8 + n
}

/// A JSON value likely to break a config field: zero, negative, huge, fractional, wrong type.
fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from(0)),
        Just(Value::from(-1)),
        Just(Value::from(1)),
        Just(Value::from(u64::MAX)),
        Just(Value::from(1u64 << 40)),
        Just(Value::Null),
        Just(Value::from("gelu")),
        Just(Value::from(true)),
        Just(serde_json::json!([6, 6])),
        Just(serde_json::json!([6, 5])),
        Just(serde_json::json!({})),
        (0u64..4096).prop_map(Value::from),
        any::<f64>().prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
    ]
}

/// Every key path (`a` or `a/b` one level down) of a config object.
fn key_paths(json: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(map) = json {
        for (k, v) in map {
            out.push(k.clone());
            if let Value::Object(inner) = v {
                out.extend(inner.keys().map(|i| format!("{k}/{i}")));
            }
        }
    }
    out
}

fn set_path(json: &mut Value, path: &str, value: Value) {
    // An earlier pick may have replaced a parent of this path by a scalar; the path is then gone and
    // the pick is skipped (indexing a scalar would panic in the test, not in the loader).
    let mut at = json;
    let parts: Vec<&str> = path.split('/').collect();
    for p in &parts[..parts.len() - 1] {
        match at.get_mut(*p) {
            Some(child) => at = child,
            None => return,
        }
    }
    if let Some(object) = at.as_object_mut() {
        object.insert(parts[parts.len() - 1].to_string(), value);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..calibra_testkit::fuzz_config(48) })]

    /// Arbitrary bytes as `model.safetensors` under a valid config: an error, never a panic.
    #[test]
    fn arbitrary_weights_bytes_never_panic(family in 0..FAMILIES.len(), bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let family = FAMILIES[family];
        let dir = checkpoint(&read(&format!("{family}/config.json")), &bytes);
        prop_assert!(!load_and_run(family, dir.path()));
    }

    /// The fixture's weights with a few bytes changed (mostly in the header), cut short or grown.
    #[test]
    fn mutated_weights_never_panic(family in 0..FAMILIES.len(), mutations in proptest::collection::vec(mutation(), 1..4), in_header in any::<bool>()) {
        let family = FAMILIES[family];
        let seed = read(&format!("{family}/model.safetensors"));
        let focus = if in_header { header_span(&seed) } else { seed.len() };
        let dir = checkpoint(&read(&format!("{family}/config.json")), &mutate(&seed, &mutations, focus));
        load_and_run(family, dir.path());
    }

    /// Arbitrary bytes, and byte-mutated fixture text, as `config.json`.
    #[test]
    fn arbitrary_config_bytes_never_panic(family in 0..FAMILIES.len(), bytes in proptest::collection::vec(any::<u8>(), 0..256), mutations in proptest::collection::vec(mutation(), 1..4)) {
        let family = FAMILIES[family];
        let weights = read(&format!("{family}/model.safetensors"));
        let dir = checkpoint(&bytes, &weights);
        prop_assert!(!load_and_run(family, dir.path()));
        let seed = read(&format!("{family}/config.json"));
        let dir = checkpoint(&mutate(&seed, &mutations, seed.len()), &weights);
        load_and_run(family, dir.path());
    }

    /// One or two config fields (top level or in `vision_config` / `text_config`) replaced by a
    /// hostile value: zero, negative, 2^64−1, a float, another type.
    #[test]
    fn hostile_config_values_never_panic(family in 0..FAMILIES.len(), picks in proptest::collection::vec((any::<prop::sample::Index>(), hostile_value()), 1..3)) {
        let family = FAMILIES[family];
        let mut json: Value = serde_json::from_slice(&read(&format!("{family}/config.json"))).unwrap();
        let paths = key_paths(&json);
        for (index, value) in picks {
            set_path(&mut json, index.get(paths.as_slice()).as_str(), value);
        }
        let dir = checkpoint(json.to_string().as_bytes(), &read(&format!("{family}/model.safetensors")));
        load_and_run(family, dir.path());
    }

    /// The PEFT adapter reader on mutated `adapter_config.json` (bytes or hostile field values) and
    /// mutated `adapter_model.safetensors`.
    #[test]
    fn mutated_adapters_never_panic(
        config_mutations in proptest::collection::vec(mutation(), 0..3),
        field in any::<prop::sample::Index>(),
        value in hostile_value(),
        weights_mutations in proptest::collection::vec(mutation(), 0..3),
        in_header in any::<bool>(),
    ) {
        let config = read("lora/adapter/adapter_config.json");
        let weights = read("lora/adapter/adapter_model.safetensors");
        let focus = if in_header { header_span(&weights) } else { weights.len() };
        let mut json: Value = serde_json::from_slice(&config).unwrap();
        let paths = key_paths(&json);
        set_path(&mut json, field.get(paths.as_slice()).as_str(), value);
        for config_bytes in [mutate(&config, &config_mutations, config.len()), json.to_string().into_bytes()] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("adapter_config.json"), &config_bytes).unwrap();
            std::fs::write(dir.path().join("adapter_model.safetensors"), mutate(&weights, &weights_mutations, focus)).unwrap();
            let _ = PeftAdapter::read(dir.path());
        }
    }

    /// `calibra convert openai-clip` on mutated `.pt` files (the ZIP and the legacy container): a
    /// converted directory or an error, and no staging directory left either way.
    #[test]
    fn mutated_openai_clip_state_dicts_never_panic(
        legacy in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
        near_start in any::<bool>(),
    ) {
        let seed = read(if legacy { "openai_clip/legacy_nested.pt" } else { "openai_clip/state_dict.pt" });
        let focus = if near_start { 1024 } else { seed.len() };
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("ck.pt");
        std::fs::write(&source, mutate(&seed, &mutations, focus)).unwrap();
        let out = dir.path().join("out");
        let converted = convert_openai_clip(&source, &out, None, &Preprocess::openai()).is_ok();
        prop_assert_eq!(out.is_dir(), converted);
        let left = sorted_names(dir.path()).into_iter().filter(|n| n.starts_with('.')).count();
        prop_assert_eq!(left, 0);
    }

    /// `calibra convert retfound`, `panderm` and `biovil` on mutated `.pth`/`.pt` files (pickles
    /// with nested entries, an `argparse.Namespace`, BatchNorm counters): a converted directory or an
    /// error, and no staging directory left either way.
    #[test]
    fn mutated_retfound_panderm_and_biovil_checkpoints_never_panic(
        which in 0..4usize,
        mutations in proptest::collection::vec(mutation(), 1..4),
        near_start in any::<bool>(),
    ) {
        let seed = read(
            ["retfound/mae_pretrain.pth", "retfound/finetuned.pth", "biovil/image_model.pt", "panderm/checkpoint.pth"]
                [which],
        );
        let focus = if near_start { 1024 } else { seed.len() };
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("ck.pth");
        std::fs::write(&source, mutate(&seed, &mutations, focus)).unwrap();
        let out = dir.path().join("out");
        let converted = match which {
            2 => convert_biovil(&source, &out, None).is_ok(),
            3 => convert_panderm(&source, &out, None, Some(4)).is_ok(),
            _ => convert_retfound(&source, &out, None, Some(4), RetfoundPool::Avg).is_ok(),
        };
        prop_assert_eq!(out.is_dir(), converted);
        let left = sorted_names(dir.path()).into_iter().filter(|n| n.starts_with('.')).count();
        prop_assert_eq!(left, 0);
    }

    /// `calibra convert vision-tower` on a mutated multimodal checkpoint (safetensors header or
    /// body, or `config.json`).
    #[test]
    fn mutated_multimodal_checkpoints_never_panic(
        weights_mutations in proptest::collection::vec(mutation(), 0..4),
        in_header in any::<bool>(),
        config_field in any::<prop::sample::Index>(),
        value in hostile_value(),
        mutate_config in any::<bool>(),
    ) {
        let weights = read("vision_towers/gemma3-legacy/model.safetensors");
        let config = read("vision_towers/gemma3-legacy/config.json");
        let focus = if in_header { header_span(&weights) } else { weights.len() };
        let mut json: Value = serde_json::from_slice(&config).unwrap();
        if mutate_config {
            let paths = key_paths(&json);
            set_path(&mut json, config_field.get(paths.as_slice()).as_str(), value);
        }
        let dir = checkpoint(json.to_string().as_bytes(), &mutate(&weights, &weights_mutations, focus));
        let out = dir.path().join("out");
        let extracted = extract_vision_tower(dir.path(), &out, false).is_ok();
        prop_assert_eq!(out.is_dir(), extracted);
    }
}

/// The unmutated seeds load: the mutations above start from working inputs.
#[test]
fn the_seed_corpus_loads() {
    for family in FAMILIES {
        let dir = checkpoint(
            &read(&format!("{family}/config.json")),
            &read(&format!("{family}/model.safetensors")),
        );
        assert!(load_and_run(family, dir.path()), "{family}");
    }
    assert!(PeftAdapter::read(&fixture("lora/adapter")).is_ok());
}
