//! The row-wise CPU kernels of the differentiable attention (`softmax_attention.rs`): the scaled
//! softmax of the scores, and the scores' gradient.
//!
//! The tracked attention keeps a `[batch, heads, tokens, tokens]` probability tensor (60 MB per
//! layer for a ViT-B/16 batch of 32). Written as burn ops, each step around it is one more pass over
//! that tensor, and flex runs such passes on one thread: the forward multiplied the scores by the
//! scale, then took a softmax into a fresh, zeroed buffer; the backward formed `dP − D`, then
//! `P ⊙ (dP − D)`, and the row dots `D = rowsum(dO ⊙ O)` and the two scaled gradients took three
//! more passes over `[.., tokens, head size]` tensors. Here each is one pass over the rows, on the
//! rayon pool, written over a tensor nothing else holds:
//!
//! - [`scaled_softmax_in_place`]: `P = softmax(s · S)` row by row (with the causal mask of CLIP's
//!   text tower: `P_ij = 0` for `j > i`), over the scores `S` the product just made;
//! - [`scaled_score_gradient_in_place`]: `s · dS = s · P ⊙ (dP − D)` with `D_i = dO_i · O_i`, over
//!   `dP`, so that `dQ = (s·dS) k` and `dK = (s·dS)ᵀ q` need no scaling of their own.
//!
//! **Determinism.** A row is computed by one thread, and its reductions (the maximum, the sum of
//! exponentials, the dot product) keep [`LANES`] fixed partial results added pairwise, whatever the
//! SIMD width; no multiply-add is fused (Rust never does so on its own). A value depends on its row
//! alone, so the thread count cannot change it. The exponential is `vector_math`'s (within 2 ulps).
//!
//! Tensors that are not f32, not 4-D, or whose storage something else holds are handed back
//! (`Err`), and the caller takes burn's ops instead.

use burn::backend::flex::FlexTensor;
use burn::tensor::DType;
use rayon::prelude::*;

use super::vector_math::exp;

/// Partial results per row reduction: a fixed count, so that a row's result does not depend on the
/// SIMD width the loop is compiled for.
const LANES: usize = 16;

/// Rows per rayon task (64 rows of 197 scores is 50 KB).
const ROWS_PER_TASK: usize = 64;

/// The rows of a 4-D f32 tensor `[batch, heads, tokens, width]` whose last dimension is contiguous,
/// read in place through its strides (the attention output's gradient arrives as a head view of a
/// `[batch, tokens, hidden]` tensor).
struct StridedRows<'a> {
    values: &'a [f32],
    start: usize,
    strides: [usize; 3],
    heads: usize,
    tokens: usize,
    width: usize,
}

impl<'a> StridedRows<'a> {
    /// `None` when `t` is not 4-D f32 with a contiguous last dimension and non-negative strides.
    fn of(t: &'a FlexTensor) -> Option<Self> {
        let layout = t.layout();
        let (shape, strides) = (layout.shape(), layout.strides());
        if t.dtype() != DType::F32
            || shape.num_dims() != 4
            || (strides[3] != 1 && shape[3] != 1)
            || strides.iter().any(|&s| s < 0)
        {
            return None;
        }
        Some(Self {
            values: t.storage::<f32>(),
            start: layout.start_offset(),
            strides: [strides[0] as usize, strides[1] as usize, strides[2] as usize],
            heads: shape[1],
            tokens: shape[2],
            width: shape[3],
        })
    }

    /// Row `r` in row-major order of `[batch, heads, tokens]`.
    #[inline(always)]
    fn row(&self, r: usize) -> &'a [f32] {
        let token = r % self.tokens;
        let head = (r / self.tokens) % self.heads;
        let batch = r / (self.tokens * self.heads);
        let first = self.start + batch * self.strides[0] + head * self.strides[1] + token * self.strides[2];
        &self.values[first..first + self.width]
    }
}

/// `t` when it is a 4-D f32 tensor, row-major from offset 0, whose storage nothing else holds.
fn unique_row_major(t: FlexTensor) -> Result<FlexTensor, FlexTensor> {
    let plain = t.dtype() == DType::F32
        && t.layout().num_dims() == 4
        && matches!(t.layout().contiguous_offsets(), Some((0, _)));
    if plain && t.is_unique() { Ok(t) } else { Err(t) }
}

/// `max(a, b)` that the compiler vectorises (`f32::max`'s NaN rule costs a blend; the scores are
/// finite here).
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The sum of the lanes, added pairwise in a fixed tree.
#[inline(always)]
fn lane_sum(mut lanes: [f32; LANES]) -> f32 {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            lanes[l] += lanes[l + width];
        }
    }
    lanes[0]
}

/// `softmax(scale · scores)` over the last dimension, written over `scores`; with `causal`, row `i`
/// of every head covers columns `0..=i` and the rest are 0. `Err(scores)` unchanged when the kernel
/// does not apply (see the module docs).
pub(crate) fn scaled_softmax_in_place(
    scores: FlexTensor,
    scale: f32,
    causal: bool,
) -> Result<FlexTensor, FlexTensor> {
    let mut scores = unique_row_major(scores)?;
    let shape = scores.layout().shape().clone();
    let (tokens, width) = (shape[2], shape[3]);
    if width == 0 {
        return Ok(scores);
    }
    let n = scores.layout().num_elements();
    let arch = pulp::Arch::new();
    scores.storage_mut::<f32>()[..n].par_chunks_mut(ROWS_PER_TASK * width).enumerate().for_each(
        |(task, values)| {
            let first_row = task * ROWS_PER_TASK;
            arch.dispatch(SoftmaxRows { values, first_row, tokens, width, scale, causal });
        },
    );
    Ok(scores)
}

/// One task of [`scaled_softmax_in_place`].
struct SoftmaxRows<'a> {
    values: &'a mut [f32],
    first_row: usize,
    tokens: usize,
    width: usize,
    scale: f32,
    causal: bool,
}

impl pulp::WithSimd for SoftmaxRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let scale = self.scale;
        for (offset, row) in self.values.chunks_exact_mut(self.width).enumerate() {
            // Causal: the query at token `i` sees keys `0..=i`.
            let live = if self.causal {
                ((self.first_row + offset) % self.tokens + 1).min(self.width)
            } else {
                self.width
            };
            let (row, masked) = row.split_at_mut(live);

            let mut maxima = [f32::NEG_INFINITY; LANES];
            let mut blocks = row.chunks_exact(LANES);
            for block in &mut blocks {
                for l in 0..LANES {
                    maxima[l] = larger(maxima[l], block[l] * scale);
                }
            }
            for (l, &x) in blocks.remainder().iter().enumerate() {
                maxima[l] = larger(maxima[l], x * scale);
            }
            let max = maxima.into_iter().fold(f32::NEG_INFINITY, larger);

            let mut sums = [0.0f32; LANES];
            let mut blocks = row.chunks_exact_mut(LANES);
            for block in &mut blocks {
                for l in 0..LANES {
                    let e = exp(block[l] * scale - max);
                    block[l] = e;
                    sums[l] += e;
                }
            }
            for (l, x) in blocks.into_remainder().iter_mut().enumerate() {
                let e = exp(*x * scale - max);
                *x = e;
                sums[l] += e;
            }
            let sum = lane_sum(sums);
            for x in row.iter_mut() {
                *x /= sum;
            }
            masked.fill(0.0);
        }
    }
}

/// `scale · P ⊙ (dP − D)`, `D_i = d_out_i · output_i` (the row dot over the head size), written
/// over `d_probabilities`. `P` and `dP` are `[batch, heads, tokens, tokens]`; `output` (`O`) and
/// `d_out` (`dO`) are `[batch, heads, tokens, head size]`, read through their strides.
/// `Err(d_probabilities)` unchanged when the kernel does not apply (see the module docs).
pub(crate) fn scaled_score_gradient_in_place(
    probabilities: &FlexTensor,
    d_probabilities: FlexTensor,
    output: &FlexTensor,
    d_out: &FlexTensor,
    scale: f32,
) -> Result<FlexTensor, FlexTensor> {
    let mut d_probabilities = unique_row_major(d_probabilities)?;
    let shape = d_probabilities.layout().shape().clone();
    let (Some(p), Some(o), Some(d_o)) =
        (StridedRows::of(probabilities), StridedRows::of(output), StridedRows::of(d_out))
    else {
        return Err(d_probabilities);
    };
    let rows_shape = |t: &FlexTensor| t.layout().shape()[..3] == shape[..3];
    if probabilities.layout().shape() != &shape
        || !rows_shape(output)
        || output.layout().shape() != d_out.layout().shape()
    {
        return Err(d_probabilities);
    }
    let width = shape[3];
    if width == 0 {
        return Ok(d_probabilities);
    }
    let n = d_probabilities.layout().num_elements();
    let arch = pulp::Arch::new();
    d_probabilities.storage_mut::<f32>()[..n].par_chunks_mut(ROWS_PER_TASK * width).enumerate().for_each(
        |(task, values)| {
            let first_row = task * ROWS_PER_TASK;
            arch.dispatch(ScoreGradientRows { values, first_row, width, p: &p, o: &o, d_o: &d_o, scale });
        },
    );
    Ok(d_probabilities)
}

/// One task of [`scaled_score_gradient_in_place`].
struct ScoreGradientRows<'a, 'b> {
    values: &'a mut [f32],
    first_row: usize,
    width: usize,
    p: &'a StridedRows<'b>,
    o: &'a StridedRows<'b>,
    d_o: &'a StridedRows<'b>,
    scale: f32,
}

impl pulp::WithSimd for ScoreGradientRows<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let scale = self.scale;
        for (offset, d_p) in self.values.chunks_exact_mut(self.width).enumerate() {
            let r = self.first_row + offset;
            let (o, d_o) = (self.o.row(r), self.d_o.row(r));
            let mut dots = [0.0f32; LANES];
            let mut o_blocks = o.chunks_exact(LANES);
            let mut d_o_blocks = d_o.chunks_exact(LANES);
            for (a, b) in (&mut o_blocks).zip(&mut d_o_blocks) {
                for l in 0..LANES {
                    dots[l] += a[l] * b[l];
                }
            }
            for (l, (a, b)) in o_blocks.remainder().iter().zip(d_o_blocks.remainder()).enumerate() {
                dots[l] += a * b;
            }
            let dot = lane_sum(dots);
            for (g, &p) in d_p.iter_mut().zip(self.p.row(r)) {
                *g = scale * (p * (*g - dot));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::test_tensors::pseudo_random_values;
    use burn::backend::ops::FloatTensorOps;
    use burn::tensor::TensorData;

    /// `[batch, heads, tokens, width]` values in `[-half_width, half_width)`, from a fixed stream.
    fn tensor(shape: [usize; 4], seed: u64, half_width: f32) -> FlexTensor {
        let values = pseudo_random_values(shape.iter().product(), seed, half_width);
        FlexTensor::from_data(TensorData::new(values, shape))
    }

    /// Values in row-major order of the tensor's shape, whatever its layout.
    fn values(t: &FlexTensor) -> Vec<f32> {
        let t = t.to_contiguous();
        t.storage::<f32>()[t.layout().start_offset()..][..t.layout().num_elements()].to_vec()
    }

    /// `[batch, heads, tokens, width]` as the head view of a `[batch, tokens, heads, width]` tensor,
    /// as a model's attention sees its projections and their gradients.
    fn head_view(shape: [usize; 4], seed: u64) -> FlexTensor {
        let [b, h, t, w] = shape;
        tensor([b, t, h, w], seed, 1.0).transpose(1, 2)
    }

    /// Rows 37 wide (two blocks of lanes and a remainder), 2·3·37 = 222 rows (four rayon tasks).
    const SCORES: [usize; 4] = [2, 3, 37, 37];
    const HEAD_SIZE: usize = 20;
    const SCALE: f32 = 0.223_606_8; // 1/√20

    /// The f64 softmax of `scale · row` over its first `live` entries.
    fn softmax_f64(row: &[f32], live: usize) -> Vec<f64> {
        let scaled: Vec<f64> = row[..live].iter().map(|&x| x as f64 * SCALE as f64).collect();
        let max = scaled.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = scaled.iter().map(|x| (x - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        exps.iter().map(|e| e / sum).collect()
    }

    #[test]
    fn scaled_softmax_follows_the_f64_softmax_with_and_without_the_causal_mask() {
        for causal in [false, true] {
            let scores = tensor(SCORES, 7, 12.0);
            let input = values(&scores);
            let before = scores.storage::<f32>().as_ptr();
            let probabilities = scaled_softmax_in_place(scores, SCALE, causal).expect("the kernel applies");
            assert_eq!(probabilities.storage::<f32>().as_ptr(), before, "written over the scores");
            let ours = values(&probabilities);
            let width = SCORES[3];
            for (r, (row, got)) in input.chunks(width).zip(ours.chunks(width)).enumerate() {
                let live = if causal { r % SCORES[2] + 1 } else { width };
                for (j, (&p, reference)) in got.iter().zip(softmax_f64(row, live)).enumerate() {
                    let error = (p as f64 - reference).abs();
                    assert!(error <= 2e-6 * reference, "row {r} column {j}: {p} against {reference}");
                }
                assert!(got[live..].iter().all(|&p| p == 0.0), "row {r}: masked columns are 0");
            }
        }
    }

    /// The f64 `scale · P ⊙ (dP − dO·O)`, row-major.
    fn score_gradient_f64(p: &[f32], d_p: &[f32], o: &[f32], d_o: &[f32]) -> Vec<f64> {
        let width = SCORES[3];
        let mut out = Vec::with_capacity(p.len());
        for (r, (p, d_p)) in p.chunks(width).zip(d_p.chunks(width)).enumerate() {
            let row = r * HEAD_SIZE..(r + 1) * HEAD_SIZE;
            let dot: f64 = o[row.clone()].iter().zip(&d_o[row]).map(|(&a, &b)| a as f64 * b as f64).sum();
            out.extend(p.iter().zip(d_p).map(|(&p, &g)| SCALE as f64 * p as f64 * (g as f64 - dot)));
        }
        out
    }

    #[test]
    fn scaled_score_gradient_follows_f64_with_a_strided_output_gradient() {
        let p = scaled_softmax_in_place(tensor(SCORES, 1, 8.0), SCALE, false).unwrap();
        let d_p = tensor(SCORES, 2, 1.0);
        let output = tensor([2, 3, 37, HEAD_SIZE], 3, 1.0);
        let d_out = head_view([2, 3, 37, HEAD_SIZE], 4);
        let reference = score_gradient_f64(&values(&p), &values(&d_p), &values(&output), &values(&d_out));
        let before = d_p.storage::<f32>().as_ptr();
        let ours =
            scaled_score_gradient_in_place(&p, d_p, &output, &d_out, SCALE).expect("the kernel applies");
        assert_eq!(ours.storage::<f32>().as_ptr(), before, "written over dP");
        for (i, (&g, reference)) in values(&ours).iter().zip(reference).enumerate() {
            assert!(
                (g as f64 - reference).abs() <= 1e-6 * (1.0 + reference.abs()),
                "{i}: {g} against {reference}"
            );
        }
    }

    fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a rayon pool").install(f)
    }

    #[test]
    fn results_are_bit_identical_at_one_two_and_three_threads() {
        let run = || {
            let p = scaled_softmax_in_place(tensor(SCORES, 5, 6.0), SCALE, true).unwrap();
            let d_out = head_view([2, 3, 37, HEAD_SIZE], 8);
            let output = tensor([2, 3, 37, HEAD_SIZE], 9, 1.0);
            let d_s =
                scaled_score_gradient_in_place(&p, tensor(SCORES, 6, 1.0), &output, &d_out, SCALE).unwrap();
            let bits = |t: &FlexTensor| values(t).into_iter().map(f32::to_bits).collect::<Vec<_>>();
            (bits(&p), bits(&d_s))
        };
        let one = in_pool(1, run);
        assert_eq!(in_pool(2, run), one);
        assert_eq!(in_pool(3, run), one);
    }

    #[test]
    fn shared_or_other_tensors_are_handed_back_unchanged() {
        let scores = tensor(SCORES, 1, 1.0);
        let held = scores.clone();
        let back = scaled_softmax_in_place(scores, SCALE, false).expect_err("shared storage");
        assert_eq!(values(&back), values(&held));
        let back = scaled_softmax_in_place(held.transpose(2, 3), SCALE, false).expect_err("not row-major");
        assert_eq!(values(&back), values(&tensor(SCORES, 1, 1.0).transpose(2, 3)));
        let three_d = FlexTensor::from_data(TensorData::new(vec![0.5f32; 12], [3, 2, 2]));
        assert!(scaled_softmax_in_place(three_d, SCALE, false).is_err());
        let f64_scores = FlexTensor::from_data(TensorData::new(vec![0.5f64; 16], [1, 1, 4, 4]));
        assert!(scaled_softmax_in_place(f64_scores, SCALE, false).is_err());

        let p = tensor(SCORES, 2, 1.0);
        let output = tensor([2, 3, 37, HEAD_SIZE], 3, 1.0);
        let d_p = tensor(SCORES, 4, 1.0);
        let held = d_p.clone();
        assert!(scaled_score_gradient_in_place(&p, d_p, &output, &output, SCALE).is_err(), "shared dP");
        let wrong_rows = tensor([2, 3, 36, HEAD_SIZE], 3, 1.0);
        let back = scaled_score_gradient_in_place(&p, held.to_contiguous(), &wrong_rows, &wrong_rows, SCALE);
        assert!(back.is_err(), "output rows that do not match the scores'");
        let flipped = <burn::backend::Flex as FloatTensorOps<_>>::float_flip(output.clone(), &[3]);
        let back = scaled_score_gradient_in_place(&p, held.to_contiguous(), &output, &flipped, SCALE);
        assert!(back.is_err(), "a negative stride");
    }
}
