//! KgCoOp's knowledge-guidance term (Yao et al., CVPR 2023; spec §E2, code form of
//! `htyao89/KgCoOp trainers/kgcoop.py::KgCoOp.forward_backward`).

use burn::tensor::Tensor;

/// `1 − (1/K) Σ_k cos(w_k, w_k^clip)` as a `[1]` tensor, differentiable in `learned`.
///
/// `learned` (`w_k`, the learned prompts' text features) and `clip` (`w_k^clip`, the frozen
/// hand-crafted-prompt features) are `[K, p]` with rows of unit L2 norm, so the cosine is the row
/// dot product (the reference's `CosineSimilarity(eps=1e-7)` divides by `max(‖a‖‖b‖, 1e-7) = 1`).
/// The paper's `(1/K) Σ‖w_k − w_k^clip‖²` equals twice this for unit rows; the reference code (and
/// this term) is weighted by λ = 8.
pub fn knowledge_guidance(learned: Tensor<2>, clip: Tensor<2>) -> Tensor<1> {
    let cos = (learned * clip).sum_dim(1); // [K, 1]
    cos.mean().neg().add_scalar(1.0)
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;

    #[test]
    fn identical_features_give_zero_and_opposite_give_two() {
        // Exact by construction: cos = 1 for identical unit rows, −1 for opposite ones.
        let device = Device::flex();
        let w = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, 0.0, 0.0, 1.0], [2, 2]), &device);
        let same: f32 = knowledge_guidance(w.clone(), w.clone()).into_scalar();
        assert_eq!(same, 0.0);
        let opposite: f32 = knowledge_guidance(w.clone(), w.neg()).into_scalar();
        assert_eq!(opposite, 2.0);
    }
}
