//! A burn `Linear` with an optional LoRA branch: y = W₀x + b₀ + s · B (A (dropout(x))).

use burn::module::{Module, Param};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::module::linear;
use burn::tensor::{Device, Tensor, TensorData};
use calibra_core::standard_normal;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::branch_dropout::branch_dropout;
use super::config::LoraInit;
use crate::layers::frozen_linear::{TransposeCache, frozen_linear};

/// How to build a fresh branch: rank r, scale s, dropout p, the A initialisation and its seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BranchSettings {
    pub rank: usize,
    pub scale: f64,
    pub dropout: f64,
    pub init: LoraInit,
    pub seed: u64,
}

/// The trainable low-rank branch. Factors are stored in PEFT's layout, `a: [r, in]`, `b: [out, r]`,
/// so saving an adapter is a copy, never a transpose.
#[derive(Module, Debug)]
pub struct LoraBranch {
    /// A ∈ R^{r×in}.
    pub a: Param<Tensor<2>>,
    /// B ∈ R^{out×r} (zero at initialisation).
    pub b: Param<Tensor<2>>,
    /// Dropout on the branch input only (identity when p = 0 or outside training).
    pub dropout: Dropout,
    /// s = alpha / r (or alpha / √r with rsLoRA).
    pub scale: f64,
}

impl LoraBranch {
    /// A fresh branch for a layer with `d_in` inputs and `d_out` outputs: B = 0 and A drawn from
    /// `init` with a ChaCha20 stream seeded by `seed` (never burn's global RNG, so two runs with the
    /// same seed get the same A whatever else ran in the process).
    pub fn new(d_in: usize, d_out: usize, settings: &BranchSettings, device: &Device) -> Self {
        let BranchSettings { rank, scale, dropout, init, seed } = *settings;
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let a: Vec<f32> = match init {
            // kaiming_uniform_(a=√5): gain = √(2/(1+5)), bound = gain·√(3/fan_in) = 1/√fan_in.
            LoraInit::KaimingUniform | LoraInit::Disabled => {
                let bound = 1.0 / (d_in as f64).sqrt();
                (0..rank * d_in).map(|_| rng.random_range(-bound..bound) as f32).collect()
            }
            // nn.init.normal_(A, std=1/r).
            LoraInit::Gaussian => {
                let std = 1.0 / rank as f64;
                (0..rank * d_in).map(|_| (standard_normal(&mut rng) * std) as f32).collect()
            }
        };
        let a = Param::from_data(TensorData::new(a, [rank, d_in]), device);
        let b = Param::from_data(TensorData::zeros::<f32, _>([d_out, rank]), device);
        LoraBranch { a, b, dropout: DropoutConfig::new(dropout).init(), scale }
    }

    /// A branch with given factors (`a: [r, in]`, `b: [out, r]`), e.g. read from a PEFT adapter.
    pub fn from_factors(a: Tensor<2>, b: Tensor<2>, scale: f64, dropout: f64) -> Self {
        LoraBranch {
            a: Param::from_tensor(a),
            b: Param::from_tensor(b),
            dropout: DropoutConfig::new(dropout).init(),
            scale,
        }
    }

    /// The rank r.
    pub fn rank(&self) -> usize {
        self.a.val().dims()[0]
    }

    /// s · B (A (dropout(x))) for `x: [..., in]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        if D > 2 {
            return over_rows(x, |x| self.forward_unfolded(x));
        }
        self.forward_unfolded(x)
    }

    fn forward_unfolded<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let x = branch_dropout(&self.dropout, x);
        let h = linear(x, self.a.val().transpose(), None);
        linear(h, self.b.val().transpose(), None).mul_scalar(self.scale)
    }

    /// The weight update in burn's `[in, out]` layout: s · (B A)ᵀ = s · Aᵀ Bᵀ.
    pub fn delta_weight(&self) -> Tensor<2> {
        self.a.val().transpose().matmul(self.b.val().transpose()).mul_scalar(self.scale)
    }
}

/// A linear layer that may carry a LoRA branch. With no branch it is exactly the wrapped `Linear`
/// (and its parameters keep the `Linear`'s names under `base.`).
#[derive(Module, Debug)]
pub struct LoraLinear {
    /// The frozen pretrained layer (weight `[in, out]`, burn's layout).
    pub base: Linear,
    /// The trainable branch, if this layer is adapted.
    pub lora: Option<LoraBranch>,
    /// Whether the branch has been folded into `base` (then `forward` skips it).
    pub merged: bool,
    /// `W₀ᵀ` row-major for the input gradient while `base` is frozen (not a parameter, never saved).
    #[module(skip)]
    pub transpose_cache: TransposeCache,
}

impl LoraLinear {
    /// Wrap a layer without a branch.
    pub fn plain(base: Linear) -> Self {
        LoraLinear { base, lora: None, merged: false, transpose_cache: TransposeCache::default() }
    }

    /// Wrap a layer and attach `branch`; the base parameters are frozen (no gradient).
    pub fn adapted(base: Linear, branch: LoraBranch) -> Self {
        LoraLinear {
            base: base.no_grad(),
            lora: Some(branch),
            merged: false,
            transpose_cache: TransposeCache::default(),
        }
    }

    /// `(d_in, d_out)` of the base layer.
    pub fn dims(&self) -> (usize, usize) {
        let [d_in, d_out] = self.base.weight.val().dims();
        (d_in, d_out)
    }

    /// W₀x + b₀ + s · B (A (dropout(x))) for `x: [..., in]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        if D > 2 {
            return over_rows(x, |x| self.forward_unfolded(x));
        }
        self.forward_unfolded(x)
    }

    fn forward_unfolded<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match (&self.lora, self.merged) {
            (Some(branch), false) => self.base_forward(x.clone()) + branch.forward(x),
            _ => self.base_forward(x),
        }
    }

    /// W₀x + b₀. A frozen layer (no gradient for its weight or bias: a LoRA base, a CoOp text tower)
    /// goes through [`frozen_linear`], whose backward reuses a row-major `W₀ᵀ` between steps; the
    /// numbers are burn's `linear`'s either way.
    fn base_forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let weight = self.base.weight.val();
        let bias = self.base.bias.as_ref().map(|b| b.val());
        let frozen = !weight.is_require_grad() && bias.as_ref().is_none_or(|b| !b.is_require_grad());
        if D != 2 || !frozen {
            return self.base.forward(x);
        }
        let dims = x.dims();
        let y = frozen_linear(x.reshape([dims[0], dims[1]]), weight, bias, &self.transpose_cache);
        let [rows, out] = y.dims();
        let mut shape = dims;
        (shape[0], shape[D - 1]) = (rows, out);
        y.reshape(shape)
    }

    /// Fold the branch into the base weight: W ← W₀ + s·(BA)ᵀ. A no-op without a branch or when
    /// already merged.
    pub fn merge(mut self) -> Self {
        if let (Some(branch), false) = (&self.lora, self.merged) {
            let delta = branch.delta_weight();
            self.base.weight = self.base.weight.map(|w| w + delta);
            self.merged = true;
        }
        self
    }

    /// Undo [`merge`](Self::merge): W ← W − s·(BA)ᵀ (exact up to float rounding).
    pub fn unmerge(mut self) -> Self {
        if let (Some(branch), true) = (&self.lora, self.merged) {
            let delta = branch.delta_weight();
            self.base.weight = self.base.weight.map(|w| w - delta);
            self.merged = false;
        }
        self
    }

    /// Merge and drop the branch: a plain layer equal to the adapted one (PEFT's `merge_and_unload`).
    pub fn merge_and_unload(self) -> Linear {
        self.merge().base
    }
}

/// `f` applied to `x: [..., in]` seen as one matrix of rows `[N, in]`, the result reshaped back.
///
/// burn's `linear` keeps a `[b, n, in]` input batched (its policy folds the batch into the rows only
/// when that makes the output squarer, which `[32·197, 768]` is not), so flex runs `b` single-threaded
/// products that each pack the weight again, and autodiff's input gradient does the same against the
/// transposed weight. Folding first makes every projection one `[b·n, in] × [in, out]` product, as
/// PyTorch's `linear` does: the ViT-B/16 LoRA step took 28.9 s instead of 32.4 s with it
/// (benches/RESULTS.md, "Training kernels: attention, layer norm and GELU").
fn over_rows<const D: usize>(x: Tensor<D>, f: impl FnOnce(Tensor<2>) -> Tensor<2>) -> Tensor<D> {
    let dims = x.dims();
    let rows: usize = dims[..D - 1].iter().product();
    let y = f(x.reshape([rows, dims[D - 1]]));
    let mut out = dims;
    out[D - 1] = y.dims()[1];
    y.reshape(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::LinearConfig;

    fn settings(rank: usize, scale: f64, seed: u64) -> BranchSettings {
        BranchSettings { rank, scale, dropout: 0.0, init: LoraInit::KaimingUniform, seed }
    }

    fn max_abs_diff(a: Tensor<2>, b: Tensor<2>) -> f32 {
        let d = (a - b).abs().max().into_data();
        d.as_slice::<f32>().unwrap()[0]
    }

    fn input(device: &Device) -> Tensor<2> {
        let v: Vec<f32> = (0..5 * 6).map(|i| ((i * 37 % 11) as f32 - 5.0) / 7.0).collect();
        Tensor::from_data(TensorData::new(v, [5, 6]), device)
    }

    #[test]
    fn a_fresh_branch_leaves_the_layer_unchanged() {
        let device = Device::flex();
        let base = LinearConfig::new(6, 4).init(&device);
        let reference = base.forward(input(&device));
        let branch = LoraBranch::new(6, 4, &settings(2, 8.0, 7), &device);
        let wrapped = LoraLinear::adapted(base, branch);
        assert_eq!(max_abs_diff(wrapped.forward(input(&device)), reference), 0.0);
    }

    #[test]
    fn a_batched_input_is_folded_into_rows_with_the_same_result() {
        let device = Device::flex();
        let base = LinearConfig::new(6, 4).init(&device);
        let mut branch = LoraBranch::new(6, 4, &settings(2, 2.0, 3), &device);
        branch.b = branch.b.map(|b| b.ones_like().mul_scalar(0.25));
        let layer = LoraLinear::adapted(base, branch);
        let x = Tensor::<3>::from_data(
            TensorData::new(
                (0..3 * 5 * 6).map(|i| ((i * 29 % 13) as f32 - 6.0) / 5.0).collect::<Vec<_>>(),
                [3, 5, 6],
            ),
            &device,
        );
        let folded = layer.forward(x.clone());
        let batched = layer.forward_unfolded(x);
        assert_eq!(folded.dims(), [3, 5, 4]);
        let d: f32 = (folded - batched).abs().max().into_scalar();
        assert!(d < 1e-6, "folded and batched products differ by {d}");
    }

    #[test]
    fn kaiming_uniform_bound_and_seed_determinism() {
        let device = Device::flex();
        let a1 = LoraBranch::new(16, 4, &settings(3, 1.0, 11), &device).a.val();
        let a2 = LoraBranch::new(16, 4, &settings(3, 1.0, 11), &device).a.val();
        assert_eq!(a1.dims(), [3, 16]);
        assert_eq!(max_abs_diff(a1.clone(), a2), 0.0);
        let m = a1.abs().max().into_data().as_slice::<f32>().unwrap()[0];
        assert!(m <= 0.25 && m > 0.1, "max |A| = {m}, bound 1/sqrt(16) = 0.25");
    }

    #[test]
    fn branch_equals_the_explicit_formula_and_merge_matches_forward() {
        let device = Device::flex();
        let base = LinearConfig::new(6, 4).init(&device);
        let a: Vec<f32> = (0..2 * 6).map(|i| (i as f32 - 6.0) / 10.0).collect();
        let b: Vec<f32> = (0..4 * 2).map(|i| (3.0 - i as f32) / 5.0).collect();
        let a = Tensor::<2>::from_data(TensorData::new(a, [2, 6]), &device);
        let b = Tensor::<2>::from_data(TensorData::new(b, [4, 2]), &device);
        let x = input(&device);
        // y = x W + bias + s · x Aᵀ Bᵀ, written out with explicit matmuls.
        let expected = base.forward(x.clone())
            + x.clone().matmul(a.clone().transpose()).matmul(b.clone().transpose()).mul_scalar(2.5);
        let layer = LoraLinear::adapted(base, LoraBranch::from_factors(a, b, 2.5, 0.0));
        let y = layer.forward(x.clone());
        assert!(max_abs_diff(y.clone(), expected) < 1e-6);
        let merged = layer.merge();
        assert!(max_abs_diff(merged.forward(x.clone()), y.clone()) < 1e-5);
        let unmerged = merged.unmerge();
        assert!(max_abs_diff(unmerged.forward(x.clone()), y) < 1e-5);
        let plain = unmerged.merge_and_unload();
        assert_eq!(plain.weight.val().dims(), [6, 4]);
    }
}
