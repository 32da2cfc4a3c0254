//! The trainer end to end on a tiny network: it learns, it is deterministic, and a run killed
//! between checkpoints resumes to bit-identical weights and losses.
//!
//! Its own test binary (process) on purpose: burn's random stream (dropout masks) is process-wide,
//! so no other test may draw from it while these run.

use std::fs;
use std::path::Path;

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig, Relu};
use burn::tensor::{Device, Tensor};
use calibra_train::build_loss;
use calibra_train::trainer::{Classifier, TrainConfig, TrainSet, train};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A small MLP with dropout over flattened images: enough to exercise the AdamW moments, clipping,
/// the schedule and the dropout stream.
#[derive(Module, Debug)]
struct TinyNet {
    fc1: Linear,
    dropout: Dropout,
    act: Relu,
    fc2: Linear,
}

impl TinyNet {
    fn new(device: &Device) -> Self {
        device.seed(17);
        TinyNet {
            fc1: LinearConfig::new(12, 16).init(device),
            dropout: DropoutConfig::new(0.2).init(),
            act: Relu::new(),
            fc2: LinearConfig::new(16, 3).init(device),
        }
    }
}

impl Classifier for TinyNet {
    fn logits(&self, images: Tensor<4>) -> Tensor<2> {
        let [b, ..] = images.dims();
        let x = images.reshape([b, 12]);
        self.fc2.forward(self.act.forward(self.dropout.forward(self.fc1.forward(x))))
    }
}

fn data() -> TrainSet {
    let n = 23;
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let labels: Vec<usize> = (0..n).map(|i| i % 3).collect();
    let pixels = (0..n * 12)
        .map(|j| labels[j / 12] as f32 * 0.5 * ((j % 12) as f32 / 12.0) + rng.random_range(-0.5f32..0.5))
        .collect();
    TrainSet::classes([3, 2, 2], pixels, labels)
}

fn weights(m: &TinyNet) -> Vec<f32> {
    let mut v = m.fc1.weight.val().into_data().try_to_vec::<f32>().unwrap();
    v.extend(m.fc2.weight.val().into_data().try_to_vec::<f32>().unwrap());
    v
}

fn checkpoint_step(dir: &Path) -> usize {
    let text = fs::read_to_string(dir.join("checkpoint/state.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["step"].as_u64().unwrap() as usize
}

// One test function, so that nothing re-seeds burn's process-wide RNG concurrently.
#[test]
fn training_learns_is_deterministic_and_resumes_to_identical_weights() {
    let device = Device::flex().autodiff();
    let loss = build_loss::<&str>("ce", &[]).unwrap();
    let data = data();
    let cfg =
        TrainConfig { epochs: 4, batch_size: 5, lr: 1e-2, checkpoint_every: 3, ..TrainConfig::default() };

    let full = train(TinyNet::new(&device), &data, loss.as_ref(), &cfg, &device, None, &mut |_| {}).unwrap();
    assert_eq!(full.total_steps, 20);
    assert!(full.losses[19] < full.losses[0], "the loss should fall: {:?}", full.losses);
    let again = train(TinyNet::new(&device), &data, loss.as_ref(), &cfg, &device, None, &mut |_| {}).unwrap();
    assert_eq!(weights(&full.model), weights(&again.model), "same seed, same weights");

    // Killed during step 8: the newest checkpoint on disk is step 6. The unwind out of the progress
    // callback abandons the run exactly as a kill would (nothing after it runs).
    let dir = tempfile::tempdir().unwrap();
    let interrupted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        train(TinyNet::new(&device), &data, loss.as_ref(), &cfg, &device, Some(dir.path()), &mut |r| {
            if r.step == 8 {
                std::panic::resume_unwind(Box::new("simulated kill"));
            }
        })
    }));
    assert!(interrupted.is_err());
    assert_eq!(checkpoint_step(dir.path()), 6);

    // A process-like restart: a new model object (new parameter ids), a new optimizer.
    let resumed =
        train(TinyNet::new(&device), &data, loss.as_ref(), &cfg, &device, Some(dir.path()), &mut |_| {})
            .unwrap();
    assert_eq!(resumed.resumed_from, Some(6));
    assert_eq!(resumed.losses, full.losses);
    assert_eq!(weights(&resumed.model), weights(&full.model), "resume must give the uninterrupted weights");
    assert_eq!(checkpoint_step(dir.path()), 20);

    // A checkpoint of another config is refused, not silently mixed in.
    let other = TrainConfig { lr: 5e-3, ..cfg.clone() };
    let err =
        train(TinyNet::new(&device), &data, loss.as_ref(), &other, &device, Some(dir.path()), &mut |_| {})
            .unwrap_err();
    assert!(err.to_string().contains("another config"), "{err}");
}
