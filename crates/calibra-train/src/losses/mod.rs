//! The training losses of spec §A: each loss in its own file, one [`Loss`] trait, and a registry
//! ([`LossSpec`]) that builds a loss — or a weighted sum of losses such as `ce+mdca` — from its name
//! and `key=value` arguments.
//!
//! Conventions (spec §0): logits `z` are `[N, K]`, `p = softmax(z)` (max-subtracted),
//! `log p = log_softmax(z)`, reduction = mean over the batch unless a loss says otherwise. Every
//! loss is differentiable through burn's autodiff: evaluate it on logits created on
//! `device.autodiff()` and call `backward()` on the returned `[1]` tensor.
//!
//! burn 0.22.1 quirk: the backward of `div_scalar` uses the reciprocal rounded to float32 even for
//! float64 tensors (relative gradient error ~1e-8), so the losses multiply by `1/s` instead.

mod args;
mod batch;
mod bce_masked;
mod cross_entropy;
mod focal;
mod label_smoothing;
mod mbls;
mod mcm;
mod mdca;
mod range_penalty;
mod registry;
mod weighted_sum;
mod zs_norm;

use std::fmt;

use burn::tensor::Tensor;

use crate::error::TrainError;

pub use args::LossArgs;
pub use batch::{LossBatch, MultilabelTargets, Targets};
pub use bce_masked::MaskedBce;
pub use cross_entropy::CrossEntropy;
pub use focal::{Flsd53, Focal};
pub use label_smoothing::{LabelSmoothing, LsKind};
pub use mbls::MarginLabelSmoothing;
pub use mcm::{Mcm, McmTerms, VarianceMode};
pub use mdca::Mdca;
pub use range_penalty::RangePenalty;
pub use registry::{LossInfo, LossSpec, ParamInfo, TermSpec, build_loss, registry};
pub use weighted_sum::WeightedSum;
pub use zs_norm::ZsNorm;

/// Which targets a loss consumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// One class label per row (softmax losses).
    Classes,
    /// Multilabel 0/1 targets with a mask (sigmoid losses).
    Multilabel,
}

/// A training loss: a differentiable scalar function of a batch's logits and targets.
pub trait Loss: fmt::Debug + Send + Sync {
    /// The registry name (for a sum: the spec, e.g. `ce+mdca`).
    fn name(&self) -> String;

    /// The loss value as a `[1]` tensor in the logits' dtype, differentiable w.r.t. the logits.
    ///
    /// Errors: the batch has the wrong kind of targets, too few classes for this loss, or lacks the
    /// zero-shot logits a CLIP-style loss needs. Non-finite logits are not checked here (that would
    /// force a device synchronisation); use [`finite_value`] on the result.
    fn forward(&self, batch: &LossBatch) -> Result<Tensor<1>, TrainError>;

    /// The kind of targets this loss needs.
    fn target_kind(&self) -> TargetKind {
        TargetKind::Classes
    }

    /// Whether this loss needs the frozen zero-shot logits (`LossBatch::with_zero_shot`).
    fn needs_zero_shot(&self) -> bool {
        false
    }
}

/// Reads a loss value back to the host, erroring with `NonFinite` (spec §0 NaN policy) when it is
/// NaN or infinite.
pub fn finite_value(loss: &Tensor<1>) -> Result<f64, TrainError> {
    let value = batch::to_host(loss).first().copied().unwrap_or(f64::NAN);
    if !value.is_finite() {
        return Err(TrainError::NonFinite { what: "loss value".into(), value });
    }
    Ok(value)
}
