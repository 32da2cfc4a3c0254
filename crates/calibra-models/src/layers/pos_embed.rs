//! Resizing learned patch position embeddings to another patch grid.

use burn::prelude::*;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};

/// Bicubic resize of a square grid of patch position embeddings, as in Hugging Face
/// `ViTEmbeddings.interpolate_pos_encoding` / `Dinov2Embeddings.interpolate_pos_encoding`
/// (transformers 5.24):
///
/// `pos: [1, g·g, d]` is reshaped to `[1, d, g, g]`, resized with
/// `interpolate(size=(new_h, new_w), mode="bicubic", align_corners=False)` (cubic convolution,
/// `A = -0.75`, half-pixel centres, border-clamped taps), and flattened back to
/// `[1, new_h·new_w, d]` in row-major order.
///
/// Edge cases: returns `pos` unchanged when `(new_h, new_w) == (g, g)`.
///
/// # Panics
/// If the number of positions is not a perfect square.
pub fn interpolate_patch_positions(pos: Tensor<3>, new_h: usize, new_w: usize) -> Tensor<3> {
    let [_, n, d] = pos.dims();
    let g = (n as f64).sqrt().round() as usize;
    assert_eq!(g * g, n, "position embeddings: {n} patch positions is not a square grid");
    if g == new_h && g == new_w {
        return pos;
    }
    let grid = pos.reshape([1, g, g, d]).permute([0, 3, 1, 2]);
    let mut options = InterpolateOptions::new(InterpolateMode::Bicubic);
    options.align_corners = false;
    options.output_size = Some([new_h, new_w]);
    let resized = interpolate(grid, options); // [1, d, new_h, new_w]
    resized.permute([0, 2, 3, 1]).reshape([1, new_h * new_w, d])
}
