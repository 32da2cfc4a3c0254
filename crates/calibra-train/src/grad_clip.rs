//! Global-norm gradient clipping over all parameters of a module (torch
//! `clip_grad_norm_(parameters, max_norm, norm_type=2)`); burn's built-in `GradientClipping::Norm`
//! clips each tensor on its own.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{DType, FloatDType, Tensor};

use crate::error::TrainError;

/// torch's `clip_grad_norm_` adds this to the total norm before dividing.
pub const CLIP_EPS: f64 = 1e-6;

/// What [`clip_grad_norm`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClipOutcome {
    /// `sqrt(Σ_params Σ g²)` before clipping (torch's return value).
    pub total_norm: f64,
    /// The factor the gradients were multiplied by (1 when not clipped).
    pub scale: f64,
}

impl ClipOutcome {
    /// Whether the gradients were scaled down.
    pub fn clipped(&self) -> bool {
        self.scale < 1.0
    }
}

struct SquaredNorms<'a> {
    grads: &'a GradientsParams,
    /// Partial sums of squares, one running sum per dtype (no mixed-dtype arithmetic).
    sums: Vec<(DType, Tensor<1>)>,
}

impl ModuleVisitor for SquaredNorms<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let Some(grad) = self.grads.get::<D>(param.id) else {
            return;
        };
        // Square in at least f32: in f16 the sum of squares overflows early.
        let grad = match grad.dtype() {
            DType::F16 | DType::BF16 => grad.cast(FloatDType::F32),
            _ => grad,
        };
        let dtype = grad.dtype();
        let sum = sum_of_squares(grad);
        match self.sums.iter_mut().find(|(d, _)| *d == dtype) {
            Some((_, acc)) => *acc = acc.clone().add(sum),
            None => self.sums.push((dtype, sum)),
        }
    }
}

/// `Σ g²` over one gradient, the same bits at any thread count: the rows of the last axis are summed
/// first, each by one thread, then the row sums. burn-flex's whole-tensor `sum` of 4 Mi elements or
/// more is a rayon reduction whose tree, and so its rounding, follows the pool's size
/// (`tests/thread_determinism.rs`); a ViT-L MLP weight (1024 × 4096) is that large.
fn sum_of_squares<const D: usize>(grad: Tensor<D>) -> Tensor<1> {
    let dims = grad.dims();
    let numel: usize = dims.iter().product();
    let last = dims.last().copied().unwrap_or(1);
    if numel == 0 || last == 0 {
        return grad.square().sum();
    }
    grad.square().reshape([numel / last, last]).sum_dim(1).sum()
}

struct Scale<'a> {
    grads: &'a mut GradientsParams,
    scale: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register::<D>(param.id, grad.mul_scalar(self.scale));
        }
    }
}

/// Clips the gradients of all of `module`'s float parameters present in `grads` by their global
/// L2 norm, as torch's `clip_grad_norm_`:
///
/// ```text
/// total_norm = sqrt( Σ_p ‖g_p‖² )
/// scale      = min(1, max_norm / (total_norm + 1e-6));   g_p ← scale · g_p   when scale < 1
/// ```
///
/// Returns the total norm before clipping and the scale applied. Gradients of parameters that are
/// not in `grads` (frozen) are ignored. Errors: `max_norm` not finite and `> 0`, or a non-finite
/// total norm (torch would scale every gradient by NaN; here the gradients are left untouched).
pub fn clip_grad_norm<M: Module>(
    module: &M,
    grads: &mut GradientsParams,
    max_norm: f64,
) -> Result<ClipOutcome, TrainError> {
    if !(max_norm.is_finite() && max_norm > 0.0) {
        return Err(TrainError::BadConfig {
            what: "max_norm".into(),
            reason: format!("expected a finite number > 0, got {max_norm}"),
        });
    }
    let mut norms = SquaredNorms { grads, sums: Vec::new() };
    module.visit(&mut norms);
    let mut squared = 0.0;
    for (_, sum) in norms.sums {
        squared += sum.into_data().iter::<f64>().next().unwrap_or(0.0);
    }
    let total_norm = squared.sqrt();
    if !total_norm.is_finite() {
        return Err(TrainError::NonFinite { what: "global gradient norm".into(), value: total_norm });
    }
    let scale = (max_norm / (total_norm + CLIP_EPS)).min(1.0);
    if scale < 1.0 {
        let mut scaler = Scale { grads, scale };
        module.visit(&mut scaler);
    }
    Ok(ClipOutcome { total_norm, scale })
}
