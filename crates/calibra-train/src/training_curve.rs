//! Training curves: a held-out set (the calibration split) evaluated on the initial weights and after
//! every epoch — its mean loss (the training loss, dropout off) and a score of its logits (AUROC,
//! computed by the caller so that this crate needs no metric crate) — next to the epoch's mean
//! training loss. The curve is what a run record's `training` field stores and what the
//! "not converged" check reads; its loss drives [`crate::early_stopping`].

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use crate::losses::{Loss, finite_value};
use crate::trainer::{Classifier, TrainSet, TrainerError};

/// One point of a training curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpochRecord {
    /// 0: the initial weights (before any step); `e >= 1`: after epoch `e`.
    pub epoch: usize,
    /// Epoch `e >= 1`: the mean of its step losses; epoch 0: the training-set loss of the initial
    /// weights (inference mode).
    pub train_loss: f64,
    /// Mean loss over the held-out set.
    pub calibration_loss: f64,
    /// The caller's score of the held-out logits (macro AUROC); `None` where it is undefined.
    pub calibration_auroc: Option<f64>,
}

/// The score of held-out logits: row-major `[n, K]` in the order of the monitored set's rows.
pub type HeldOutScore<'a> = dyn Fn(&[f64]) -> Option<f64> + 'a;

/// A held-out set the training loop evaluates once per epoch.
pub struct Monitor<'a> {
    pub data: &'a TrainSet,
    pub score: &'a HeldOutScore<'a>,
    /// Images per forward pass.
    pub batch_size: usize,
}

impl Monitor<'_> {
    pub(crate) fn check(&self) -> Result<(), TrainerError> {
        if self.data.is_empty() || self.batch_size == 0 {
            return Err(TrainerError::Config(
                "the monitored held-out set is empty (or its batch size is 0)".into(),
            ));
        }
        Ok(())
    }

    /// The held-out mean loss and score of `model` (in inference mode, on the plain device).
    pub(crate) fn evaluate<M: Classifier>(
        &self,
        model: &M,
        loss: &dyn Loss,
        device: &Device,
    ) -> Result<(f64, Option<f64>), TrainerError> {
        let (mean, logits) = mean_loss(model, self.data, loss, device, self.batch_size)?;
        Ok((mean, (self.score)(&logits)))
    }
}

/// The mean loss of `model` (inference mode, plain device) over `data` and its logits, row-major.
pub(crate) fn mean_loss<M: Classifier>(
    model: &M,
    data: &TrainSet,
    loss: &dyn Loss,
    device: &Device,
    batch_size: usize,
) -> Result<(f64, Vec<f64>), TrainerError> {
    let plain = device.clone().without_autodiff();
    let model = model.valid();
    let n = data.len();
    let rows: Vec<usize> = (0..n).collect();
    let mut total = 0.0;
    let mut logits = Vec::new();
    for chunk in rows.chunks(batch_size.max(1)) {
        let z = model.logits(data.images(chunk, &plain)?);
        let value = loss.forward(&data.loss_batch(z.clone(), chunk)?)?;
        total += finite_value(&value)? * chunk.len() as f64;
        logits.extend(
            z.into_data()
                .convert::<f64>()
                .try_into_vec::<f64>()
                .map_err(|e| TrainerError::Config(format!("reading logits: {e:?}")))?,
        );
    }
    Ok((total / n as f64, logits))
}
