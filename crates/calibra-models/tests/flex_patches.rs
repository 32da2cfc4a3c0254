//! The patch calibra carries in its vendored burn-flex (vendor/README.md), checked through burn's
//! public tensor API on the flex device: `matmul` copies a column-major right operand (a transposed
//! view) row-major before gemm, and its products must equal those of the same values stored
//! row-major, to the bit, in the 2-D, batched and broadcast-batch cases.

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
