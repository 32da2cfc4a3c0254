//! Zero-shot scoring of a made CLIP on held-out images: top-1 accuracy for single-label tasks and
//! per-label AUROC for multilabel tasks, with calibra's own [`ZeroShotClassifier`].

use burn::tensor::{Device, Tensor};
use calibra_data::{PreprocessConfig, Target, TaskKind};
use calibra_models::clip::{ClipModel, ZeroShotClassifier};
use calibra_models::tokenizer::ClipTokenizer;

use super::captions::classnames;
use crate::features::{FeatureCondition, image_batch};
use crate::pretrain::{LoadedTask, PretrainError};

/// Zero-shot logits `[n_holdout, K]` (row-major) of `task`'s held-out images with `templates`
/// averaged per class (CLIP's prompt ensemble).
pub(crate) fn zero_shot_logits(
    model: &ClipModel,
    tokenizer: &ClipTokenizer,
    task: &LoadedTask,
    templates: &[String],
    preprocess: &PreprocessConfig,
    image_features: Option<&Tensor<2>>,
    device: &Device,
) -> Result<(Vec<f64>, Tensor<2>), PretrainError> {
    let features = match image_features {
        Some(f) => f.clone(),
        None => {
            let mut parts = Vec::new();
            for chunk in task.holdout_rows.chunks(64) {
                let batch = image_batch(&task.dataset, chunk, preprocess, FeatureCondition::Clean)
                    .map_err(|e| PretrainError::Invalid(format!("task `{}`: {e}", task.spec)))?;
                parts.push(model.image_features(batch.to_tensor(device))?);
            }
            Tensor::cat(parts, 0)
        }
    };
    let head = ZeroShotClassifier::new(model, tokenizer, &classnames(&task.dataset), templates, device)?;
    let logits = head.logits_from_features(features.clone());
    let values: Vec<f32> = logits
        .into_data()
        .try_to_vec::<f32>()
        .map_err(|e| PretrainError::Invalid(format!("zero-shot logits: {e:?}")))?;
    Ok((values.into_iter().map(f64::from).collect(), features))
}

/// Top-1 accuracy (argmax, ties to the lowest index) of `logits` (`K` columns) on the held-out rows.
pub(crate) fn top1_accuracy(task: &LoadedTask, logits: &[f64]) -> f64 {
    let k = task.dataset.labels.len();
    let mut correct = 0usize;
    for (r, &i) in task.holdout_rows.iter().enumerate() {
        let row = &logits[r * k..(r + 1) * k];
        let best = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
        if let Target::Class(c) = task.dataset.samples[i].target {
            correct += usize::from(best == c);
        }
    }
    correct as f64 / task.holdout_rows.len().max(1) as f64
}

/// AUROC of `scores` for the binary `labels` (Mann–Whitney U / (n₊ n₋), ties counted ½ via average
/// ranks); `None` when one class is absent.
pub fn auroc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    let n = scores.len();
    let positives = labels.iter().filter(|&&l| l).count();
    let negatives = n - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let average_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += (i..=j).filter(|&t| labels[order[t]]).count() as f64 * average_rank;
        i = j + 1;
    }
    let u = rank_sum - (positives * (positives + 1)) as f64 / 2.0;
    Some(u / (positives * negatives) as f64)
}

/// Per-label AUROC of the zero-shot logits on the held-out rows of a multilabel task (missing labels
/// skipped): `(label name, AUROC or None when a class is absent)`.
pub(crate) fn label_aurocs(task: &LoadedTask, logits: &[f64]) -> Vec<(String, Option<f64>)> {
    let k = task.dataset.labels.len();
    (0..k)
        .map(|j| {
            let mut scores = Vec::new();
            let mut labels = Vec::new();
            for (r, &i) in task.holdout_rows.iter().enumerate() {
                if let Target::Labels(v) = &task.dataset.samples[i].target
                    && let Some(l) = v[j]
                {
                    scores.push(logits[r * k + j]);
                    labels.push(l);
                }
            }
            (task.dataset.labels.names[j].clone(), auroc(&scores, &labels))
        })
        .collect()
}

/// Whether the task is scored by accuracy (single-label) or per-label AUROC.
pub(crate) fn is_multilabel(task: &LoadedTask) -> bool {
    task.dataset.labels.kind == TaskKind::Multilabel
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact by construction: perfect separation 1, reversed 0, all tied ½, one swapped pair of 2×2
    /// gives 3 of 4 pairs ordered.
    #[test]
    fn auroc_exact_cases() {
        let l = [false, false, true, true];
        assert_eq!(auroc(&[0.1, 0.2, 0.3, 0.4], &l), Some(1.0));
        assert_eq!(auroc(&[0.4, 0.3, 0.2, 0.1], &l), Some(0.0));
        assert_eq!(auroc(&[1.0; 4], &l), Some(0.5));
        assert_eq!(auroc(&[0.1, 0.3, 0.2, 0.4], &l), Some(0.75));
        assert_eq!(auroc(&[0.1, 0.2], &[true, true]), None);
    }
}
