//! The patches calibra carries in its vendored burn-flex (vendor/README.md), checked through burn's
//! public tensor API on the flex device:
//! - `matmul` copies a column-major right operand (a transposed view) row-major before gemm, and
//!   its products must equal those of the same values stored row-major, to the bit, in the 2-D,
//!   batched and broadcast-batch cases;
//! - `softmax` and the fused `attention` take their exponentials from a branch-free `exp` with
//!   fixed partial sums: they must follow f64 references, keep the special values, and give the
//!   same bits at 1, 2 and 3 threads;
//! - the fused `attention` reads q, k and v through their strides when their rows are contiguous
//!   (the heads view of a projection), and must give the bits of the same values stored contiguous.

use burn::tensor::activation::softmax;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Device, Tensor, TensorData};

/// Deterministic values in about [-2, 2] (no RNG: the same on every machine).
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 4001) as f32 - 2000.0) / 1000.0).collect()
}

fn tensor<const D: usize>(data: Vec<f32>, shape: [usize; D]) -> Tensor<D> {
    Tensor::from_data(TensorData::new(data, shape), &Device::flex())
}

fn bits<const D: usize>(t: Tensor<D>) -> Vec<u32> {
    t.into_data().try_to_vec::<f32>().expect("f32 tensor").into_iter().map(f32::to_bits).collect()
}

/// `[rows, cols]` values transposed into `[cols, rows]`, stored row-major.
fn transposed(data: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..cols).flat_map(|c| (0..rows).map(move |r| data[r * cols + c])).collect()
}

#[test]
fn a_transposed_right_operand_gives_the_row_major_product_bit_for_bit() {
    // dX = dY · Wᵀ of a linear layer: W is [in, out] = [96, 160]; dY is [m, out].
    let (m, d_in, d_out) = (70, 96, 160);
    let dy = values(m * d_out, 1);
    let w = values(d_in * d_out, 2);
    let view = tensor(dy.clone(), [m, d_out]).matmul(tensor(w.clone(), [d_in, d_out]).transpose());
    let row_major = tensor(dy, [m, d_out]).matmul(tensor(transposed(&w, d_in, d_out), [d_out, d_in]));
    assert_eq!(view.dims(), [m, d_in]);
    assert_eq!(bits(view), bits(row_major));
}

#[test]
fn a_batched_transposed_right_operand_gives_the_row_major_product_bit_for_bit() {
    // Attention scores q · kᵀ: [batch, tokens, head_dim] against [batch, tokens, head_dim]ᵀ.
    let (batch, tokens, dim) = (6, 33, 24);
    let q = values(batch * tokens * dim, 3);
    let k = values(batch * tokens * dim, 4);
    let k_t: Vec<f32> = k.chunks(tokens * dim).flat_map(|one| transposed(one, tokens, dim)).collect();
    let view =
        tensor(q.clone(), [batch, tokens, dim]).matmul(tensor(k, [batch, tokens, dim]).swap_dims(1, 2));
    let row_major = tensor(q, [batch, tokens, dim]).matmul(tensor(k_t, [batch, dim, tokens]));
    assert_eq!(bits(view), bits(row_major));
}

#[test]
fn a_broadcast_transposed_right_operand_gives_the_row_major_product_bit_for_bit() {
    // One [k, n] operand, transposed, against a batch: the broadcast view is not materialised.
    let (batch, m, k, n) = (4, 20, 40, 36);
    let lhs = values(batch * m * k, 5);
    let w = values(n * k, 6);
    let view = tensor(lhs.clone(), [batch, m, k])
        .matmul(tensor(w.clone(), [n, k]).transpose().unsqueeze::<3>().expand([batch, k, n]));
    let row_major = tensor(lhs, [batch, m, k])
        .matmul(tensor(transposed(&w, n, k), [k, n]).unsqueeze::<3>().expand([batch, k, n]));
    assert_eq!(bits(view), bits(row_major));
}

/// Softmax rows in f64 from the shifted logits `x − max` as f32 forms them: where `x − max` is
/// about −50, its rounding alone moves `e^(x − max)` by 2e-6 relative, in any f32 softmax.
fn softmax_f64(data: &[f32], row: usize) -> Vec<f64> {
    data.chunks(row)
        .flat_map(|r| {
            let max = r.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
            let e: Vec<f64> = r.iter().map(|&x| ((x - max) as f64).exp()).collect();
            let sum: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / sum)
        })
        .collect()
}

fn f32_values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().expect("f32 tensor")
}

/// Rows whose logits spread over [−s, s], for a range of scales: the exponentials run from 1 down
/// to e^(−2s), through the subnormals at the largest scale.
fn spread_logits(rows: usize, row: usize, seed: usize) -> Vec<f32> {
    let scales = [0.01f32, 1.0, 8.0, 30.0, 50.0];
    (0..rows)
        .flat_map(|r| values(row, seed + r).into_iter().map(move |v| v * scales[r % scales.len()] / 2.0))
        .collect()
}

#[test]
fn softmax_follows_the_f64_softmax_on_every_row_length() {
    for row in [1usize, 2, 15, 16, 17, 31, 77, 197, 1000] {
        let rows = 10;
        let logits = spread_logits(rows, row, row);
        let ours = f32_values(softmax(tensor(logits.clone(), [rows, row]), 1));
        for (i, (&p, q)) in ours.iter().zip(softmax_f64(&logits, row)).enumerate() {
            // About 3 ulps of the probability, or a subnormal step below the normal range.
            let bound = 4e-7 * q + f32::MIN_POSITIVE as f64;
            assert!((p as f64 - q).abs() <= bound, "row length {row}, element {i}: {p} against f64 {q}");
        }
    }
}

#[test]
fn softmax_keeps_masked_and_saturated_entries() {
    let ninf = f32::NEG_INFINITY;
    let logits = vec![0.0, ninf, ninf, 0.0, 100.0, 0.0, -100.0, 1.0, ninf, 5.0, ninf, ninf];
    let ours = f32_values(softmax(tensor(logits, [3, 4]), 1));
    assert_eq!(&ours[..4], &[0.5, 0.0, 0.0, 0.5]);
    assert_eq!(ours[4], 1.0);
    assert!(ours[5] > 0.0 && ours[5] < 1e-43 && ours[6] == 0.0, "{ours:?}");
    assert_eq!(&ours[8..], &[0.0, 1.0, 0.0, 0.0]);
    let nan = f32_values(softmax(tensor(vec![1.0, f32::NAN, 0.0], [1, 3]), 1));
    assert!(nan.iter().any(|p| p.is_nan()), "{nan:?}");
}

/// `softmax(q kᵀ · s [+ causal mask]) v` in f64, `[batch·heads, tokens, dim]` flattened.
fn attention_f64(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    heads: usize,
    tokens: usize,
    dim: usize,
    causal: bool,
) -> Vec<f64> {
    let scale = 1.0 / (dim as f64).sqrt();
    let mut out = Vec::with_capacity(q.len());
    for h in 0..heads {
        let at = |m: &[f32], t: usize, d: usize| m[(h * tokens + t) * dim + d] as f64;
        for i in 0..tokens {
            let visible = if causal { i + 1 } else { tokens };
            let scores: Vec<f64> = (0..visible)
                .map(|j| (0..dim).map(|d| at(q, i, d) * at(k, j, d)).sum::<f64>() * scale)
                .collect();
            let max = scores.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
            let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            out.extend((0..dim).map(|d| (0..visible).map(|j| e[j] / sum * at(v, j, d)).sum::<f64>()));
        }
    }
    out
}

fn fused_attention(q: &[f32], k: &[f32], v: &[f32], shape: [usize; 4], causal: bool) -> Vec<f32> {
    let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: causal };
    let (q, k, v) = (tensor(q.to_vec(), shape), tensor(k.to_vec(), shape), tensor(v.to_vec(), shape));
    f32_values(attention(q, k, v, None, None, options))
}

#[test]
fn fused_attention_follows_the_f64_attention() {
    // ViT-like (197 tokens: rows of 12 full 16-lane blocks and a tail) and CLIP-text-like (77, causal).
    for (tokens, causal) in [(197usize, false), (77, true), (5, false)] {
        let shape = [2, 3, tokens, 16];
        let n = shape.iter().product();
        let (q, k, v) = (values(n, 11), values(n, 12), values(n, 13));
        let ours = fused_attention(&q, &k, &v, shape, causal);
        let reference = attention_f64(&q, &k, &v, 6, tokens, 16, causal);
        let worst = ours.iter().zip(&reference).map(|(&a, &b)| (a as f64 - b).abs()).fold(0.0, f64::max);
        // The f32 products q·kᵀ (scores up to about 16) carry about 1e-6 each; the exponentials
        // add a few ulps of the probabilities.
        assert!(worst < 1e-5, "{tokens} tokens (causal {causal}): off by {worst}");
    }
}

/// `f` run on a rayon pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a rayon pool").install(f)
}

#[test]
fn softmax_and_attention_do_not_depend_on_the_thread_count() {
    let (rows, row) = (300, 197);
    let logits = spread_logits(rows, row, 7);
    let shape = [4, 6, 77, 32];
    let n = shape.iter().product();
    let (q, k, v) = (values(n, 21), values(n, 22), values(n, 23));
    let run = || {
        let p = bits(softmax(tensor(logits.clone(), [rows, row]), 1));
        let a = fused_attention(&q, &k, &v, shape, false);
        let c = fused_attention(&q, &k, &v, shape, true);
        (p, [a, c].map(|t| t.into_iter().map(f32::to_bits).collect::<Vec<_>>()))
    };
    let one = on_threads(1, run);
    assert_eq!(on_threads(2, run), one);
    assert_eq!(on_threads(3, run), one);
}

/// `[b, n, h, d]` values as the `[b, h, n, d]` view `swap_dims(1, 2)` gives: a projection's heads.
fn heads_view(data: &[f32], [b, h, n, d]: [usize; 4]) -> Tensor<4> {
    tensor(data.to_vec(), [b, n, h, d]).swap_dims(1, 2)
}

/// The same `[b, h, n, d]` values, stored contiguously in that order.
fn heads_copy(data: &[f32], [b, h, n, d]: [usize; 4]) -> Tensor<4> {
    tensor(heads_view(data, [b, h, n, d]).into_data().try_to_vec::<f32>().expect("f32"), [b, h, n, d])
}

#[test]
fn attention_over_head_views_gives_the_contiguous_bits() {
    let options = AttentionModuleOptions { scale: None, softcap: None, is_causal: false };
    for (shape, causal) in [([2, 3, 197, 16], false), ([1, 4, 77, 8], true), ([3, 2, 1, 4], false)] {
        let options = AttentionModuleOptions { is_causal: causal, ..options };
        let n = shape.iter().product();
        let (q, k, v) = (values(n, 31), values(n, 32), values(n, 33));
        let run = |operand: fn(&[f32], [usize; 4]) -> Tensor<4>| {
            bits(attention(operand(&q, shape), operand(&k, shape), operand(&v, shape), None, None, options))
        };
        let (strided, copied) = (run(heads_view), run(heads_copy));
        assert_eq!(strided, copied, "{shape:?}, causal {causal}");
    }
    // Shared keys and values (a head dimension broadcast with stride 0), and a flipped query (a
    // negative stride, read from a copy).
    let shape = [2, 3, 9, 4];
    let n: usize = shape.iter().product();
    let (q, kv) = (values(n, 41), values(n / 3, 42));
    let shared = tensor(kv.clone(), [2, 1, 9, 4]).expand([2, 3, 9, 4]);
    let repeated = tensor(kv, [2, 1, 9, 4]).repeat_dim(1, 3);
    let flipped = tensor(q.clone(), shape).flip([2]);
    let flipped_copy = tensor(flipped.clone().into_data().try_to_vec::<f32>().expect("f32"), shape);
    let ours = attention(flipped, shared.clone(), shared, None, None, options);
    let expected = attention(flipped_copy, repeated.clone(), repeated, None, None, options);
    assert_eq!(bits(ours), bits(expected));
}
