//! Patch embedding: a stride-`p` convolution with a `p×p` kernel, flattened to tokens.
//!
//! The patches of such a convolution do not overlap, so it is computed as one matrix product of the
//! patches (each flattened to `c·p·p` values) with the kernel (flattened to `[d, c·p·p]`): the same sums
//! in another order. On the GPU backends this is what makes the patch embedding cheap: cubecl's direct
//! convolution kernel took 48 ms of a 263-ms ViT-B/16 LoRA step on an NVIDIA H200 (benches/RESULTS.md
//! "On a GPU again"), for 1.3 % of the step's arithmetic. The weights stay a `Conv2d` (checkpoint keys and
//! layout unchanged); a convolution with any other stride, padding, dilation or groups runs as one.

use burn::module::Module;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::prelude::*;

/// Configuration of [`PatchEmbedding`].
#[derive(Config, Debug)]
pub struct PatchEmbeddingConfig {
    /// Input channels (3 for RGB).
    pub in_channels: usize,
    /// Output width `d`.
    pub d_model: usize,
    /// Patch side `p` (kernel = stride = p, no padding).
    pub patch_size: usize,
    /// Convolution bias (true for ViT/DINOv2/SigLIP, false for CLIP).
    #[config(default = true)]
    pub bias: bool,
}

/// `[b, c, H, W]` → `[b, (H/p)·(W/p), d]`, tokens in row-major patch order (HF `flatten(2).transpose(1, 2)`).
/// Trailing pixels that do not fill a patch are dropped, as in PyTorch's strided convolution.
#[derive(Module, Debug)]
pub struct PatchEmbedding {
    /// The patch convolution (HF key `projection`; weight `[d, c, p, p]`, same layout in burn).
    pub projection: Conv2d,
}

impl PatchEmbeddingConfig {
    /// Builds the module with random weights.
    pub fn init(&self, device: &Device) -> PatchEmbedding {
        let p = self.patch_size;
        PatchEmbedding {
            projection: Conv2dConfig::new([self.in_channels, self.d_model], [p, p])
                .with_stride([p, p])
                .with_bias(self.bias)
                .init(device),
        }
    }
}

impl PatchEmbedding {
    /// Patch grid `(H/p, W/p)` for an input of `height × width` pixels.
    pub fn grid(&self, height: usize, width: usize) -> (usize, usize) {
        let [ph, pw] = self.projection.kernel_size;
        (height / ph, width / pw)
    }

    /// `[b, c, H, W]` → `[b, n_patches, d]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<3> {
        let [b, c, h, w] = images.dims();
        let (gh, gw) = self.grid(h, w);
        if !self.patches_do_not_overlap() || gh == 0 || gw == 0 {
            return self.by_convolution(images);
        }
        let conv = &self.projection;
        let [ph, pw] = conv.kernel_size;
        // Trailing pixels that do not fill a patch are dropped, as the strided convolution drops them.
        let images = if h == gh * ph && w == gw * pw {
            images
        } else {
            images.slice([0..b, 0..c, 0..gh * ph, 0..gw * pw])
        };
        // [b, c, gh, ph, gw, pw] → [b, gh, gw, c, ph, pw] → one row of c·ph·pw values per patch, in
        // row-major patch order and in the kernel's (channel, row, column) order.
        let patches = images
            .reshape([b, c, gh, ph, gw, pw])
            .permute([0, 2, 4, 1, 3, 5])
            .reshape([b * gh * gw, c * ph * pw]);
        let [d, ..] = conv.weight.dims();
        let kernel = conv.weight.val().reshape([d, c * ph * pw]).transpose(); // [c·ph·pw, d]
        let mut tokens = patches.matmul(kernel);
        if let Some(bias) = &conv.bias {
            tokens = tokens + bias.val().unsqueeze_dim::<2>(0);
        }
        tokens.reshape([b, gh * gw, d])
    }

    /// The convolution itself, flattened to tokens.
    fn by_convolution(&self, images: Tensor<4>) -> Tensor<3> {
        let x = self.projection.forward(images); // [b, d, gh, gw]
        let [b, d, gh, gw] = x.dims();
        x.reshape([b, d, gh * gw]).swap_dims(1, 2)
    }

    /// Kernel = stride, no padding, no dilation, one group: the convolution is a matrix product.
    fn patches_do_not_overlap(&self) -> bool {
        let conv = &self.projection;
        conv.stride == conv.kernel_size
            && conv.dilation == [1, 1]
            && conv.groups == 1
            && matches!(conv.padding, PaddingConfig2d::Valid | PaddingConfig2d::Explicit(0, 0, 0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    #[test]
    fn the_matrix_product_equals_the_strided_convolution() {
        let device = Device::flex();
        device.seed(7);
        // (channels, d, patch, height, width, bias): square and not, trailing pixels dropped, no bias.
        for (c, d, p, h, w, bias) in
            [(3, 8, 4, 16, 16, true), (3, 5, 4, 18, 13, true), (1, 6, 2, 6, 8, false), (4, 3, 3, 9, 9, true)]
        {
            let embedding =
                PatchEmbeddingConfig { in_channels: c, d_model: d, patch_size: p, bias }.init(&device);
            assert!(embedding.patches_do_not_overlap());
            let images = Tensor::<4>::random([2, c, h, w], Distribution::Normal(0.0, 1.0), &device);
            let expected = embedding.by_convolution(images.clone());
            let got = embedding.forward(images);
            assert_eq!(got.dims(), expected.dims(), "c {c} d {d} p {p} {h}x{w}");
            let diff = (got - expected).abs().max().into_scalar::<f32>();
            assert!(diff <= 1e-5, "c {c} d {d} p {p} {h}x{w}: max difference {diff}");
        }
    }

    #[test]
    fn an_overlapping_convolution_still_runs_as_one() {
        let device = Device::flex();
        let mut embedding =
            PatchEmbeddingConfig { in_channels: 2, d_model: 4, patch_size: 4, bias: true }.init(&device);
        embedding.projection.stride = [2, 2];
        assert!(!embedding.patches_do_not_overlap());
        let images = Tensor::<4>::random([1, 2, 8, 8], Distribution::Normal(0.0, 1.0), &device);
        let expected = embedding.by_convolution(images.clone());
        assert_eq!(embedding.forward(images).into_data(), expected.into_data());
    }
}
