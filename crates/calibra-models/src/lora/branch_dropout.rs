//! The LoRA branch's dropout, with its mask drawn on every CPU thread.
//!
//! It is burn's inverted dropout (`burn::nn::Dropout`): in training, each input is kept with
//! probability `1 − p` and scaled by `1/(1 − p)`, else zeroed; outside training, on a device
//! without autodiff, or at `p = 0`, the input passes unchanged. What differs is how the mask is
//! drawn on the CPU. burn-flex fills a random tensor one element at a time from one generator
//! behind a lock, through `rand`'s Bernoulli sampler: 64 ms for the `[32, 197, 768]` input of one
//! ViT-B/16 projection, on one core while the other waits, 24 times a LoRA step (q and v in 12
//! layers), about a tenth of the step (benches/RESULTS.md, "The LoRA dropout's mask on every
//! thread"). Here one 64-bit key is drawn from burn's random stream (so the trainer's per-step
//! re-seeding from `(seed, step)` still decides every mask, and a resumed run draws the same ones),
//! and the mask is cut into fixed chunks of [`CHUNK`] elements: chunk `c` takes ChaCha8 stream `c`
//! under that key, one `u32` per element, and keeps the element when it is below `(1 − p) · 2³²`.
//! The chunks are fixed by the element count, not by the threads, so the mask does not depend on
//! the thread count.
//!
//! Other devices (wgpu, cuda) keep burn's `Dropout`, whose random tensor is drawn on the device.

use burn::nn::Dropout;
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Mask elements per chunk, and so per ChaCha8 stream (256 KiB of f32).
const CHUNK: usize = 1 << 16;

/// `dropout` (burn's module: its probability and training flag) applied to `x`.
pub(crate) fn branch_dropout<const D: usize>(dropout: &Dropout, x: Tensor<D>) -> Tensor<D> {
    let device = x.device();
    if !dropout.training.is_enabled() || !device.is_autodiff() || dropout.prob == 0.0 {
        return x;
    }
    let cpu = device.clone().inner();
    if cpu != Device::flex() {
        return dropout.forward(x);
    }
    let shape = x.shape();
    let mask = inverted_dropout_mask(shape.num_elements(), 1.0 - dropout.prob, key_from_burns_stream(&cpu));
    x * Tensor::from_data(TensorData::new(mask, shape), &device)
}

/// A 64-bit key from three uniform draws of burn's random stream on `device` (24 random bits each),
/// mixed by splitmix64's finaliser.
fn key_from_burns_stream(device: &Device) -> u64 {
    let draws = Tensor::<1>::random([3], Distribution::Default, device).into_data();
    draws.iter::<f32>().fold(0x9E37_79B9_7F4A_7C15u64, |key, value| {
        let mut z = key.rotate_left(24) ^ u64::from(value.to_bits());
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// `n` mask values: `1/keep` with probability `keep` (to within 2⁻³²), else 0, from `key` as the
/// module docs say.
fn inverted_dropout_mask(n: usize, keep: f64, key: u64) -> Vec<f32> {
    let threshold = (keep * 4_294_967_296.0) as u64;
    let kept = (1.0 / keep) as f32;
    let mut mask = vec![0.0f32; n];
    mask.par_chunks_mut(CHUNK).enumerate().for_each(|(chunk, values)| {
        let mut stream = ChaCha8Rng::seed_from_u64(key);
        stream.set_stream(chunk as u64);
        for value in values {
            *value = if u64::from(stream.next_u32()) < threshold { kept } else { 0.0 };
        }
    });
    mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::DropoutConfig;

    fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a rayon pool").install(f)
    }

    #[test]
    fn the_mask_keeps_about_one_minus_p_and_scales_what_it_keeps() {
        let n = 3 * CHUNK + 123;
        let mask = inverted_dropout_mask(n, 0.95, 42);
        let kept = mask.iter().filter(|&&m| m != 0.0).count();
        assert!(mask.iter().all(|&m| m == 0.0 || m == (1.0 / 0.95f64) as f32));
        // Binomial(n, 0.95): within 5 standard deviations.
        let (expected, deviation) = (0.95 * n as f64, (n as f64 * 0.95 * 0.05).sqrt());
        assert!(
            (kept as f64 - expected).abs() < 5.0 * deviation,
            "kept {kept} of {n}, expected about {expected}"
        );
        // Each chunk is its own stream: chunks are not copies of each other.
        assert_ne!(mask[..CHUNK], mask[CHUNK..2 * CHUNK]);
        assert_ne!(inverted_dropout_mask(n, 0.95, 43), mask, "another key, another mask");
    }

    #[test]
    fn the_mask_is_the_same_at_one_two_and_three_threads() {
        let n = 5 * CHUNK + 7;
        let one = in_pool(1, || inverted_dropout_mask(n, 0.9, 7));
        assert_eq!(in_pool(2, || inverted_dropout_mask(n, 0.9, 7)), one);
        assert_eq!(in_pool(3, || inverted_dropout_mask(n, 0.9, 7)), one);
    }

    #[test]
    fn reseeding_burns_stream_gives_the_same_mask_and_training_only() {
        let device = Device::flex().autodiff();
        let dropout = DropoutConfig::new(0.25).init();
        let x = Tensor::<2>::ones([40, 50], &device).require_grad();
        let draw = || {
            device.seed(11);
            branch_dropout(&dropout, x.clone()).into_data().try_to_vec::<f32>().unwrap()
        };
        let first = draw();
        assert_eq!(draw(), first, "the same seed, the same mask");
        let kept = first.iter().filter(|&&v| v != 0.0).count();
        assert!(first.iter().all(|&v| v == 0.0 || v == (1.0 / 0.75f64) as f32));
        assert!((1300..1700).contains(&kept), "kept {kept} of 2000 at p = 0.25");
        device.seed(12);
        assert_ne!(branch_dropout(&dropout, x.clone()).into_data().try_to_vec::<f32>().unwrap(), first);

        // The gradient is the mask.
        device.seed(11);
        let y = branch_dropout(&dropout, x.clone());
        let grads = y.sum().backward();
        assert_eq!(x.grad(&grads).unwrap().into_data().try_to_vec::<f32>().unwrap(), first);

        // Without autodiff, at p = 0, or frozen: the input itself.
        let plain = Tensor::<2>::ones([4, 5], &Device::flex());
        assert_eq!(branch_dropout(&dropout, plain.clone()).into_data(), plain.into_data());
        let off = DropoutConfig::new(0.0).init();
        assert_eq!(branch_dropout(&off, x.clone()).into_data(), x.clone().into_data());
        let frozen = burn::module::Module::freeze(dropout.clone());
        assert_eq!(branch_dropout(&frozen, x.clone()).into_data(), x.into_data());
    }
}
