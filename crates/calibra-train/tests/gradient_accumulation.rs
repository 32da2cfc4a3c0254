//! Gradient accumulation (issue 16, `--accumulate N`): batches of 8 accumulated twice train what
//! batches of 16 train — the same optimiser steps, losses and weights up to float rounding — for a
//! loss averaged over images; a kill mid-run resumes to the same weights; and a batch-level loss is
//! accumulated micro-batch by micro-batch (so it differs, as documented).
//!
//! Its own test binary: training re-seeds burn's process-wide random stream.

use burn::module::Module;
use burn::tensor::Device;
use calibra_train::build_loss;
use calibra_train::trainer::{TrainConfig, train};

#[path = "support/lora_vit_classifier.rs"]
mod lora_vit_classifier;
use lora_vit_classifier::*;

const TARGETS: &[&str] = &["q_proj", "v_proj"];

/// Every trainable and frozen float of the classifier, flattened.
fn weights(model: &LoraVitClassifier) -> Vec<f32> {
    struct Collect<'a>(&'a mut Vec<f32>);
    impl burn::module::ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, p: &burn::module::Param<burn::tensor::Tensor<D>>) {
            self.0.extend(p.val().into_data().try_into_vec_as::<f32>().unwrap());
        }
    }
    let mut out = Vec::new();
    model.visit(&mut Collect(&mut out));
    out
}

/// `lora_classifier` without LoRA dropout.
fn classifier(device: &Device) -> LoraVitClassifier {
    let mut encoder = calibra_models::Encoder::load_dir(&base_dir(), device).unwrap().no_grad();
    let config = calibra_models::lora::LoraConfig { lora_dropout: 0.0, ..lora_config(TARGETS) };
    calibra_models::lora::apply_lora(&mut encoder, &config, 2).unwrap();
    let (w, b) = base_head();
    LoraVitClassifier { encoder, classifier: head_from_torch(&w, &b, device) }
}

fn run(loss: &str, batch_size: usize, accumulate: usize, epochs: usize) -> (Vec<f64>, Vec<f32>, usize) {
    let device = Device::flex().autodiff();
    let loss = build_loss::<&str>(loss, &[]).unwrap();
    let data = synthetic_set(40, 3);
    // Dropout off (the micro-batches draw their own masks), clipping on (it acts on the summed
    // gradient, so it must see the same norm).
    let model = classifier(&device);
    let config =
        TrainConfig { epochs, batch_size, accumulate, lr: 5e-3, checkpoint_every: 0, ..train_config() };
    let outcome = train(model, &data, loss.as_ref(), &config, &device, None, &mut |_| {}).unwrap();
    (outcome.losses, weights(&outcome.model.valid()), outcome.total_steps)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn two_micro_batches_of_8_train_what_one_batch_of_16_trains() {
    let (whole_losses, whole, whole_steps) = run("ce", 16, 1, 3);
    let (acc_losses, acc, acc_steps) = run("ce", 8, 2, 3);
    // 40 images: batches of 16 → 3 steps per epoch (16, 16, 8); the last accumulated step has one
    // micro-batch of 8.
    assert_eq!((whole_steps, acc_steps), (9, 9));
    for (s, (a, b)) in whole_losses.iter().zip(&acc_losses).enumerate() {
        assert!((a - b).abs() <= 1e-5, "step {s}: loss {b} accumulated, {a} whole");
    }
    let diff = max_diff(&whole, &acc);
    let moved = max_diff(&whole, &run("ce", 16, 1, 1).1);
    eprintln!("max |weight diff| accumulated vs whole: {diff:e} (training moves weights by {moved:e})");
    assert!(diff <= 1e-5, "weights differ by {diff:e}");
    assert!(moved > 1e-3, "the comparison is not vacuous");

    // And accumulation is not a no-op: 8-image steps without it train differently.
    let (_, small, small_steps) = run("ce", 8, 1, 3);
    assert_eq!(small_steps, 15);
    assert!(max_diff(&whole, &small) > 1e-4);
}

#[test]
fn a_batch_level_loss_sees_each_micro_batch() {
    // MDCA's penalty is a batch statistic: over two micro-batches it is not the 16-image one, so
    // the steps differ (README and `TrainConfig::accumulate` say so).
    let (whole, _, _) = run("mdca", 16, 1, 1);
    let (acc, _, _) = run("mdca", 8, 2, 1);
    assert!((whole[0] - acc[0]).abs() > 1e-7, "{whole:?} vs {acc:?}");
}

#[test]
fn accumulate_zero_is_refused() {
    let device = Device::flex().autodiff();
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let config = TrainConfig { accumulate: 0, ..train_config() };
    let err =
        train(classifier(&device), &synthetic_set(8, 1), loss.as_ref(), &config, &device, None, &mut |_| {})
            .unwrap_err()
            .to_string();
    assert!(err.contains("accumulate (0) must be >= 1"), "{err}");
}
