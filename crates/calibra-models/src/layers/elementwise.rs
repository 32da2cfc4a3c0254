//! Element-wise f32 kernels over flex tensors, on the rayon pool, for the fused activations
//! (`gelu.rs`, `quick_gelu.rs`).
//!
//! Each element is one expression of the inputs at the same position, so results do not depend on
//! the thread count or on where the chunks are cut. Each chunk's loop runs through pulp's run-time
//! dispatch, so the compiler vectorises it for the widest SIMD the CPU has (AVX-512, AVX2, or the
//! SSE2 baseline). That does not change a result: Rust never fuses a multiply and an add on its
//! own, and every other f32 operation is IEEE-exact at any width.
//!
//! Results always go to a fresh buffer. Writing into an input nobody else holds was tried and made
//! the ViT-B/16 forward about 10 % slower (2.0–2.1 against 2.1–2.4 s per batch of 8, with more page
//! faults; benches/RESULTS.md, "CoOp step"), so it is not done.

use std::borrow::Cow;

use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, TensorData};
use rayon::prelude::*;

/// Elements per rayon task (256 KiB of f32): large enough that scheduling is negligible.
const CHUNK: usize = 1 << 16;

/// `t`'s f32 values in row-major order: its own storage when it is laid out contiguously from
/// offset 0, else a contiguous copy (flex's `to_contiguous`); `None` when `t` is not f32. A value's
/// result then does not depend on its tensor's layout.
fn row_major_f32(t: &FlexTensor) -> Option<Cow<'_, FlexTensor>> {
    if t.dtype() != DType::F32 {
        return None;
    }
    if matches!(t.layout().contiguous_offsets(), Some((0, _))) {
        Some(Cow::Borrowed(t))
    } else {
        Some(Cow::Owned(t.to_contiguous()))
    }
}

/// The first `num_elements` values of a row-major f32 tensor's storage.
fn plain_values(t: &FlexTensor) -> &[f32] {
    &t.storage::<f32>()[..t.layout().num_elements()]
}

/// An element-wise function of one f32. Implementations mark `apply` `#[inline(always)]` (and
/// everything it calls), so that it is compiled into the dispatched loop for the CPU's SIMD width:
/// a closure or `fn` called through the `Fn` traits is not inlined there and runs one element at a
/// time (measured: 3.7× slower than the baseline loop on the GELU).
pub(crate) trait UnaryKernel: Sync {
    fn apply(&self, x: f32) -> f32;
}

/// An element-wise function of two f32 at the same position, as [`UnaryKernel`].
pub(crate) trait BinaryKernel: Sync {
    fn apply(&self, x: f32, g: f32) -> f32;
}

/// `f` of every element of `x`, in `x`'s shape (row-major), or `None` when `x` is not f32 (the
/// caller falls back).
pub(crate) fn map_f32<F: UnaryKernel>(x: &FlexTensor, f: F) -> Option<FlexTensor> {
    let x = row_major_f32(x)?;
    let src = plain_values(&x);
    let mut out = vec![0.0f32; src.len()];
    let arch = pulp::Arch::new();
    out.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(out, src)| {
        arch.dispatch(MapChunk { out, src, f: &f });
    });
    Some(FlexTensor::from_data(TensorData::new(out, x.layout().shape().clone())))
}

/// `f(x, g)` element by element, for `x` and `g` of one shape (row-major), or `None` when either
/// is not f32 or the shapes differ.
pub(crate) fn zip_map_f32<F: BinaryKernel>(x: &FlexTensor, g: &FlexTensor, f: F) -> Option<FlexTensor> {
    if x.layout().shape() != g.layout().shape() {
        return None;
    }
    let (x, g) = (row_major_f32(x)?, row_major_f32(g)?);
    let (xs, gs) = (plain_values(&x), plain_values(&g));
    let mut out = vec![0.0f32; xs.len()];
    let arch = pulp::Arch::new();
    out.par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK).zip(gs.par_chunks(CHUNK))).for_each(
        |(out, (xs, gs))| {
            arch.dispatch(ZipMapChunk { out, xs, gs, f: &f });
        },
    );
    Some(FlexTensor::from_data(TensorData::new(out, x.layout().shape().clone())))
}

/// One chunk of [`map_f32`]: a plain loop, compiled inside pulp's target-feature function (the
/// `#[inline(always)]` here and on the kernel is what lets the compiler vectorise it for that
/// target).
struct MapChunk<'a, F> {
    out: &'a mut [f32],
    src: &'a [f32],
    f: &'a F,
}

impl<F: UnaryKernel> pulp::WithSimd for MapChunk<'_, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        for (o, &v) in self.out.iter_mut().zip(self.src) {
            *o = self.f.apply(v);
        }
    }
}

/// One chunk of [`zip_map_f32`], as [`MapChunk`].
struct ZipMapChunk<'a, F> {
    out: &'a mut [f32],
    xs: &'a [f32],
    gs: &'a [f32],
    f: &'a F,
}

impl<F: BinaryKernel> pulp::WithSimd for ZipMapChunk<'_, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        for ((o, &v), &g) in self.out.iter_mut().zip(self.xs).zip(self.gs) {
            *o = self.f.apply(v, g);
        }
    }
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

    struct HalfPlusOneExp;
    impl UnaryKernel for HalfPlusOneExp {
        #[inline(always)]
        fn apply(&self, x: f32) -> f32 {
            x.mul_add(0.5, 1.0).exp()
        }
    }

    struct TimesMinus;
    impl BinaryKernel for TimesMinus {
        #[inline(always)]
        fn apply(&self, x: f32, g: f32) -> f32 {
            x * g - g
        }
    }

    /// `f` of every element, over several chunks; the inputs are left as they were.
    #[test]
    fn every_element_is_the_expression_of_its_inputs() {
        let n = 2 * CHUNK + 13;
        let (x, g) = (tensor(n, 1), tensor(n, 2));
        let expected: Vec<u32> =
            values(&x).into_iter().map(|b| HalfPlusOneExp.apply(f32::from_bits(b)).to_bits()).collect();
        assert_eq!(values(&map_f32(&x, HalfPlusOneExp).unwrap()), expected);

        let expected: Vec<u32> = values(&x)
            .into_iter()
            .zip(values(&g))
            .map(|(x, y)| TimesMinus.apply(f32::from_bits(x), f32::from_bits(y)).to_bits())
            .collect();
        assert_eq!(values(&zip_map_f32(&x, &g, TimesMinus).unwrap()), expected);
        assert_eq!((values(&x), values(&g)), (values(&tensor(n, 1)), values(&tensor(n, 2))));
    }

    #[test]
    fn a_strided_input_gives_what_its_contiguous_copy_gives() {
        let square = FlexTensor::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]));
        let transposed = square.transpose(0, 1);
        let copy = transposed.to_contiguous();
        assert_eq!(
            values(&map_f32(&transposed, HalfPlusOneExp).unwrap()),
            values(&map_f32(&copy, HalfPlusOneExp).unwrap())
        );
        let ours = zip_map_f32(&transposed, &square, TimesMinus).unwrap();
        assert_eq!(values(&ours), values(&zip_map_f32(&copy, &square, TimesMinus).unwrap()));
        // x·g − g with x the transpose read row-major, [1, 3, 2, 4], and g = [1, 2, 3, 4].
        assert_eq!(values(&ours), [0.0f32, 4.0, 3.0, 12.0].map(f32::to_bits));
    }

    #[test]
    fn mismatched_shapes_or_other_dtypes_are_left_to_the_caller() {
        assert!(zip_map_f32(&tensor(4, 0), &tensor(5, 0), TimesMinus).is_none());
        let doubles = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0], [2]));
        assert!(map_f32(&doubles, HalfPlusOneExp).is_none());
        assert!(zip_map_f32(&doubles, &doubles, TimesMinus).is_none());
    }
}
