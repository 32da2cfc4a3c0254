//! CLIP's symmetric contrastive loss (InfoNCE in both directions), with multi-positive targets.
//!
//! For a batch of `B` image/caption pairs with logits `L[i, j] = s · cos(img_i, txt_j)` and a
//! positive mask `P` (`P[i, j]` true when caption `j` describes image `i`; `P[i, i]` always true):
//!
//! ```text
//! Q[i, j]  = P[i, j] / Σ_j' P[i, j']                  (image → text targets, uniform over positives)
//! Q'[j, i] = P[i, j] / Σ_i' P[i', j]                  (text → image targets)
//! loss = ½ · ( −1/B Σ_i Σ_j Q[i, j] log softmax_j L[i, ·]
//!            + −1/B Σ_j Σ_i Q'[j, i] log softmax_i L[·, j] )
//! ```
//!
//! With `P` the identity this is exactly CLIP's loss (`(CE(L, arange) + CE(Lᵀ, arange)) / 2`). Pairs
//! whose captions are identical are positives of each other ([`identical_caption_mask`]), so two
//! images of the same class with the same caption are not pushed apart.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Tensor, TensorData};

use crate::pretrain::PretrainError;

/// `P[i, j] = (captions[i] == captions[j])`, row-major `B × B`.
pub fn identical_caption_mask<T: PartialEq>(captions: &[T]) -> Vec<bool> {
    captions.iter().flat_map(|a| captions.iter().map(move |b| a == b)).collect()
}

/// The multi-positive symmetric contrastive loss of `logits: [B, B]` (images × captions) with the
/// row-major positive mask `positives` (see the module documentation), a scalar `[1]`.
///
/// Errors: `logits` not square, a mask of another size, or a row or column without a positive.
pub fn contrastive_loss(logits: Tensor<2>, positives: &[bool]) -> Result<Tensor<1>, PretrainError> {
    let [b, b2] = logits.dims();
    if b != b2 || b == 0 || positives.len() != b * b {
        return Err(PretrainError::Invalid(format!(
            "contrastive loss: logits {b}×{b2} with a mask of {} entries (need a square batch and B² entries)",
            positives.len()
        )));
    }
    let mut rows = vec![0.0f32; b * b]; // Q
    let mut cols = vec![0.0f32; b * b]; // Q', indexed [j, i]
    for i in 0..b {
        let n = (0..b).filter(|&j| positives[i * b + j]).count();
        let m = (0..b).filter(|&j| positives[j * b + i]).count();
        if n == 0 || m == 0 {
            return Err(PretrainError::Invalid(format!("contrastive loss: pair {i} has no positive")));
        }
        for j in 0..b {
            if positives[i * b + j] {
                rows[i * b + j] = 1.0 / n as f32;
            }
            if positives[j * b + i] {
                cols[i * b + j] = 1.0 / m as f32;
            }
        }
    }
    let device = logits.device();
    let q = Tensor::<2>::from_data(TensorData::new(rows, [b, b]), &device);
    let q_t = Tensor::<2>::from_data(TensorData::new(cols, [b, b]), &device);
    let image_to_text = (q * log_softmax(logits.clone(), 1)).sum().neg() / b as f64;
    let text_to_image = (q_t * log_softmax(logits.transpose(), 1)).sum().neg() / b as f64;
    Ok((image_to_text + text_to_image) / 2.0)
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;
    use serde_json::Value;

    use super::*;

    fn golden() -> Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/clip_contrastive.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("golden file")).expect("golden JSON")
    }

    fn floats(v: &Value) -> Vec<f32> {
        v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
    }

    /// Loss value and its gradient with respect to the logits equal torch's
    /// (`scripts/golden/clip_contrastive.py`: `F.cross_entropy` with index or probability targets
    /// in both directions), within 1e-5 relative.
    #[test]
    fn matches_torch_cross_entropy_in_both_directions() {
        let device = Device::flex().autodiff();
        let cases = golden();
        let cases = cases["cases"].as_array().unwrap();
        assert!(cases.len() >= 3);
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let b = case["b"].as_u64().unwrap() as usize;
            let captions: Vec<i64> =
                case["captions"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
            let logits = Tensor::<2>::from_data(TensorData::new(floats(&case["logits"]), [b, b]), &device)
                .require_grad();
            let loss = contrastive_loss(logits.clone(), &identical_caption_mask(&captions)).unwrap();
            let value = loss.clone().into_data().try_to_vec::<f32>().unwrap()[0];
            let want = case["loss"].as_f64().unwrap() as f32;
            assert!((value - want).abs() <= 1e-5 * want.abs().max(1.0), "{name}: {value} vs torch {want}");
            let grads = loss.backward();
            let grad = logits.grad(&grads).unwrap().into_data().try_to_vec::<f32>().unwrap();
            for (k, (g, w)) in grad.iter().zip(floats(&case["grad"])).enumerate() {
                assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-2), "{name}: grad[{k}] {g} vs torch {w}");
            }
        }
    }

    #[test]
    fn bad_shapes_are_refused() {
        let device = Device::flex();
        let logits = Tensor::<2>::zeros([2, 3], &device);
        assert!(contrastive_loss(logits, &[true; 6]).is_err());
        let logits = Tensor::<2>::zeros([2, 2], &device);
        assert!(contrastive_loss(logits.clone(), &[true; 3]).is_err());
        assert!(
            contrastive_loss(logits, &[false, false, true, true]).unwrap_err().to_string().contains("pair 0")
        );
    }

    /// Exact by construction: with equal logits every softmax is uniform (1/B), so the cross-entropy
    /// of each direction against any target distribution is log B, whatever the positives.
    #[test]
    fn uniform_logits_give_log_b() {
        let device = Device::flex();
        for captions in [vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![5, 5, 5, 5]] {
            let logits = Tensor::<2>::ones([4, 4], &device);
            let loss = contrastive_loss(logits, &identical_caption_mask(&captions)).unwrap();
            let v = loss.into_data().try_to_vec::<f32>().unwrap()[0];
            assert!((v - 4f32.ln()).abs() < 1e-6, "{captions:?}: {v}");
        }
    }
}
