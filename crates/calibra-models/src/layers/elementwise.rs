//! Element-wise f32 kernels over flex tensors, on the rayon pool, for the fused activations
//! (`gelu.rs`, `quick_gelu.rs`).
//!
//! Each element is one expression of the inputs at the same position, so results do not depend on
//! the thread count or on where the chunks are cut. Each chunk's loop runs through pulp's run-time
//! dispatch, so the compiler vectorises it for the widest SIMD the CPU has (AVX-512, AVX2, or the
//! SSE2 baseline). That does not change a result: Rust never fuses a multiply and an add on its
//! own, and every other f32 operation is IEEE-exact at any width.
//!
//! A result is written over its input when nothing else holds that input's storage (flex's
//! `is_unique`: an inference activation, or a gradient the backward pass hands over), and into a
//! fresh buffer otherwise (an activation autodiff keeps for the backward pass). Writing in place
//! saves an allocation and its zeroing per call; with calibra's heap policy that made the
//! ViT-B/16 forward about 2 % faster (benches/RESULTS.md, "Attention reads its heads in place").
//! (It was tried once before that policy, when fresh buffers came from the system's heap
//! unchanged, and was slower; RESULTS, "CoOp step".)

use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, TensorData};
use rayon::prelude::*;

/// Elements per rayon task (256 KiB of f32): large enough that scheduling is negligible.
const CHUNK: usize = 1 << 16;

/// `t` laid out row-major from offset 0: itself when it already is, else flex's contiguous copy
/// (a fresh buffer nothing else holds). A value's result then does not depend on its tensor's
/// layout.
fn row_major(t: FlexTensor) -> FlexTensor {
    if matches!(t.layout().contiguous_offsets(), Some((0, _))) { t } else { t.to_contiguous() }
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

/// `f` of every element of `x`, in `x`'s shape (row-major), written over `x` when nothing else
/// holds its storage; `Err(x)` unchanged when `x` is not f32 (the caller falls back).
pub(crate) fn map_f32<F: UnaryKernel>(x: FlexTensor, f: F) -> Result<FlexTensor, FlexTensor> {
    if x.dtype() != DType::F32 {
        return Err(x);
    }
    let mut x = row_major(x);
    let arch = pulp::Arch::new();
    if x.is_unique() {
        let n = x.layout().num_elements();
        x.storage_mut::<f32>()[..n].par_chunks_mut(CHUNK).for_each(|values| {
            arch.dispatch(MapChunkInPlace { values, f: &f });
        });
        return Ok(x);
    }
    let src = plain_values(&x);
    let mut out = vec![0.0f32; src.len()];
    out.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(out, src)| {
        arch.dispatch(MapChunk { out, src, f: &f });
    });
    Ok(FlexTensor::from_data(TensorData::new(out, x.layout().shape().clone())))
}

/// `f(x, g)` element by element, for `x` and `g` of one shape (row-major), written over `g` when
/// nothing else holds its storage; `Err(g)` unchanged when either is not f32 or the shapes differ.
pub(crate) fn zip_map_f32<F: BinaryKernel>(
    x: &FlexTensor,
    g: FlexTensor,
    f: F,
) -> Result<FlexTensor, FlexTensor> {
    if x.layout().shape() != g.layout().shape() || x.dtype() != DType::F32 || g.dtype() != DType::F32 {
        return Err(g);
    }
    let x = row_major(x.clone());
    let mut g = row_major(g);
    let xs = plain_values(&x);
    let arch = pulp::Arch::new();
    if g.is_unique() {
        let n = g.layout().num_elements();
        g.storage_mut::<f32>()[..n].par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK)).for_each(|(gs, xs)| {
            arch.dispatch(ZipMapChunkInPlace { gs, xs, f: &f });
        });
        return Ok(g);
    }
    let gs = plain_values(&g);
    let mut out = vec![0.0f32; xs.len()];
    out.par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK).zip(gs.par_chunks(CHUNK))).for_each(
        |(out, (xs, gs))| {
            arch.dispatch(ZipMapChunk { out, xs, gs, f: &f });
        },
    );
    Ok(FlexTensor::from_data(TensorData::new(out, x.layout().shape().clone())))
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

/// One chunk of [`map_f32`] written over its input, as [`MapChunk`].
struct MapChunkInPlace<'a, F> {
    values: &'a mut [f32],
    f: &'a F,
}

impl<F: UnaryKernel> pulp::WithSimd for MapChunkInPlace<'_, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        for v in self.values.iter_mut() {
            *v = self.f.apply(*v);
        }
    }
}

/// One chunk of [`zip_map_f32`] written over `g`, as [`MapChunk`].
struct ZipMapChunkInPlace<'a, F> {
    gs: &'a mut [f32],
    xs: &'a [f32],
    f: &'a F,
}

impl<F: BinaryKernel> pulp::WithSimd for ZipMapChunkInPlace<'_, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        for (g, &v) in self.gs.iter_mut().zip(self.xs) {
            *g = self.f.apply(v, *g);
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

    fn expected_map(x: &FlexTensor) -> Vec<u32> {
        values(x).into_iter().map(|b| HalfPlusOneExp.apply(f32::from_bits(b)).to_bits()).collect()
    }

    fn expected_zip(x: &FlexTensor, g: &FlexTensor) -> Vec<u32> {
        values(x)
            .into_iter()
            .zip(values(g))
            .map(|(x, y)| TimesMinus.apply(f32::from_bits(x), f32::from_bits(y)).to_bits())
            .collect()
    }

    /// `f` of every element, over several chunks: into a fresh buffer when the input is shared (and
    /// the input is left as it was), over the input when nothing else holds it.
    #[test]
    fn every_element_is_the_expression_of_its_inputs_shared_or_not() {
        let n = 2 * CHUNK + 13;
        let (x, g) = (tensor(n, 1), tensor(n, 2));
        let (map, zip) = (expected_map(&x), expected_zip(&x, &g));

        let shared = map_f32(x.clone(), HalfPlusOneExp).unwrap();
        assert_eq!(values(&shared), map);
        assert_eq!(values(&x), values(&tensor(n, 1)), "a shared input is left as it was");
        let shared = zip_map_f32(&x, g.clone(), TimesMinus).unwrap();
        assert_eq!(values(&shared), zip);
        assert_eq!((values(&x), values(&g)), (values(&tensor(n, 1)), values(&tensor(n, 2))));

        let storage = |t: &FlexTensor| t.storage::<f32>().as_ptr();
        let owned = tensor(n, 1);
        let before = storage(&owned);
        let in_place = map_f32(owned, HalfPlusOneExp).unwrap();
        assert_eq!((values(&in_place), storage(&in_place)), (map, before), "written over its input");
        let owned = tensor(n, 2);
        let before = storage(&owned);
        let in_place = zip_map_f32(&x, owned, TimesMinus).unwrap();
        assert_eq!((values(&in_place), storage(&in_place)), (zip, before), "written over g");
    }

    #[test]
    fn a_strided_input_gives_what_its_contiguous_copy_gives() {
        let square = FlexTensor::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]));
        let transposed = square.transpose(0, 1);
        let copy = transposed.to_contiguous();
        assert_eq!(
            values(&map_f32(transposed.clone(), HalfPlusOneExp).unwrap()),
            values(&map_f32(copy.clone(), HalfPlusOneExp).unwrap())
        );
        let ours = zip_map_f32(&transposed, square.clone(), TimesMinus).unwrap();
        assert_eq!(values(&ours), values(&zip_map_f32(&copy, square.clone(), TimesMinus).unwrap()));
        // x·g − g with x the transpose read row-major, [1, 3, 2, 4], and g = [1, 2, 3, 4].
        assert_eq!(values(&ours), [0.0f32, 4.0, 3.0, 12.0].map(f32::to_bits));
        // A strided g: read row-major too, [1, 3, 2, 4], with x = [1, 2, 3, 4].
        let ours = zip_map_f32(&square, transposed, TimesMinus).unwrap();
        assert_eq!(values(&ours), [0.0f32, 3.0, 4.0, 12.0].map(f32::to_bits));
    }

    #[test]
    fn mismatched_shapes_or_other_dtypes_are_handed_back() {
        let g = tensor(5, 0);
        let back = zip_map_f32(&tensor(4, 0), g.clone(), TimesMinus).unwrap_err();
        assert_eq!(values(&back), values(&g));
        let doubles = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0], [2]));
        assert_eq!(map_f32(doubles.clone(), HalfPlusOneExp).unwrap_err().dtype(), DType::F64);
        assert_eq!(zip_map_f32(&doubles, doubles.clone(), TimesMinus).unwrap_err().dtype(), DType::F64);
    }
}
