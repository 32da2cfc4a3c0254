//! Patch embedding: a stride-`p` convolution with a `p×p` kernel, flattened to tokens.

use burn::module::Module;
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
        let x = self.projection.forward(images); // [b, d, gh, gw]
        let [b, d, gh, gw] = x.dims();
        x.reshape([b, d, gh * gw]).swap_dims(1, 2)
    }
}
