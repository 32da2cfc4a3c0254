//! Results on the CPU backend do not depend on the thread count (README "Guarantees").
//!
//! burn's flex backend is built with `rayon` (and `simd`, `x86-v4`): gemm splits large matrix
//! products over the pool, attention and the row-wise kernels run rows in parallel. Each of those
//! gives every output element to one thread with a fixed order of accumulation, so the bits cannot
//! depend on how many threads there are. One flex op does not: the whole-tensor `sum` of 4 Mi
//! elements or more adds 64 Ki-element chunks in a rayon reduction tree whose shape follows the
//! pool. calibra's only whole-tensor sum of a possibly large tensor, the squared gradient norm of
//! `clip_grad_norm`, reduces rows first for that reason; the third part here pins it.
//!
//! Each case runs the same computation in rayon pools of 1, 2 and 3 threads and compares bits.
//! One test function: burn's random stream (dropout masks, initialisation) is process-wide.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_models::hf::HfConfig;
use calibra_models::layers::Activation;
use calibra_models::lora::{LoraConfig, TargetModules};
use calibra_models::vit::VitConfig;
use calibra_models::{Encoder, EncoderModel};
use calibra_train::build_loss;
use calibra_train::clip_grad_norm;
use calibra_train::fine_tune::{Adaptation, EncoderClassifier};
use calibra_train::trainer::{TrainConfig, TrainSet, train};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

const THREADS: [usize; 3] = [1, 2, 3];
const BATCH: usize = 16;
const CLASSES: usize = 4;

/// Hidden 96, 4 layers, 3 heads, MLP 384, 32 px, patch 4: 65 tokens, so at batch 16 the MLP's
/// matrix products (1040 × 384 × 96) are above flex's threshold for a parallel gemm.
fn tiny_vit() -> VitConfig {
    VitConfig::new(96, 4, 3, 384, Activation::GeluExact, 32, 4)
}

fn in_pool<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a rayon pool").install(work)
}

fn encoder(device: &Device) -> Encoder {
    device.seed(7);
    let config = HfConfig::from_value("thread determinism", serde_json::json!({ "model_type": "vit" }));
    Encoder { model: EncoderModel::Vit(tiny_vit().init(device)), config }
}

fn images(seed: u64) -> Vec<f32> {
    let side = tiny_vit().image_size;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..BATCH * 3 * side * side).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().expect("f32 tensor")
}

/// The CLS features of one batch (inference, no autodiff).
fn forward_features() -> Vec<f32> {
    let device = Device::flex();
    let encoder = encoder(&device);
    let side = tiny_vit().image_size;
    let x = Tensor::<4>::from_data(TensorData::new(images(1), [BATCH, 3, side, side]), &device);
    floats(encoder.embed(x).expect("the batch fits the encoder"))
}

/// Four epochs of LoRA (r 4, dropout 0.1 so that the mask stream is exercised) plus a head, with
/// global-norm clipping and AdamW, on the classifier `calibra train` fine-tunes: every step's loss,
/// then the head weights and every LoRA factor.
fn lora_training() -> (Vec<f64>, Vec<f32>) {
    let device = Device::flex().autodiff();
    let lora = LoraConfig {
        r: 4,
        lora_alpha: 8.0,
        lora_dropout: 0.1,
        target_modules: Some(TargetModules::Names(vec!["q_proj".into(), "v_proj".into()])),
        modules_to_save: Some(vec!["classifier".into()]),
        ..LoraConfig::default()
    };
    let adaptation = Adaptation::Lora(Box::new(lora));
    let (model, _) =
        EncoderClassifier::new(encoder(&device), tiny_vit().hidden_size, CLASSES, &adaptation, 3, &device)
            .expect("q/v exist");
    let side = tiny_vit().image_size;
    let labels = (0..BATCH).map(|i| i % CLASSES).collect();
    let data = TrainSet::classes([3, side, side], images(2), labels);
    let config = TrainConfig {
        epochs: 4,
        batch_size: 8,
        lr: 1e-2,
        checkpoint_every: 0,
        max_grad_norm: Some(0.5),
        ..TrainConfig::default()
    };
    let loss = build_loss::<&str>("ce", &[]).expect("ce");
    let outcome = train(model, &data, loss.as_ref(), &config, &device, None, &mut |_| {}).expect("trains");
    let mut weights = floats(outcome.model.head.weight.val());
    let mut factors = Vec::new();
    outcome.model.encoder.visit(&mut CollectFloats(&mut factors));
    weights.extend(factors);
    (outcome.losses, weights)
}

/// Every float parameter of a module, flattened, in visiting order.
struct CollectFloats<'a>(&'a mut Vec<f32>);

impl burn::module::ModuleVisitor for CollectFloats<'_> {
    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        self.0.extend(floats(param.val()));
    }
}

#[derive(Module, Debug)]
struct Wide {
    layer: Linear,
}

/// The global gradient norm of a 2048 × 2048 layer (4 Mi weights, the size at which flex's
/// whole-tensor sum turns parallel).
fn wide_gradient_norm() -> u64 {
    let device = Device::flex().autodiff();
    device.seed(11);
    let model = Wide { layer: LinearConfig::new(2048, 2048).init(&device) };
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let x: Vec<f32> = (0..3 * 2048).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let x = Tensor::<2>::from_data(TensorData::new(x, [3, 2048]), &device);
    let loss = model.layer.forward(x).powf_scalar(2.0).mean();
    let mut grads = GradientsParams::from_grads(loss.backward(), &model);
    clip_grad_norm(&model, &mut grads, 1.0).expect("finite").total_norm.to_bits()
}

#[test]
fn cpu_results_are_bit_identical_at_one_two_and_three_threads() {
    let reference = bits(&forward_features());
    for threads in &THREADS[1..] {
        assert_eq!(bits(&in_pool(*threads, forward_features)), reference, "ViT forward at {threads} threads");
    }

    let (losses, weights) = in_pool(1, lora_training);
    assert!(losses.iter().all(|l| l.is_finite()) && losses.len() == 8, "{losses:?}");
    for threads in &THREADS[1..] {
        let (l, w) = in_pool(*threads, lora_training);
        let same_losses = l.iter().zip(&losses).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same_losses, "LoRA losses at {threads} threads: {l:?} vs {losses:?}");
        assert_eq!(bits(&w), bits(&weights), "LoRA and head weights at {threads} threads");
    }

    let norm = in_pool(1, wide_gradient_norm);
    for threads in &THREADS[1..] {
        assert_eq!(in_pool(*threads, wide_gradient_norm), norm, "gradient norm at {threads} threads");
    }
}
