//! Trains LoRA adapters here and writes them as PEFT adapter directories, so that
//! `scripts/golden/lora_trained_adapter.py` can load them with `PeftModel.from_pretrained` and
//! `tests/lora_trained_adapter.rs` can compare PEFT's logits with ours (issue #7, "an adapter
//! trained here loads in peft").
//!
//! For each variant (q/v projections; all attention + MLP projections): the tiny
//! `ViTForImageClassification` of calibra-models' LoRA fixture, LoRA r 8 / α 16 / dropout 0.05, the
//! classifier head trained in full (`modules_to_save = ["classifier"]`), 32 AdamW steps with
//! [`calibra_train::trainer::train`] on deterministic synthetic images. Asserts that every base
//! weight is bit-identical before and after training, then writes
//!
//! ```text
//! crates/calibra-train/tests/fixtures/lora_trained/
//!   adapter/             adapter_config.json + adapter_model.safetensors   (q_proj, v_proj)
//!   adapter_all_linear/  the same for q/k/v/o_proj + fc1 + fc2
//!   ours.safetensors     pixel_values [3, 3, 30, 30]; logits.<variant> [3, 4] of the trained model
//! ```
//!
//! Deterministic (fixed seeds): re-running rewrites identical files on the same machine.
//! Run: `cargo run -p calibra-train --example lora_trained_adapter`, then the Python script.

use std::collections::BTreeMap;

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::Encoder;
use calibra_models::lora::peft::{AdapterTensor, PeftAdapter};
use calibra_models::lora::{extract_adapter, load_adapter};
use calibra_train::build_loss;
use calibra_train::trainer::{Classifier, train};

#[path = "../tests/support/lora_vit_classifier.rs"]
mod lora_vit_classifier;
use lora_vit_classifier::*;

fn main() {
    let device = Device::flex().autodiff();
    let plain = Device::flex();
    let loss = build_loss::<&str>("ce", &[]).expect("ce is registered");
    let data = train_set();
    let config = train_config();
    let images = eval_images();
    let s = &images.shape;
    let x = |d: &Device| {
        Tensor::<4>::from_data(TensorData::new(images.data.clone(), [s[0], s[1], s[2], s[3]]), d)
    };
    let out_dir = fixture_dir();
    std::fs::create_dir_all(&out_dir).expect("fixture dir");

    let mut ours = BTreeMap::from([("pixel_values".to_string(), images.clone())]);
    for (seed, (variant, targets)) in VARIANTS.iter().enumerate() {
        let model = lora_classifier(targets, 7 + seed as u64, &device);
        let frozen_before = frozen_weights(&model.encoder);
        let head_before = head_to_torch(&model.classifier);
        let outcome =
            train(model, &data, loss.as_ref(), &config, &device, None, &mut |_| {}).expect("training runs");
        let losses = &outcome.losses;
        println!(
            "{variant}: {} steps, loss {:.4} -> {:.4}",
            outcome.total_steps,
            losses[0],
            losses[losses.len() - 1]
        );

        let trained = outcome.model.valid();
        assert!(
            frozen_weights(&trained.encoder) == frozen_before,
            "{variant}: a base weight changed during training"
        );
        let head = head_to_torch(&trained.classifier);
        assert_ne!(head, head_before, "{variant}: the head (modules_to_save) must train");

        let logits: Vec<f32> = trained.logits(x(&plain)).into_data().try_into_vec_as::<f32>().unwrap();
        let adapter = extract_adapter(&trained.encoder, &lora_config(targets), head).expect("extract");
        for (name, f) in &adapter.factors {
            assert!(f.b.data.iter().any(|v| *v != 0.0), "{variant}: `{name}` lora_B never left zero");
        }
        let dir = out_dir.join(variant);
        adapter.write(&dir).expect("write adapter");

        // The files alone reproduce the trained model: a fresh base with the adapter read back.
        let read = PeftAdapter::read(&dir).expect("read back");
        let mut fresh = Encoder::load_dir(&base_dir(), &plain).expect("base");
        load_adapter(&mut fresh, &read, &plain).expect("load adapter");
        let reloaded = logits_with_head(&fresh, &read.saved, &images, &plain);
        let d = max_abs_diff(&reloaded, &logits);
        assert!(d < 1e-5, "{variant}: reloaded adapter logits differ by {d}");
        println!(
            "{variant}: {} modules written to {}; reload |Δlogits| {d:.2e}",
            adapter.factors.len(),
            dir.display()
        );
        ours.insert(format!("logits.{variant}"), AdapterTensor { shape: vec![s[0], CLASSES], data: logits });
    }
    write_safetensors(&out_dir.join("ours.safetensors"), &ours);
}
