//! Streamed training images (issue 16 item 4): a training set above the in-memory limit is read batch
//! by batch from the dataset (decoded, preprocessed, augmented when the step needs it), and trains to
//! the same bits as the same set held in memory, with augmentation and a held-out monitor on.
//!
//! Its own test binary: training re-seeds burn's process-wide random stream.

use burn::module::Module;
use burn::tensor::Device;
use calibra_data::{DatasetSpec, LoadOptions, load_dataset};
use calibra_train::augment::Augment;
use calibra_train::build_loss;
use calibra_train::features::preprocess_for;
use calibra_train::fine_tune::train_set_within;
use calibra_train::train_images::TrainImages;
use calibra_train::trainer::{TrainConfig, TrainSet, train};

#[path = "support/generalist_lora.rs"]
mod generalist_lora;
use generalist_lora::{checkpoint, lora_classifier, weights};

const DATA: &str = "synth:derm?n=24&size=40";

/// The same rows held in memory and streamed, and the number of classes.
fn sets() -> (TrainSet, TrainSet, usize) {
    let dataset = load_dataset(&DatasetSpec::parse(DATA).unwrap(), &LoadOptions::default()).unwrap();
    let preprocess = preprocess_for(&checkpoint()).unwrap();
    let rows: Vec<usize> = (0..dataset.samples.len()).rev().step_by(2).collect();
    let held = train_set_within(&dataset, &rows, &preprocess, usize::MAX).unwrap();
    let streamed = train_set_within(&dataset, &rows, &preprocess, 0).unwrap();
    (held, streamed, dataset.labels.len())
}

fn fit(data: &TrainSet, k: usize) -> (Vec<f64>, Vec<u32>) {
    let device = Device::flex().autodiff();
    let model = lora_classifier(k, &device);
    let config = TrainConfig {
        epochs: 2,
        batch_size: 4,
        lr: 1e-3,
        augment: Augment::CropFlip,
        checkpoint_every: 0,
        ..TrainConfig::default()
    };
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let outcome = train(model, data, loss.as_ref(), &config, &device, None, &mut |_| {}).unwrap();
    (outcome.losses, weights(&outcome.model.valid()))
}

#[test]
fn a_streamed_training_set_gives_the_held_pixels_and_trains_to_the_same_bits() {
    let (held, streamed, k) = sets();
    assert!(matches!(held.images, TrainImages::InMemory { .. }), "{:?}", held.images);
    assert!(matches!(streamed.images, TrainImages::Streamed(..)), "{:?}", streamed.images);
    assert_eq!(held.image_shape, streamed.image_shape);
    let all: Vec<usize> = (0..held.len()).collect();
    assert_eq!(held.pixels(&all).unwrap(), streamed.pixels(&all).unwrap());

    let (held_losses, held_weights) = fit(&held, k);
    let (streamed_losses, streamed_weights) = fit(&streamed, k);
    assert_eq!(held_losses.len(), 6, "12 images in batches of 4, 2 epochs");
    assert_eq!(held_losses, streamed_losses);
    assert!(held_weights == streamed_weights, "streamed training must train to the same weights");
}

#[test]
fn a_streamed_row_outside_the_set_is_an_error_naming_it() {
    let (_, streamed, _) = sets();
    let err = streamed.pixels(&[0, 40]).unwrap_err().to_string();
    assert!(err.contains("training row 40") && err.contains("has 12"), "{err}");
}
