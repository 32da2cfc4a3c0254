//! Element-wise f32 kernels over flex tensors, on the rayon pool, for the fused activations
//! (`gelu.rs`, `quick_gelu.rs`).
//!
//! Each element is one expression of the inputs at the same position, so results do not depend on
//! the thread count or on where the chunks are cut. Results always go to a fresh buffer. Writing
//! into an input nobody else holds was tried and made the ViT-B/16 forward about 10 % slower
//! (2.0–2.1 against 2.1–2.4 s per batch of 8, with more page faults; benches/RESULTS.md, "CoOp
//! step"), so it is not done.

use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, TensorData};
use rayon::prelude::*;

/// Elements per rayon task (256 KiB of f32): large enough that scheduling is negligible.
const CHUNK: usize = 1 << 16;

/// Whether `t` is f32 laid out contiguously from offset 0 (what the kernels take).
fn is_plain_f32(t: &FlexTensor) -> bool {
    t.dtype() == DType::F32 && matches!(t.layout().contiguous_offsets(), Some((0, _)))
}

fn plain_len(t: &FlexTensor) -> usize {
    t.layout().num_elements()
}

/// `f` of every element of `x`, or `None` when `x` is not contiguous f32 (the caller falls back).
pub(crate) fn map_f32<F>(x: &FlexTensor, f: F) -> Option<FlexTensor>
where
    F: Fn(f32) -> f32 + Sync + Send,
{
    if !is_plain_f32(x) {
        return None;
    }
    let n = plain_len(x);
    let src = &x.storage::<f32>()[..n];
    let mut out = vec![0.0f32; n];
    out.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(out, src)| {
        for (o, &v) in out.iter_mut().zip(src) {
            *o = f(v);
        }
    });
    Some(FlexTensor::from_data(TensorData::new(out, x.layout().shape().clone())))
}

/// `f(x, g)` element by element, for `x` and `g` of one shape, or `None` when either is not
/// contiguous f32 or the shapes differ.
pub(crate) fn zip_map_f32<F>(x: &FlexTensor, g: &FlexTensor, f: F) -> Option<FlexTensor>
where
    F: Fn(f32, f32) -> f32 + Sync + Send,
{
    if !is_plain_f32(x) || !is_plain_f32(g) || x.layout().shape() != g.layout().shape() {
        return None;
    }
    let n = plain_len(x);
    let xs = &x.storage::<f32>()[..n];
    let gs = &g.storage::<f32>()[..n];
    let mut out = vec![0.0f32; n];
    out.par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK).zip(gs.par_chunks(CHUNK))).for_each(
        |(out, (xs, gs))| {
            for ((o, &v), &g) in out.iter_mut().zip(xs).zip(gs) {
                *o = f(v, g);
            }
        },
    );
    Some(FlexTensor::from_data(TensorData::new(out, x.layout().shape().clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(n: usize, seed: usize) -> FlexTensor {
        let values: Vec<f32> = (0..n).map(|i| ((i * 7919 + seed) % 2003) as f32 / 97.0 - 10.0).collect();
        FlexTensor::from_data(TensorData::new(values, [n]))
    }

    fn values(t: &FlexTensor) -> Vec<u32> {
        t.storage::<f32>()[..t.layout().num_elements()].iter().map(|v| v.to_bits()).collect()
    }

    /// `f` of every element, over several chunks; the inputs are left as they were.
    #[test]
    fn every_element_is_the_expression_of_its_inputs() {
        let n = 2 * CHUNK + 13;
        let (x, g) = (tensor(n, 1), tensor(n, 2));
        let f = |v: f32| v.mul_add(0.5, 1.0).exp();
        let expected: Vec<u32> = values(&x).into_iter().map(|b| f(f32::from_bits(b)).to_bits()).collect();
        assert_eq!(values(&map_f32(&x, f).unwrap()), expected);

        let h = |x: f32, g: f32| x * g - g;
        let expected: Vec<u32> = values(&x)
            .into_iter()
            .zip(values(&g))
            .map(|(x, y)| h(f32::from_bits(x), f32::from_bits(y)).to_bits())
            .collect();
        assert_eq!(values(&zip_map_f32(&x, &g, h).unwrap()), expected);
        assert_eq!((values(&x), values(&g)), (values(&tensor(n, 1)), values(&tensor(n, 2))));
    }

    #[test]
    fn strided_or_mismatched_inputs_are_left_to_the_caller() {
        let square = FlexTensor::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]));
        let transposed = square.transpose(0, 1);
        assert!(map_f32(&transposed, |v| v).is_none());
        assert!(zip_map_f32(&tensor(4, 0), &tensor(5, 0), |x, _| x).is_none());
    }
}
