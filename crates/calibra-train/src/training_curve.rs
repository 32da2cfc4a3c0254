//! Training curves: a held-out set (the calibration split) evaluated on the initial weights and after
//! every epoch — its mean loss (the training loss, dropout off) and a score of its logits (AUROC,
//! computed by the caller so that this crate needs no metric crate) — next to the epoch's mean
//! training loss. The curve is what a run record's `training` field stores and what the
//! "not converged" check reads; its loss drives [`crate::early_stopping`].

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use crate::losses::{Loss, finite_value};
use crate::train_images::UnreadableImage;
use crate::trainer::{Classifier, TrainSet, TrainTargets, TrainerError};

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
    /// Held-out accuracy ([`accuracy`]); absent from checkpoints written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_accuracy: Option<f64>,
}

/// What one held-out evaluation measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeldOutEvaluation {
    pub loss: f64,
    /// The caller's score (macro AUROC).
    pub score: Option<f64>,
    pub accuracy: Option<f64>,
}

/// Accuracy of row-major logits `[n, K]` against `targets`: single-label, the share of rows whose
/// largest logit is the true class (the first largest on ties); multilabel, the share of the observed
/// labels (missing ones left out) whose decision `logit > 0` matches. `None` with nothing to count.
pub fn accuracy(logits: &[f64], targets: &TrainTargets) -> Option<f64> {
    match targets {
        TrainTargets::Classes(labels) => {
            let k = logits.len().checked_div(labels.len())?;
            if k == 0 {
                return None;
            }
            let right = logits
                .chunks_exact(k)
                .zip(labels)
                .filter(|(row, label)| {
                    let best =
                        row.iter().enumerate().fold(0, |best, (j, &v)| if v > row[best] { j } else { best });
                    best == **label
                })
                .count();
            Some(right as f64 / labels.len() as f64)
        }
        TrainTargets::Multilabel { codes, .. } => {
            let observed: Vec<(f64, f64)> =
                logits.iter().zip(codes).filter_map(|(&z, c)| c.map(|c| (z, c))).collect();
            if observed.is_empty() || logits.len() != codes.len() {
                return None;
            }
            let right = observed.iter().filter(|(z, c)| (*z > 0.0) == (*c > 0.5)).count();
            Some(right as f64 / observed.len() as f64)
        }
    }
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

    /// The held-out mean loss, score and accuracy of `model` (in inference mode, on the plain device).
    pub(crate) fn evaluate<M: Classifier>(
        &self,
        model: &M,
        loss: &dyn Loss,
        device: &Device,
    ) -> Result<HeldOutEvaluation, TrainerError> {
        let (mean, logits, unreadable) = mean_loss(model, self.data, loss, device, self.batch_size)?;
        // The held-out metrics are over every row; a `skip` policy leaves out training images only.
        if let Some(u) = unreadable.first() {
            return Err(TrainerError::Images(format!(
                "held-out (calibration split) image {u}: every held-out image is needed for its metrics \
                 (on_bad_image=skip leaves out unreadable training images only); fix or remove the file"
            )));
        }
        Ok(HeldOutEvaluation {
            loss: mean,
            score: (self.score)(&logits),
            accuracy: accuracy(&logits, &self.data.targets),
        })
    }
}

/// The mean loss of `model` (inference mode, plain device) over the readable images of `data`,
/// their logits (row-major, in row order) and the images that could not be read (the dataset's
/// `skip` bad-image policy; under `fail` such an image is an error).
pub(crate) fn mean_loss<M: Classifier>(
    model: &M,
    data: &TrainSet,
    loss: &dyn Loss,
    device: &Device,
    batch_size: usize,
) -> Result<(f64, Vec<f64>, Vec<UnreadableImage>), TrainerError> {
    let plain = device.clone().without_autodiff();
    let model = model.valid();
    let rows: Vec<usize> = (0..data.len()).collect();
    let (mut total, mut counted) = (0.0, 0usize);
    let mut logits = Vec::new();
    let mut unreadable = Vec::new();
    for chunk in rows.chunks(batch_size.max(1)) {
        let read = data.read(chunk)?;
        unreadable.extend(read.unreadable);
        if read.rows.is_empty() {
            continue;
        }
        let n = read.rows.len();
        let z = model.logits(data.tensor(read.pixels, &plain));
        let value = loss.forward(&data.loss_batch(z.clone(), &read.rows)?)?;
        total += finite_value(&value)? * n as f64;
        counted += n;
        logits.extend(
            z.into_data()
                .convert::<f64>()
                .try_into_vec::<f64>()
                .map_err(|e| TrainerError::Config(format!("reading logits: {e:?}")))?,
        );
    }
    if counted == 0 {
        return Err(TrainerError::Images(format!("none of the {} images can be read", data.len())));
    }
    Ok((total / counted as f64, logits, unreadable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_label_accuracy_counts_rows_whose_largest_logit_is_the_label() {
        let logits = [0.1, 0.9, 0.0, 2.0, -1.0, 0.5, 0.3, 0.3, 0.1];
        let targets = TrainTargets::Classes(vec![1, 2, 0]);
        // row 0 → 1 (right), row 1 → 0 (wrong), row 2 → 0 on a tie (first largest: right).
        assert_eq!(accuracy(&logits, &targets), Some(2.0 / 3.0));
        assert_eq!(accuracy(&[], &TrainTargets::Classes(vec![])), None);
    }

    #[test]
    fn multilabel_accuracy_leaves_missing_labels_out() {
        let logits = [1.0, -1.0, 0.5, -0.2];
        let targets =
            TrainTargets::Multilabel { codes: vec![Some(1.0), Some(1.0), None, Some(0.0)], n_labels: 2 };
        assert_eq!(accuracy(&logits, &targets), Some(2.0 / 3.0));
    }
}
