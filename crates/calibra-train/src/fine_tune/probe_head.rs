//! LP-FT's first stage (Kumar et al., "Fine-Tuning can Distort Pretrained Features and Underperform
//! Out-of-Distribution", ICLR 2022): the linear probe fitted on the frozen encoder's features of the
//! training images, as the head fine-tuning starts from.
//!
//! The probe is the frozen regime's `logistic` (calibra-probe: features standardised with training
//! statistics, then ℓ2 logistic regression with C = 1), fitted on the classifier's input feature
//! (`Encoder::classification_feature`, the one the family's `<Family>ForImageClassification`
//! classifies) and folded back into that raw feature space so that the head sees it directly:
//! `W' = W / σ`, `b' = b − W' · μ`. A binary probe `z` becomes the two-output head `[0, z]` (softmax
//! of it is the probe's `[1 − σ(z), σ(z)]`); a one-vs-rest probe gives one output per label. With
//! LoRA's B = 0 the model before the first step therefore predicts exactly what that probe predicts.
//! For ViT / DeiT the feature is the frozen regime's own (`Encoder::embed`, the layer-normed CLS);
//! for DINOv2 (`[CLS ‖ mean of patches]`), CLIP and SigLIP (mean-pooled tokens) it differs from it.

use burn::module::Module;
use burn::tensor::Device;
use calibra_models::Encoder;
use calibra_probe::{Features, LinearHead, LogisticModel, Probe, ProbeModel, Targets};

use super::FineTuneError;
use crate::trainer::{TrainSet, TrainTargets};

/// Images per feature pass.
const FEATURE_BATCH: usize = 64;

/// The probe head of `encoder` on `data`: PyTorch-layout weight `[K, d]` (row-major) and bias `[K]`,
/// fitted on the classifier's own input ([`Encoder::classification_feature`], e.g. `2·d` wide for
/// DINOv2), not on the frozen regime's `embed`, so that it is a head the classifier can start from.
pub(super) fn probe_head(
    encoder: &Encoder,
    data: &TrainSet,
    n_outputs: usize,
    device: &Device,
) -> Result<(Vec<f32>, Vec<f32>), FineTuneError> {
    let plain = device.clone().without_autodiff();
    let frozen = encoder.valid();
    let rows: Vec<usize> = (0..data.len()).collect();
    let mut x = Vec::new();
    let mut dim = 0;
    // The readable images (all of them, unless the dataset's `skip` policy left some out).
    let mut readable = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(FEATURE_BATCH) {
        let read = data.read(chunk)?;
        if read.rows.is_empty() {
            continue;
        }
        readable.extend(read.rows);
        let f = frozen.classification_feature(data.tensor(read.pixels, &plain))?;
        dim = f.dims()[1];
        x.extend(
            f.into_data()
                .convert::<f64>()
                .try_into_vec::<f64>()
                .map_err(|e| FineTuneError::Invalid(format!("reading probe features: {e:?}")))?,
        );
    }
    let features = Features::new(&x, dim).map_err(probe_error)?;
    let probe = Probe::by_name("logistic").map_err(probe_error)?;
    let fitted = match &data.targets.of_rows(&readable) {
        TrainTargets::Classes(labels) => probe.fit_classes(features, labels, n_outputs),
        TrainTargets::Multilabel { codes, n_labels } => {
            let labels: Vec<Option<bool>> = codes.iter().map(|c| c.map(|v| v > 0.5)).collect();
            probe.fit(features, Targets::Labels { labels: &labels, n_labels: *n_labels })
        }
    }
    .map_err(probe_error)?;
    let ProbeModel::Logistic(model) = &fitted.model else {
        return Err(FineTuneError::Invalid("the probe head must be a logistic probe".into()));
    };
    let (mean, scale) = (&fitted.standardizer.mean, &fitted.standardizer.scale);
    let mut weight = Vec::with_capacity(n_outputs * dim);
    let mut bias = Vec::with_capacity(n_outputs);
    let mut push = |w: &[f64], b: f64| {
        let raw: Vec<f64> = w.iter().zip(scale).map(|(w, s)| w / s).collect();
        bias.push((b - raw.iter().zip(mean).map(|(w, m)| w * m).sum::<f64>()) as f32);
        weight.extend(raw.iter().map(|&w| w as f32));
    };
    let row = |h: &LinearHead, o: usize| (h.weights[o * h.inputs..(o + 1) * h.inputs].to_vec(), h.bias[o]);
    match &model.model {
        LogisticModel::Multinomial(h) => (0..h.outputs).for_each(|o| {
            let (w, b) = row(h, o);
            push(&w, b)
        }),
        LogisticModel::Binary(h) => {
            push(&vec![0.0; dim], 0.0);
            let (w, b) = row(h, 0);
            push(&w, b);
        }
        LogisticModel::OneVsRest(heads) => heads.iter().for_each(|h| {
            let (w, b) = row(h, 0);
            push(&w, b)
        }),
    }
    if weight.len() != n_outputs * dim {
        return Err(FineTuneError::Invalid(format!(
            "the probe has {} outputs, the head needs {n_outputs}",
            weight.len() / dim.max(1)
        )));
    }
    Ok((weight, bias))
}

fn probe_error(e: calibra_probe::ProbeError) -> FineTuneError {
    FineTuneError::Invalid(format!("fitting the probe head (LP-FT): {e}"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fine_tune::{Adaptation, EncoderClassifier};

    /// LP-FT's probe head follows the classifier's input: on DINOv2 it is `2·d` wide
    /// (`[CLS ‖ mean of patches]`), on ViT `d`; it fits the classifier, which then gives finite logits.
    #[test]
    fn lp_ft_probe_head_follows_the_classifier_input() {
        let device = Device::flex();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures");
        for (family, width) in [("dinov2", 96), ("vit", 48)] {
            let encoder = Encoder::load_dir(&fixtures.join(family), &device).unwrap();
            let n = 12;
            let pixels: Vec<f32> =
                (0..n * 3 * 30 * 30).map(|i| ((i * 7919 % 211) as f32 / 105.0) - 1.0).collect();
            let data = TrainSet::classes([3, 30, 30], pixels.clone(), (0..n).map(|i| i % 3).collect());
            let (weight, bias) = probe_head(&encoder, &data, 3, &device).unwrap();
            assert_eq!((weight.len(), bias.len()), (3 * width, 3), "{family}");
            let dim = encoder.classification_dim();
            assert_eq!(dim, width, "{family}");
            let (model, _) = EncoderClassifier::new(encoder, dim, 3, &Adaptation::Head, 1, &device).unwrap();
            let model = model.with_head(&weight, bias, &device).unwrap();
            let logits = model.try_logits(data.tensor(data.pixels(&[0, 1, 2]).unwrap(), &device)).unwrap();
            let logits = logits.into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
            assert!(logits.iter().all(|v| v.is_finite()), "{family}: {logits:?}");
        }
    }
}
