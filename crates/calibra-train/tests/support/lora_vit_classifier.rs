//! Shared by `examples/lora_trained_adapter.rs` (which trains and writes the fixture) and
//! `tests/lora_trained_adapter.rs` (which checks it): the tiny ViT of calibra-models' LoRA fixture
//! with a linear head, as Hugging Face's `ViTForImageClassification` computes it
//! (logits = CLS after the final LayerNorm · Wᵀ + b, W stored `[K, d]`), the deterministic synthetic
//! training set, the recipe, and a snapshot of every frozen (non-LoRA) encoder weight.
//!
//! Included with `#[path]` by both targets, so some items are unused in one of them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::Encoder;
use calibra_models::hf::floats::{F32View, decode_f32};
use calibra_models::lora::peft::AdapterTensor;
use calibra_models::lora::{LoraConfig, TargetModules, apply_lora};
use calibra_train::trainer::{Classifier, TrainConfig, TrainSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use safetensors::SafeTensors;

/// The two adapters trained here: `(directory under the fixture dir, target modules)`.
pub const VARIANTS: [(&str, &[&str]); 2] = [
    ("adapter", &["q_proj", "v_proj"]),
    ("adapter_all_linear", &["q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"]),
];

/// Image side, channels and classes of the base fixture (its `config.json`: 30 px, patch 6, 4 labels).
pub const SIDE: usize = 30;
pub const CHANNELS: usize = 3;
pub const CLASSES: usize = 4;
/// Number of evaluation images written to the fixture.
pub const N_EVAL: usize = 3;

/// The tiny `ViTForImageClassification` base (hidden 48, 3 layers) made by
/// `scripts/golden/lora_peft.py` for calibra-models.
pub fn base_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures/lora/base")
}

/// Where the trained adapters, the evaluation inputs, our logits and PEFT's logits live.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lora_trained")
}

/// Every F32 tensor of a safetensors file, by name.
pub fn read_safetensors(path: &Path) -> BTreeMap<String, AdapterTensor> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = SafeTensors::deserialize(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.tensors()
        .into_iter()
        .map(|(name, view)| {
            let data = decode_f32(view.dtype(), view.data())
                .unwrap_or_else(|e| panic!("{}: `{name}`: {e}", path.display()));
            (name, AdapterTensor { shape: view.shape().to_vec(), data })
        })
        .collect()
}

/// Write F32 tensors to a safetensors file.
pub fn write_safetensors(path: &Path, tensors: &BTreeMap<String, AdapterTensor>) {
    let views: Vec<(String, F32View)> =
        tensors.iter().map(|(k, t)| (k.clone(), F32View::new(t.shape.clone(), &t.data))).collect();
    let bytes = safetensors::serialize(views, None).expect("f32 tensors serialise");
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The LoRA recipe of CRS-Bench (r 8, α 16, dropout 0.05) on `targets`, the head saved whole.
pub fn lora_config(targets: &[&str]) -> LoraConfig {
    LoraConfig {
        r: 8,
        lora_alpha: 16.0,
        lora_dropout: 0.05,
        target_modules: Some(TargetModules::Names(targets.iter().map(|s| s.to_string()).collect())),
        modules_to_save: Some(vec!["classifier".to_string()]),
        ..LoraConfig::default()
    }
}

/// A LoRA-adapted encoder with a linear head on its CLS feature (`ViTForImageClassification`).
#[derive(Module, Debug)]
pub struct LoraVitClassifier {
    pub encoder: Encoder,
    /// burn layout: weight `[d, K]`.
    pub classifier: Linear,
}

impl Classifier for LoraVitClassifier {
    fn logits(&self, images: Tensor<4>) -> Tensor<2> {
        let cls = self.encoder.embed(images).expect("images have the encoder's channels and size");
        self.classifier.forward(cls)
    }
}

/// A `Linear` from PyTorch's `[K, d]` weight and `[K]` bias.
pub fn head_from_torch(weight: &AdapterTensor, bias: &AdapterTensor, device: &Device) -> Linear {
    let [k, d] = [weight.shape[0], weight.shape[1]];
    let w = Tensor::<2>::from_data(TensorData::new(weight.data.clone(), [k, d]), device).transpose();
    let b = Tensor::<1>::from_data(TensorData::new(bias.data.clone(), [k]), device);
    Linear { weight: Param::from_tensor(w), bias: Some(Param::from_tensor(b)) }
}

/// The head as PyTorch stores it: `classifier.weight` `[K, d]` and `classifier.bias` `[K]`.
pub fn head_to_torch(head: &Linear) -> BTreeMap<String, AdapterTensor> {
    let w = head.weight.val().transpose();
    let shape = w.dims().to_vec();
    let weight = AdapterTensor { shape, data: w.into_data().try_into_vec_as::<f32>().unwrap() };
    let b = head.bias.as_ref().expect("the head has a bias").val();
    let bias =
        AdapterTensor { shape: b.dims().to_vec(), data: b.into_data().try_into_vec_as::<f32>().unwrap() };
    BTreeMap::from([("classifier.weight".to_string(), weight), ("classifier.bias".to_string(), bias)])
}

/// The base fixture's classifier head (PyTorch layout).
pub fn base_head() -> (AdapterTensor, AdapterTensor) {
    let mut all = read_safetensors(&base_dir().join("model.safetensors"));
    (
        all.remove("classifier.weight").expect("classifier.weight"),
        all.remove("classifier.bias").expect("bias"),
    )
}

/// The classifier ready to train: the whole base frozen, fresh LoRA branches on `targets` (seeded),
/// the head initialised from the base checkpoint's classifier and trainable (`modules_to_save`).
pub fn lora_classifier(targets: &[&str], seed: u64, device: &Device) -> LoraVitClassifier {
    // Freeze everything first: `apply_lora` freezes only the layers it wraps, while PEFT freezes the
    // whole base model (layer norms, embeddings, unwrapped projections too).
    let mut encoder = Encoder::load_dir(&base_dir(), device).expect("base fixture loads").no_grad();
    apply_lora(&mut encoder, &lora_config(targets), seed).expect("targets exist in a ViT");
    let (w, b) = base_head();
    LoraVitClassifier { encoder, classifier: head_from_torch(&w, &b, device) }
}

/// `n` synthetic images whose class shows as a per-channel offset and a horizontal ramp, plus
/// ChaCha20 noise: learnable in a few dozen steps, deterministic for a given seed.
pub fn synthetic_set(n: usize, seed: u64) -> TrainSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let labels: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % CLASSES).collect();
    let size = CHANNELS * SIDE * SIDE;
    let mut pixels = Vec::with_capacity(n * size);
    for &y in &labels {
        for c in 0..CHANNELS {
            for _row in 0..SIDE {
                for col in 0..SIDE {
                    let signal = 0.5 * (y as f32 - 1.5) * if c == y % CHANNELS { 1.0 } else { 0.3 }
                        + 0.2 * (y as f32) * (col as f32 / SIDE as f32 - 0.5);
                    pixels.push(signal + rng.random_range(-1.0f32..1.0));
                }
            }
        }
    }
    TrainSet::classes([CHANNELS, SIDE, SIDE], pixels, labels)
}

/// 64 images, batch 16, 8 epochs = 32 steps of AdamW (lr 5e-3: large enough that the factors move
/// far from B = 0, so a mis-mapped factor shows in the logits), warmup 10 %, clipping at 1.
pub fn train_config() -> TrainConfig {
    TrainConfig {
        epochs: 8,
        batch_size: 16,
        lr: 5e-3,
        checkpoint_every: 0,
        seed: 11,
        ..TrainConfig::default()
    }
}

/// The synthetic training set of the fixture.
pub fn train_set() -> TrainSet {
    synthetic_set(64, 21)
}

/// The evaluation images (`[N_EVAL, 3, 30, 30]`, another seed than training).
pub fn eval_images() -> AdapterTensor {
    let set = synthetic_set(N_EVAL, 99);
    let rows: Vec<usize> = (0..N_EVAL).collect();
    AdapterTensor { shape: vec![N_EVAL, CHANNELS, SIDE, SIDE], data: set.pixels(&rows).unwrap() }
}

/// Every float parameter of `module` outside the LoRA branches, by module path, as the bit patterns
/// of its f32 values (so −0.0 ≠ 0.0 and NaNs compare): the frozen base, which training must not touch.
pub fn frozen_weights<M: Module>(module: &M) -> BTreeMap<String, Vec<u32>> {
    struct Collect {
        path: Vec<String>,
        out: BTreeMap<String, Vec<u32>>,
        index: usize,
    }
    impl ModuleVisitor for Collect {
        fn enter_module(&mut self, name: &str, _container_type: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            // A parameter's own field name is not passed to the visitor; the index in traversal
            // order (fixed by the module's structure) tells same-module parameters apart.
            self.index += 1;
            if self.path.iter().any(|p| p == "lora") {
                return;
            }
            let key = format!("{}#{}", self.path.join("."), self.index);
            let values = param.val().into_data().try_into_vec_as::<f32>().expect("f32 data");
            self.out.insert(key, values.into_iter().map(f32::to_bits).collect());
        }
    }
    let mut v = Collect { path: Vec::new(), out: BTreeMap::new(), index: 0 };
    module.visit(&mut v);
    v.out
}

/// Our logits for `images` with an encoder carrying a loaded adapter and the adapter's head.
pub fn logits_with_head(
    encoder: &Encoder,
    saved: &BTreeMap<String, AdapterTensor>,
    images: &AdapterTensor,
    device: &Device,
) -> Vec<f32> {
    let head = head_from_torch(&saved["classifier.weight"], &saved["classifier.bias"], device);
    let s = &images.shape;
    let x = Tensor::<4>::from_data(TensorData::new(images.data.clone(), [s[0], s[1], s[2], s[3]]), device);
    let model = LoraVitClassifier { encoder: encoder.clone(), classifier: head };
    model.logits(x).into_data().try_into_vec_as::<f32>().expect("f32 logits")
}

/// max |a − b| over two equally long slices.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
