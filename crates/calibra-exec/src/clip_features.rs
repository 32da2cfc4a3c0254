//! CLIP image features: the one image-tower pass that zero-shot (`calibra zero-shot` and the
//! zero-shot regime) and CoOp need, its cache in a run store's feature cache (one file per encoder,
//! dataset, split and condition, shared by every template, CoOp fit, loss and seed), and the
//! zero-shot logits of a template's class embeddings on those features.

use std::path::Path;

use burn::tensor::{Device, Tensor, TensorData};
use calibra_crs::Condition;
use calibra_data::Split;
use calibra_run::run_key::sha256_hex;
use calibra_run::{ExecError, FeaturePass, FitSpec, RunContext};
use calibra_train::features::{FeatureRequest, FeatureSet, PreparedPass, image_batch};

use crate::condition::feature_condition;
use crate::zero_shot_model::{FeatureLogits, ImageTower};

/// Images per image-tower pass: `calibra zero-shot`'s default and what `calibra run`'s zero-shot
/// executor uses.
pub const IMAGE_BATCH: usize = 16;

/// Version of the cached image-feature files' meaning; part of their fingerprint.
const CACHE_VERSION: &str = "calibra-clip-image-features-v1";

/// The zero-shot core shared by `calibra zero-shot` and `calibra run`'s zero-shot executor: the
/// logits of `classifier` (one template's class embeddings) for projected image features
/// `features` (row-major `[n, dim]`, as [`clip_image_features`] returns them), row-major `[n, K]`:
/// `exp(logit_scale) · cos(image, class)`, computed in f32 and widened to f64.
pub fn zero_shot_logits(
    classifier: &impl FeatureLogits,
    features: &[f32],
    dim: usize,
    device: &Device,
) -> Result<Vec<f64>, ExecError> {
    if dim == 0 || !features.len().is_multiple_of(dim) {
        return Err(
            format!("zero-shot: {} feature values do not form rows of width {dim}", features.len()).into()
        );
    }
    let n = features.len() / dim;
    let image_features = Tensor::<2>::from_data(TensorData::new(features.to_vec(), [n, dim]), device);
    Ok(classifier.logits_from_features(image_features).to_data().iter::<f64>().collect())
}

/// Projected CLIP image features (`ClipModel::image_features`, not normalised) of a prepared pass's
/// split under its condition, row-major `[n, dim]` in the pass's index order; `progress(done)` after
/// each batch. A non-finite feature is an error naming the sample.
pub fn clip_image_features(
    pass: &PreparedPass,
    model: &impl ImageTower,
    batch_size: usize,
    device: &Device,
    progress: &mut dyn FnMut(usize),
) -> Result<(Vec<f32>, usize), ExecError> {
    let dataset = &pass.dataset;
    let mut features: Vec<f32> = Vec::new();
    let mut dim = 0;
    let mut done = 0;
    for chunk in pass.indices.chunks(batch_size.max(1)) {
        let images = image_batch(dataset, chunk, &pass.preprocess, pass.request.condition)?.to_tensor(device);
        let out = model.image_features(images)?;
        dim = out.dims()[1];
        let start = features.len();
        features.extend(out.to_data().iter::<f32>());
        if let Some(at) = features[start..].iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "encoder `{}` gave a non-finite image feature ({}) for sample `{}` of `{}`; nothing was \
                 written (check the checkpoint's weights and the image)",
                pass.request.encoder,
                features[start + at],
                dataset.samples[chunk[at / dim.max(1)]].id,
                pass.request.data
            )
            .into());
        }
        done += chunk.len();
        progress(done);
    }
    Ok((features, dim))
}

/// Projected CLIP image features of one split of a dataset under a condition, with their rows'
/// dataset and sample indices (the prepared pass's).
pub struct ImageFeatures {
    pub pass: PreparedPass,
    pub features: Vec<f32>,
    pub dim: usize,
}

/// The projected image features of a request: read from `out` when it holds this pass's
/// fingerprint (the checkpoint's contents, the preprocessing, the data spec, the split and its
/// sample ids, the condition), else computed with [`clip_image_features`] and written atomically.
/// `what` names the pass in progress lines.
pub fn cached_image_features(
    model: &impl ImageTower,
    request: FeatureRequest,
    out: &Path,
    device: &Device,
    ctx: &mut RunContext<'_>,
    what: &str,
) -> Result<ImageFeatures, ExecError> {
    let pass = PreparedPass::new(request)?;
    let fingerprint = sha256_hex(format!("{CACHE_VERSION}\n{}", pass.fingerprint).as_bytes());
    if out.exists()
        && let Ok(set) = FeatureSet::read(out)
        && set.fingerprint == fingerprint
        && let Some((_, rows)) = set.layers.into_iter().next()
    {
        ctx.report(&format!("clip: image features {what} (cached)"));
        return Ok(ImageFeatures { pass, features: rows, dim: set.dim });
    }
    ctx.report(&format!("clip: image features {what} ({} images)", pass.indices.len()));
    let (features, dim) = clip_image_features(&pass, model, IMAGE_BATCH, device, &mut |_| {})?;
    let set = FeatureSet {
        ids: pass.indices.iter().map(|&i| pass.dataset.samples[i].id.clone()).collect(),
        classes: pass.dataset.labels.names.clone(),
        targets: pass.indices.iter().map(|&i| pass.dataset.samples[i].target.clone()).collect(),
        layers: vec![(1.0, features)],
        dim,
        fingerprint,
        splits: None,
    };
    set.write(
        out,
        &[
            ("encoder", pass.request.encoder.clone()),
            ("data", pass.request.data.clone()),
            ("split", pass.request.split.name().to_string()),
            ("condition", pass.request.condition.name()),
            ("features", "CLIP projected image features (image_features, not normalised)".to_string()),
        ],
    )?;
    let FeatureSet { layers, .. } = set;
    let features = layers.into_iter().next().map(|(_, rows)| rows).unwrap_or_default();
    Ok(ImageFeatures { pass, features, dim })
}

/// The projected image features of `fit`'s CLIP encoder on `split` of the dataset `data` (the fit's
/// own, or a shift target's) under the record condition `condition`, through the store's feature
/// cache: `features/<pass>/<split>@clip-image.safetensors` ([`cached_image_features`]). With `rows`,
/// the pass must cover exactly those dataset rows in that order (the rows a prediction asks for).
pub fn store_image_features(
    model: &impl ImageTower,
    fit: &FitSpec,
    (split, condition, data): (Split, &Condition, &str),
    rows: Option<&[usize]>,
    device: &Device,
    ctx: &mut RunContext<'_>,
) -> Result<ImageFeatures, ExecError> {
    let c = &fit.config;
    let dir = ctx.feature_dir(&FeaturePass {
        encoder: c.encoder.name.clone(),
        dataset: c.dataset.name.clone(),
        condition: condition.clone(),
    });
    let request = image_request(fit, (split, condition, data))?;
    let what = format!("{} ({condition})", split.name());
    let out = dir.join(format!("{}@clip-image.safetensors", split.name()));
    let f = cached_image_features(model, request, &out, device, ctx, &what)?;
    if let Some(rows) = rows {
        check_rows(&f.pass, rows, &what, data)?;
    }
    Ok(f)
}

/// The image pass of `fit`'s encoder on `split` of the dataset `data` under `condition`.
pub fn image_request(
    fit: &FitSpec,
    (split, condition, data): (Split, &Condition, &str),
) -> Result<FeatureRequest, ExecError> {
    let c = &fit.config;
    Ok(FeatureRequest {
        encoder: c.encoder.spec.clone(),
        data: data.to_string(),
        split: split.into(),
        split_config: c.split.config(),
        condition: feature_condition(condition)?,
        layers: vec![1.0],
        batch_size: IMAGE_BATCH,
    })
}

/// An error unless the pass covers exactly dataset rows `rows`, in that order.
pub fn check_rows(pass: &PreparedPass, rows: &[usize], what: &str, data: &str) -> Result<(), ExecError> {
    if pass.indices != rows {
        return Err(format!(
            "the image pass of {what} covers {} rows, not the {} rows asked for (the split of `{data}` \
             changed between passes)",
            pass.indices.len(),
            rows.len()
        )
        .into());
    }
    Ok(())
}
