//! The frozen encoder features of one split under one condition, cached in the run store: what the
//! frozen probes and the transferability estimates read.

use std::path::Path;

use calibra_crs::Condition;
use calibra_data::Split;
use calibra_run::{ExecError, FeaturePass, FitSpec, RunContext};
use calibra_train::features::{FeatureRequest, FeatureSet, PreparedPass};

use crate::RunExecutor;
use crate::condition::feature_condition;

/// The cached features of `fit`'s encoder on `split` of the dataset `data` (the fit's own, or a shift
/// target's) under `condition` at depth `layer`: a safetensors file `<split>@<layer>.safetensors` in
/// the store's feature cache, computed (and written atomically) on first use and read by every later
/// fit of the same (encoder, dataset, split, condition, layer), whatever its regime.
pub fn feature_pass(
    executor: &RunExecutor,
    fit: &FitSpec,
    (split, condition, data): (Split, &Condition, &str),
    layer: f64,
    ctx: &mut RunContext<'_>,
) -> Result<FeatureSet, ExecError> {
    let c = &fit.config;
    let dir = ctx.feature_dir(&FeaturePass {
        encoder: c.encoder.name.clone(),
        dataset: c.dataset.name.clone(),
        condition: condition.clone(),
    });
    let out = dir.join(format!("{}@{layer}.safetensors", split.name()));
    let prepared = PreparedPass::new(FeatureRequest {
        encoder: c.encoder.spec.clone(),
        data: data.to_string(),
        split: split.into(),
        split_config: c.split.config(),
        condition: feature_condition(condition)?,
        layers: vec![layer],
        batch_size: 32,
    })?;
    ctx.report(&format!("features: {} {condition} ({})", split.name(), out_name(&out)));
    Ok(prepared.cached(&out, &executor.device, &mut |_, _| {})?.0)
}

fn out_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
