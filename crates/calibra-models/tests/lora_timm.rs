//! LoRA on timm ViT checkpoints against peft 0.21.2 + timm 1.0.31 (fixtures:
//! scripts/golden/lora_peft_timm.py → tests/fixtures/lora_timm/; the bases are tests/fixtures/timm/).
//!
//! peft → calibra: a peft-made adapter on `timm.create_model(...)` (random non-zero factors; timm's
//! fused `attn.qkv` as ONE `lora_A` `[r, d]` and ONE `lora_B` `[3·d, r]`; rsLoRA, rank / alpha
//! patterns, `layers_to_transform`, a regex target and an exclusion among the cases; the head in
//! `modules_to_save = ["head"]`) loads here, calibra's walk of the config picks exactly the modules
//! peft wrapped, and timm's head on calibra's classification feature gives peft's logits within
//! 1e-4. The other direction (an adapter saved by calibra, loaded by peft) is
//! calibra-train's `tests/lora_timm_heads.rs`.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use calibra_models::Encoder;
use calibra_models::encoder::EncoderModel;
use calibra_models::lora::peft::PeftAdapter;
use calibra_models::lora::{FusedQkv, LoraModel, apply_lora, extract_adapter, load_adapter};
use safetensors::SafeTensors;

const TOL: f32 = 1e-4;
/// case, base fixture (tests/fixtures/timm/<base>).
const CASES: [(&str, &str); 3] =
    [("token_qkv", "token"), ("avg_rslora", "avg_fc_norm"), ("token_regex", "token")];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read_f32(path: &Path, name: &str) -> (Vec<usize>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let t = file.tensor(name).unwrap_or_else(|e| panic!("{}: {name}: {e}", path.display()));
    let v = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (t.shape().to_vec(), v)
}

fn diff<const D: usize>(got: Tensor<D>, want: &(Vec<usize>, Vec<f32>)) -> f32 {
    assert_eq!(got.dims().to_vec(), want.0, "shape");
    let got = got.into_data().try_to_vec::<f32>().unwrap();
    got.iter().zip(&want.1).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
}

/// timm's `head` (saved whole by peft: `head.weight` `[K, d]`, `head.bias` `[K]`) on the encoder's
/// classification feature.
fn logits(encoder: &Encoder, adapter: &PeftAdapter, x: Tensor<4>, device: &Device) -> Tensor<2> {
    let (w, b) = (&adapter.saved["head.weight"], &adapter.saved["head.bias"]);
    let w = Tensor::<2>::from_data(TensorData::new(w.data.clone(), [w.shape[0], w.shape[1]]), device);
    let b = Tensor::<1>::from_data(TensorData::new(b.data.clone(), [b.shape[0]]), device);
    encoder.classification_feature(x).unwrap().matmul(w.transpose()) + b.unsqueeze()
}

#[test]
fn peft_made_timm_adapters_give_peft_logits_here() {
    let device = Device::flex();
    for (case, base) in CASES {
        let dir = fixtures().join("lora_timm").join(case);
        let golden = dir.join("golden.safetensors");
        let (s, px) = read_f32(&golden, "pixel_values");
        let x = Tensor::<4>::from_data(TensorData::new(px, [s[0], s[1], s[2], s[3]]), &device);
        let adapter = PeftAdapter::read(&dir.join("peft_made")).unwrap();
        assert_eq!(adapter.config.modules_to_save.as_deref(), Some(&["head".to_string()][..]));
        let peft_wrapped: Vec<String> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("wrapped.json")).unwrap()).unwrap();

        // calibra's walk of the same config picks exactly peft's modules.
        let base_dir = fixtures().join("timm").join(base);
        let mut fresh = Encoder::load_dir(&base_dir, &device).unwrap();
        let mut ours = apply_lora(&mut fresh, &adapter.config, 0).unwrap();
        ours.sort();
        assert_eq!(ours, peft_wrapped, "{case}: wrapped modules");

        let mut encoder = Encoder::load_dir(&base_dir, &device).unwrap();
        let mut loaded = load_adapter(&mut encoder, &adapter, &device).unwrap();
        loaded.sort();
        assert_eq!(loaded, peft_wrapped, "{case}: loaded modules");
        // The fused qkv is one A [r, d] and one B [3·d, r].
        let qkv = &adapter.factors[peft_wrapped.iter().find(|n| n.ends_with("attn.qkv")).unwrap()];
        assert_eq!((qkv.a.shape[1], qkv.b.shape[0]), (32, 96), "{case}");

        let d_in = diff(encoder.classification_feature(x.clone()).unwrap(), &read_f32(&golden, "head_input"));
        let want = read_f32(&golden, "peft_made_logits");
        let d = diff(logits(&encoder, &adapter, x.clone(), &device), &want);
        eprintln!("{case}: head input max |diff| {d_in:e}, logits vs peft max |diff| {d:e}");
        assert!(d_in < TOL, "{case}: head input vs timm: {d_in:e}");
        assert!(d < TOL, "{case}: logits vs peft: {d:e}");

        // The factors matter: the same head on the bare base is clearly elsewhere.
        let bare = Encoder::load_dir(&base_dir, &device).unwrap();
        let effect = diff(logits(&bare, &adapter, x.clone(), &device), &want);
        assert!(effect > 0.05, "{case}: the adapter barely changes the logits ({effect})");

        // Extracting gives the adapter back, tensor for tensor.
        let back = extract_adapter(&encoder, &adapter.config, adapter.saved.clone()).unwrap();
        assert_eq!(back.factors, adapter.factors, "{case}");

        // Merging every fused branch into q/k/v (peft's merge) keeps the logits.
        if let EncoderModel::TimmVit(m) = &mut encoder.model {
            for block in m.blocks.iter_mut() {
                FusedQkv::of(&mut block.attn).0.merge();
            }
        }
        let d_merged = diff(logits(&encoder, &adapter, x, &device), &want);
        assert!(d_merged < TOL, "{case}: merged logits vs peft: {d_merged:e}");
        let err = extract_adapter(&encoder, &adapter.config, Default::default()).unwrap_err().to_string();
        assert!(err.contains("merged"), "{err}");
    }
}

/// The timm names calibra lists, and the modules PEFT would see but calibra does not wrap.
#[test]
fn timm_lora_names_and_refusals() {
    let device = Device::flex();
    let mut encoder = Encoder::load_dir(&fixtures().join("timm/token"), &device).unwrap();
    let names: Vec<String> = encoder.lora_linears().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "blocks.0.attn.qkv",
            "blocks.0.attn.proj",
            "blocks.0.mlp.fc1",
            "blocks.0.mlp.fc2",
            "blocks.1.attn.qkv",
            "blocks.1.attn.proj",
            "blocks.1.mlp.fc1",
            "blocks.1.mlp.fc2"
        ]
    );
    let refuse = |json: &str| {
        let mut e = encoder.clone();
        apply_lora(&mut e, &serde_json::from_str(json).unwrap(), 0).unwrap_err().to_string()
    };
    let err = refuse(r#"{"target_modules": ["head"]}"#);
    assert!(err.contains("`head`: timm's classifier is not part of the encoder"), "{err}");
    let err = refuse(r#"{"target_modules": ["attn"]}"#);
    assert!(err.contains("`blocks.0.attn`: a container"), "{err}");
    // timm has no separate q/k/v: the error names what there is.
    let err = refuse(r#"{"target_modules": ["q_proj"]}"#);
    assert!(err.contains("end in qkv, proj, fc1, fc2 (e.g. `blocks.0.attn.qkv`)"), "{err}");
    let err = refuse(r#"{"target_modules": ["qkv"], "use_dora": true}"#);
    assert!(err.contains("use_dora"), "{err}");
    // `head` in modules_to_save is trained whole, never wrapped (PEFT's rule): no refusal.
    let mut e = encoder.clone();
    let config = serde_json::from_str(r#"{"target_modules": ["qkv", "head"], "modules_to_save": ["head"]}"#);
    assert_eq!(apply_lora(&mut e, &config.unwrap(), 0).unwrap().len(), 2);
}
