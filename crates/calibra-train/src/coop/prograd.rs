//! ProGrad (Zhu et al., ICCV 2023; spec §E3): the zero-shot distillation loss and the projection
//! of a conflicting gradient (Dassl fork `prograd_backward_and_update`, `ProGradLoss(T)`).

use burn::tensor::Tensor;
use burn::tensor::activation::{log_softmax, softmax};

/// ProGrad's `L_kl = (1/B) Σ_i Σ_k −softmax(z^zs_i/T)_k · log softmax(z_i/T)_k · T²` as a `[1]`
/// tensor, differentiable in `logits` (`[B, K]`); `zero_shot` (`[B, K]`, the teacher) is constant.
/// (The teacher's entropy is omitted, as in the reference: it does not change the gradient.)
pub fn distillation_loss(logits: Tensor<2>, zero_shot: Tensor<2>, temperature: f64) -> Tensor<1> {
    let inv_t = 1.0 / temperature;
    let teacher = softmax(zero_shot.detach() * inv_t, 1);
    let student = log_softmax(logits * inv_t, 1);
    (teacher * student).sum_dim(1).mean().neg() * (temperature * temperature)
}

/// Projects `g` (gradient of the task loss) away from `g_kl` (gradient of [`distillation_loss`]) when
/// they conflict: with `ĝ = g_kl/‖g_kl‖`, if `g·ĝ < 0` then `g ← g − λ (g·ĝ) ĝ`, else `g` is kept.
/// Computed in f64 over the flattened tensors. Returns whether the projection was applied.
///
/// Edge case: `‖g_kl‖ = 0` keeps `g` (the reference divides by zero, gets NaN, and `NaN < 0` is
/// false, so it keeps `g` too).
pub fn project_conflicting(g: &mut [f64], g_kl: &[f64], lambda: f64) -> bool {
    debug_assert_eq!(g.len(), g_kl.len());
    let norm = g_kl.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    let dot = g.iter().zip(g_kl).map(|(a, b)| a * b / norm).sum::<f64>();
    if dot >= 0.0 {
        return false;
    }
    for (a, b) in g.iter_mut().zip(g_kl) {
        *a -= lambda * dot * b / norm;
    }
    true
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        // With λ = 1 the projected gradient is orthogonal to g_kl; agreeing gradients are untouched.
        #[test]
        fn projection_removes_the_conflicting_component(
            g in prop::collection::vec(-1.0f64..1.0, 6),
            kl in prop::collection::vec(-1.0f64..1.0, 6),
        ) {
            let norm = kl.iter().map(|x| x * x).sum::<f64>().sqrt();
            prop_assume!(norm > 1e-3);
            let dot0: f64 = g.iter().zip(&kl).map(|(a, b)| a * b).sum();
            let mut p = g.clone();
            let applied = project_conflicting(&mut p, &kl, 1.0);
            prop_assert_eq!(applied, dot0 < 0.0);
            if applied {
                let dot: f64 = p.iter().zip(&kl).map(|(a, b)| a * b).sum();
                prop_assert!(dot.abs() < 1e-12, "g·g_kl after projection = {}", dot);
            } else {
                prop_assert_eq!(p, g);
            }
        }
    }

    #[test]
    fn zero_teacher_gradient_keeps_g() {
        let mut g = vec![1.0, -2.0];
        assert!(!project_conflicting(&mut g, &[0.0, 0.0], 1.0));
        assert_eq!(g, vec![1.0, -2.0]);
    }
}
