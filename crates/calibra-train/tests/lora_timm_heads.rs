//! LoRA classifiers on timm ViT checkpoints, both ways against peft 0.21.2 + timm 1.0.31 (issue #17
//! item 1): the head is timm's own `head` on timm's pre-logits feature (`global_pool`, `norm` /
//! `fc_norm` as timm places them), saved as `modules_to_save = ["head"]`, and timm's fused `attn.qkv`
//! carries one `lora_A` `[r, d]` and one `lora_B` `[3·d, r]`.
//!
//! - peft → calibra: each peft-made adapter of calibra-models' `tests/fixtures/lora_timm/<case>/`
//!   loads with `load_adapted_lora` and gives peft's logits within 1e-4.
//! - calibra → peft: `EncoderClassifier::new` with the case's LoRA config (A seeded, B set to
//!   deterministic non-zero values, head drawn), saved by `save_adapted`; the saved adapter is byte
//!   for byte the committed `calibra_made/` one that peft loaded onto
//!   `timm.create_model("local-dir:<base>", pretrained=True, num_classes=3)`
//!   (`lora_peft_timm.py --calibra-made`), and peft's logits equal calibra's within 1e-4.
//!   `CALIBRA_TIMM_WRITE_DIR=DIR` writes the saved adapters and calibra's logits to `DIR/<case>/`.
//! - training: two AdamW steps update exactly the one A and the one B of each fused qkv (and the
//!   head), never a base weight.

use std::path::{Path, PathBuf};

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::Encoder;
use calibra_models::hf::floats::F32View;
use calibra_models::lora::peft::PeftAdapter;
use calibra_models::lora::{LoraConfig, LoraModel, extract_adapter};
use calibra_train::build_loss;
use calibra_train::fine_tune::{Adaptation, EncoderClassifier, FineTuned, load_adapted_lora, save_adapted};
use calibra_train::trainer::{TrainConfig, TrainSet, train};
use safetensors::SafeTensors;

const TOL: f32 = 1e-4;
const K: usize = 3;
/// case, base checkpoint (repository-relative).
const CASES: [(&str, &str); 3] = [
    ("token_qkv", "crates/calibra-models/tests/fixtures/timm/token"),
    ("avg_rslora", "crates/calibra-models/tests/fixtures/timm/avg_fc_norm"),
    ("token_regex", "crates/calibra-models/tests/fixtures/timm/token"),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn case_dir(case: &str) -> PathBuf {
    repo().join("crates/calibra-models/tests/fixtures/lora_timm").join(case)
}

fn read_f32(path: &Path, name: &str) -> (Vec<usize>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let t = file.tensor(name).unwrap_or_else(|e| panic!("{}: {name}: {e}", path.display()));
    let v = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (t.shape().to_vec(), v)
}

fn images(case: &str, device: &Device) -> Tensor<4> {
    let (s, data) = read_f32(&case_dir(case).join("golden.safetensors"), "pixel_values");
    Tensor::from_data(TensorData::new(data, [s[0], s[1], s[2], s[3]]), device)
}

fn values<const D: usize>(t: Tensor<D>) -> (Vec<usize>, Vec<f32>) {
    (t.dims().to_vec(), t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap())
}

fn diff<const D: usize>(what: &str, got: Tensor<D>, want: &(Vec<usize>, Vec<f32>)) -> f32 {
    let (shape, got) = values(got);
    assert_eq!(shape, want.0, "{what}: shape");
    got.iter().zip(&want.1).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
}

/// The case's LoRA config: the one peft made its adapter with (`modules_to_save` is set by
/// `save_adapted`).
fn case_config(case: &str) -> LoraConfig {
    let mut config = PeftAdapter::read(&case_dir(case).join("peft_made")).unwrap().config;
    config.modules_to_save = None;
    config
}

#[test]
fn peft_made_timm_adapters_give_peft_logits_with_load_adapted_lora() {
    let device = Device::flex();
    for (case, base) in CASES {
        let model =
            load_adapted_lora(&repo().join(base), &case_dir(case).join("peft_made"), &device).unwrap();
        let want = read_f32(&case_dir(case).join("golden.safetensors"), "peft_made_logits");
        let d = diff(case, model.try_logits(images(case, &device)).unwrap(), &want);
        eprintln!("{case}: peft-made adapter via load_adapted_lora: logits max |diff| {d:e}");
        assert!(d < TOL, "{case}: logits vs peft: max |diff| {d:e}");
    }
}

/// Give every branch a deterministic non-zero B (a fresh branch has B = 0 and would prove nothing).
fn set_nonzero_b<M: LoraModel>(model: &mut M) {
    for (position, (_, mut slot)) in model.lora_linears().unwrap().into_iter().enumerate() {
        let Some(branch) = slot.branch_mut() else { continue };
        let [rows, cols] = branch.b.val().dims();
        let device = branch.b.val().device();
        let data: Vec<f32> =
            (0..rows * cols).map(|k| 0.3 * ((1 + k * 7 + position * 13) as f32 * 0.37).sin()).collect();
        branch.b = Param::from_tensor(Tensor::from_data(TensorData::new(data, [rows, cols]), &device));
    }
}

#[test]
fn timm_adapters_saved_here_give_calibra_logits_in_peft() {
    let device = Device::flex();
    let write_dir = std::env::var_os("CALIBRA_TIMM_WRITE_DIR").map(PathBuf::from);
    for (case, base) in CASES {
        let encoder = Encoder::load_dir(&repo().join(base), &device).unwrap();
        let dim = encoder.classification_dim();
        let adaptation = Adaptation::Lora(Box::new(case_config(case)));
        let (mut model, wrapped) = EncoderClassifier::new(encoder, dim, K, &adaptation, 7, &device).unwrap();
        assert!(wrapped.iter().any(|n| n.ends_with("attn.qkv")), "{case}: {wrapped:?}");
        set_nonzero_b(&mut model.encoder);
        let x = images(case, &device);
        let logits = model.try_logits(x.clone()).unwrap();
        let bare = Encoder::load_dir(&repo().join(base), &device).unwrap();
        let bare_logits = values(
            EncoderClassifier { encoder: bare, head: model.head.clone() }.try_logits(x.clone()).unwrap(),
        );
        let fitted = FineTuned {
            checkpoint: PathBuf::from(base),
            model,
            adaptation,
            wrapped,
            losses: Vec::new(),
            total_steps: 0,
            resumed_from: None,
            curve: Vec::new(),
            best_epoch: None,
            stopped_early: false,
            unreadable: Vec::new(),
        };
        let tmp = tempfile::tempdir().unwrap();
        let out = match &write_dir {
            Some(d) => d.join(case),
            None => tmp.path().join(case),
        };
        save_adapted(&fitted, &out).unwrap();
        if let Some(d) = &write_dir {
            let (shape, data) = values(logits.clone());
            let bytes = safetensors::serialize([("logits", F32View::new(shape, &data))], None).unwrap();
            std::fs::write(d.join(case).join("calibra_logits.safetensors"), bytes).unwrap();
        }
        // PEFT's names and shapes: one A [r, 32] and one B [96, r] per fused qkv, timm's head.
        let saved = PeftAdapter::read(&out).unwrap();
        assert_eq!(saved.config.modules_to_save.as_deref(), Some(&["head".to_string()][..]));
        assert_eq!(saved.saved.keys().collect::<Vec<_>>(), ["head.bias", "head.weight"]);
        for (name, f) in &saved.factors {
            if name.ends_with("attn.qkv") {
                assert_eq!((f.a.shape[1], f.b.shape[0]), (32, 96), "{case}: {name}");
            }
        }

        let reloaded = load_adapted_lora(&repo().join(base), &out, &device).unwrap();
        let d_self = diff(case, reloaded.try_logits(x.clone()).unwrap(), &values(logits.clone()));
        assert!(d_self < 1e-5, "{case}: save_adapted → load_adapted_lora: max |diff| {d_self:e}");

        let committed = case_dir(case).join("calibra_made");
        if write_dir.is_some() && !committed.exists() {
            continue; // regenerating: peft has not seen these adapters yet
        }
        for file in ["adapter_model.safetensors", "adapter_config.json"] {
            let ours = std::fs::read(out.join(file)).unwrap();
            let theirs = std::fs::read(committed.join(file)).unwrap();
            assert!(ours == theirs, "{case}/{file}: differs from the committed adapter peft was run on");
        }
        let peft = read_f32(&committed.join("peft_logits.safetensors"), "logits");
        let d = diff(case, logits, &peft);
        eprintln!("{case}: calibra-made adapter: logits vs peft max |diff| {d:e}");
        assert!(d < TOL, "{case}: logits vs peft: max |diff| {d:e}");
        let effect = peft.1.iter().zip(&bare_logits.1).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(effect > 0.05, "{case}: the adapter barely changes peft's logits ({effect})");
    }
}

/// Two AdamW steps on a LoRA classifier over a timm ViT: the one A and the one B of each fused qkv
/// move, the q/k/v base weights do not.
#[test]
fn training_updates_the_one_a_and_b_of_a_fused_qkv() {
    let device = Device::flex().autodiff();
    let (_, base) = CASES[0];
    let encoder = Encoder::load_dir(&repo().join(base), &device).unwrap();
    let dim = encoder.classification_dim();
    let config: LoraConfig =
        serde_json::from_str(r#"{"r": 2, "lora_alpha": 4, "target_modules": ["qkv"]}"#).unwrap();
    let adaptation = Adaptation::Lora(Box::new(config.clone()));
    let (model, wrapped) = EncoderClassifier::new(encoder, dim, K, &adaptation, 3, &device).unwrap();
    assert_eq!(wrapped, ["blocks.0.attn.qkv", "blocks.1.attn.qkv"]);
    let before = extract_adapter(&model.encoder, &config, Default::default()).unwrap();
    let q_before =
        model.encoder.clone().valid().forward(Tensor::zeros([1, 3, 32, 32], &Device::flex()), false).unwrap();

    let n = 8;
    let pixels: Vec<f32> = (0..n * 3 * 32 * 32).map(|i| (i * 37 % 101) as f32 / 50.0 - 1.0).collect();
    let labels: Vec<usize> = (0..n).map(|i| i % K).collect();
    let data = TrainSet::classes([3, 32, 32], pixels, labels);
    let train_config = TrainConfig {
        epochs: 2,
        batch_size: 8,
        lr: 1e-2,
        checkpoint_every: 0,
        seed: 5,
        ..TrainConfig::default()
    };
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let outcome = train(model, &data, loss.as_ref(), &train_config, &device, None, &mut |_| {}).unwrap();
    assert_eq!(outcome.total_steps, 2);
    let trained = outcome.model.valid();
    let after = extract_adapter(&trained.encoder, &config, Default::default()).unwrap();
    for (name, f) in &after.factors {
        assert_eq!((f.a.shape.as_slice(), f.b.shape.as_slice()), (&[2, 32][..], &[96, 2][..]), "{name}");
        assert_ne!(f.a.data, before.factors[name].a.data, "{name}: A did not train");
        assert!(f.b.data.iter().any(|v| *v != 0.0), "{name}: B did not train");
    }
    // With B reset to zero the trained encoder is the base again: no base weight moved.
    let mut reset = trained.encoder.clone();
    for (_, mut slot) in reset.lora_linears().unwrap() {
        if let Some(branch) = slot.branch_mut() {
            branch.b = Param::from_tensor(branch.b.val().zeros_like());
        }
    }
    let q_after = reset.forward(Tensor::zeros([1, 3, 32, 32], &Device::flex()), false).unwrap();
    assert_eq!(values(q_after.last_hidden_state), values(q_before.last_hidden_state));
}
